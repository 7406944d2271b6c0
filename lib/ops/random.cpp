// Random generators from explicit uint32[2] seeds.
//
// Attribute choices: random_uniform/random_normal carry CreateAttrs{spec, zero, a, b} with
// (a, b) = (low, high) or (mean, stddev); split_random_seed carries ScalarAttrs{a = n}, its
// output count (the outputs themselves also say it; the attribute keeps the op
// self-describing for printers and kernels).
#include "pxl/ops/random.hpp"
#include "ir/op_builder.hpp"

#include <charconv>
#include <cmath>

namespace pxl::ops {

namespace {

void check_seed(std::string_view op, const Tensor& seed) {
  detail::check_dtype(op, seed, uint32, "the seed");
  if (seed.shape() != Shape{2})
    throw ShapeError(std::string(op) + ": the seed must have shape (2,), got " + to_string(seed));
}

Tensor generate(OpKind kind, const Tensor& seed, Shape shape, double a, double b, DType dtype) {
  const auto op = op_type_name(kind);
  check_seed(op, seed);
  if (!is_floating_point(dtype))
    throw DTypeError(std::string(op) + ": dtype must be float32 or float16, got " +
                     std::string(name(dtype)));
  nbytes(shape, dtype, op);
  TensorSpec spec{std::move(shape), dtype};
  return detail::add_op1(kind, {seed}, spec, CreateAttrs{spec, InitType::zero, a, b});
}

/// Shortest round-trip text of `x`: "0.1", not std::to_string's "0.100000".
std::string number(double x) {
  char buf[32];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, x).ptr);
}

} // namespace

Tensor random_uniform(const Tensor& seed, Shape shape, double low, double high, DType dtype) {
  // NumPy's uniform rejects a range that is not finite; low > high it would silently swap.
  if (!(low <= high) || !std::isfinite(high - low))
    throw ValueError("RandomUniform: expected finite low <= high, got low = " + number(low) +
                     " and high = " + number(high));
  return generate(OpKind::RandomUniform, seed, std::move(shape), low, high, dtype);
}

Tensor random_normal(const Tensor& seed, Shape shape, double mean, double stddev, DType dtype) {
  if (!std::isfinite(mean) || !(stddev >= 0) || !std::isfinite(stddev))
    throw ValueError("RandomNormal: expected a finite mean and a finite stddev >= 0, got mean = " +
                     number(mean) + " and stddev = " + number(stddev));
  return generate(OpKind::RandomNormal, seed, std::move(shape), mean, stddev, dtype);
}

std::vector<Tensor> split_random_seed(const Tensor& seed, std::int64_t n) {
  check_seed("SplitRandomSeed", seed);
  if (n < 1)
    throw ValueError("SplitRandomSeed: the number of seeds n must be >= 1, got " +
                     std::to_string(n));
  std::vector<TensorSpec> specs(static_cast<std::size_t>(n), TensorSpec{{2}, uint32});
  const Tensor in[] = {seed};
  return detail::add_op(OpKind::SplitRandomSeed, in, std::move(specs),
                        ScalarAttrs{static_cast<double>(n), 0.0});
}

} // namespace pxl::ops
