// Reference pools, straight from the definition in double: each window's taps walked in
// row-major order, those outside the input skipped; the max keeps the first of its largest
// taps, the average divides by the taps inside the input (or, with count_include_pad, inside
// the input and its explicit padding). The gradients send each output's gradient to the taps
// the forward pass read.
#include "ref_util.hpp"

namespace pxl::testing {

namespace {

/// The pool's geometry between an input of shape `src` and an output of shape `dst`.
struct RefPool {
  const PoolAttrs& a;
  Shape src, dst;

  std::size_t axes() const { return src.size() - 2; }

  /// The input elements (flat in `src`) of the window of output element `i` (flat in `dst`),
  /// in row-major order of the kernel's taps, and the average's divisor.
  std::vector<std::int64_t> window(std::int64_t i, std::int64_t& divisor) const {
    const Shape index = ref::unravel(i, dst);
    std::vector<std::int64_t> taps;
    divisor = 0;
    Shape in(src.size());
    in[0] = index[0];
    in[1] = index[1];
    for (std::int64_t t = 0; t < nelms(a.kernel); ++t) {
      const Shape k = ref::unravel(t, a.kernel);
      bool inside = true, padded = true;
      for (std::size_t d = 0; d < axes(); ++d) {
        const std::int64_t at =
            index[d + 2] * a.strides[d] - a.pads_begin[d] + k[d] * a.dilations[d];
        inside = inside && at >= 0 && at < src[d + 2];
        padded = padded && at >= -a.pads_begin[d] && at < src[d + 2] + a.pads_end[d];
        in[d + 2] = at;
      }
      divisor += a.count_include_pad ? padded : inside;
      if (inside)
        taps.push_back(ref::ravel(in, src));
    }
    return taps;
  }

  /// The first of the largest elements of `x` among `taps`.
  static std::int64_t argmax(const HostTensor& x, const std::vector<std::int64_t>& taps) {
    std::int64_t best = taps.at(0);
    for (const auto t : taps)
      if (ref::load(x, t) > ref::load(x, best))
        best = t;
    return best;
  }
};

} // namespace

PXL_REF_KERNEL(MaxPool) {
  const HostTensor& x = *inputs[0];
  HostTensor& y = *outputs[0];
  const RefPool p{op.attrs<OpKind::MaxPool>(), x.shape(), y.shape()};
  std::int64_t divisor = 0;
  for (std::int64_t i = 0; i < y.nelms(); ++i)
    ref::store(y, i, ref::load(x, RefPool::argmax(x, p.window(i, divisor))));
}

PXL_REF_KERNEL(AveragePool) {
  const HostTensor& x = *inputs[0];
  HostTensor& y = *outputs[0];
  const RefPool p{op.attrs<OpKind::AveragePool>(), x.shape(), y.shape()};
  std::int64_t divisor = 0;
  for (std::int64_t i = 0; i < y.nelms(); ++i) {
    double sum = 0.0;
    for (const auto t : p.window(i, divisor))
      sum += ref::load(x, t);
    ref::store(y, i, sum / static_cast<double>(divisor));
  }
}

PXL_REF_KERNEL(MaxPoolGrad) {
  const HostTensor &dy = *inputs[0], &x = *inputs[1];
  HostTensor& dx = *outputs[0];
  const RefPool p{op.attrs<OpKind::MaxPoolGrad>(), x.shape(), dy.shape()};
  std::vector<double> acc(static_cast<std::size_t>(dx.nelms()), 0.0);
  std::int64_t divisor = 0;
  for (std::int64_t i = 0; i < dy.nelms(); ++i)
    acc[static_cast<std::size_t>(RefPool::argmax(x, p.window(i, divisor)))] += ref::load(dy, i);
  for (std::int64_t i = 0; i < dx.nelms(); ++i)
    ref::store(dx, i, acc[static_cast<std::size_t>(i)]);
}

PXL_REF_KERNEL(AveragePoolGrad) {
  const HostTensor& dy = *inputs[0];
  HostTensor& dx = *outputs[0];
  const RefPool p{op.attrs<OpKind::AveragePoolGrad>(), dx.shape(), dy.shape()};
  std::vector<double> acc(static_cast<std::size_t>(dx.nelms()), 0.0);
  std::int64_t divisor = 0;
  for (std::int64_t i = 0; i < dy.nelms(); ++i) {
    const auto taps = p.window(i, divisor);
    for (const auto t : taps)
      acc[static_cast<std::size_t>(t)] += ref::load(dy, i) / static_cast<double>(divisor);
  }
  for (std::int64_t i = 0; i < dx.nelms(); ++i)
    ref::store(dx, i, acc[static_cast<std::size_t>(i)]);
}

} // namespace pxl::testing
