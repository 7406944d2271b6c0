// Forwards to pxl/addons/module/dot_tree.hpp, where this header moved in 0.2.0.
#pragma once
#include "pxl/addons/module/dot_tree.hpp"
