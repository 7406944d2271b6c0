// Reference normalisations, straight from the definitions in double: per-channel statistics
// over N and the spatial axes (batch norm) or over each (image, group) (group norm), the biased
// variance, each output rounded once.
#include "ref_util.hpp"

#include <cmath>
#include <vector>

namespace pxl::testing {

// Named, so that in a unity batch these never meet other references' helpers.
namespace ref_norm {

/// An (N, C, spatial...) tensor's geometry.
struct Nc {
  std::int64_t n, c, spatial;
  explicit Nc(const Shape& s) : n(s[0]), c(s[1]), spatial(nelms(std::span(s).subspan(2))) {}
  std::int64_t at(std::int64_t image, std::int64_t channel, std::int64_t p) const {
    return (image * c + channel) * spatial + p;
  }
};

/// The mean and biased variance of each channel of `x`.
std::pair<std::vector<double>, std::vector<double>> channel_stats(const HostTensor& x) {
  const Nc g(x.shape());
  std::vector<double> mean(static_cast<std::size_t>(g.c)), var(mean.size());
  const auto m = static_cast<double>(g.n * g.spatial);
  for (std::int64_t ch = 0; ch < g.c; ++ch) {
    double s = 0.0, s2 = 0.0;
    for (std::int64_t i = 0; i < g.n; ++i)
      for (std::int64_t p = 0; p < g.spatial; ++p)
        s += ref::load(x, g.at(i, ch, p));
    const double mu = s / m;
    for (std::int64_t i = 0; i < g.n; ++i)
      for (std::int64_t p = 0; p < g.spatial; ++p) {
        const double d = ref::load(x, g.at(i, ch, p)) - mu;
        s2 += d * d;
      }
    mean[static_cast<std::size_t>(ch)] = mu;
    var[static_cast<std::size_t>(ch)] = s2 / m;
  }
  return {mean, var};
}

/// y = (x − mean)·rstd·scale + bias, with per-channel statistics.
void normalise(const HostTensor& x, const HostTensor& scale, const HostTensor& bias,
               const std::vector<double>& mean, const std::vector<double>& var, double eps,
               HostTensor& y) {
  const Nc g(x.shape());
  for (std::int64_t i = 0; i < x.nelms(); ++i) {
    const std::int64_t ch = i / g.spatial % g.c;
    const auto k = static_cast<std::size_t>(ch);
    ref::store(y, i,
               (ref::load(x, i) - mean[k]) / std::sqrt(var[k] + eps) * ref::load(scale, ch) +
                   ref::load(bias, ch));
  }
}

std::vector<double> doubles_of(const HostTensor& t) {
  std::vector<double> v(static_cast<std::size_t>(t.nelms()));
  for (std::int64_t i = 0; i < t.nelms(); ++i)
    v[static_cast<std::size_t>(i)] = ref::load(t, i);
  return v;
}

/// The mean and biased variance of each (image, group) of `x`, row r = image·groups + group.
std::pair<std::vector<double>, std::vector<double>> group_stats(const HostTensor& x,
                                                                std::int64_t groups) {
  const Nc g(x.shape());
  const std::int64_t d = g.c / groups * g.spatial, rows = g.n * groups;
  std::vector<double> mean(static_cast<std::size_t>(rows)), var(mean.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    double s = 0.0, s2 = 0.0;
    for (std::int64_t j = 0; j < d; ++j)
      s += ref::load(x, r * d + j);
    const double mu = s / static_cast<double>(d);
    for (std::int64_t j = 0; j < d; ++j)
      s2 += (ref::load(x, r * d + j) - mu) * (ref::load(x, r * d + j) - mu);
    mean[static_cast<std::size_t>(r)] = mu;
    var[static_cast<std::size_t>(r)] = s2 / static_cast<double>(d);
  }
  return {mean, var};
}

} // namespace ref_norm

using namespace ref_norm;

PXL_REF_KERNEL(BatchNormInference) {
  normalise(*inputs[0], *inputs[1], *inputs[2], doubles_of(*inputs[3]), doubles_of(*inputs[4]),
            op.attrs<OpKind::BatchNormInference>().epsilon, *outputs[0]);
}

PXL_REF_KERNEL(BatchNormTraining) {
  const auto [mean, var] = channel_stats(*inputs[0]);
  normalise(*inputs[0], *inputs[1], *inputs[2], mean, var,
            op.attrs<OpKind::BatchNormTraining>().epsilon, *outputs[0]);
  for (std::size_t ch = 0; ch < mean.size(); ++ch) {
    ref::store(*outputs[1], static_cast<std::int64_t>(ch), mean[ch]);
    ref::store(*outputs[2], static_cast<std::int64_t>(ch), var[ch]);
  }
}

PXL_REF_KERNEL(BatchNormGrad) {
  // The textbook backward pass per channel, x̂ = (x − mean)·rstd:
  // d bias = Σ g, d scale = Σ g·x̂, and d x = scale·rstd·g with the statistics given, or
  // scale·rstd·(g − d bias / M − x̂·d scale / M) with the batch's.
  const HostTensor &x = *inputs[0], &scale = *inputs[1], &g = *inputs[4];
  const NormAttrs& a = op.attrs<OpKind::BatchNormGrad>();
  const auto mean = doubles_of(*inputs[2]), var = doubles_of(*inputs[3]);
  const Nc geo(x.shape());
  const auto m = static_cast<double>(geo.n * geo.spatial);
  for (std::int64_t ch = 0; ch < geo.c; ++ch) {
    const auto k = static_cast<std::size_t>(ch);
    const double rstd = 1.0 / std::sqrt(var[k] + a.epsilon);
    double dbias = 0.0, dscale = 0.0;
    for (std::int64_t i = 0; i < geo.n; ++i)
      for (std::int64_t p = 0; p < geo.spatial; ++p) {
        const std::int64_t at = geo.at(i, ch, p);
        dbias += ref::load(g, at);
        dscale += ref::load(g, at) * (ref::load(x, at) - mean[k]) * rstd;
      }
    for (std::int64_t i = 0; i < geo.n; ++i)
      for (std::int64_t p = 0; p < geo.spatial; ++p) {
        const std::int64_t at = geo.at(i, ch, p);
        const double xhat = (ref::load(x, at) - mean[k]) * rstd;
        const double dy =
            a.global_stats ? ref::load(g, at) : ref::load(g, at) - dbias / m - xhat * dscale / m;
        ref::store(*outputs[0], at, ref::load(scale, ch) * rstd * dy);
      }
    ref::store(*outputs[1], ch, dscale);
    ref::store(*outputs[2], ch, dbias);
  }
}

PXL_REF_KERNEL(GroupNorm) {
  const HostTensor &x = *inputs[0], &weight = *inputs[1], &bias = *inputs[2];
  const NormAttrs& a = op.attrs<OpKind::GroupNorm>();
  const auto [mean, var] = group_stats(x, a.num_groups);
  const Nc geo(x.shape());
  const std::int64_t d = geo.c / a.num_groups * geo.spatial;
  for (std::int64_t i = 0; i < x.nelms(); ++i) {
    const auto r = static_cast<std::size_t>(i / d);
    const std::int64_t ch = i / geo.spatial % geo.c;
    ref::store(*outputs[0], i,
               (ref::load(x, i) - mean[r]) / std::sqrt(var[r] + a.epsilon) * ref::load(weight, ch) +
                   ref::load(bias, ch));
  }
}

PXL_REF_KERNEL(GroupNormGrad) {
  // Per (image, group) of d elements, dx̂ = g·w: dx = rstd·(dx̂ − mean(dx̂) − x̂·mean(dx̂·x̂)),
  // and the weight's share g·x̂.
  const HostTensor &x = *inputs[0], &weight = *inputs[1], &g = *inputs[2];
  const NormAttrs& a = op.attrs<OpKind::GroupNormGrad>();
  const auto [mean, var] = group_stats(x, a.num_groups);
  const Nc geo(x.shape());
  const std::int64_t d = geo.c / a.num_groups * geo.spatial;
  for (std::size_t r = 0; r < mean.size(); ++r) {
    const double rstd = 1.0 / std::sqrt(var[r] + a.epsilon);
    const auto base = static_cast<std::int64_t>(r) * d;
    double mean_dxhat = 0.0, mean_dxhat_xhat = 0.0;
    for (std::int64_t j = 0; j < d; ++j) {
      const double dxhat =
          ref::load(g, base + j) * ref::load(weight, (base + j) / geo.spatial % geo.c);
      mean_dxhat += dxhat / static_cast<double>(d);
      mean_dxhat_xhat += dxhat * (ref::load(x, base + j) - mean[r]) * rstd / static_cast<double>(d);
    }
    for (std::int64_t j = 0; j < d; ++j) {
      const double xhat = (ref::load(x, base + j) - mean[r]) * rstd;
      const double dxhat =
          ref::load(g, base + j) * ref::load(weight, (base + j) / geo.spatial % geo.c);
      ref::store(*outputs[0], base + j, rstd * (dxhat - mean_dxhat - xhat * mean_dxhat_xhat));
      ref::store(*outputs[1], base + j, ref::load(g, base + j) * xhat);
    }
  }
}

} // namespace pxl::testing
