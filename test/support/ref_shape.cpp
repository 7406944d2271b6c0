// Reference kernels of shape and data-movement ops. They move whole elements as bytes, so
// one loop serves every dtype.
#include "ref_util.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace pxl::testing {

namespace {
/// Copies element `from` of `src` to element `to` of `dst` (same dtype).
void copy_element(const HostTensor& src, std::int64_t from, HostTensor& dst, std::int64_t to) {
  const auto size = size_of(src.dtype());
  std::memcpy(dst.bytes().data() + static_cast<std::size_t>(to) * size,
              src.bytes().data() + static_cast<std::size_t>(from) * size, size);
}

/// prod(shape[:axis]), shape[axis], prod(shape[axis+1:]).
struct AxisSplit {
  std::int64_t outer = 1, dim = 1, inner = 1;
};
AxisSplit around(const Shape& shape, std::int64_t axis) {
  AxisSplit s;
  for (std::int64_t k = 0; k < static_cast<std::int64_t>(shape.size()); ++k) {
    const auto d = shape[static_cast<std::size_t>(k)];
    if (k < axis)
      s.outer *= d;
    else if (k == axis)
      s.dim = d;
    else
      s.inner *= d;
  }
  return s;
}
} // namespace

void ref_Reshape(ReferenceEvaluator&, const Op&, std::span<const HostTensor* const> inputs,
                 std::span<HostTensor* const> outputs) {
  std::memcpy(outputs[0]->bytes().data(), inputs[0]->bytes().data(), inputs[0]->nbytes());
}

void ref_IpuCopy(ReferenceEvaluator&, const Op&, std::span<const HostTensor* const> inputs,
                 std::span<HostTensor* const> outputs) {
  std::memcpy(outputs[0]->bytes().data(), inputs[0]->bytes().data(), inputs[0]->nbytes());
}

void ref_IoTileCopy(ReferenceEvaluator& ev, const Op& op, std::span<const HostTensor* const> inputs,
                    std::span<HostTensor* const> outputs) {
  ref_IpuCopy(ev, op, inputs, outputs);
}

void ref_Transpose(ReferenceEvaluator&, const Op& op, std::span<const HostTensor* const> inputs,
                   std::span<HostTensor* const> outputs) {
  const auto& perm = op.attrs_as<TransposeAttrs>().perm;
  const Shape& in_shape = inputs[0]->shape();
  for (std::int64_t i = 0; i < outputs[0]->nelms(); ++i) {
    const Shape o = ref::unravel(i, outputs[0]->shape());
    Shape src(o.size());
    for (std::size_t k = 0; k < o.size(); ++k)
      src[static_cast<std::size_t>(perm[k])] = o[k];
    copy_element(*inputs[0], ref::ravel(src, in_shape), *outputs[0], i);
  }
}

void ref_Slice(ReferenceEvaluator&, const Op& op, std::span<const HostTensor* const> inputs,
               std::span<HostTensor* const> outputs) {
  const auto& start = op.attrs_as<SliceAttrs>().start;
  for (std::int64_t i = 0; i < outputs[0]->nelms(); ++i) {
    Shape src = ref::unravel(i, outputs[0]->shape());
    for (std::size_t k = 0; k < src.size(); ++k)
      src[k] += start[k];
    copy_element(*inputs[0], ref::ravel(src, inputs[0]->shape()), *outputs[0], i);
  }
}

void ref_Concat(ReferenceEvaluator&, const Op& op, std::span<const HostTensor* const> inputs,
                std::span<HostTensor* const> outputs) {
  const auto axis = op.attrs_as<AxisAttrs>().axis;
  const AxisSplit o = around(outputs[0]->shape(), axis);
  std::int64_t offset = 0; // position of the current input along the axis
  for (const HostTensor* in : inputs) {
    const AxisSplit s = around(in->shape(), axis);
    for (std::int64_t a = 0; a < s.outer; ++a)
      for (std::int64_t d = 0; d < s.dim; ++d)
        for (std::int64_t b = 0; b < s.inner; ++b)
          copy_element(*in, (a * s.dim + d) * s.inner + b, *outputs[0],
                       (a * o.dim + offset + d) * o.inner + b);
    offset += s.dim;
  }
}

