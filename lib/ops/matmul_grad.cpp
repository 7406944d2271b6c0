// Gradient rule of matmul: batch and broadcast axes are reduced back to each operand's shape.
#include "ops/grad_rule.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/matmul.hpp"
#include "pxl/ops/shape.hpp"

#include <numeric>

namespace pxl::detail {

namespace {
/// `t` as `shape`: a Reshape only when the shape differs (a same-shape Reshape copies the
/// whole tensor on the device, a weight-sized copy per matmul gradient).
Tensor as_shape(const Tensor& t, const Shape& shape) {
  return t.shape() == shape ? t : ops::reshape(t, shape);
}

/// Swaps the last two axes.
Tensor swap_last(const Tensor& t) {
  std::vector<std::int64_t> perm(static_cast<std::size_t>(t.rank()));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return ops::transpose(t, perm);
}
} // namespace

std::vector<Tensor> grad_MatMul(GradContext& c) {
  const Tensor a0 = c.op().input(0), b0 = c.op().input(1);
  // Work in the promoted (rank >= 2) shapes, then return to the operands' own shapes.
  Shape sa = a0.shape(), sb = b0.shape();
  if (sa.size() == 1)
    sa.insert(sa.begin(), 1);
  if (sb.size() == 1)
    sb.push_back(1);
  Tensor a = as_shape(c.fwd_input(0), sa), b = as_shape(c.fwd_input(1), sb);
  Shape sg = c.op().output(0).shape();
  if (a0.rank() == 1)
    sg.insert(sg.end() - (b0.rank() == 1 ? 0 : 1), 1);
  if (b0.rank() == 1)
    sg.push_back(1);
  // The gradients' products accumulate as the forward one did, in the operands' dtype: a
  // float32 result of float16 operands brings its gradient back to float16 first.
  const MatMulAttrs& attrs = c.op().attrs<OpKind::MatMul>();
  const ops::MatMulOptions options{.partials_type = attrs.partials_type,
                                   .output_type = std::nullopt,
                                   .available_memory_proportion =
                                       attrs.available_memory_proportion};
  const auto matmul = [&](const Tensor& x, const Tensor& y) { return ops::matmul(x, y, options); };
  Tensor g = as_shape(c.grad_output(0), sg);
  if (g.dtype() != a0.dtype())
    g = ops::cast(g, a0.dtype());
  std::vector<Tensor> r(2);
  if (c.needs_grad(0))
    r[0] = as_shape(unbroadcast(matmul(g, swap_last(b)), sa), a0.shape());
  if (c.needs_grad(1)) {
    if (sb.size() == 2 && sa.size() > 2) {
      // A matrix applied to a batch (a linear layer on [batch, seq, features]): its gradient
      // is one product over the batch's rows, aᵀg with a and g as matrices, rather than a
      // product per batch element summed afterwards (which writes and reads back a gradient
      // per element: for d_model 256, seq 128, batch 16, an MLP weight's is 16 MB).
      const std::int64_t rows = a.nelms() / sa.back();
      const Tensor a_rows = ops::reshape(a, {rows, sa.back()});
      const Tensor g_rows = ops::reshape(g, {rows, sg.back()});
      r[1] = as_shape(matmul(swap_last(a_rows), g_rows), b0.shape());
    } else {
      r[1] = as_shape(unbroadcast(matmul(swap_last(a), g), sb), b0.shape());
    }
  }
  return r;
}

} // namespace pxl::detail
