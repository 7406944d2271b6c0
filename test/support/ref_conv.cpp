// Reference convolutions: each output element summed in double straight from the definition,
// in the terms of the convolution run (src (N, IC, in...), weights (OC, IC / groups, k...),
// dst (N, OC, out...)): Conv computes dst, ConvTranspose src, ConvWeightsGrad the weights.
#include "ref_util.hpp"

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