void ref_Split(ReferenceEvaluator&, const Op& op, std::span<const HostTensor* const> inputs,
               std::span<HostTensor* const> outputs) {
  const auto axis = op.attrs_as<SplitAttrs>().axis;
  const AxisSplit s = around(inputs[0]->shape(), axis);
  std::int64_t offset = 0;
  for (HostTensor* out : outputs) {
    const AxisSplit o = around(out->shape(), axis);
    for (std::int64_t a = 0; a < o.outer; ++a)
      for (std::int64_t d = 0; d < o.dim; ++d)
        for (std::int64_t b = 0; b < o.inner; ++b)
          copy_element(*inputs[0], (a * s.dim + offset + d) * s.inner + b, *out,
                       (a * o.dim + d) * o.inner + b);
    offset += o.dim;
  }
}

void ref_Gather(ReferenceEvaluator&, const Op& op, std::span<const HostTensor* const> inputs,
                std::span<HostTensor* const> outputs) {
  const auto axis = op.attrs_as<AxisAttrs>().axis;
  const HostTensor& t = *inputs[0];
  const auto indices = inputs[1]->data<std::int32_t>();
  const AxisSplit s = around(t.shape(), axis);
  const auto n = static_cast<std::int64_t>(indices.size());
  // Output layout: [outer, n indices, inner]. Outputs start zeroed, so an index outside
  // [0, dim) simply leaves its row at zero.
  for (std::int64_t a = 0; a < s.outer; ++a)
    for (std::int64_t j = 0; j < n; ++j) {
      const std::int64_t idx = indices[static_cast<std::size_t>(j)];
      if (idx < 0 || idx >= s.dim)
        continue;
      for (std::int64_t b = 0; b < s.inner; ++b)
        copy_element(t, (a * s.dim + idx) * s.inner + b, *outputs[0], (a * n + j) * s.inner + b);
    }
}

void ref_TiedGather(ReferenceEvaluator& ev, const Op& op, std::span<const HostTensor* const> inputs,
                    std::span<HostTensor* const> outputs) {
  ref_Gather(ev, op, inputs, outputs);
}

// Element by element: output index [g, before..., picks..., after...] reads t at
// [g, before..., indices[g, picks...], after...].
void ref_GroupedGather(ReferenceEvaluator&, const Op& op, std::span<const HostTensor* const> inputs,
                       std::span<HostTensor* const> outputs) {
  const auto axis = static_cast<std::size_t>(op.attrs<OpKind::GroupedGather>().axis);
  const HostTensor& t = *inputs[0];
  const HostTensor& indices = *inputs[1];
  HostTensor& y = *outputs[0];
  const std::size_t picks = indices.shape().size() - 1;
  for (std::int64_t i = 0; i < y.nelms(); ++i) {
    const Shape at = ref::unravel(i, y.shape());
    Shape pick{at[0]};
    pick.insert(pick.end(), at.begin() + static_cast<std::ptrdiff_t>(axis),
                at.begin() + static_cast<std::ptrdiff_t>(axis + picks));
    const auto k = static_cast<std::int64_t>(ref::load(indices, ref::ravel(pick, indices.shape())));
    if (k < 0 || k >= t.shape()[axis])
      continue; // outputs start zeroed
    Shape from(at.begin(), at.begin() + static_cast<std::ptrdiff_t>(axis));
    from.push_back(k);
    from.insert(from.end(), at.begin() + static_cast<std::ptrdiff_t>(axis + picks), at.end());
    copy_element(t, ref::ravel(from, t.shape()), y, i);
  }
}

void ref_OneHot(ReferenceEvaluator&, const Op& op, std::span<const HostTensor* const> inputs,
                std::span<HostTensor* const> outputs) {
  const auto axis = op.attrs_as<OneHotAttrs>().axis;
  const auto indices = inputs[0]->data<std::int32_t>();
  const HostTensor& values = *inputs[1];
  const AxisSplit o = around(outputs[0]->shape(), axis);
  // Output [outer, classes, inner]; the index read is element (outer, inner) of `indices`.
  for (std::int64_t a = 0; a < o.outer; ++a)
    for (std::int64_t c = 0; c < o.dim; ++c)
      for (std::int64_t b = 0; b < o.inner; ++b) {
        const bool hot = indices[static_cast<std::size_t>(a * o.inner + b)] == c;
        copy_element(values, hot ? 1 : 0, *outputs[0], (a * o.dim + c) * o.inner + b);
      }
}

void ref_Init(ReferenceEvaluator&, const Op&, std::span<const HostTensor* const>,
              std::span<HostTensor* const>) {
  // Outputs are allocated zero-filled, which serves both `zero` and `undef`.
}

