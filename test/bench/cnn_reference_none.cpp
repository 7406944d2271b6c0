// Built when LibTorch is not installed: the benchmark then prints pxl's figures only.
#include "cnn_reference.hpp"

namespace bench {

std::optional<double> libtorch_cnn_steps_per_second(std::int64_t, std::int64_t, LabelledImages,
                                                    double, int) {
  return std::nullopt;
}

std::optional<std::vector<double>> libtorch_cnn_accuracy(LabelledImages, LabelledImages,
                                                         std::int64_t, int, double, std::uint64_t,
                                                         int) {
  return std::nullopt;
}

} // namespace bench
