// Gradient rules of the nn ops.
#include "ops/grad_rule.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/nn.hpp"
#include "pxl/ops/reduce.hpp"
#include "pxl/ops/shape.hpp"

namespace pxl::detail {

using std::vector;

vector<Tensor> grad_Softmax(GradContext& c) {
  const auto axis = c.op().attrs_as<AxisAttrs>().axis;
  return {ops::softmax_grad(c.fwd_output(0), c.grad_output(0), axis)};
}

vector<Tensor> grad_SoftmaxGrad(GradContext& c) {
  // out = y·(g − S), S = Σ g·y: d out/dy gives g·(d − Σ d·y) − d·S; d out/dg is softmax_grad.
  const auto axis = c.op().attrs_as<AxisAttrs>().axis;
  const std::vector<std::int64_t> along{axis};
  const Tensor y = c.fwd_input(0), g = c.fwd_input(1), d = c.grad_output(0);
  vector<Tensor> r(2);
  if (c.needs_grad(0))
    r[0] = g * (d - ops::sum(d * y, along, true)) - d * ops::sum(g * y, along, true);
  if (c.needs_grad(1))
    r[1] = ops::softmax_grad(y, d, axis);
  return r;
}

vector<Tensor> grad_LogSoftmax(GradContext& c) {
  const auto axis = c.op().attrs_as<AxisAttrs>().axis;
  const Tensor y = c.fwd_output(0), g = c.grad_output(0);
  return {g - ops::exp(y) * ops::sum(g, std::vector<std::int64_t>{axis}, true)};
}

vector<Tensor> grad_LayerNorm(GradContext& c) {
  const double eps = c.op().attrs_as<ScalarAttrs>().a;
  const Tensor x = c.fwd_input(0), w = c.fwd_input(1), g = c.grad_output(0);
  std::vector<std::int64_t> leading;
  for (std::int64_t a = 0; a + 1 < x.rank(); ++a)
    leading.push_back(a);
  auto sum_leading = [&](const Tensor& t) { return leading.empty() ? t : ops::sum(t, leading); };
  vector<Tensor> r(3);
  if (c.needs_grad(0) || c.needs_grad(1)) {
    const auto [dx, weighted] = ops::layer_norm_grad(x, w, g, eps);
    if (c.needs_grad(0))
      r[0] = dx;
    if (c.needs_grad(1))
      r[1] = sum_leading(weighted);
  }
  if (c.needs_grad(2))
    r[2] = sum_leading(g);
  return r;
}

vector<Tensor> grad_Dropout(GradContext& c) {
  // The mask is a function of the seed and the element index: the same seed gives it again.
  return {ops::dropout(c.grad_output(0), c.fwd_input(1), c.op().attrs_as<ScalarAttrs>().a),
          Tensor{}};
}

vector<Tensor> grad_ShapedDropout(GradContext& c) {
  const auto& a = c.op().attrs<OpKind::ShapedDropout>();
  return {ops::shaped_dropout(c.grad_output(0), c.fwd_input(1), a.shape, a.ratio), Tensor{}};
}

vector<Tensor> grad_NllLoss(GradContext& c) {
  const auto& attrs = c.op().attrs_as<NllAttrs>();
  const Tensor probs = c.op().input(0);
  const Tensor labels = c.fwd_input(1);
  const auto classes = probs.shape().back();
  const DType dt = probs.dtype();
  Tensor mask = ops::onehot(labels, classes, constant(HostTensor({0.f, 1.f}, {2}), dt), -1);
  Tensor valid = constant(1.0, dt);
  if (attrs.ignore_index) {
    valid =
        ops::cast(ops::logical_not(ops::equal(labels, constant(*attrs.ignore_index, int32))), dt);
    mask = mask * ops::unsqueeze(valid, {-1});
  }
  Tensor g = c.grad_output(0);
  if (attrs.reduction == Reduction::none) {
    g = ops::unsqueeze(g, {-1});
  } else if (attrs.reduction == Reduction::mean) {
    const Tensor count = attrs.ignore_index ? ops::maximum(ops::sum(valid), constant(1.0, dt))
                                            : constant(static_cast<double>(labels.nelms()), dt);
    g = g / count;
  }
  Tensor d = ops::negate(mask * g);
  if (!attrs.log_prob)
    d = d / c.fwd_input(0);
  return {d, Tensor{}};
}

} // namespace pxl::detail
