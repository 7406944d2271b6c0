// Gradient rules of the element-wise ops (see elementwise.cpp for their definitions).
#include "ops/grad_rule.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/reduce.hpp"

#include <cmath>
#include <numbers>

namespace pxl::detail {

using std::vector;

namespace {
Tensor zero_like(const Tensor& t) { return constant(0.0, t.dtype()); }
} // namespace

vector<Tensor> grad_Negate(GradContext& c) { return {ops::negate(c.grad_output(0))}; }
vector<Tensor> grad_Abs(GradContext& c) {
  const Tensor x = c.fwd_input(0), g = c.grad_output(0);
  return {ops::where(ops::greater(x, zero_like(x)), g, ops::negate(g))};
}
vector<Tensor> grad_Exp(GradContext& c) { return {c.grad_output(0) * c.fwd_output(0)}; }
vector<Tensor> grad_Log(GradContext& c) { return {c.grad_output(0) / c.fwd_input(0)}; }
vector<Tensor> grad_Sqrt(GradContext& c) { return {c.grad_output(0) * 0.5 / c.fwd_output(0)}; }
vector<Tensor> grad_Tanh(GradContext& c) {
  return {ops::tanh_grad(c.fwd_output(0), c.grad_output(0))};
}
vector<Tensor> grad_TanhGrad(GradContext& c) {
  // TanhGrad(y, g) = g(1 - y²): d/dy = -2yg, d/dg = 1 - y².
  const Tensor y = c.fwd_input(0), g = c.fwd_input(1), d = c.grad_output(0);
  vector<Tensor> r(2);
  if (c.needs_grad(0))
    r[0] = d * g * y * -2.0;
  if (c.needs_grad(1))
    r[1] = ops::tanh_grad(y, d);
  return r;
}
vector<Tensor> grad_Sigmoid(GradContext& c) {
  const Tensor y = c.fwd_output(0);
  return {c.grad_output(0) * y * (1.0 - y)};
}
vector<Tensor> grad_Relu(GradContext& c) {
  // From the output, as PopART's ReluGrad: relu(x) > 0 exactly where x > 0 (NaN neither), and
  // the pre-activation is then read by the Relu alone, so that the emulator can fuse a conv's
  // bias and ReLU in training too.
  const Tensor y = c.fwd_output(0);
  return {ops::where(ops::greater(y, zero_like(y)), c.grad_output(0), zero_like(y))};
}
vector<Tensor> grad_Gelu(GradContext& c) {
  return {ops::gelu_grad(c.fwd_input(0), c.grad_output(0))};
}
vector<Tensor> grad_GeluGrad(GradContext& c) {
  // GeluGrad(x, g) = g·gelu'(x). With u = k(x + 0.044715x³) and t = tanh(u),
  // gelu''(x) = (1 - t²)(u' - x·t·u'² + x·u''/2).
  const double k = std::sqrt(2.0 / std::acos(-1.0));
  const Tensor x = c.fwd_input(0), g = c.fwd_input(1), d = c.grad_output(0);
  vector<Tensor> r(2);
  if (c.needs_grad(0)) {
    const Tensor x2 = x * x;
    const Tensor t = ops::tanh((x + x2 * x * 0.044715) * k);
    const Tensor du = (x2 * (3.0 * 0.044715) + 1.0) * k;
    const Tensor d2u = x * (6.0 * 0.044715 * k);
    const Tensor second = (1.0 - t * t) * (du - x * t * du * du + x * d2u * 0.5);
    r[0] = d * g * second;
  }
  if (c.needs_grad(1))
    r[1] = ops::gelu_grad(x, d);
  return r;
}
vector<Tensor> grad_GeluErf(GradContext& c) {
  // d/dx xΦ(x) = Φ(x) + xφ(x). Φ(x) = geluerf(x)/x away from 0 and 1/2 at 0.
  const Tensor x = c.fwd_input(0);
  const Tensor is_zero = ops::equal(x, zero_like(x));
  const Tensor safe_x = ops::where(is_zero, constant(1.0, x.dtype()), x);
  const Tensor cdf = ops::where(is_zero, constant(0.5, x.dtype()), c.fwd_output(0) / safe_x);
  const Tensor pdf = ops::exp(x * x * -0.5) * (1.0 / std::sqrt(2.0 * std::acos(-1.0)));
  return {c.grad_output(0) * (cdf + x * pdf)};
}
vector<Tensor> grad_Erf(GradContext& c) {
  // d/dx erf(x) = 2/√π · exp(-x²).
  const Tensor x = c.fwd_input(0);
  return {c.grad_output(0) * ops::exp(x * x * -1.0) * (2.0 / std::sqrt(std::acos(-1.0)))};
}
vector<Tensor> grad_Log2(GradContext& c) {
  return {c.grad_output(0) / (c.fwd_input(0) * std::numbers::ln2)};
}
vector<Tensor> grad_Swish(GradContext& c) {
  // d/dx x·s(x) = s + x·s(1 - s) = s(1 + x(1 - s)), s = sigmoid(x).
  const Tensor x = c.fwd_input(0);
  const Tensor s = ops::sigmoid(x);
  return {c.grad_output(0) * s * (x * (1.0 - s) + 1.0)};
}
vector<Tensor> grad_Sin(GradContext& c) { return {c.grad_output(0) * ops::cos(c.fwd_input(0))}; }
vector<Tensor> grad_Cos(GradContext& c) {
  return {ops::negate(c.grad_output(0) * ops::sin(c.fwd_input(0)))};
}
// Zero almost everywhere (PyTorch's choice at 0 too): nothing flows back.
vector<Tensor> grad_Sign(GradContext&) { return {Tensor{}}; }
vector<Tensor> grad_Clip(GradContext& c) {
  // Passes where min <= x <= max, bounds included (PyTorch's clamp); NaN passes nothing.
  const auto& s = c.op().attrs<OpKind::Clip>();
  const Tensor x = c.fwd_input(0), g = c.grad_output(0);
  const Tensor inside = ops::logical_and(ops::greater_equal(x, constant(s.a, x.dtype())),
                                         ops::less_equal(x, constant(s.b, x.dtype())));
  return {ops::where(inside, g, zero_like(g))};
}
vector<Tensor> grad_Cast(GradContext& c) {
  const Tensor x = c.op().input(0);
  if (!is_floating_point(x.dtype()))
    return {Tensor{}};
  return {ops::cast(c.grad_output(0), x.dtype())};
}
vector<Tensor> grad_Identity(GradContext& c) { return {c.grad_output(0)}; }
/// detach stops gradients: autodiff never asks, and nothing flows if it did.
vector<Tensor> grad_Detach(GradContext&) { return {Tensor{}}; }

vector<Tensor> grad_DetachInplace(GradContext&) { return {Tensor{}}; }

vector<Tensor> grad_Add(GradContext& c) {
  const Tensor g = c.grad_output(0);
  return {unbroadcast(g, c.op().input(0).shape()), unbroadcast(g, c.op().input(1).shape())};
}
vector<Tensor> grad_Sub(GradContext& c) {
  const Tensor g = c.grad_output(0);
  return {unbroadcast(g, c.op().input(0).shape()),
          unbroadcast(ops::negate(g), c.op().input(1).shape())};
}
vector<Tensor> grad_Mul(GradContext& c) {
  const Tensor g = c.grad_output(0);
  vector<Tensor> r(2);
  if (c.needs_grad(0))
    r[0] = unbroadcast(g * c.fwd_input(1), c.op().input(0).shape());
  if (c.needs_grad(1))
    r[1] = unbroadcast(g * c.fwd_input(0), c.op().input(1).shape());
  return r;
}
vector<Tensor> grad_Div(GradContext& c) {
  const Tensor g = c.grad_output(0), b = c.fwd_input(1);
  vector<Tensor> r(2);
  if (c.needs_grad(0))
    r[0] = unbroadcast(g / b, c.op().input(0).shape());
  if (c.needs_grad(1))
    r[1] = unbroadcast(ops::negate(g * c.fwd_output(0) / b), c.op().input(1).shape());
  return r;
}
vector<Tensor> grad_Pow(GradContext& c) {
  const Tensor g = c.grad_output(0), a = c.fwd_input(0), b = c.fwd_input(1);
  vector<Tensor> r(2);
  if (c.needs_grad(0))
    r[0] = unbroadcast(g * b * ops::pow(a, b - 1.0), c.op().input(0).shape());
  if (c.needs_grad(1))
    r[1] = unbroadcast(g * ops::log(a) * c.fwd_output(0), c.op().input(1).shape());
  return r;
}
vector<Tensor> grad_Fmod(GradContext& c) {
  // fmod(a, b) = a - trunc(a / b)·b, trunc piecewise constant: d/da = 1, d/db = -trunc(a / b).
  const Tensor g = c.grad_output(0);
  vector<Tensor> r(2);
  if (c.needs_grad(0))
    r[0] = unbroadcast(g, c.op().input(0).shape());
  if (c.needs_grad(1)) {
    const Tensor a = c.fwd_input(0), b = c.fwd_input(1);
    const Tensor q = (a - c.fwd_output(0)) / b; // trunc(a / b), to rounding
    r[1] = unbroadcast(ops::negate(g * q), c.op().input(1).shape());
  }
  return r;
}
vector<Tensor> grad_Maximum(GradContext& c) {
  // Ties send the gradient to the first operand.
  const Tensor g = c.grad_output(0), a = c.fwd_input(0), b = c.fwd_input(1);
  const Tensor b_wins = ops::greater(b, a);
  const Tensor zero = zero_like(g);
  return {unbroadcast(ops::where(b_wins, zero, g), c.op().input(0).shape()),
          unbroadcast(ops::where(b_wins, g, zero), c.op().input(1).shape())};
}
vector<Tensor> grad_Minimum(GradContext& c) {
  // Ties send the gradient to the first operand.
  const Tensor g = c.grad_output(0), a = c.fwd_input(0), b = c.fwd_input(1);
  const Tensor b_wins = ops::less(b, a);
  const Tensor zero = zero_like(g);
  return {unbroadcast(ops::where(b_wins, zero, g), c.op().input(0).shape()),
          unbroadcast(ops::where(b_wins, g, zero), c.op().input(1).shape())};
}
vector<Tensor> grad_Where(GradContext& c) {
  const Tensor g = c.grad_output(0), cond = c.fwd_input(0);
  const Tensor zero = zero_like(g);
  return {Tensor{}, unbroadcast(ops::where(cond, g, zero), c.op().input(1).shape()),
          unbroadcast(ops::where(cond, zero, g), c.op().input(2).shape())};
}

} // namespace pxl::detail
