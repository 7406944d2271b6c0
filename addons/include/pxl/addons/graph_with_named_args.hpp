// Forwards to pxl/addons/module/graph_with_named_args.hpp, where this header moved in 0.2.0.
#pragma once
#include "pxl/addons/module/graph_with_named_args.hpp"
