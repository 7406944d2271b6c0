// Pooling layers over ops::max_pool, ops::average_pool and ops::global_average_pool.
#include "pxl/addons/layers/pool.hpp"

#include "spatial.hpp"

#include "pxl/ops/pool.hpp"
#include "pxl/ops/shape.hpp"

#include <string>
#include <utility>

namespace pxl::addons {

namespace {

using layers_detail::per_axis;

void check_rank(const Tensor& x, const char* layer, const char* layout) {
  if (x.rank() != 4)
    throw ShapeError(std::string(layer) + ": expected an input of rank 4 " + layout +
                     ", got shape " + pxl::to_string(x.shape()));
}

/// PyTorch's arguments as ops::PoolOptions: symmetric padding, the stride defaulting to the
/// kernel size.
ops::PoolOptions torch_options(const std::vector<std::int64_t>& kernel, const Pool2DOptions& o) {
  ops::PoolOptions p{.stride = o.stride.empty() ? kernel : o.stride,
                     .dilation = o.dilation,
                     .ceil_mode = o.ceil_mode,
                     .count_include_pad = o.count_include_pad};
  p.padding = o.padding;
  p.padding.insert(p.padding.end(), o.padding.begin(), o.padding.end());
  return p;
}

/// Pool2DOptions with every list one per axis, checked for `layer`.
Pool2DOptions checked(Pool2DOptions o, const std::string& layer) {
  o.stride = o.stride.empty() ? o.stride : per_axis(std::move(o.stride), 2, layer, "stride");
  o.padding = per_axis(std::move(o.padding), 2, layer, "padding", 0, 0);
  o.dilation = per_axis(std::move(o.dilation), 2, layer, "dilation");
  return o;
}

/// Keras's pooling: a channels-first pool of `pool`, in the input's layout.
template <typename Pool>
Tensor keras_pool(const Tensor& x, const std::vector<std::int64_t>& pool_size,
                  const KerasPoolOptions& o, const char* layer, Pool&& pool) {
  const bool last = o.data_format == DataFormat::channels_last;
  check_rank(x, layer, last ? "(batch, rows, cols, channels)" : "(batch, channels, rows, cols)");
  ops::PoolOptions p{.stride = o.strides.empty() ? pool_size : o.strides};
  if (o.padding == Padding::same)
    p.pad_type = ops::PadType::same_upper;
  const Tensor xf = last ? ops::transpose(x, layers_detail::to_channels_first(4)) : x;
  const Tensor y = pool(xf, pool_size, p);
  return last ? ops::transpose(y, layers_detail::to_channels_last(4)) : y;
}

} // namespace

MaxPool2D::MaxPool2D(std::vector<std::int64_t> kernel, Pool2DOptions pool_options)
    : kernel_size(per_axis(std::move(kernel), 2, "MaxPool2D", "kernel size")),
      options(checked(std::move(pool_options), "MaxPool2D")) {}

Tensor MaxPool2D::build(const Tensor& x) {
  check_rank(x, "MaxPool2D", "(N, C, H, W)");
  ops::PoolOptions p = torch_options(kernel_size, options);
  p.count_include_pad = false; // the average's alone
  return ops::max_pool(x, kernel_size, p);
}

AvgPool2D::AvgPool2D(std::vector<std::int64_t> kernel, Pool2DOptions pool_options)
    : kernel_size(per_axis(std::move(kernel), 2, "AvgPool2D", "kernel size")),
      options(checked(std::move(pool_options), "AvgPool2D")) {
  for (const std::int64_t d : options.dilation)
    if (d != 1)
      throw ValueError("AvgPool2D: has no dilation (as PyTorch's AvgPool2d), got " +
                       std::to_string(d));
}

Tensor AvgPool2D::build(const Tensor& x) {
  check_rank(x, "AvgPool2D", "(N, C, H, W)");
  return ops::average_pool(x, kernel_size, torch_options(kernel_size, options));
}

GlobalAvgPool2D::GlobalAvgPool2D(bool keep) : keepdims(keep) {}

Tensor GlobalAvgPool2D::build(const Tensor& x) {
  check_rank(x, "GlobalAvgPool2D", "(N, C, H, W)");
  const Tensor y = ops::global_average_pool(x);
  return keepdims ? y : ops::reshape(y, {x.shape()[0], x.shape()[1]});
}

MaxPooling2D::MaxPooling2D(std::vector<std::int64_t> pool, KerasPoolOptions pool_options)
    : pool_size(per_axis(std::move(pool), 2, "MaxPooling2D", "pool size")),
      options(std::move(pool_options)) {
  if (!options.strides.empty())
    options.strides = per_axis(std::move(options.strides), 2, "MaxPooling2D", "stride");
}

Tensor MaxPooling2D::build(const Tensor& x) {
  return keras_pool(
      x, pool_size, options, "MaxPooling2D",
      [](const Tensor& t, const auto& k, const auto& p) { return ops::max_pool(t, k, p); });
}

AveragePooling2D::AveragePooling2D(std::vector<std::int64_t> pool, KerasPoolOptions pool_options)
    : pool_size(per_axis(std::move(pool), 2, "AveragePooling2D", "pool size")),
      options(std::move(pool_options)) {
  if (!options.strides.empty())
    options.strides = per_axis(std::move(options.strides), 2, "AveragePooling2D", "stride");
}

Tensor AveragePooling2D::build(const Tensor& x) {
  return keras_pool(
      x, pool_size, options, "AveragePooling2D",
      [](const Tensor& t, const auto& k, const auto& p) { return ops::average_pool(t, k, p); });
}

GlobalAveragePooling2D::GlobalAveragePooling2D(DataFormat format, bool keep)
    : data_format(format), keepdims(keep) {}

Tensor GlobalAveragePooling2D::build(const Tensor& x) {
  const bool last = data_format == DataFormat::channels_last;
  check_rank(x, "GlobalAveragePooling2D",
             last ? "(batch, rows, cols, channels)" : "(batch, channels, rows, cols)");
  const Tensor xf = last ? ops::transpose(x, layers_detail::to_channels_first(4)) : x;
  const Tensor y = ops::global_average_pool(xf); // (N, C, 1, 1)
  if (!keepdims)
    return ops::reshape(y, {x.shape()[0], xf.shape()[1]});
  return last ? ops::transpose(y, layers_detail::to_channels_last(4)) : y;
}

} // namespace pxl::addons
