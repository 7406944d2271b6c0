// Forwards to pxl/addons/training/checkpoint.hpp, where this header moved in 0.2.0.
#pragma once
#include "pxl/addons/training/checkpoint.hpp"
