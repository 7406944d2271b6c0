// Reference kernels of in-place updates, scaled_add and adam_updater: output 0 of an in-place op
// is its input 0 (the evaluator aliases them), so these write through outputs[0].
#include "ref_util.hpp"

#include <cmath>

namespace pxl::testing {

namespace {
/// out[i] = f(t[i], x[broadcast i]) over out's elements, in double.
template <typename F>
void binary_update(const HostTensor& t, const HostTensor& x, HostTensor& out, F f) {
  for (std::int64_t i = 0; i < out.nelms(); ++i) {
    const Shape index = ref::unravel(i, out.shape());
    ref::store(out, i,
               f(ref::load(t, ref::broadcast_source(index, t.shape())),
                 ref::load(x, ref::broadcast_source(index, x.shape()))));
  }
}
} // namespace

void ref_AddInplace(ReferenceEvaluator&, const Op&, std::span<const HostTensor* const> inputs,
                    std::span<HostTensor* const> outputs) {
  binary_update(*inputs[0], *inputs[1], *outputs[0], [](double a, double b) { return a + b; });
}

void ref_SubInplace(ReferenceEvaluator&, const Op&, std::span<const HostTensor* const> inputs,
                    std::span<HostTensor* const> outputs) {
  binary_update(*inputs[0], *inputs[1], *outputs[0], [](double a, double b) { return a - b; });
}

void ref_MulInplace(ReferenceEvaluator&, const Op&, std::span<const HostTensor* const> inputs,
                    std::span<HostTensor* const> outputs) {
  if (is_floating_point(outputs[0]->dtype())) {
    binary_update(*inputs[0], *inputs[1], *outputs[0], [](double a, double b) { return a * b; });
    return;
  }
  // An int32 product needs up to 62 bits, more than a double holds exactly: wrap it in int64.
  binary_update(*inputs[0], *inputs[1], *outputs[0], [](double a, double b) {
    const auto p = static_cast<std::int64_t>(a) * static_cast<std::int64_t>(b);
    return static_cast<double>(static_cast<std::int32_t>(static_cast<std::uint32_t>(p)));
  });
}

void ref_ScaledAdd(ReferenceEvaluator&, const Op& op, std::span<const HostTensor* const> inputs,
                   std::span<HostTensor* const> outputs) {
  const auto attrs = op.attrs_as<ScalarAttrs>();
  const double a = attrs.a, b = attrs.b;
  binary_update(*inputs[0], *inputs[1], *outputs[0],
                [a, b](double x, double y) { return a * x + b * y; });
}

void ref_ScaledAddInplace(ReferenceEvaluator& ev, const Op& op,
                          std::span<const HostTensor* const> inputs,
                          std::span<HostTensor* const> outputs) {
  ref_ScaledAdd(ev, op, inputs, outputs);
}

void ref_Accumulate(ReferenceEvaluator&, const Op& op, std::span<const HostTensor* const> inputs,
                    std::span<HostTensor* const> outputs) {
  const double f = op.attrs_as<ScalarAttrs>().a;
  binary_update(*inputs[0], *inputs[1], *outputs[0], [f](double t, double x) { return t + f * x; });
}

void ref_CopyVarUpdate(ReferenceEvaluator&, const Op&, std::span<const HostTensor* const> inputs,
                       std::span<HostTensor* const> outputs) {
  binary_update(*inputs[0], *inputs[1], *outputs[0], [](double, double x) { return x; });
}

void ref_AccumulatorScale(ReferenceEvaluator&, const Op& op,
                          std::span<const HostTensor* const> inputs,
                          std::span<HostTensor* const> outputs) {
  const double f = op.attrs_as<ScalarAttrs>().a;
  for (std::int64_t i = 0; i < outputs[0]->nelms(); ++i)
    ref::store(*outputs[0], i, f * ref::load(*inputs[0], i));
}

void ref_AccumulatorZero(ReferenceEvaluator&, const Op&, std::span<const HostTensor* const>,
                         std::span<HostTensor* const> outputs) {
  for (std::int64_t i = 0; i < outputs[0]->nelms(); ++i)
    ref::store(*outputs[0], i, 0.0);
}

void ref_AccumulateMovingAverage(ReferenceEvaluator&, const Op& op,
                                 std::span<const HostTensor* const> inputs,
                                 std::span<HostTensor* const> outputs) {
  const double f = op.attrs_as<ScalarAttrs>().a;
  binary_update(*inputs[0], *inputs[1], *outputs[0],
                [f](double t, double x) { return f * t + (1.0 - f) * x; });
}

void ref_AccumulateMovingAverageSquare(ReferenceEvaluator&, const Op& op,
                                       std::span<const HostTensor* const> inputs,
                                       std::span<HostTensor* const> outputs) {
  const double f = op.attrs_as<ScalarAttrs>().a;
  binary_update(*inputs[0], *inputs[1], *outputs[0],
                [f](double t, double x) { return f * t + (1.0 - f) * x * x; });
}

void ref_AdamUpdater(ReferenceEvaluator&, const Op& op, std::span<const HostTensor* const> inputs,
                     std::span<HostTensor* const> outputs) {
  const auto& a = op.attrs_as<AdamUpdaterAttrs>();
  double c1 = 1.0, c2 = 1.0; // the bias corrections' divisors
  if (a.bias_correction) {
    const double t = ref::load(*inputs[2], 0);
    c1 = 1.0 - std::pow(a.beta1, t);
    c2 = 1.0 - std::pow(a.beta2, t);
  }
  // A weight given without a decay sets the updater's dtype only.
  const HostTensor* w = a.weight && a.weight_decay != 0.0 ? inputs.back() : nullptr;
  for (std::int64_t i = 0; i < outputs[0]->nelms(); ++i) {
    const double m_hat = ref::load(*inputs[0], i) / c1, v_hat = ref::load(*inputs[1], i) / c2;
    double u = m_hat / (std::sqrt(v_hat) + a.epsilon);
    if (w)
      u += a.weight_decay * ref::load(*w, i);
    ref::store(*outputs[0], i, u);
  }
}

} // namespace pxl::testing
