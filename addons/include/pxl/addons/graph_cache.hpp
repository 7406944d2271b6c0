// Forwards to pxl/addons/module/graph_cache.hpp, where this header moved in 0.2.0.
#pragma once
#include "pxl/addons/module/graph_cache.hpp"
