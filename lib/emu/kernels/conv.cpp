// Convolutions through oneDNN's primitives, on pxl's plain (N, C, spatial...) layout: Conv is a
// forward convolution, ConvTranspose its backward-data pass, ConvWeightsGrad its
// backward-weights pass. Primitives, memory objects, streams and scratch are made when the step
// is compiled, in the layouts oneDNN prefers (blocked ones, reordered from and to pxl's plain
// layout around each call). The forward and backward-data passes run image by image through a
// primitive planned for one image; the weight gradient runs on fixed blocks of output channels (or
// of groups) through primitives planned for one block over the whole batch. Each output element is
// thus computed by the same primitive whatever the worker count, so results are bitwise identical
// for any split. float16 is widened to float32, computed, and rounded once on store.
//
// Fused steps (fusion.hpp) give the bits of the steps they replace: a Conv's bias and ReLU
// are applied to each image as it is stored (rounded as the Add and Relu kernels round), and
// an update of a ConvWeightsGrad's result is applied to each block of the weights as it is
// computed (as scaled_add_ computes it), the gradient never stored whole.
#include "../compile_context.hpp"
#include "common.hpp"
#include "conv_partials.hpp"
#include "conv_plan.hpp"
#include "dnnl_threads.hpp"
#include "dnnl_util.hpp"
#include "scaled_add.hpp"

#include "pxl/core/half.hpp"

#include <dnnl.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

namespace pxl::emu::detail {

namespace {

/// What a fused Conv applies to each image it writes: out = relu?(conv + bias), where `bias`
/// (C_out values, or none) broadcasts over the image's channels.
template <typename T>
struct Epilogue {
  const T* bias = nullptr;
  bool relu = false;

  bool any() const { return bias != nullptr || relu; }

