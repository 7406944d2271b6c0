// Convolutions with float16 partials (conv_partials.hpp): every output element summed from the
// definition, run by run, over a table of which input position each output position reads
// through each tap.
#include "conv_partials.hpp"

#include "common.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

namespace pxl::emu::detail {

namespace {

/// The run length of float16 partials: the AMP's float16 input-channel group.
constexpr std::int64_t conv_partials_run = 16;

/// A convolution's sizes and its tap table.
struct PartialsConvShape {
  std::int64_t images = 0, in_channels = 0, out_channels = 0, groups = 1;
  std::int64_t in_per_group = 0, out_per_group = 0, taps = 1, in_positions = 1, out_positions = 1;
  /// read[o·taps + t]: the input position output position o reads through tap t, or -1 in the
  /// padding.
  std::vector<std::int64_t> read;
  /// written[i·taps + t]: the output position that reads input position i through tap t, or -1.
  std::vector<std::int64_t> written;
};

PartialsConvShape partials_conv_shape(const ConvAttrs& a, const Shape& src, const Shape& w,
                                      const Shape& dst) {
  PartialsConvShape c;
  const std::size_t axes = src.size() - 2;
  c.images = src[0];
  c.in_channels = src[1];
  c.out_channels = dst[1];
  c.groups = std::max<std::int64_t>(1, a.groups);
  c.in_per_group = w[1];
  c.out_per_group = c.out_channels / c.groups;
  for (std::size_t i = 0; i < axes; ++i) {
    c.taps *= w[i + 2];
    c.in_positions *= src[i + 2];
    c.out_positions *= dst[i + 2];
  }
  c.read.assign(static_cast<std::size_t>(c.out_positions * c.taps), -1);
  c.written.assign(static_cast<std::size_t>(c.in_positions * c.taps), -1);
  std::vector<std::int64_t> o(axes, 0), k(axes, 0);
  for (std::int64_t op = 0; op < c.out_positions; ++op) {
    std::int64_t rest = op;
    for (std::size_t i = axes; i-- > 0;) {
      o[i] = rest % dst[i + 2];
      rest /= dst[i + 2];
    }
    for (std::int64_t t = 0; t < c.taps; ++t) {
      rest = t;
      for (std::size_t i = axes; i-- > 0;) {
        k[i] = rest % w[i + 2];
        rest /= w[i + 2];
      }
      std::int64_t in = 0;
      bool inside = true;
      for (std::size_t i = 0; i < axes && inside; ++i) {
        const std::int64_t p = o[i] * a.strides[i] - a.pads_begin[i] + k[i] * a.dilations[i];
        inside = p >= 0 && p < src[i + 2];
        in = in * src[i + 2] + p;
      }
      if (!inside)
        continue;
      c.read[static_cast<std::size_t>(op * c.taps + t)] = in;
      c.written[static_cast<std::size_t>(in * c.taps + t)] = op;
    }
  }
  return c;
}

/// acc + run, in float, rounded to half.
inline half partials_add(half acc, float run) { return half(static_cast<float>(acc) + run); }

} // namespace

StepFn compile_half_partials_conv(ConvPass pass, const ConvAttrs& attrs, const Shape& src,
                                  const Shape& weights, const Shape& dst, half* src_data,
                                  half* weights_data, half* dst_data) {
  auto shape =
      std::make_shared<const PartialsConvShape>(partials_conv_shape(attrs, src, weights, dst));
  switch (pass) {
  case ConvPass::forward:
    return [shape, x = src_data, w = weights_data, y = dst_data](unsigned wk, unsigned nw) {
      const PartialsConvShape& c = *shape;
      const std::int64_t total = c.images * c.out_channels * c.out_positions;
      const auto [begin, end] = worker_range(total, wk, nw);
      for (std::int64_t e = begin; e < end; ++e) {
        const std::int64_t o = e % c.out_positions, oc = (e / c.out_positions) % c.out_channels;
        const std::int64_t n = e / (c.out_positions * c.out_channels);
        const std::int64_t ic0 = (oc / c.out_per_group) * c.in_per_group;
        half acc{0.0f};
        for (std::int64_t b = 0; b < c.in_per_group; b += conv_partials_run)
          for (std::int64_t t = 0; t < c.taps; ++t) {
            const std::int64_t in = c.read[static_cast<std::size_t>(o * c.taps + t)];
            if (in < 0)
              continue;
            float sum = 0.0f;
            for (std::int64_t i = b; i < std::min(c.in_per_group, b + conv_partials_run); ++i)
              sum += static_cast<float>(x[(n * c.in_channels + ic0 + i) * c.in_positions + in]) *
                     static_cast<float>(w[(oc * c.in_per_group + i) * c.taps + t]);
            acc = partials_add(acc, sum);
          }
        y[e] = acc;
      }
    };
  case ConvPass::backward_data:
    return [shape, dx = src_data, w = weights_data, g = dst_data](unsigned wk, unsigned nw) {
      const PartialsConvShape& c = *shape;
      const std::int64_t total = c.images * c.in_channels * c.in_positions;
      const auto [begin, end] = worker_range(total, wk, nw);
      for (std::int64_t e = begin; e < end; ++e) {
        const std::int64_t in = e % c.in_positions, ic = (e / c.in_positions) % c.in_channels;
        const std::int64_t n = e / (c.in_positions * c.in_channels);
        const std::int64_t oc0 = (ic / c.in_per_group) * c.out_per_group, icl = ic % c.in_per_group;
        half acc{0.0f};
        for (std::int64_t b = 0; b < c.out_per_group; b += conv_partials_run)
          for (std::int64_t t = 0; t < c.taps; ++t) {
            const std::int64_t o = c.written[static_cast<std::size_t>(in * c.taps + t)];
            if (o < 0)
              continue;
            float sum = 0.0f;
            for (std::int64_t j = b; j < std::min(c.out_per_group, b + conv_partials_run); ++j)
              sum += static_cast<float>(g[(n * c.out_channels + oc0 + j) * c.out_positions + o]) *
                     static_cast<float>(w[((oc0 + j) * c.in_per_group + icl) * c.taps + t]);
            acc = partials_add(acc, sum);
          }
        dx[e] = acc;
      }
    };
  case ConvPass::backward_weights:
    return [shape, x = src_data, dw = weights_data, g = dst_data](unsigned wk, unsigned nw) {
      const PartialsConvShape& c = *shape;
      const std::int64_t total = c.out_channels * c.in_per_group * c.taps;
      const std::int64_t pairs = c.images * c.out_positions;
      const auto [begin, end] = worker_range(total, wk, nw);
      for (std::int64_t e = begin; e < end; ++e) {
        const std::int64_t t = e % c.taps, icl = (e / c.taps) % c.in_per_group;
        const std::int64_t oc = e / (c.taps * c.in_per_group);
        const std::int64_t ic = (oc / c.out_per_group) * c.in_per_group + icl;
        half acc{0.0f};
        for (std::int64_t q0 = 0; q0 < pairs; q0 += conv_partials_run) {
          float sum = 0.0f;
          bool any = false;
          for (std::int64_t q = q0; q < std::min(pairs, q0 + conv_partials_run); ++q) {
            const std::int64_t n = q / c.out_positions, o = q % c.out_positions;
            const std::int64_t in = c.read[static_cast<std::size_t>(o * c.taps + t)];
            if (in < 0)
              continue;
            any = true;
            sum += static_cast<float>(g[(n * c.out_channels + oc) * c.out_positions + o]) *
                   static_cast<float>(x[(n * c.in_channels + ic) * c.in_positions + in]);
          }
          if (any)
            acc = partials_add(acc, sum);
        }
        dw[e] = acc;
      }
    };
  }
  return {};
}

} // namespace pxl::emu::detail
