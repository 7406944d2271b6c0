// Forwards to pxl/addons/module/variable_factory.hpp, where this header moved in 0.2.0.
#pragma once
#include "pxl/addons/module/variable_factory.hpp"
