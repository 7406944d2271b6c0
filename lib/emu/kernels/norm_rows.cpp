// Layer normalisation of one contiguous float32 row (norm_rows.hpp): the arithmetic that
// layer_norm (kernels/nn.cpp) and group_norm (kernels/norm.cpp) share, one clone per
// instruction set.
#include "norm_rows.hpp"

#include "vector_math.hpp"

#include <cmath>

namespace pxl::emu::detail {

namespace {

/// The mean of a float32 row of `d` and 1/sqrt(variance + eps), in double (four lanes each):
/// what layer norm and its gradient both normalise with.
struct RowStats {
  double mean, inv_std;
};
inline RowStats row_stats(const float* x, std::int64_t d, double eps) {
  const double mean = sum_in_lanes(d, [x](std::int64_t j) { return static_cast<double>(x[j]); }) /
                      static_cast<double>(d);
  const double var = sum_in_lanes(d,
                                  [x, mean](std::int64_t j) {
                                    const double c = static_cast<double>(x[j]) - mean;
                                    return c * c;
                                  }) /
                     static_cast<double>(d);
  const double inv_std = 1.0 / std::sqrt(var + eps);
  return {mean, inv_std};
}

/// Layer normalisation of one float32 row, as one instruction-set clone: row_stats, then the
/// normalisation. (File-local: clang 14 makes no clones of a function that a header declares
/// without PXL_VECTOR_CLONES; layer_norm_row below calls this.)
PXL_VECTOR_CLONES void layer_norm_row_lanes(const float* x, const float* weight, const float* bias,
                                            float* y, std::int64_t d, double eps) {
  const auto [mean, inv_std] = row_stats(x, d, eps);
  for (std::int64_t j = 0; j < d; ++j)
    y[j] = static_cast<float>((static_cast<double>(x[j]) - mean) * inv_std *
                                  static_cast<double>(weight[j]) +
                              static_cast<double>(bias[j]));
}

/// layer_norm_grad of one float32 row, as one instruction-set clone: row_stats, x̂ = (x −
/// mean)·rstd, then with a = Σ g·w and b = Σ g·w·x̂ (double, sum_in_lanes' order) dx = rstd·(g·w −
/// a/d − x̂·b/d) and gx = g·x̂, each rounded once.
PXL_VECTOR_CLONES void layer_norm_grad_row_lanes(const float* x, const float* weight,
                                                 const float* g, float* dx, float* gx,
                                                 std::int64_t d, double eps) {
  // Named copies, not a structured binding: the lambdas below capture them.
  const RowStats stats = row_stats(x, d, eps);
  const double mean = stats.mean, inv_std = stats.inv_std;
  const auto gw = [g, weight](std::int64_t j) {
    return static_cast<double>(g[j]) * static_cast<double>(weight[j]);
  };
  const auto normed = [x, mean, inv_std](std::int64_t j) {
    return (static_cast<double>(x[j]) - mean) * inv_std;
  };
  const double a = sum_in_lanes(d, gw) / static_cast<double>(d);
  const double b = sum_in_lanes(d, [&gw, &normed](std::int64_t j) { return gw(j) * normed(j); }) /
                   static_cast<double>(d);
  for (std::int64_t j = 0; j < d; ++j) {
    const double xhat = normed(j);
    dx[j] = static_cast<float>(inv_std * (gw(j) - a - xhat * b));
    gx[j] = static_cast<float>(static_cast<double>(g[j]) * xhat);
  }
}
} // namespace

void layer_norm_row(const float* x, const float* weight, const float* bias, float* y,
                    std::int64_t d, double eps) {
  layer_norm_row_lanes(x, weight, bias, y, d, eps);
}

void layer_norm_grad_row(const float* x, const float* weight, const float* g, float* dx, float* gx,
                         std::int64_t d, double eps) {
  layer_norm_grad_row_lanes(x, weight, g, dx, gx, d, eps);
}

} // namespace pxl::emu::detail
