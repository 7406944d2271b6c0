// Forwards to pxl/addons/module/named_tensors.hpp, where this header moved in 0.2.0.
#pragma once
#include "pxl/addons/module/named_tensors.hpp"
