// Reference kernels of in-place updates, scaled_add and the updaters: output 0 of an in-place op
// is its input 0 (the evaluator aliases them), so these write through outputs[0].
#include "ref_util.hpp"

#include <algorithm>
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

namespace {
/// adam_updater's and (`adamax`) adamax_updater's formula, in double.
void updater(const Op& op, std::span<const HostTensor* const> inputs, HostTensor& out,
             bool adamax) {
  const auto& a = op.attrs_as<AdamUpdaterAttrs>();
  double c1 = 1.0, c2 = 1.0; // the bias corrections' divisors
  if (a.bias_correction) {
    const double t = ref::load(*inputs[2], 0);
    c1 = 1.0 - std::pow(a.beta1, t);
    if (!adamax)
      c2 = 1.0 - std::pow(a.beta2, t);
  }
  // A weight given without a decay sets the updater's dtype only.
  const HostTensor* w = a.weight && a.weight_decay != 0.0 ? inputs.back() : nullptr;
  for (std::int64_t i = 0; i < out.nelms(); ++i) {
    const double m_hat = ref::load(*inputs[0], i) / c1, v_hat = ref::load(*inputs[1], i) / c2;
    double u = m_hat / ((adamax ? v_hat : std::sqrt(v_hat)) + a.epsilon);
    if (w)
      u += a.weight_decay * ref::load(*w, i);
    ref::store(out, i, u);
  }
}
} // namespace

PXL_REF_KERNEL(AdamUpdater) { updater(op, inputs, *outputs[0], false); }

PXL_REF_KERNEL(AdamaxUpdater) { updater(op, inputs, *outputs[0], true); }

PXL_REF_KERNEL(AccumulateSquare) {
  const double f = op.attrs_as<ScalarAttrs>().a;
  binary_update(*inputs[0], *inputs[1], *outputs[0],
                [f](double t, double x) { return t + f * x * x; });
}

PXL_REF_KERNEL(AccumulateMean) {
  const double s = inputs.size() > 2 ? ref::load(*inputs[2], 0) : op.attrs_as<ScalarAttrs>().a;
  binary_update(*inputs[0], *inputs[1], *outputs[0],
                [s](double t, double x) { return s / (s + 1.0) * t + 1.0 / (s + 1.0) * x; });
}

PXL_REF_KERNEL(AdamVarUpdate) {
  const auto& a = op.attrs_as<ScalarAttrs>();
  const double r1 = ref::load(*inputs[2], 0), r2 = ref::load(*inputs[3], 0);
  double ratio = 1.0;
  if (r1 != 0.0 && r2 != 0.0)
    ratio = std::min(std::sqrt(r1), a.b) / std::sqrt(r2);
  const double step = a.a * ratio;
  binary_update(*inputs[0], *inputs[1], *outputs[0],
                [step](double t, double x) { return t + -step * x; });
}

PXL_REF_KERNEL(SparseAccumulate) {
  // Element by element of t: the sum of the slices of x whose index selects it.
  const auto& a = op.attrs<OpKind::SparseAccumulate>();
  const HostTensor &t = *inputs[0], &x = *inputs[1], &indices = *inputs[2];
  const auto axis = static_cast<std::size_t>(a.axis);
  for (std::int64_t e = 0; e < t.nelms(); ++e) {
    const Shape at = ref::unravel(e, t.shape());
    double sum = 0.0;
    bool selected = false;
    for (std::int64_t q = 0; q < indices.nelms(); ++q) {
      if (static_cast<std::int64_t>(ref::load(indices, q)) != at[axis])
        continue;
      Shape from(at.begin(), at.begin() + a.axis);
      const Shape iq = ref::unravel(q, indices.shape());
      from.insert(from.end(), iq.begin(), iq.end());
      from.insert(from.end(), at.begin() + a.axis + 1, at.end());
      sum += ref::load(x, ref::ravel(from, x.shape()));
      selected = true;
    }
    ref::store(*outputs[0], e, selected ? ref::load(t, e) + a.factor * sum : ref::load(t, e));
  }
}

} // namespace pxl::testing
