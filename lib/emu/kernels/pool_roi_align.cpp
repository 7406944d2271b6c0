// roi_align and its gradient (PopLibs' roiAlignFwd with aligned = false): bilinear samples on
// a grid in each bin of each region, averaged. Positions are float32 throughout, as PopLibs.
#include "common.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace pxl::emu::detail {

namespace {

/// One region's geometry along an axis: where it starts, a bin's extent and a sample step.
struct RoiAxis {
  float start = 0, bin = 0, step = 0;
};

/// Region [lo, hi] (in input-image units) along an axis with `bins` output bins.
RoiAxis roi_axis(float lo, float hi, const RoiAlignAttrs& a, std::int64_t bins) {
  RoiAxis r;
  r.start = lo * a.spatial_scale;
  const float extent = std::max(hi * a.spatial_scale - r.start, 1.0f);
  r.bin = extent / static_cast<float>(bins);
  r.step = r.bin / static_cast<float>(a.sampling_ratio);
  return r;
}

/// Sample k of bin p's grid along an axis of `extent` elements: its two neighbours and the
/// weight of the second; `valid` is false past the extent (the sample adds nothing).
struct RoiTap {
  bool valid = false;
  std::int64_t low = 0, high = 0;
  float ratio = 0;
};

RoiTap roi_tap(const RoiAxis& r, std::int64_t k, std::int64_t p, std::int64_t extent) {
  float v = r.start + (0.5f + static_cast<float>(k)) * r.step;
  for (std::int64_t i = 0; i < p; ++i)
    v += r.bin;
  RoiTap t;
  t.valid = v <= static_cast<float>(extent);
  v = std::max(v, 0.0f);
  t.low = std::min(static_cast<std::int64_t>(std::floor(v)), extent - 1);
  t.high = t.low >= extent - 1 ? t.low : t.low + 1;
  t.ratio = v - static_cast<float>(t.low);
  return t;
}

/// The weight a tap gives element `e` of its axis.
float tap_weight(const RoiTap& t, std::int64_t e) {
  return (t.low == e ? 1.0f - t.ratio : 0.0f) + (t.high == e ? t.ratio : 0.0f);
}

/// The shapes of a roi_align: input (N, C, H, W), ROIs and output bins.
struct RoiShapes {
  std::int64_t n, c, h, w, rois, ah, aw, s;
};

RoiShapes roi_shapes(const Shape& input, std::int64_t rois, const RoiAlignAttrs& a) {
  return {input[0], input[1],         input[2],        input[3],
          rois,     a.aligned_height, a.aligned_width, a.sampling_ratio};
}

template <typename T>
RoiAxis roi_row(const T* rois, std::int64_t r, bool height, const RoiAlignAttrs& a,
                std::int64_t bins) {
  const auto at = [&](std::int64_t k) { return static_cast<float>(rois[r * 4 + k]); };
  return height ? roi_axis(at(1), at(3), a, bins) : roi_axis(at(0), at(2), a, bins);
}

} // namespace

