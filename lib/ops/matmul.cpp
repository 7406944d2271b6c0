#include "pxl/ops/matmul.hpp"
#include "ir/op_builder.hpp"

namespace pxl::ops {

Tensor matmul(const Tensor& a, const Tensor& b) {
  detail::check_float("MatMul", a);
  detail::check_same_dtype("MatMul", a, b);
  if (a.rank() == 0 || b.rank() == 0)
    throw ShapeError("MatMul: operands must have rank >= 1, got " + to_string(a) + " and " +
                     to_string(b));
  Shape sa = a.shape(), sb = b.shape();
  if (sa.size() == 1)
    sa.insert(sa.begin(), 1);
  if (sb.size() == 1)
    sb.push_back(1);
  const auto k_a = sa.back(), k_b = sb[sb.size() - 2];
  if (k_a != k_b)
    throw ShapeError("MatMul: contraction dimensions differ: " + to_string(a) + " has " +
                     std::to_string(k_a) + " columns but " + to_string(b) + " has " +
                     std::to_string(k_b) + " rows");
  Shape batch = broadcast_shapes(std::span(sa).first(sa.size() - 2),
                                 std::span(sb).first(sb.size() - 2), "MatMul (batch axes)");
  Shape out = batch;
  if (a.rank() > 1)
    out.push_back(sa[sa.size() - 2]);
  if (b.rank() > 1)
    out.push_back(sb.back());
  return detail::add_op1(OpKind::MatMul, {a, b}, TensorSpec{std::move(out), a.dtype()});
}

} // namespace pxl::ops
