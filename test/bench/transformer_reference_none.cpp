// Built when LibTorch is not installed: the benchmark then prints pxl's figures only.
#include "transformer_reference.hpp"

namespace bench {

std::optional<double> libtorch_gpt_steps_per_second(const GptShape&, std::int64_t, int) {
  return std::nullopt;
}

} // namespace bench