namespace {

/// A roi_align step's operands: `in` is the feature map (forward) or the output gradient.
template <typename T>
struct RoiOperands {
  const T* in;
  const T* rois;
  const std::int32_t* batch;
  RoiShapes s;
  RoiAlignAttrs a;
};

/// Output element i of the forward pass: its sampling_ratio² samples (grid rows outer),
/// summed, divided by their count.
template <typename T>
accum_t<T> roi_forward_at(const RoiOperands<T>& o, std::int64_t i) {
  using A = accum_t<T>;
  const RoiShapes& s = o.s;
  const std::int64_t pw = i % s.aw, ph = (i / s.aw) % s.ah, c = (i / (s.aw * s.ah)) % s.c;
  const std::int64_t r = i / (s.aw * s.ah * s.c), img = o.batch[r];
  A sum = 0;
  if (img < 0 || img >= s.n)
    return sum;
  const RoiAxis ry = roi_row(o.rois, r, true, o.a, s.ah), rx = roi_row(o.rois, r, false, o.a, s.aw);
  const T* plane = o.in + (img * s.c + c) * s.h * s.w;
  const auto at = [&](std::int64_t yy, std::int64_t xx) {
    return static_cast<A>(static_cast<compute_t<T>>(plane[yy * s.w + xx]));
  };
  for (std::int64_t iy = 0; iy < s.s; ++iy) {
    const RoiTap ty = roi_tap(ry, iy, ph, s.h);
    for (std::int64_t ix = 0; ix < s.s; ++ix) {
      const RoiTap tx = roi_tap(rx, ix, pw, s.w);
      if (!ty.valid || !tx.valid)
        continue;
      const A hr = ty.ratio, wr = tx.ratio;
      sum += at(ty.low, tx.low) * (A(1) - hr) * (A(1) - wr) +
             at(ty.low, tx.high) * (A(1) - hr) * wr + at(ty.high, tx.low) * hr * (A(1) - wr) +
             at(ty.high, tx.high) * hr * wr;
    }
  }
  return sum / static_cast<A>(s.s * s.s);
}

/// Element i of the input's gradient: over the ROIs on its image in order, the output
/// gradients of the samples that read it, weighted as the forward pass read it.
template <typename T>
accum_t<T> roi_backward_at(const RoiOperands<T>& o, std::int64_t i) {
  using A = accum_t<T>;
  const RoiShapes& s = o.s;
  const std::int64_t xx = i % s.w, yy = (i / s.w) % s.h, c = (i / (s.w * s.h)) % s.c;
  const std::int64_t img = i / (s.w * s.h * s.c);
  A sum = 0;
  for (std::int64_t r = 0; r < s.rois; ++r) {
    if (o.batch[r] != img)
      continue;
    const RoiAxis ry = roi_row(o.rois, r, true, o.a, s.ah),
                  rx = roi_row(o.rois, r, false, o.a, s.aw);
    const T* grad = o.in + (r * s.c + c) * s.ah * s.aw;
    for (std::int64_t ph = 0; ph < s.ah; ++ph)
      for (std::int64_t iy = 0; iy < s.s; ++iy) {
        const RoiTap ty = roi_tap(ry, iy, ph, s.h);
        const A wy = tap_weight(ty, yy);
        if (!ty.valid || wy == A(0))
          continue;
        for (std::int64_t pw = 0; pw < s.aw; ++pw)
          for (std::int64_t ix = 0; ix < s.s; ++ix) {
            const RoiTap tx = roi_tap(rx, ix, pw, s.w);
            const A wx = tap_weight(tx, xx);
            if (tx.valid && wx != A(0))
              sum += static_cast<A>(static_cast<compute_t<T>>(grad[ph * s.aw + pw])) * wy * wx;
          }
      }
  }
  return sum / static_cast<A>(s.s * s.s);
}

/// The step of either pass, split by output element; `input` is the feature map's shape.
StepFn roi_align_step(const KernelOp& op, const OpBuffers& buffers, const Shape& input,
                      bool backward) {
  const RoiAlignAttrs a = op.attrs_as<RoiAlignAttrs>();
  const RoiShapes s = roi_shapes(input, op.input(1).shape()[0], a);
  const std::int64_t n = op.output(0).nelms();
  return dispatch_float(op, op.output(0).dtype(), [&](auto type) -> StepFn {
    using T = typename decltype(type)::type;
    const RoiOperands<T> o{typed<const T>(buffers.inputs[0]), typed<const T>(buffers.inputs[1]),
                           typed<const std::int32_t>(buffers.inputs[2]), s, a};
    T* y = typed<T>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) {
      const auto [b, e] = worker_range(n, w, nw);
      for (std::int64_t i = b; i < e; ++i)
        y[i] = static_cast<T>(backward ? roi_backward_at(o, i) : roi_forward_at(o, i));
    };
  });
}

} // namespace

StepFn compile_RoiAlign(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return roi_align_step(op, buffers, op.input(0).shape(), false);
}

StepFn compile_RoiAlignGrad(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return roi_align_step(op, buffers, op.output(0).shape(), true);
}

} // namespace pxl::emu::detail