PXL_REF_KERNEL(Arange) {
  const auto& a = op.attrs<OpKind::Arange>();
  for (std::int64_t i = 0; i < outputs[0]->nelms(); ++i)
    ref::store(*outputs[0], i, a.a + static_cast<double>(i) * a.b);
}

namespace {
void triangle(const Op& op, const HostTensor& x, HostTensor& y, bool lower) {
  const std::int64_t k = op.attrs_as<DiagonalAttrs>().k;
  for (std::int64_t i = 0; i < y.nelms(); ++i) {
    const Shape index = ref::unravel(i, y.shape());
    const std::int64_t col = index.back(), row = index[index.size() - 2];
    if (lower ? col - row <= k : col - row >= k)
      copy_element(x, i, y, i);
  }
}
} // namespace

PXL_REF_KERNEL(Tril) { triangle(op, *inputs[0], *outputs[0], true); }
PXL_REF_KERNEL(Triu) { triangle(op, *inputs[0], *outputs[0], false); }

PXL_REF_KERNEL(Pad) {
  const auto& a = op.attrs<OpKind::Pad>();
  const HostTensor& x = *inputs[0];
  HostTensor& y = *outputs[0];
  for (std::int64_t i = 0; i < y.nelms(); ++i) {
    Shape index = ref::unravel(i, y.shape());
    bool inside = true;
    for (std::size_t d = 0; d < index.size(); ++d) {
      index[d] -= a.before[d];
      inside = inside && index[d] >= 0 && index[d] < x.shape()[d];
    }
    if (inside)
      copy_element(x, ref::ravel(index, x.shape()), y, i);
    else
      ref::store(y, i, a.value);
  }
}

PXL_REF_KERNEL(Tile) {
  const HostTensor& x = *inputs[0];
  HostTensor& y = *outputs[0];
  for (std::int64_t i = 0; i < y.nelms(); ++i) {
    Shape index = ref::unravel(i, y.shape());
    for (std::size_t d = 0; d < index.size(); ++d)
      index[d] %= x.shape()[d];
    copy_element(x, ref::ravel(index, x.shape()), y, i);
  }
}

PXL_REF_KERNEL(Subsample) {
  const HostTensor& x = *inputs[0];
  HostTensor& y = *outputs[0];
  const auto& strides = op.attrs<OpKind::Subsample>().strides;
  for (std::int64_t i = 0; i < y.nelms(); ++i) {
    Shape index = ref::unravel(i, y.shape());
    for (std::size_t d = 0; d < index.size(); ++d)
      index[d] *= strides[d];
    copy_element(x, ref::ravel(index, x.shape()), y, i);
  }
}

namespace {
/// Index `j` along `axis` in place of the coordinate there (a copy of `index`).
Shape with_coordinate(Shape index, std::size_t axis, std::int64_t j) {
  index[axis] = j;
  return index;
}

void scatter(const Op& op, std::span<const HostTensor* const> inputs, HostTensor& y) {
  const HostTensor& t = *inputs[0];
  const HostTensor& indices = *inputs[1];
  const HostTensor& updates = *inputs[2];
  const auto axis = static_cast<std::size_t>(op.attrs_as<AxisAttrs>().axis);
  y = t;
  // Row-major over the updates: along each line, later elements of the axis come later.
  for (std::int64_t e = 0; e < indices.nelms(); ++e) {
    const auto k = static_cast<std::int64_t>(ref::load(indices, e));
    if (k < 0 || k >= t.shape()[axis])
      continue;
    const std::int64_t at =
        ref::ravel(with_coordinate(ref::unravel(e, indices.shape()), axis, k), t.shape());
    copy_element(updates, e, y, at);
  }
}

/// Each listed axis' runtime offset, clamped so the window stays inside `t`.
Shape window_start(const Op& op, const HostTensor& t, const HostTensor& index) {
  const auto& a = op.attrs_as<DynamicAttrs>();
  Shape start(t.shape().size(), 0);
  for (std::size_t i = 0; i < a.axes.size(); ++i) {
    const auto d = static_cast<std::size_t>(a.axes[i]);
    start[d] = std::clamp<std::int64_t>(
        static_cast<std::int64_t>(ref::load(index, static_cast<std::int64_t>(i))), 0,
        t.shape()[d] - a.sizes[i]);
  }
  return start;
}

Shape shifted(Shape index, const Shape& by) {
  for (std::size_t d = 0; d < index.size(); ++d)
    index[d] += by[d];
  return index;
}
} // namespace

