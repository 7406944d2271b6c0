// Forwards to pxl/addons/training/remote.hpp, where this header moved in 0.2.0.
#pragma once
#include "pxl/addons/training/remote.hpp"
