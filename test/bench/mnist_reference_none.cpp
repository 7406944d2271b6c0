// Built when LibTorch is not installed: the benchmark then prints pxl's figures only.
#include "mnist_reference.hpp"

namespace bench {

bool have_libtorch() { return false; }

double libtorch_steps_per_second(std::int64_t, std::int64_t, std::span<const float>,
                                 std::span<const std::int32_t>, double, int) {
  return 0.0;
}

} // namespace bench
