// Forwards to pxl/addons/module/module.hpp, where this header moved in 0.2.0.
#pragma once
#include "pxl/addons/module/module.hpp"