PXL_REF_KERNEL(TakeAlongAxis) {
  const HostTensor& t = *inputs[0];
  const HostTensor& indices = *inputs[1];
  const auto axis = static_cast<std::size_t>(op.attrs<OpKind::TakeAlongAxis>().axis);
  for (std::int64_t e = 0; e < indices.nelms(); ++e) {
    const auto k = static_cast<std::int64_t>(ref::load(indices, e));
    if (k >= 0 && k < t.shape()[axis])
      copy_element(
          t, ref::ravel(with_coordinate(ref::unravel(e, indices.shape()), axis, k), t.shape()),
          *outputs[0], e);
  }
}
PXL_REF_KERNEL(Scatter) { scatter(op, inputs, *outputs[0]); }
// Over data in row-major order, so the values sent to a position arrive in order along the
// axis; each position reduces them in double onto its initial value, or onto the first of
// them (0 if none comes).
PXL_REF_KERNEL(ScatterReduce) {
  const auto& a = op.attrs<OpKind::ScatterReduce>();
  const auto axis = static_cast<std::size_t>(a.axis);
  const HostTensor& data = *inputs[0];
  const HostTensor& indices = *inputs[1];
  HostTensor& y = *outputs[0];
  const bool broadcast = indices.nelms() != data.nelms();
  std::vector<double> acc(static_cast<std::size_t>(y.nelms()), 0.0);
  std::vector<bool> any(acc.size(), inputs.size() == 3);
  if (inputs.size() == 3)
    for (std::int64_t i = 0; i < y.nelms(); ++i)
      acc[static_cast<std::size_t>(i)] = ref::load(*inputs[2], i);
  for (std::int64_t e = 0; e < data.nelms(); ++e) {
    const Shape at = ref::unravel(e, data.shape());
    const auto k = static_cast<std::int64_t>(ref::load(indices, broadcast ? at[axis] : e));
    if (k < 0 || k >= y.shape()[axis])
      continue;
    const auto o = static_cast<std::size_t>(ref::ravel(with_coordinate(at, axis, k), y.shape()));
    const double v = ref::load(data, e);
    double& r = acc[o];
    if (!any[o] || a.reduction == ScatterReduction::none)
      r = v;
    else if (a.reduction == ScatterReduction::sum)
      r += v;
    else if (a.reduction == ScatterReduction::max)
      r = v > r ? v : r;
    else
      r = v < r ? v : r;
    any[o] = true;
  }
  for (std::int64_t i = 0; i < y.nelms(); ++i)
    ref::store(y, i, acc[static_cast<std::size_t>(i)]);
}

PXL_REF_KERNEL(DynamicSlice) {
  const HostTensor& t = *inputs[0];
  HostTensor& y = *outputs[0];
  const Shape start = window_start(op, t, *inputs[1]);
  for (std::int64_t i = 0; i < y.nelms(); ++i)
    copy_element(t, ref::ravel(shifted(ref::unravel(i, y.shape()), start), t.shape()), y, i);
}

PXL_REF_KERNEL(DynamicUpdate) {
  const HostTensor& t = *inputs[0];
  const HostTensor& update = *inputs[2];
  HostTensor& y = *outputs[0];
  y = t;
  const Shape start = window_start(op, t, *inputs[1]);
  for (std::int64_t i = 0; i < update.nelms(); ++i)
    copy_element(update, i, y,
                 ref::ravel(shifted(ref::unravel(i, update.shape()), start), t.shape()));
}

// Views are copies (op_flags::View); the in-place dynamic update writes into t's value.
PXL_REF_KERNEL(ReshapeInplace) { ref_Reshape(ev, op, inputs, outputs); }
PXL_REF_KERNEL(TransposeInplace) { ref_Transpose(ev, op, inputs, outputs); }
PXL_REF_KERNEL(SliceInplace) { ref_Slice(ev, op, inputs, outputs); }
PXL_REF_KERNEL(ConcatInplace) { ref_Concat(ev, op, inputs, outputs); }
PXL_REF_KERNEL(DynamicUpdateInplace) { ref_DynamicUpdate(ev, op, inputs, outputs); }

