// Reference pools (and roi_align, from PopLibs' loops), straight from the definition in double:
// each window's taps walked in row-major order, those outside the input skipped; the max keeps the
// first of its largest taps, the average divides by the taps inside the input (or, with
// count_include_pad, inside the input and its explicit padding). The gradients send each output's
// gradient to the taps the forward pass read.
#include "ref_util.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

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

namespace {
/// roi_align's samples, straight from PopLibs' loops: for each ROI r on an image inside the
/// batch, channel c, output bin (ph, pw) and grid point (iy, ix) inside the input, calls
/// f(output flat index, input flat index, weight) for the four bilinear neighbours, the
/// weight including the 1 / sampling_ratio² of the average. Positions in float32.
template <typename F>
void roi_samples(const RoiAlignAttrs& a, const Shape& in, const HostTensor& rois,
                 const HostTensor& batch, F f) {
  const std::int64_t n = in[0], channels = in[1], h = in[2], w = in[3];
  const std::int64_t ah = a.aligned_height, aw = a.aligned_width, s = a.sampling_ratio;
  const double count = static_cast<double>(s * s);
  for (std::int64_t r = 0; r < rois.shape()[0]; ++r) {
    const auto img = static_cast<std::int64_t>(ref::load(batch, r));
    if (img < 0 || img >= n)
      continue;
    const auto coord = [&](std::int64_t k) {
      return static_cast<float>(ref::load(rois, r * 4 + k)) * a.spatial_scale;
    };
    const float roi_h = std::max(coord(3) - coord(1), 1.0f);
    const float roi_w = std::max(coord(2) - coord(0), 1.0f);
    const float bin_h = roi_h / static_cast<float>(ah), bin_w = roi_w / static_cast<float>(aw);
    const float len_h = bin_h / static_cast<float>(s), len_w = bin_w / static_cast<float>(s);
    for (std::int64_t iy = 0; iy < s; ++iy)
      for (std::int64_t ix = 0; ix < s; ++ix) {
        float y_pos = coord(1) + (0.5f + static_cast<float>(iy)) * len_h;
        for (std::int64_t ph = 0; ph < ah; ++ph, y_pos += bin_h) {
          float x_pos = coord(0) + (0.5f + static_cast<float>(ix)) * len_w;
          for (std::int64_t pw = 0; pw < aw; ++pw, x_pos += bin_w) {
            if (y_pos > static_cast<float>(h) || x_pos > static_cast<float>(w))
              continue;
            const float y = std::max(y_pos, 0.0f), x = std::max(x_pos, 0.0f);
            const std::int64_t y0 = std::min(static_cast<std::int64_t>(std::floor(y)), h - 1);
            const std::int64_t x0 = std::min(static_cast<std::int64_t>(std::floor(x)), w - 1);
            const std::int64_t y1 = std::min(y0 + 1, h - 1), x1 = std::min(x0 + 1, w - 1);
            const double hr = y - static_cast<float>(y0), wr = x - static_cast<float>(x0);
            for (std::int64_t c = 0; c < channels; ++c) {
              const std::int64_t out = ((r * channels + c) * ah + ph) * aw + pw;
              const std::int64_t plane = (img * channels + c) * h * w;
              f(out, plane + y0 * w + x0, (1 - hr) * (1 - wr) / count);
              f(out, plane + y0 * w + x1, (1 - hr) * wr / count);
              f(out, plane + y1 * w + x0, hr * (1 - wr) / count);
              f(out, plane + y1 * w + x1, hr * wr / count);
            }
          }
        }
      }
  }
}
} // namespace

namespace {
/// roi_align forward (`from` the feature map, `to` the output) or backward (`from` the output
/// gradient, `to` the feature map's), summed in double.
void roi_reference(const RoiAlignAttrs& a, std::span<const HostTensor* const> inputs,
                   HostTensor& to, bool backward) {
  const HostTensor& from = *inputs[0];
  std::vector<double> acc(static_cast<std::size_t>(to.nelms()), 0.0);
  roi_samples(a, backward ? to.shape() : from.shape(), *inputs[1], *inputs[2],
              [&](std::int64_t out, std::int64_t in, double wt) {
                const std::int64_t dst = backward ? in : out;
                acc[static_cast<std::size_t>(dst)] += wt * ref::load(from, backward ? out : in);
              });
  for (std::int64_t i = 0; i < to.nelms(); ++i)
    ref::store(to, i, acc[static_cast<std::size_t>(i)]);
}
} // namespace

PXL_REF_KERNEL(RoiAlign) {
  roi_reference(op.attrs<OpKind::RoiAlign>(), inputs, *outputs[0], false);
}

PXL_REF_KERNEL(RoiAlignGrad) {
  roi_reference(op.attrs<OpKind::RoiAlignGrad>(), inputs, *outputs[0], true);
}

} // namespace pxl::testing
