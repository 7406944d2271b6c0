// Reference convolutions: each output element summed in double straight from the definition,
// in the terms of the convolution run (src (N, IC, in...), weights (OC, IC / groups, k...),
// dst (N, OC, out...)): Conv computes dst, ConvTranspose src, ConvWeightsGrad the weights.
// With float16 partials, the contract of ops::ConvOptions::partials_type step by step: runs of
// products summed in float, each added to a float16 accumulator.
#include "ref_util.hpp"

#include "pxl/core/half.hpp"

#include <algorithm>

namespace pxl::testing {

namespace {

/// The convolution's shapes and geometry, with the tap arithmetic the three kernels share.
struct RefConv {
  const ConvAttrs& a;
  Shape src, weights, dst;

  std::size_t axes() const { return src.size() - 2; }
  std::int64_t ic_per_group() const { return weights[1]; }
  std::int64_t oc_per_group() const { return dst[1] / a.groups; }
  Shape kernel() const { return Shape(weights.begin() + 2, weights.end()); }
  Shape out() const { return Shape(dst.begin() + 2, dst.end()); }

  /// The input position output position `o` reads through kernel tap `k`, or false when it
  /// falls in the padding.
  bool input_at(const Shape& o, const Shape& k, Shape& in) const {
    in.resize(axes());
    for (std::size_t i = 0; i < axes(); ++i) {
      in[i] = o[i] * a.strides[i] - a.pads_begin[i] + k[i] * a.dilations[i];
      if (in[i] < 0 || in[i] >= src[i + 2])
        return false;
    }
    return true;
  }
  std::int64_t src_index(std::int64_t n, std::int64_t c, const Shape& in) const {
    Shape index{n, c};
    index.insert(index.end(), in.begin(), in.end());
    return ref::ravel(index, src);
  }
  std::int64_t dst_index(std::int64_t n, std::int64_t c, const Shape& o) const {
    Shape index{n, c};
    index.insert(index.end(), o.begin(), o.end());
    return ref::ravel(index, dst);
  }
  std::int64_t weights_index(std::int64_t oc, std::int64_t icg, const Shape& k) const {
    Shape index{oc, icg};
    index.insert(index.end(), k.begin(), k.end());
    return ref::ravel(index, weights);
  }
};

/// The run length of float16 partials (the AMP's float16 input-channel group).
constexpr std::int64_t partials_run = 16;

/// acc + run in float, rounded to half.
half add_run(half acc, float run) { return half(static_cast<float>(acc) + run); }

} // namespace

PXL_REF_KERNEL(Conv) {
  const HostTensor &x = *inputs[0], &w = *inputs[1];
  HostTensor& y = *outputs[0];
  const RefConv c{op.attrs<OpKind::Conv>(), x.shape(), w.shape(), y.shape()};
  const Shape kernel = c.kernel();
  Shape in;
  for (std::int64_t i = 0; i < y.nelms(); ++i) {
    const Shape index = ref::unravel(i, y.shape());
    const std::int64_t n = index[0], oc = index[1];
    const Shape o(index.begin() + 2, index.end());
    const std::int64_t group = oc / c.oc_per_group();
    if (c.a.partials_type == float16) {
      // Runs: 16 input channels of the group at one tap (taps in the padding: no run).
      half acc{0.0f};
      for (std::int64_t b = 0; b < c.ic_per_group(); b += partials_run)
        for (std::int64_t t = 0; t < nelms(kernel); ++t) {
          const Shape k = ref::unravel(t, kernel);
          if (!c.input_at(o, k, in))
            continue;
          float run = 0.0f;
          for (std::int64_t icg = b; icg < std::min(c.ic_per_group(), b + partials_run); ++icg)
            run += static_cast<float>(
                ref::load(x, c.src_index(n, group * c.ic_per_group() + icg, in)) *
                ref::load(w, c.weights_index(oc, icg, k)));
          acc = add_run(acc, run);
        }
      ref::store(y, i, static_cast<float>(acc));
      continue;
    }
    double acc = 0.0;
    for (std::int64_t icg = 0; icg < c.ic_per_group(); ++icg)
      for (std::int64_t t = 0; t < nelms(kernel); ++t) {
        const Shape k = ref::unravel(t, kernel);
        if (c.input_at(o, k, in))
          acc += ref::load(x, c.src_index(n, group * c.ic_per_group() + icg, in)) *
                 ref::load(w, c.weights_index(oc, icg, k));
      }
    ref::store(y, i, acc);
  }
}

PXL_REF_KERNEL(ConvTranspose) {
  // Scatters every (dst element, tap) product into the src element it reads, in double.
  const HostTensor &g = *inputs[0], &w = *inputs[1];
  HostTensor& dx = *outputs[0];
  const RefConv c{op.attrs<OpKind::ConvTranspose>(), dx.shape(), w.shape(), g.shape()};
  const Shape kernel = c.kernel();
  if (c.a.partials_type == float16) {
    // Per src element, runs of 16 output channels of the group at one tap, the tap's output
    // position found by search (no run where no output position reads the element).
    const Shape out = c.out();
    Shape in;
    for (std::int64_t i = 0; i < dx.nelms(); ++i) {
      const Shape index = ref::unravel(i, dx.shape());
      const std::int64_t n = index[0], ic = index[1];
      const Shape at(index.begin() + 2, index.end());
      const std::int64_t group = ic / c.ic_per_group(), icg = ic % c.ic_per_group();
      half acc{0.0f};
      for (std::int64_t b = 0; b < c.oc_per_group(); b += partials_run)
        for (std::int64_t t = 0; t < nelms(kernel); ++t) {
          const Shape k = ref::unravel(t, kernel);
          std::int64_t reader = -1;
          for (std::int64_t p = 0; p < nelms(out) && reader < 0; ++p)
            if (c.input_at(ref::unravel(p, out), k, in) && in == at)
              reader = p;
          if (reader < 0)
            continue;
          const Shape o = ref::unravel(reader, out);
          float run = 0.0f;
          for (std::int64_t j = b; j < std::min(c.oc_per_group(), b + partials_run); ++j) {
            const std::int64_t oc = group * c.oc_per_group() + j;
            run += static_cast<float>(ref::load(g, c.dst_index(n, oc, o)) *
                                      ref::load(w, c.weights_index(oc, icg, k)));
          }
          acc = add_run(acc, run);
        }
      ref::store(dx, i, static_cast<float>(acc));
    }
    return;
  }
  std::vector<double> acc(static_cast<std::size_t>(dx.nelms()), 0.0);
  Shape in;
  for (std::int64_t i = 0; i < g.nelms(); ++i) {
    const Shape index = ref::unravel(i, g.shape());
    const std::int64_t n = index[0], oc = index[1];
    const Shape o(index.begin() + 2, index.end());
    const std::int64_t group = oc / c.oc_per_group();
    for (std::int64_t icg = 0; icg < c.ic_per_group(); ++icg)
      for (std::int64_t t = 0; t < nelms(kernel); ++t) {
        const Shape k = ref::unravel(t, kernel);
        if (c.input_at(o, k, in))
          acc[static_cast<std::size_t>(c.src_index(n, group * c.ic_per_group() + icg, in))] +=
              ref::load(g, i) * ref::load(w, c.weights_index(oc, icg, k));
      }
  }
  for (std::int64_t i = 0; i < dx.nelms(); ++i)
    ref::store(dx, i, acc[static_cast<std::size_t>(i)]);
}

PXL_REF_KERNEL(ConvWeightsGrad) {
  const HostTensor &g = *inputs[0], &x = *inputs[1];
  HostTensor& dw = *outputs[0];
  const RefConv c{op.attrs<OpKind::ConvWeightsGrad>(), x.shape(), dw.shape(), g.shape()};
  const Shape out = c.out();
  Shape in;
  for (std::int64_t i = 0; i < dw.nelms(); ++i) {
    const Shape index = ref::unravel(i, dw.shape());
    const std::int64_t oc = index[0], icg = index[1];
    const Shape k(index.begin() + 2, index.end());
    const std::int64_t ic = oc / c.oc_per_group() * c.ic_per_group() + icg;
    if (c.a.partials_type == float16) {
      // Runs: 16 consecutive (image, output position) pairs; a run reading only padding adds
      // nothing.
      const std::int64_t pairs = x.shape()[0] * nelms(out);
      half acc{0.0f};
      for (std::int64_t q0 = 0; q0 < pairs; q0 += partials_run) {
        float run = 0.0f;
        bool any = false;
        for (std::int64_t q = q0; q < std::min(pairs, q0 + partials_run); ++q) {
          const std::int64_t n = q / nelms(out);
          const Shape o = ref::unravel(q % nelms(out), out);
          if (!c.input_at(o, k, in))
            continue;
          any = true;
          run += static_cast<float>(ref::load(g, c.dst_index(n, oc, o)) *
                                    ref::load(x, c.src_index(n, ic, in)));
        }
        if (any)
          acc = add_run(acc, run);
      }
      ref::store(dw, i, static_cast<float>(acc));
      continue;
    }
    double acc = 0.0;
    for (std::int64_t n = 0; n < x.shape()[0]; ++n)
      for (std::int64_t p = 0; p < nelms(out); ++p) {
        const Shape o = ref::unravel(p, out);
        if (c.input_at(o, k, in))
          acc += ref::load(g, c.dst_index(n, oc, o)) * ref::load(x, c.src_index(n, ic, in));
      }
    ref::store(dw, i, acc);
  }
}

} // namespace pxl::testing
