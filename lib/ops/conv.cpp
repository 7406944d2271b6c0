#include "pxl/ops/conv.hpp"
#include "ops/amp_options.hpp"
#include "ops/spatial.hpp"

#include "pxl/ir/graph.hpp"
#include "pxl/ops/elementwise.hpp"

#include <algorithm>
#include <functional>
#include <string>
#include <tuple>

namespace pxl::ops {

namespace {

// Named one by one, not `using namespace spatial`: in a unity batch a using-directive in an
// anonymous namespace reaches the other files' helpers (ops/shape.cpp has a list() of its own).
using spatial::check_input_rank;
using spatial::explicit_padding;
using spatial::Ints;
using spatial::is_zero;
using spatial::pad_type_name;
using spatial::padding_or_pad_type;
using spatial::per_axis;
using spatial::same_padding;

/// `t` and `other` float and alike, `t` (N, C, spatial...) with 1 to 3 spatial axes.
void check_conv_input(const std::string& op, const Tensor& t, const Tensor& other) {
  detail::check_float(op, t);
  detail::check_same_dtype(op, t, other);
  check_input_rank(op, t);
}

/// A weight of the input's rank.
void check_weight_rank(const std::string& op, const Tensor& t, const Tensor& weight) {
  if (weight.rank() != t.rank())
    throw ShapeError(op + ": the weight must have the input's rank " + std::to_string(t.rank()) +
                     " (channels, channels, kernel...), got " + to_string(weight) +
                     " for the input " + to_string(t));
}

/// The operands' dtypes and ranks: float, alike, (N, C, spatial...) with 1 to 3 spatial axes
/// and a weight of the same rank.
void check_conv_operands(const std::string& op, const Tensor& t, const Tensor& weight) {
  check_conv_input(op, t, weight);
  check_weight_rank(op, t, weight);
}

/// A pow2-scaled convolution's operands: float8 each (either format), ranks as conv's, and
/// an int32 scalar log2_scale.
void check_pow2scaled_operands(const std::string& op, const Tensor& t, const Tensor& weight,
                               const Tensor& log2_scale) {
  detail::check_float8(op, t, "the input");
  detail::check_float8(op, weight, "the weight");
  detail::check_log2_scale(op, log2_scale);
  check_input_rank(op, t);
  check_weight_rank(op, t, weight);
}

/// A pow2-scaled convolution `product` of t·2^log2_scale and the weight, both widened to
/// float32 (exactly: a float8 times 2^[-32, 32) is a float32), its result rounded once to
/// float16: pxl's float16 contract (products and sums in float32, one rounding on store).
Tensor pow2scaled(const Tensor& t, const Tensor& weight, const Tensor& log2_scale,
                  const std::function<Tensor(const Tensor&, const Tensor&)>& product) {
  const Tensor unscaled = constant(0.0, int32);
  return cast(product(pow2scale_cast_from_fp8(t, log2_scale, float32),
                      pow2scale_cast_from_fp8(weight, unscaled, float32)),
              float16);
}

/// Splits `total` padding of an axis as same_upper (the extra at the end) or otherwise.
void split_padding(ConvAttrs& a, std::size_t axis, std::int64_t total, bool upper) {
  a.pads_begin[axis] = upper ? total / 2 : total - total / 2;
  a.pads_end[axis] = total - a.pads_begin[axis];
}

/// The kernel's spatial extent (checked non-empty) and the channel counts' agreement with
/// `groups`, for an input of `channels` channels and a weight whose axis 1 holds `per_group`.
void check_kernel(const std::string& op, const Shape& weight, const std::string& weight_name) {
  for (std::size_t i = 2; i < weight.size(); ++i)
    if (weight[i] < 1)
      throw ShapeError(op + ": the weight " + weight_name + " has kernel size " +
                       std::to_string(weight[i]) + " on spatial axis " + std::to_string(i - 2) +
                       ", expected at least 1");
}

/// float8 products are computed in float32 (conv_pow2scaled): float16 partials are refused.
void check_pow2scaled_partials(const std::string& op, std::optional<DType> p) {
  if (p && *p != float32)
    throw DTypeError(op +
                     ": partials_type must be float32 (pxl computes float8 products in "
                     "float32), got " +
                     std::string(name(*p)));
}

/// conv's attributes and output shape for an input of shape `t` and a weight of shape `w`.
std::pair<ConvAttrs, Shape> conv_geometry(const std::string& op, const Shape& t, const Shape& w,
                                          const std::string& t_name, const std::string& w_name,
                                          const ConvOptions& o) {
  const std::size_t axes = t.size() - 2;
  ConvAttrs a;
  a.groups = o.groups;
  a.available_memory_proportion =
      detail::amp_memory_proportion(op, o.available_memory_proportion, 0.6);
  if (o.groups < 1)
    throw ValueError(op + ": groups must be at least 1, got " + std::to_string(o.groups));
  const std::int64_t c_in = t[1], c_out = w[0];
  if (c_in % o.groups != 0 || c_out % o.groups != 0)
    throw ShapeError(op + ": groups " + std::to_string(o.groups) +
                     " must divide the input's channels and the weight's output channels, got " +
                     std::to_string(c_in) + " (" + t_name + ") and " + std::to_string(c_out) +
                     " (" + w_name + ")");
  if (w[1] * o.groups != c_in)
    throw ShapeError(op + ": the weight " + w_name + " has " + std::to_string(w[1]) +
                     " input channels per group, expected " + std::to_string(c_in) + " / " +
                     std::to_string(o.groups) + " = " + std::to_string(c_in / o.groups) +
                     " for the input " + t_name + " with groups " + std::to_string(o.groups));
  check_kernel(op, w, w_name);
  a.strides = per_axis(op, "stride", o.stride, axes, 1, 1);
  a.dilations = per_axis(op, "dilation", o.dilation, axes, 1, 1);
  a.kernel.assign(w.begin() + 2, w.end());
  std::tie(a.pads_begin, a.pads_end) = padding_or_pad_type(op, o.padding, o.pad_type, axes);
  Shape out{t[0], c_out};
  for (std::size_t i = 0; i < axes; ++i) {
    const std::int64_t in = t[i + 2], s = a.strides[i];
    const std::int64_t span = a.dilations[i] * (a.kernel[i] - 1) + 1;
    if (o.pad_type == PadType::same_upper || o.pad_type == PadType::same_lower)
      std::tie(a.pads_begin[i], a.pads_end[i]) =
          same_padding(in, s, span, o.pad_type == PadType::same_upper);
    const std::int64_t padded = in + a.pads_begin[i] + a.pads_end[i];
    if (padded < span)
      throw ShapeError(op + ": the kernel of " + w_name + " spans " + std::to_string(span) +
                       " on spatial axis " + std::to_string(i) + " (kernel " +
                       std::to_string(a.kernel[i]) + ", dilation " +
                       std::to_string(a.dilations[i]) + "), more than the padded input's " +
                       std::to_string(padded) + " (" + t_name + ": " + std::to_string(in) +
                       " + padding " + std::to_string(a.pads_begin[i]) + " + " +
                       std::to_string(a.pads_end[i]) + "); pad the input or use a smaller kernel");
    out.push_back((padded - span) / s + 1);
  }
  return {std::move(a), std::move(out)};
}

/// conv_transpose's attributes and output shape for an input of shape `ts` and a weight of
/// shape `ws` (ranks checked), named `t_name` and `w_name` in messages.
std::pair<ConvAttrs, Shape> transpose_geometry(const std::string& op, const Shape& ts,
                                               const Shape& ws, const std::string& t_name,
                                               const std::string& w_name,
                                               const ConvTransposeOptions& o) {
  const std::size_t axes = ts.size() - 2;
  if (o.groups < 1)
    throw ValueError(op + ": groups must be at least 1, got " + std::to_string(o.groups));
  if (ws[0] != ts[1])
    throw ShapeError(op + ": the weight " + w_name +
                     " must be (C_in, C_out / groups, kernel...) with C_in the input's " +
                     std::to_string(ts[1]) + " channels (" + t_name + ")");
  if (ts[1] % o.groups != 0)
    throw ShapeError(op + ": groups " + std::to_string(o.groups) +
                     " must divide the input's channels, got " + t_name);
  check_kernel(op, ws, w_name);
  ConvAttrs a;
  a.groups = o.groups;
  a.available_memory_proportion =
      detail::amp_memory_proportion(op, o.available_memory_proportion, 0.6);
  a.strides = per_axis(op, "stride", o.stride, axes, 1, 1);
  a.dilations = per_axis(op, "dilation", o.dilation, axes, 1, 1);
  a.kernel.assign(ws.begin() + 2, ws.end());
  const Ints out_pad = per_axis(op, "output_padding", o.output_padding, axes, 0, 0);
  const Ints out_shape = per_axis(op, "output_shape", o.output_shape, axes, 0, 1);
  const Ints padding = explicit_padding(op, o.padding, axes);
  if (!is_zero(padding) && (o.pad_type != PadType::not_set || !o.output_shape.empty()))
    throw ValueError(op + ": padding " + spatial::list(padding) + " and " +
                     (o.output_shape.empty() ? std::string("pad_type ") + pad_type_name(o.pad_type)
                                             : "output_shape " + spatial::list(o.output_shape)) +
                     " are both set; give one (the padding is derived from the other)");
  a.pads_begin.assign(padding.begin(), padding.begin() + static_cast<std::ptrdiff_t>(axes));
  a.pads_end.assign(padding.begin() + static_cast<std::ptrdiff_t>(axes), padding.end());
  Shape out{ts[0], ws[1] * o.groups};
  for (std::size_t i = 0; i < axes; ++i) {
    const std::int64_t in = ts[i + 2], s = a.strides[i];
    if (out_pad[i] >= s)
      throw ValueError(op + ": output_padding " + spatial::list(out_pad) +
                       " must be smaller than the stride " + spatial::list(a.strides) +
                       " on every axis");
    const std::int64_t span = a.dilations[i] * (a.kernel[i] - 1) + 1;
    const std::int64_t full = s * (in - 1) + out_pad[i] + span; // the output without padding
    const bool same = o.pad_type == PadType::same_upper || o.pad_type == PadType::same_lower;
    if (!o.output_shape.empty() || same) {
      const std::int64_t want = o.output_shape.empty() ? in * s : out_shape[i];
      if (want > full)
        throw ShapeError(op + ": an output of size " + std::to_string(want) + " on spatial axis " +
                         std::to_string(i) + " needs negative padding: at most " +
                         std::to_string(full) + " = stride·(" + std::to_string(in) +
                         " - 1) + output_padding + dilation·(kernel - 1) + 1 for the input " +
                         t_name + " and the weight " + w_name);
      split_padding(a, i, full - want, o.pad_type == PadType::same_upper);
    }
    const std::int64_t size = full - a.pads_begin[i] - a.pads_end[i];
    if (size < 1)
      throw ShapeError(op + ": the output would have size " + std::to_string(size) +
                       " on spatial axis " + std::to_string(i) + " (" + std::to_string(full) +
                       " less padding " + std::to_string(a.pads_begin[i]) + " + " +
                       std::to_string(a.pads_end[i]) + ") for the input " + t_name +
                       " and the weight " + w_name + "; reduce the padding");
    out.push_back(size);
  }
  return {std::move(a), std::move(out)};
}

} // namespace

Tensor conv(const Tensor& t, const Tensor& weight, const ConvOptions& options) {
  const std::string op = "Conv";
  check_conv_operands(op, t, weight);
  auto [attrs, out] =
      conv_geometry(op, t.shape(), weight.shape(), to_string(t), to_string(weight), options);
  attrs.partials_type = detail::amp_partials_type(op, options.partials_type, float32, t.dtype());
  return detail::add_op1(OpKind::Conv, {t, weight}, TensorSpec{std::move(out), t.dtype()},
                         std::move(attrs));
}

Tensor conv_weights_grad(const Tensor& grad, const Tensor& t, const Shape& weight_shape,
                         const ConvOptions& options) {
  const std::string op = "ConvWeightsGrad";
  check_conv_input(op, t, grad);
  if (static_cast<std::int64_t>(weight_shape.size()) != t.rank())
    throw ShapeError(op + ": the weight shape " + to_string(weight_shape) +
                     " must have the input's rank, got the input " + to_string(t));
  auto [attrs, out] = conv_geometry(op, t.shape(), weight_shape, to_string(t),
                                    "of shape " + to_string(weight_shape), options);
  if (grad.shape() != out)
    throw ShapeError(op + ": the gradient " + to_string(grad) + " must have conv's output shape " +
                     to_string(out) + " for the input " + to_string(t) + " and a weight of shape " +
                     to_string(weight_shape));
  attrs.partials_type = detail::amp_partials_type(op, options.partials_type, float32, t.dtype());
  return detail::add_op1(OpKind::ConvWeightsGrad, {grad, t}, TensorSpec{weight_shape, t.dtype()},
                         std::move(attrs));
}

Tensor conv_transpose(const Tensor& t, const Tensor& weight, const ConvTransposeOptions& o) {
  const std::string op = "ConvTranspose";
  check_conv_operands(op, t, weight);
  auto [attrs, out] =
      transpose_geometry(op, t.shape(), weight.shape(), to_string(t), to_string(weight), o);
  attrs.partials_type = detail::amp_partials_type(op, o.partials_type, float32, t.dtype());
  return detail::add_op1(OpKind::ConvTranspose, {t, weight}, TensorSpec{std::move(out), t.dtype()},
                         std::move(attrs));
}

Tensor conv_pow2scaled(const Tensor& t, const Tensor& weight, const Tensor& log2_scale,
                       const ConvOptions& options) {
  const std::string op = "conv_pow2scaled";
  check_pow2scaled_operands(op, t, weight, log2_scale);
  check_pow2scaled_partials(op, options.partials_type);
  conv_geometry(op, t.shape(), weight.shape(), to_string(t), to_string(weight), options);
  return pow2scaled(t, weight, log2_scale,
                    [&](const Tensor& x, const Tensor& w) { return conv(x, w, options); });
}

Tensor conv_transpose_pow2scaled(const Tensor& t, const Tensor& weight, const Tensor& log2_scale,
                                 const ConvTransposeOptions& options) {
  const std::string op = "conv_transpose_pow2scaled";
  check_pow2scaled_operands(op, t, weight, log2_scale);
  check_pow2scaled_partials(op, options.partials_type);
  transpose_geometry(op, t.shape(), weight.shape(), to_string(t), to_string(weight), options);
  return pow2scaled(t, weight, log2_scale, [&](const Tensor& x, const Tensor& w) {
    return conv_transpose(x, w, options);
  });
}

} // namespace pxl::ops
