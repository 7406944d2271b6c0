// The headers nearly every test unit includes, parsed once per suite (Meson's cpp_pch;
// -Db_pch=false builds without it). Every unit still includes what it uses.

#include "pxl/addons.hpp"
#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>