  /// Applies the epilogue to `image` (C_out channels of `spatial` floats) in place, adding each
  /// channel's bias in float as the Add kernel does, then ReLU as the Relu kernel (NaN kept, -0
  /// made +0). For float16, `image` holds the convolution already rounded to half and widened
  /// back (the unfused Conv's stored result), and the caller rounds the result to half once.
  void apply(float* image, std::int64_t channels, std::int64_t spatial) const {
    for (std::int64_t ch = 0; ch < channels; ++ch) {
      float* p = image + ch * spatial;
      if (bias) {
        const auto b = static_cast<float>(bias[ch]);
        for (std::int64_t i = 0; i < spatial; ++i)
          p[i] += b;
      }
      if (relu)
        for (std::int64_t i = 0; i < spatial; ++i)
          p[i] = relu_value(p[i]);
    }
  }
};

/// Forward (`pass` forward: x → y, then `epilogue`) or backward-data (dy → dx) over whole
/// images: `in` holds the images read, `out` those written, `weights` the convolution's weights.
template <typename T>
StepFn image_step(const ConvGeometry& c, ConvPass pass, const T* in, const T* weights, T* out,
                  unsigned workers, Epilogue<T> epilogue = {}) {
  auto s = std::make_shared<ConvState>();
  s->c = c;
  const std::int64_t ocg = c.oc / c.groups, icg = c.ic / c.groups;
  {
    SingleThreadedDnnl single;
    s->plans.push_back(plan_conv(c, pass, 1, c.groups, ocg, icg, workers));
    s->make_streams(workers);
  }
  const bool fwd = pass == ConvPass::forward;
  const std::int64_t in_image = fwd ? c.src_image() : c.dst_image();
  const std::int64_t out_image = fwd ? c.dst_image() : c.src_image();
  if constexpr (std::is_same_v<T, half>) {
    s->src32.assign(workers, std::vector<float>(static_cast<std::size_t>(in_image)));
    s->dst32.assign(workers, std::vector<float>(static_cast<std::size_t>(out_image)));
    s->weights32.assign(workers, std::vector<float>(static_cast<std::size_t>(c.weights_size())));
  }
  const std::int64_t out_spatial = product(c.out);
  return [s, pass, in, weights, out, in_image, out_image, epilogue, out_spatial](unsigned w,
                                                                                 unsigned nw) {
    const auto [begin, end] = worker_range(s->c.n, w, nw);
    if (begin == end)
      return;
    SingleThreadedDnnl single;
    PlannedConv& p = s->plans[0];
    dnnl::stream& stream = s->streams[w];
    if constexpr (std::is_same_v<T, half>) {
      to_float(weights, s->weights32[w].data(), s->c.weights_size());
      p.bind(w, ConvRole::weights, s->weights32[w].data());
    } else {
      p.bind(w, ConvRole::weights, weights);
    }
    p.load(w, stream, ConvRole::weights);
    // The forward pass reads src and writes dst; the data gradient the other way round.
    const ConvRole read = pass == ConvPass::forward ? ConvRole::src : ConvRole::dst;
    const ConvRole written = pass == ConvPass::forward ? ConvRole::dst : ConvRole::src;
    for (std::int64_t i = begin; i < end; ++i) {
      const T* x = in + i * in_image;
      T* y = out + i * out_image;
      const float* xf = nullptr;
      float* yf = nullptr;
      if constexpr (std::is_same_v<T, half>) {
        to_float(x, s->src32[w].data(), in_image);
        xf = s->src32[w].data();
        yf = s->dst32[w].data();
      } else {
        xf = x;
        yf = y;
      }
      p.bind(w, read, xf);
      p.bind(w, written, yf);
      p.load(w, stream, read);
      p.execute(w, stream);
      p.store(w, stream, written);
      if constexpr (std::is_same_v<T, half>) {
        convert(yf, y, static_cast<std::size_t>(out_image));
        if (epilogue.any()) {
          // From the result rounded to half, as the unfused Add reads it; rounded once more.
          convert(y, yf, static_cast<std::size_t>(out_image));
          epilogue.apply(yf, s->c.oc, out_spatial);
          convert(yf, y, static_cast<std::size_t>(out_image));
        }
      } else if (epilogue.any()) {
        epilogue.apply(yf, s->c.oc, out_spatial);
      }
    }
  };
}

/// What a fused ConvWeightsGrad does with each block of the gradient g it computes: w = keep·w +
/// scale·g (scale·(g·s) with `scalar`, a float32 scalar read as the step runs, as the unfused
/// Mul and update compute it).
struct WeightsUpdate {
  StepFusion::Update update;
  const float* scalar = nullptr;
};

/// The weight gradient on fixed blocks: of output channels without groups, of whole groups
/// with them. A block's src and dst channels are staged contiguous (widened for float16) when
/// they are not the whole tensor already. With `update`, each block updates `weights` instead
/// of overwriting it.
template <typename T>
StepFn weights_step(const ConvGeometry& c, const T* src, const T* dst, T* weights, unsigned workers,
                    std::optional<WeightsUpdate> update = {}) {
  auto s = std::make_shared<ConvState>();
  s->c = c;
  const std::int64_t ocg = c.oc / c.groups, icg = c.ic / c.groups;
  // Blocks of at least 16 output channels (oneDNN unfolds the input once per call) and at most
  // 8 blocks: enough for 1 to 4 workers. Fixed by the shape alone, never by the worker count.
  const bool grouped = c.groups > 1;
  const std::int64_t units_total = grouped ? c.groups : c.oc;
  const std::int64_t block =
      grouped ? (c.groups + 7) / 8 : std::min(c.oc, std::max<std::int64_t>(16, (c.oc + 7) / 8));
  const std::int64_t blocks = (units_total + block - 1) / block;
  const std::int64_t tail = units_total - (blocks - 1) * block;
  {
    SingleThreadedDnnl single;
    if (grouped) {
      s->plans.push_back(plan_conv(c, ConvPass::backward_weights, c.n, block, ocg, icg, workers));
      if (tail != block)
        s->plans.push_back(plan_conv(c, ConvPass::backward_weights, c.n, tail, ocg, icg, workers));
    } else {
      s->plans.push_back(plan_conv(c, ConvPass::backward_weights, c.n, 1, block, c.ic, workers));
      if (tail != block)
        s->plans.push_back(plan_conv(c, ConvPass::backward_weights, c.n, 1, tail, c.ic, workers));
    }
    s->make_streams(workers);
  }
  // Per block: src channels [block·k·icg, +count·icg) when grouped, all of them otherwise; dst
  // channels [k·block·ocg', +count·ocg') with ocg' = ocg grouped, 1 otherwise.
  const std::int64_t in_sp = product(c.in), out_sp = product(c.out);
  const std::int64_t src_ch = grouped ? block * icg : c.ic;
  const std::int64_t dst_ch = grouped ? block * ocg : block;
  const bool stage_src = grouped || std::is_same_v<T, half>;
  const std::int64_t w_per_unit = (grouped ? ocg : 1) * icg * product(c.kernel);
  if (stage_src)
    s->src32.assign(workers, std::vector<float>(static_cast<std::size_t>(c.n * src_ch * in_sp)));
  s->dst32.assign(workers, std::vector<float>(static_cast<std::size_t>(c.n * dst_ch * out_sp)));
  // The block's gradient in float (float16, or float32 under an update), and rounded to half
  // (float16 under an update).
  const auto block_weights = static_cast<std::size_t>(block * w_per_unit);
  if (std::is_same_v<T, half> || update)
    s->weights32.assign(workers, std::vector<float>(block_weights));
  if (std::is_same_v<T, half> && update)
    s->weights16.assign(workers, std::vector<half>(block_weights));
  return [=](unsigned w, unsigned nw) {
    const auto [begin, end] = worker_range(blocks, w, nw);
    if (begin == end)
      return;
    SingleThreadedDnnl single;
    const ConvGeometry& g = s->c;
    for (std::int64_t k = begin; k < end; ++k) {
      const std::int64_t count = k == blocks - 1 ? tail : block;
      PlannedConv& p = s->plans[count == block ? 0 : 1];
      const std::int64_t unit0 = k * block;
      // Gathers channels [c0, c0 + n_ch) of every image of `from` (of `ch` channels of `sp`
      // elements) into `to`, widened to float.
      const auto gather = [&](const T* from, std::int64_t ch, std::int64_t sp, std::int64_t c0,
                              std::int64_t n_ch, float* to) {
        for (std::int64_t i = 0; i < g.n; ++i)
          to_float(from + (i * ch + c0) * sp, to + i * n_ch * sp, n_ch * sp);
      };
      const float* sf = nullptr;
      if (stage_src) {
        const std::int64_t c0 = grouped ? unit0 * icg : 0, n_ch = grouped ? count * icg : g.ic;
        gather(src, g.ic, in_sp, c0, n_ch, s->src32[w].data());
        sf = s->src32[w].data();
      } else {
        sf = reinterpret_cast<const float*>(src);
      }
      const std::int64_t per = grouped ? ocg : 1;
      gather(dst, g.oc, out_sp, unit0 * per, count * per, s->dst32[w].data());
      T* wout = weights + unit0 * w_per_unit;
      dnnl::stream& stream = s->streams[w];
      p.bind(w, ConvRole::src, sf);
      p.bind(w, ConvRole::dst, s->dst32[w].data());
      float* g32 = std::is_same_v<T, half> || update ? s->weights32[w].data()
                                                     : reinterpret_cast<float*>(wout);
      p.bind(w, ConvRole::weights, g32);
      p.load(w, stream, ConvRole::src);
      p.load(w, stream, ConvRole::dst);
      p.execute(w, stream);
      p.store(w, stream, ConvRole::weights);
      const std::int64_t n = count * w_per_unit;
      if (!update) {
        if constexpr (std::is_same_v<T, half>)
          convert(g32, wout, static_cast<std::size_t>(n));
        continue;
      }
      const StepFusion::Update& u = update->update;
      if constexpr (std::is_same_v<T, half>) {
        half* g16 = s->weights16[w].data();
        convert(g32, g16, static_cast<std::size_t>(n)); // the gradient as stored unfused
        scaled_add_inplace(wout, g16, n, u.keep, u.scale);
      } else {
        if (update->scalar) {
          const float lr = *update->scalar; // the unfused Mul's float product
          for (std::int64_t i = 0; i < n; ++i)
            g32[i] *= lr;
        }
        scaled_add_inplace(wout, g32, n, u.keep, u.scale);
      }
    }
  };
}

/// Compiles `pass` with the op's tensors in oneDNN's roles: `src`, `weights` and `dst` are the
/// buffers of the convolution's input, weights and output, whichever the op reads. `fusion`
/// is what the step folds in (a forward pass's bias and ReLU, a weight gradient's update),
/// its extra operand after the op's own inputs (the bias, or the update's scalar).
StepFn compile_conv(CompileContext& ctx, const KernelOp& op, ConvPass pass, std::size_t src_at,
                    bool src_out, std::size_t weights_at, bool weights_out, std::size_t dst_at,
                    bool dst_out, const OpBuffers& buffers, const StepFusion& fusion = {}) {
  const auto tensor = [&](std::size_t i, bool is_out) {
    return is_out ? op.output(i) : op.input(i);
  };
  const auto buffer = [&](std::size_t i, bool is_out) {
    return is_out ? buffers.outputs[i] : buffers.inputs[i];
  };
  const KernelTensor src = tensor(src_at, src_out), weights = tensor(weights_at, weights_out),
                     dst = tensor(dst_at, dst_out);
  const ConvGeometry c =
      conv_geometry_of(op.attrs_as<ConvAttrs>(), src.shape(), weights.shape(), dst.shape());
  std::byte* sb = buffer(src_at, src_out);
  std::byte* wb = buffer(weights_at, weights_out);
  std::byte* db = buffer(dst_at, dst_out);
  const KernelTensor out = op.output(0);
  if (src.nelms() == 0 || weights.nelms() == 0 || dst.nelms() == 0) {
    PXL_ASSERT(!fusion.any()); // fuse_epilogues and fuse_product_updates leave these be
    return zero_step(buffers.outputs[0], out.nelms(), size_of(out.dtype()));
  }
  if (op.attrs_as<ConvAttrs>().partials_type == float16) {
    // Never fused with an epilogue or an update (fusion.cpp: has_plain_partials).
    PXL_ASSERT(!fusion.any());
    return compile_half_partials_conv(pass, op.attrs_as<ConvAttrs>(), src.shape(), weights.shape(),
                                      dst.shape(), typed<half>(sb), typed<half>(wb),
                                      typed<half>(db));
  }
  const std::byte* extra =
      buffers.inputs.size() > op.num_inputs() ? buffers.inputs.back() : nullptr;
  const unsigned workers = ctx.num_workers;
  return dispatch_float(op, out.dtype(), [&](auto type) -> StepFn {
    using T = typename decltype(type)::type;
    switch (pass) {
    case ConvPass::forward:
      return image_step<T>(
          c, pass, typed<const T>(sb), typed<const T>(wb), typed<T>(db), workers,
          {.bias = fusion.bias ? typed<const T>(extra) : nullptr, .relu = fusion.relu});
    case ConvPass::backward_data:
      return image_step<T>(c, pass, typed<const T>(db), typed<const T>(wb), typed<T>(sb), workers);
    case ConvPass::backward_weights: {
      std::optional<WeightsUpdate> update;
      if (fusion.update)
        update = WeightsUpdate{
            *fusion.update, fusion.update->scaled_by_input ? typed<const float>(extra) : nullptr};
      return weights_step<T>(c, typed<const T>(sb), typed<const T>(db), typed<T>(wb), workers,
                             update);
    }
    }
    return {};
  });
}

} // namespace

StepFn compile_Conv(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  // x (input 0), w (input 1) -> y (output 0)
  return compile_conv(ctx, op, ConvPass::forward, 0, false, 1, false, 0, true, buffers);
}

StepFn compile_ConvTranspose(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  // The data gradient of the convolution from its output (input 0) to its input (output 0).
  return compile_conv(ctx, op, ConvPass::backward_data, 0, true, 1, false, 0, false, buffers);
}

StepFn compile_ConvWeightsGrad(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  // The convolution's output gradient (input 0) and input (input 1) -> its weights (output 0).
  return compile_conv(ctx, op, ConvPass::backward_weights, 1, false, 0, true, 0, false, buffers);
}

StepFn compile_fused_conv(CompileContext& ctx, const KernelOp& op, const StepFusion& fusion,
                          const OpBuffers& buffers) {
  if (op.kind() == OpKind::Conv)
    return compile_conv(ctx, op, ConvPass::forward, 0, false, 1, false, 0, true, buffers, fusion);
  PXL_ASSERT(op.kind() == OpKind::ConvWeightsGrad && fusion.update);
  return compile_conv(ctx, op, ConvPass::backward_weights, 1, false, 0, true, 0, false, buffers,
                      fusion);
}

} // namespace pxl::emu::detail
