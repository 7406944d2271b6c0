#include "pxl/ops/matmul.hpp"
#include "ir/op_builder.hpp"
#include "ops/amp_options.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ir/ir.hpp"
#include "pxl/ops/elementwise.hpp"

namespace pxl::ops {

namespace {

/// NumPy matmul's output shape for `a` and `b`, checked (ranks, contraction, batch axes).
Shape matmul_shape(const std::string& op, const Tensor& a, const Tensor& b) {
  if (a.rank() == 0 || b.rank() == 0)
    throw ShapeError(op + ": operands must have rank >= 1, got " + to_string(a) + " and " +
                     to_string(b));
  Shape sa = a.shape(), sb = b.shape();
  if (sa.size() == 1)
    sa.insert(sa.begin(), 1);
  if (sb.size() == 1)
    sb.push_back(1);
  const auto k_a = sa.back(), k_b = sb[sb.size() - 2];
  if (k_a != k_b)
    throw ShapeError(op + ": contraction dimensions differ: " + to_string(a) + " has " +
                     std::to_string(k_a) + " columns but " + to_string(b) + " has " +
                     std::to_string(k_b) + " rows");
  Shape out = broadcast_shapes(std::span(sa).first(sa.size() - 2),
                               std::span(sb).first(sb.size() - 2), op + " (batch axes)");
  if (a.rank() > 1)
    out.push_back(sa[sa.size() - 2]);
  if (b.rank() > 1)
    out.push_back(sb.back());
  return out;
}

} // namespace

Tensor matmul(const Tensor& a, const Tensor& b, const MatMulOptions& options) {
  detail::check_float("MatMul", a);
  detail::check_same_dtype("MatMul", a, b);
  const DType in = a.dtype();
  const MatMulAttrs& defaults = a.graph().ir().matmul_defaults();
  MatMulAttrs attrs;
  attrs.partials_type = detail::amp_partials_type(
      "MatMul", options.partials_type, in == float16 ? defaults.partials_type : float32, in);
  const DType out = options.output_type.value_or(in);
  if (out != in && !(in == float16 && out == float32))
    throw DTypeError("MatMul: output_type must be the operands' dtype " + std::string(name(in)) +
                     (in == float16 ? " or float32" : "") + ", got " + std::string(name(out)));
  attrs.available_memory_proportion = detail::amp_memory_proportion(
      "MatMul", options.available_memory_proportion, defaults.available_memory_proportion);
  return detail::add_op1(OpKind::MatMul, {a, b}, TensorSpec{matmul_shape("MatMul", a, b), out},
                         attrs);
}

Tensor matmul(const Tensor& a, const Tensor& b) { return matmul(a, b, MatMulOptions{}); }

Tensor matmul_pow2scaled(const Tensor& lhs, const Tensor& rhs, const Tensor& log2_scale) {
  const std::string op = "matmul_pow2scaled";
  detail::check_float8(op, lhs, "lhs");
  detail::check_float8(op, rhs, "rhs");
  detail::check_log2_scale(op, log2_scale);
  matmul_shape(op, lhs, rhs);
  // lhs·2^s and rhs widened exactly; the float32 product is 2^s times that of the operands
  // (a float8 times 2^[-32, 32) keeps every partial sum far inside float32's normal range), and
  // rounds once to float16.
  const Tensor unscaled = constant(0.0, int32);
  return cast(matmul(pow2scale_cast_from_fp8(lhs, log2_scale, float32),
                     pow2scale_cast_from_fp8(rhs, unscaled, float32)),
              float16);
}

} // namespace pxl::ops
