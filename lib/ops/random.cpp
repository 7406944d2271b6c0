// Random generators from explicit uint32[2] seeds.
//
// Attribute choices: random_uniform/random_normal carry CreateAttrs{spec, zero, a, b} with
// (a, b) = (low, high) or (mean, stddev); split_random_seed carries ScalarAttrs{a = n}, its
// output count (the outputs themselves also say it; the attribute keeps the op
// self-describing for printers and kernels).
#include "pxl/ops/random.hpp"
#include "ir/op_builder.hpp"

namespace pxl::ops {

namespace {

void check_seed(std::string_view op, const Tensor& seed) {
  detail::check_dtype(op, seed, uint32, "the seed");
  if (seed.shape() != Shape{2})
    throw ShapeError(std::string(op) + ": the seed must have shape (2,), got " +
                     detail::describe(seed));
}

Tensor generate(OpKind kind, const Tensor& seed, Shape shape, double a, double b, DType dtype) {
  const auto op = op_type_name(kind);
  check_seed(op, seed);
  if (!is_floating_point(dtype))
    throw DTypeError(std::string(op) + ": dtype must be float32 or float16, got " +
                     std::string(name(dtype)));
  for (auto d : shape)
    if (d < 0)
      throw ShapeError(std::string(op) + ": negative dimension in shape " + to_string(shape));
  TensorSpec spec{std::move(shape), dtype};
  return detail::add_op1(kind, {seed}, spec, CreateAttrs{spec, InitType::zero, a, b});
}

} // namespace

Tensor random_uniform(const Tensor& seed, Shape shape, double low, double high, DType dtype) {
  return generate(OpKind::RandomUniform, seed, std::move(shape), low, high, dtype);
}

Tensor random_normal(const Tensor& seed, Shape shape, double mean, double stddev, DType dtype) {
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
