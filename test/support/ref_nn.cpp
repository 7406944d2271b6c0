// Reference nn kernels: softmax family, layer norm, dropout and the negative log-likelihood
// losses, all in double.
#include "ref_util.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/random.hpp"

namespace pxl::testing {

namespace {

/// Values of `x` along `axis` through the element at `index` (whose entry at `axis` is
/// ignored).
std::vector<double> lane(const HostTensor& x, Shape index, std::size_t axis) {
  std::vector<double> v(static_cast<std::size_t>(x.shape()[axis]));
  for (std::size_t j = 0; j < v.size(); ++j) {
    index[axis] = static_cast<std::int64_t>(j);
    v[j] = ref::load(x, ref::ravel(index, x.shape()));
  }
  return v;
}

/// max + log(sum(exp(v - max))): the stable log-sum-exp.
double log_sum_exp(const std::vector<double>& v) {
  double m = -INFINITY;
  for (double e : v)
    m = std::max(m, e);
  double s = 0.0;
  for (double e : v)
    s += std::exp(e - m);
  return m + std::log(s);
}

/// Element i of a softmax-family op: f(x_i, log-sum-exp of its lane).
template <typename F>
void along_axis(const Op& op, const HostTensor& x, HostTensor& y, F f) {
  const auto axis = static_cast<std::size_t>(op.attrs_as<AxisAttrs>().axis);
  for (std::int64_t i = 0; i < y.nelms(); ++i) {
    const Shape index = ref::unravel(i, x.shape());
    ref::store(y, i, f(ref::load(x, i), log_sum_exp(lane(x, index, axis))));
  }
}

/// One sample's view of an nll op: its label, whether it adds to the loss (a class, not
/// ignored) and whether it counts in the mean's divisor (not ignored; PopART's rule).
struct Sample {
  std::int64_t label;
  bool counted;
  bool in_divisor;
};

Sample sample(const NllAttrs& attrs, const HostTensor& labels, std::int64_t s,
              std::int64_t classes) {
  const auto label = static_cast<std::int64_t>(ref::load(labels, s));
  if (attrs.ignore_index && label == *attrs.ignore_index)
    return {label, false, false};
  return {label, label >= 0 && label < classes, true};
}

/// Per-sample losses (0 for ignored and out-of-range labels) and the mean's divisor.
std::pair<std::vector<double>, std::int64_t> nll(const NllAttrs& attrs, const HostTensor& probs,
                                                 const HostTensor& labels) {
  const std::int64_t classes = probs.shape().back();
  std::vector<double> losses(static_cast<std::size_t>(labels.nelms()), 0.0);
  std::int64_t count = 0;
  for (std::int64_t s = 0; s < labels.nelms(); ++s) {
    const auto [label, counted, in_divisor] = sample(attrs, labels, s, classes);
    count += in_divisor ? 1 : 0;
    if (!counted)
      continue;
    const double p = ref::load(probs, s * classes + label);
    losses[static_cast<std::size_t>(s)] = attrs.log_prob ? -p : -std::log(p);
  }
  return {losses, count};
}

void store_loss(const NllAttrs& attrs, const std::vector<double>& losses, std::int64_t count,
                HostTensor& y) {
  if (attrs.reduction == Reduction::none) {
    for (std::size_t s = 0; s < losses.size(); ++s)
      ref::store(y, static_cast<std::int64_t>(s), losses[s]);
    return;
  }
  double total = 0.0;
  for (double l : losses)
    total += l;
  if (attrs.reduction == Reduction::mean)
    total = count == 0 ? 0.0 : total / static_cast<double>(count);
  ref::store(y, 0, total);
}

/// The mean of row `row` of `x` viewed as rows of `n`, and 1/sqrt(population variance + eps).
std::pair<double, double> row_mean_rstd(const HostTensor& x, std::int64_t row, std::int64_t n,
                                        double eps) {
  double mean = 0.0, var = 0.0;
  for (std::int64_t j = 0; j < n; ++j)
    mean += ref::load(x, row * n + j);
  mean /= static_cast<double>(n);
  for (std::int64_t j = 0; j < n; ++j) {
    const double d = ref::load(x, row * n + j) - mean;
    var += d * d;
  }
  return {mean, 1.0 / std::sqrt(var / static_cast<double>(n) + eps)};
}

} // namespace

PXL_REF_KERNEL(Softmax) {
  along_axis(op, *inputs[0], *outputs[0], [](double x, double lse) { return std::exp(x - lse); });
}

PXL_REF_KERNEL(LogSoftmax) {
  along_axis(op, *inputs[0], *outputs[0], [](double x, double lse) { return x - lse; });
}

PXL_REF_KERNEL(LayerNorm) {
  const HostTensor& x = *inputs[0];
  const HostTensor& weight = *inputs[1];
  const HostTensor& bias = *inputs[2];
  HostTensor& y = *outputs[0];
  const double eps = op.attrs_as<ScalarAttrs>().a;
  const std::int64_t n = x.shape().back();
  for (std::int64_t i = 0; i < y.nelms(); ++i) {
    const std::int64_t row = i / n, col = i % n;
    const auto [mean, rstd] = row_mean_rstd(x, row, n, eps);
    const double normed = (ref::load(x, i) - mean) * rstd;
    ref::store(y, i, normed * ref::load(weight, col) + ref::load(bias, col));
  }
}

PXL_REF_KERNEL(SoftmaxGrad) {
  const HostTensor& y = *inputs[0];
  const HostTensor& g = *inputs[1];
  const auto axis = static_cast<std::size_t>(op.attrs_as<AxisAttrs>().axis);
  for (std::int64_t i = 0; i < y.nelms(); ++i) {
    const Shape index = ref::unravel(i, y.shape());
    const auto ys = lane(y, index, axis), gs = lane(g, index, axis);
    double s = 0.0;
    for (std::size_t j = 0; j < ys.size(); ++j)
      s += gs[j] * ys[j];
    ref::store(*outputs[0], i, ref::load(y, i) * (ref::load(g, i) - s));
  }
}
PXL_REF_KERNEL(LayerNormGrad) {
  // The textbook layer-norm backward: dx = rstd·(dx̂ − mean(dx̂) − x̂·mean(dx̂·x̂)), dx̂ = g·w.
  const HostTensor& x = *inputs[0];
  const HostTensor& weight = *inputs[1];
  const HostTensor& g = *inputs[2];
  const double eps = op.attrs_as<ScalarAttrs>().a;
  const std::int64_t n = x.shape().back();
  for (std::int64_t row = 0; row < x.nelms() / n; ++row) {
    const auto [mean, rstd] = row_mean_rstd(x, row, n, eps);
    std::vector<double> xhat(static_cast<std::size_t>(n)), dxhat(xhat.size());
    double mean_dxhat = 0.0, mean_dxhat_xhat = 0.0;
    for (std::int64_t j = 0; j < n; ++j) {
      const auto k = static_cast<std::size_t>(j);
      xhat[k] = (ref::load(x, row * n + j) - mean) * rstd;
      dxhat[k] = ref::load(g, row * n + j) * ref::load(weight, j);
      mean_dxhat += dxhat[k] / static_cast<double>(n);
      mean_dxhat_xhat += dxhat[k] * xhat[k] / static_cast<double>(n);
    }
    for (std::int64_t j = 0; j < n; ++j) {
      const auto k = static_cast<std::size_t>(j);
      ref::store(*outputs[0], row * n + j,
                 rstd * (dxhat[k] - mean_dxhat - xhat[k] * mean_dxhat_xhat));
      ref::store(*outputs[1], row * n + j, ref::load(g, row * n + j) * xhat[k]);
    }
  }
}
PXL_REF_KERNEL(Dropout) {
  const HostTensor& x = *inputs[0];
  HostTensor& y = *outputs[0];
  const auto [s0, s1] = ref::seed_words(*inputs[1]);
  const double p = op.attrs_as<ScalarAttrs>().a;
  for (std::int64_t i = 0; i < y.nelms(); ++i) {
    const bool keep = pxl::detail::random_uniform01(s0, s1, static_cast<std::uint64_t>(i)) >= p;
    ref::store(y, i, keep ? ref::load(x, i) / (1.0 - p) : 0.0);
  }
}

PXL_REF_KERNEL(ShapedDropout) {
  const HostTensor& x = *inputs[0];
  HostTensor& y = *outputs[0];
  const auto [s0, s1] = ref::seed_words(*inputs[1]);
  const auto& a = op.attrs<OpKind::ShapedDropout>();
  for (std::int64_t i = 0; i < y.nelms(); ++i) {
    const auto m = ref::broadcast_source(ref::unravel(i, y.shape()), a.shape);
    const bool keep =
        pxl::detail::random_uniform01(s0, s1, static_cast<std::uint64_t>(m)) >= a.ratio;
    ref::store(y, i, keep ? ref::load(x, i) / (1.0 - a.ratio) : 0.0);
  }
}

PXL_REF_KERNEL(NllLoss) {
  const auto& attrs = op.attrs_as<NllAttrs>();
  const auto [losses, count] = nll(attrs, *inputs[0], *inputs[1]);
  store_loss(attrs, losses, count, *outputs[0]);
}

PXL_REF_KERNEL(NllLossWithSoftmaxGrad) {
  const auto& attrs = op.attrs_as<NllAttrs>();
  const HostTensor& probs = *inputs[0];
  const HostTensor& labels = *inputs[1];
  const auto [losses, count] = nll(attrs, probs, labels);
  store_loss(attrs, losses, count, *outputs[0]);
  // d(loss)/d(logits) of a softmax then nll: probs - onehot(label), per counted sample.
  const std::int64_t classes = probs.shape().back();
  const double scale =
      attrs.loss_grad /
      (attrs.reduction == Reduction::mean && count > 0 ? static_cast<double>(count) : 1.0);
  HostTensor& dlogits = *outputs[1];
  for (std::int64_t i = 0; i < dlogits.nelms(); ++i) {
    const std::int64_t s = i / classes, c = i % classes;
    const auto [label, counted, in_divisor] = sample(attrs, labels, s, classes);
    const double g = counted ? scale * (ref::load(probs, i) - (c == label ? 1.0 : 0.0)) : 0.0;
    ref::store(dlogits, i, g);
  }
}

} // namespace pxl::testing