namespace {
/// interpolate along one axis: the input indices output index i reads, with their weights
/// (PopART's float32 coordinate arithmetic, written out case by case).
struct ResizeTap {
  std::int64_t lo, hi;
  double weight_hi;
};

ResizeTap resize_tap(const ResizeAttrs& a, std::size_t d, std::int64_t i, std::int64_t n) {
  const float s = a.scales[d];
  if (s == 1.0f)
    return {i, i, 0.0};
  using C = ResizeCoordinateTransformationMode;
  const float fi = static_cast<float>(i), fn = static_cast<float>(n), length = fn * s;
  float x = fi / s;
  if (a.coordinate_transformation_mode == C::half_pixel ||
      (a.coordinate_transformation_mode == C::pytorch_half_pixel && length > 1.0f))
    x = (fi + 0.5f) / s - 0.5f;
  else if (a.coordinate_transformation_mode == C::pytorch_half_pixel)
    x = 0.0f;
  else if (a.coordinate_transformation_mode == C::align_corners)
    x = length == 1.0f ? 0.0f : fi * (fn - 1.0f) / (length - 1.0f);
  const auto clamp = [n](double v) {
    return static_cast<std::int64_t>(std::clamp(v, 0.0, static_cast<double>(n - 1)));
  };
  if (a.mode == ResizeMode::linear) {
    const double xp = std::max(x, 0.0f);
    return {clamp(std::floor(x)), clamp(std::ceil(x)), xp - std::floor(xp)};
  }
  const bool integral = std::round(s) >= 1.0f && std::fabs(std::round(s) - s) <= 1e-5f;
  using N = ResizeNearestMode;
  const bool rounding =
      a.nearest_mode == N::round_prefer_floor || a.nearest_mode == N::round_prefer_ceil;
  if (integral && rounding && a.coordinate_transformation_mode == C::half_pixel) {
    const std::int64_t j = i / static_cast<std::int64_t>(std::round(s));
    return {j, j, 0.0};
  }
  double r = 0;
  switch (a.nearest_mode) {
  case N::round_prefer_floor:
    r = x - std::floor(x) > 0.5f ? std::ceil(x) : std::floor(x);
    break;
  case N::round_prefer_ceil:
    r = x - std::floor(x) >= 0.5f ? std::ceil(x) : std::floor(x);
    break;
  case N::floor:
    r = std::floor(x);
    break;
  case N::ceil:
    r = std::ceil(x);
    break;
  }
  const std::int64_t j = clamp(r);
  return {j, j, 0.0};
}

/// Calls f(input flat index, weight) for every input element output element i of `out`
/// blends, with an input of shape `in`.
template <typename F>
void resize_taps(const ResizeAttrs& a, const Shape& in, const Shape& out, std::int64_t i, F f) {
  const Shape index = ref::unravel(i, out);
  std::vector<ResizeTap> taps;
  for (std::size_t d = 0; d < in.size(); ++d)
    taps.push_back(resize_tap(a, d, index[d], in[d]));
  for (std::int64_t c = 0; c < (std::int64_t{1} << in.size()); ++c) {
    Shape from(in.size());
    double weight = 1.0;
    for (std::size_t d = 0; d < in.size(); ++d) {
      const bool high = ((c >> d) & 1) != 0;
      from[d] = high ? taps[d].hi : taps[d].lo;
      weight *= high ? taps[d].weight_hi : 1.0 - taps[d].weight_hi;
    }
    if (weight != 0.0)
      f(ref::ravel(from, in), weight);
  }
}
} // namespace

PXL_REF_KERNEL(Resize) {
  const auto& a = op.attrs<OpKind::Resize>();
  const HostTensor& x = *inputs[0];
  HostTensor& y = *outputs[0];
  for (std::int64_t i = 0; i < y.nelms(); ++i) {
    double v = 0.0;
    resize_taps(a, x.shape(), y.shape(), i,
                [&](std::int64_t from, double w) { v += w * ref::load(x, from); });
    ref::store(y, i, v);
  }
}

// Scatters each output gradient back to the element it read.
PXL_REF_KERNEL(ResizeGrad) {
  const auto& a = op.attrs<OpKind::ResizeGrad>();
  const HostTensor& g = *inputs[0];
  HostTensor& y = *outputs[0];
  std::vector<double> sums(static_cast<std::size_t>(y.nelms()), 0.0);
  for (std::int64_t i = 0; i < g.nelms(); ++i)
    resize_taps(a, y.shape(), g.shape(), i, [&](std::int64_t to, double w) {
      sums[static_cast<std::size_t>(to)] += w * ref::load(g, i);
    });
  for (std::int64_t j = 0; j < y.nelms(); ++j)
    ref::store(y, j, sums[static_cast<std::size_t>(j)]);
}

} // namespace pxl::testing
