// Gradient rules of scaled_add and the in-place updates. An in-place op's output 0 is the new
// version of its input 0's buffer: autodiff routes the gradient of every later read of that
// buffer to it (see lib/transforms/autodiff.cpp), and these rules pass it on to the values
// the op read.
#include "ops/grad_rule.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/shape.hpp"

namespace pxl::detail {

using std::vector;

namespace {
/// g·f, without an op when f is 1.
Tensor scaled(const Tensor& g, double f) { return f == 1.0 ? g : g * f; }

/// t' = a·t + b·x (x broadcast to t's shape).
vector<Tensor> scaled_update(GradContext& c, double a, double b) {
  const Tensor g = c.grad_output(0);
  return {scaled(g, a), unbroadcast(scaled(g, b), c.op().input(1).shape())};
}
} // namespace

vector<Tensor> grad_ScaledAdd(GradContext& c) {
  const auto& s = c.op().attrs_as<ScalarAttrs>();
  const Tensor g = c.grad_output(0);
  return {unbroadcast(scaled(g, s.a), c.op().input(0).shape()),
          unbroadcast(scaled(g, s.b), c.op().input(1).shape())};
}

vector<Tensor> grad_AddInplace(GradContext& c) { return scaled_update(c, 1.0, 1.0); }

vector<Tensor> grad_SubInplace(GradContext& c) { return scaled_update(c, 1.0, -1.0); }

// t' = t·x: dt = g·x, dx = g·t with t's value before the update (saved by autodiff).
vector<Tensor> grad_MulInplace(GradContext& c) {
  const Tensor g = c.grad_output(0);
  vector<Tensor> grads(2);
  if (c.needs_grad(0))
    grads[0] = g * c.fwd_input(1);
  if (c.needs_grad(1))
    grads[1] = unbroadcast(g * c.fwd_input(0), c.op().input(1).shape());
  return grads;
}

vector<Tensor> grad_ScaledAddInplace(GradContext& c) {
  const auto& s = c.op().attrs_as<ScalarAttrs>();
  return scaled_update(c, s.a, s.b);
}

vector<Tensor> grad_Accumulate(GradContext& c) {
  return scaled_update(c, 1.0, c.op().attrs_as<ScalarAttrs>().a);
}

// t' = x: the old value of t does not reach the result.
vector<Tensor> grad_CopyVarUpdate(GradContext& c) { return {Tensor{}, c.grad_output(0)}; }

vector<Tensor> grad_AccumulatorScale(GradContext& c) {
  return {scaled(c.grad_output(0), c.op().attrs_as<ScalarAttrs>().a)};
}

vector<Tensor> grad_AccumulatorZero(GradContext&) { return {Tensor{}}; }

vector<Tensor> grad_AccumulateMovingAverage(GradContext& c) {
  const double f = c.op().attrs_as<ScalarAttrs>().a;
  return scaled_update(c, f, 1.0 - f);
}

// t' = f·t + (1 − f)·x²: dt = f·g, dx = 2(1 − f)·x·g.
vector<Tensor> grad_AccumulateMovingAverageSquare(GradContext& c) {
  const double f = c.op().attrs_as<ScalarAttrs>().a;
  const Tensor g = c.grad_output(0);
  vector<Tensor> grads(2);
  if (c.needs_grad(0))
    grads[0] = scaled(g, f);
  if (c.needs_grad(1))
    grads[1] = unbroadcast(g * c.fwd_input(1) * (2.0 * (1.0 - f)), c.op().input(1).shape());
  return grads;
}

// t' = t + f·x²: dt = g, dx = 2f·x·g.
vector<Tensor> grad_AccumulateSquare(GradContext& c) {
  const double f = c.op().attrs_as<ScalarAttrs>().a;
  const Tensor g = c.grad_output(0);
  vector<Tensor> grads(2);
  if (c.needs_grad(0))
    grads[0] = g;
  if (c.needs_grad(1))
    grads[1] = unbroadcast(g * c.fwd_input(1) * (2.0 * f), c.op().input(1).shape());
  return grads;
}

// t' = s/(s + 1)·t + 1/(s + 1)·x, with s the constant step or input 2 (which gets no gradient).
vector<Tensor> grad_AccumulateMean(GradContext& c) {
  if (c.op().num_inputs() == 2) {
    const double s = c.op().attrs_as<ScalarAttrs>().a;
    return scaled_update(c, s / (s + 1.0), 1.0 / (s + 1.0));
  }
  const Tensor g = c.grad_output(0);
  const Tensor s = ops::reshape(ops::cast(c.fwd_input(2), g.dtype()), Shape{});
  const Tensor inv = 1.0 / (s + 1.0);
  vector<Tensor> grads(3);
  if (c.needs_grad(0))
    grads[0] = g * (s * inv);
  if (c.needs_grad(1))
    grads[1] = unbroadcast(g * inv, c.op().input(1).shape());
  return grads;
}

// t' = t + f·scatter(x): dt = g, dx = f·gather(g) (zero where an index is out of range, as
// the update skipped it); the indices have none.
vector<Tensor> grad_SparseAccumulate(GradContext& c) {
  const auto& a = c.op().attrs<OpKind::SparseAccumulate>();
  const Tensor g = c.grad_output(0);
  vector<Tensor> grads(3);
  if (c.needs_grad(0))
    grads[0] = g;
  if (c.needs_grad(1))
    grads[1] = scaled(ops::gather(g, c.fwd_input(2), a.axis), a.factor);
  return grads;
}

} // namespace pxl::detail
