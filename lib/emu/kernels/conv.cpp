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

using dims = dnnl::memory::dims;

/// A convolution in oneDNN's terms: src (N, IC, in...), weights (OC, IC / groups, kernel...),
/// dst (N, OC, out...).
struct ConvGeometry {
  std::int64_t n = 0, ic = 0, oc = 0, groups = 1;
  dims in, out, kernel, strides, dilates, pad_l, pad_r;

  std::int64_t src_image() const { return ic * product(in); }
  std::int64_t dst_image() const { return oc * product(out); }
  std::int64_t weights_size() const { return oc * (ic / groups) * product(kernel); }

  /// The descriptors of a convolution over `images` images, `g` groups of `ic_g` input and
  /// `oc_g` output channels each (a part of this one: a block of its groups or channels).
  dnnl::memory::desc src(std::int64_t images, std::int64_t channels) const {
    dims d{images, channels};
    d.insert(d.end(), in.begin(), in.end());
    return dense(d);
  }
  dnnl::memory::desc dst(std::int64_t images, std::int64_t channels) const {
    dims d{images, channels};
    d.insert(d.end(), out.begin(), out.end());
    return dense(d);
  }
  dnnl::memory::desc weights(std::int64_t g, std::int64_t oc_g, std::int64_t ic_g) const {
    dims d{oc_g, ic_g};
    if (g > 1)
      d.insert(d.begin(), g);
    d.insert(d.end(), kernel.begin(), kernel.end());
    return dense(d);
  }
};

/// `src`, `weights` and `dst` name the shapes of the convolution's three tensors, whichever of
/// them the op reads and writes.
ConvGeometry geometry_of(const ConvAttrs& a, const Shape& src, const Shape& weights,
                         const Shape& dst) {
  ConvGeometry g;
  g.n = src[0];
  g.ic = src[1];
  g.oc = dst[1];
  g.groups = a.groups;
  g.in.assign(src.begin() + 2, src.end());
  g.out.assign(dst.begin() + 2, dst.end());
  g.kernel.assign(weights.begin() + 2, weights.end());
  g.strides = a.strides;
  g.pad_l = a.pads_begin;
  g.pad_r = a.pads_end;
  for (const auto d : a.dilations)
    g.dilates.push_back(d - 1); // oneDNN counts the gaps between kernel taps
  return g;
}

enum class Pass : std::uint8_t { forward, backward_data, backward_weights };

/// The three tensors of a convolution, in oneDNN's terms, and their index in a Planned's arrays.
enum class Role : std::uint8_t { src, weights, dst };
constexpr std::size_t at(Role r) { return static_cast<std::size_t>(r); }

/// One planned primitive and, per worker, the memory it runs on. The kernel hands it dense
/// (N, C, spatial...) float32 buffers (`bind`); where oneDNN chose a blocked layout for a
/// tensor (nChw16c and the like, several times faster than the plain one for most channel
/// counts), the worker holds that tensor in its layout too, and `load` and `store` reorder
/// between the two.
struct Planned {
  dnnl::primitive primitive;
  std::array<std::optional<dnnl::reorder>, 3> reorders; ///< by Role, where the layouts differ
  struct Bound {
    std::array<dnnl::memory, 3> plain;  ///< by Role, on the kernel's buffers
    std::array<dnnl::memory, 3> chosen; ///< by Role, in oneDNN's layout (or `plain`)
    dnnl::memory scratchpad;
    std::array<dnnl_exec_arg_t, 4> args{};
    std::array<std::array<dnnl_exec_arg_t, 2>, 3> reorder_args{};
  };
  std::vector<Bound> workers;

  void bind(unsigned w, Role r, const float* data) {
    workers[w].plain[at(r)].set_data_handle(const_cast<float*>(data));
  }
  /// Brings the bound buffer of `r`, a tensor the primitive reads, into oneDNN's layout.
  void load(unsigned w, dnnl::stream& stream, Role r) { reorder(w, stream, r); }
  /// Writes `r`, a tensor the primitive wrote, to its bound buffer.
  void store(unsigned w, dnnl::stream& stream, Role r) { reorder(w, stream, r); }
  void execute(unsigned w, dnnl::stream& stream) {
    const auto& args = workers[w].args;
    const auto status = dnnl_primitive_execute(primitive.get(), stream.get(),
                                               static_cast<int>(args.size()), args.data());
    PXL_ASSERT(status == dnnl_success);
  }

private:
  void reorder(unsigned w, dnnl::stream& stream, Role r) {
    if (!reorders[at(r)])
      return;
    const auto& args = workers[w].reorder_args[at(r)];
    const auto status = dnnl_primitive_execute(reorders[at(r)]->get(), stream.get(),
                                               static_cast<int>(args.size()), args.data());
    PXL_ASSERT(status == dnnl_success);
  }
};

/// Plans `pass` over `images` images and `g` groups of `oc_g` output and `ic_g` input channels
/// for `workers` workers, in the layouts oneDNN prefers.
Planned plan_conv(const ConvGeometry& c, Pass pass, std::int64_t images, std::int64_t g,
                  std::int64_t oc_g, std::int64_t ic_g, unsigned workers) {
  using namespace dnnl;
  const std::array<memory::desc, 3> plain = {c.src(images, g * ic_g), c.weights(g, oc_g, ic_g),
                                             c.dst(images, g * oc_g)};
  std::array<memory::desc, 3> any;
  for (std::size_t r = 0; r < 3; ++r)
    any[r] = memory::desc(plain[r].dims(), memory::data_type::f32, memory::format_tag::any);
  const auto alg = algorithm::convolution_direct;
  primitive_attr attr;
  attr.set_scratchpad_mode(scratchpad_mode::user);
  const convolution_forward::desc fwd(prop_kind::forward_training, alg, any[at(Role::src)],
                                      any[at(Role::weights)], any[at(Role::dst)], c.strides,
                                      c.dilates, c.pad_l, c.pad_r);
  const convolution_forward::primitive_desc fwd_pd(fwd, attr, cpu_engine());
  Planned p;
  std::array<memory::desc, 3> chosen;
  memory::desc scratch;
  std::array<int, 3> arg = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
  std::array<bool, 3> reads = {true, true, false};
  switch (pass) {
  case Pass::forward:
    p.primitive = convolution_forward(fwd_pd);
    chosen = {fwd_pd.src_desc(), fwd_pd.weights_desc(), fwd_pd.dst_desc()};
    scratch = fwd_pd.scratchpad_desc();
    break;
  case Pass::backward_data: {
    const convolution_backward_data::desc d(alg, any[at(Role::src)], any[at(Role::weights)],
                                            any[at(Role::dst)], c.strides, c.dilates, c.pad_l,
                                            c.pad_r);
    const convolution_backward_data::primitive_desc pd(d, attr, cpu_engine(), fwd_pd);
    p.primitive = convolution_backward_data(pd);
    chosen = {pd.diff_src_desc(), pd.weights_desc(), pd.diff_dst_desc()};
    scratch = pd.scratchpad_desc();
    arg = {DNNL_ARG_DIFF_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_DST};
    reads = {false, true, true};
    break;
  }
  case Pass::backward_weights: {
    const convolution_backward_weights::desc d(alg, any[at(Role::src)], any[at(Role::weights)],
                                               any[at(Role::dst)], c.strides, c.dilates, c.pad_l,
                                               c.pad_r);
    const convolution_backward_weights::primitive_desc pd(d, attr, cpu_engine(), fwd_pd);
    p.primitive = convolution_backward_weights(pd);
    chosen = {pd.src_desc(), pd.diff_weights_desc(), pd.diff_dst_desc()};
    scratch = pd.scratchpad_desc();
    arg = {DNNL_ARG_SRC, DNNL_ARG_DIFF_WEIGHTS, DNNL_ARG_DIFF_DST};
    reads = {true, false, true};
    break;
  }
  }
  for (std::size_t r = 0; r < 3; ++r)
    if (chosen[r] != plain[r])
      p.reorders[r] =
          reads[r]
              ? reorder(reorder::primitive_desc(cpu_engine(), plain[r], cpu_engine(), chosen[r]))
              : reorder(reorder::primitive_desc(cpu_engine(), chosen[r], cpu_engine(), plain[r]));
  for (unsigned w = 0; w < workers; ++w) {
    Planned::Bound b;
    for (std::size_t r = 0; r < 3; ++r) {
      b.plain[r] = memory(plain[r], cpu_engine(), DNNL_MEMORY_NONE);
      // oneDNN allocates the blocked copies (aligned), here, once.
      b.chosen[r] = p.reorders[r] ? memory(chosen[r], cpu_engine()) : b.plain[r];
      const auto from = reads[r] ? b.plain[r] : b.chosen[r];
      const auto to = reads[r] ? b.chosen[r] : b.plain[r];
      b.reorder_args[r] = {dnnl_exec_arg_t{DNNL_ARG_FROM, from.get()},
                           dnnl_exec_arg_t{DNNL_ARG_TO, to.get()}};
      b.args[r] = dnnl_exec_arg_t{arg[r], b.chosen[r].get()};
    }
    b.scratchpad = memory(scratch, cpu_engine());
    b.args[3] = dnnl_exec_arg_t{DNNL_ARG_SCRATCHPAD, b.scratchpad.get()};
    p.workers.push_back(std::move(b));
  }
  return p;
}

/// What a step owns: its plans, per-worker streams and float32 staging.
struct ConvState {
  ConvGeometry c;
  std::vector<Planned> plans;
  std::vector<dnnl::stream> streams;
  /// Per worker, float32 copies: the src part, the weights part, the dst part a call reads or
  /// writes (sized for the dtype and pass; empty where the call uses the buffers directly).
  std::vector<std::vector<float>> src32, weights32, dst32;
  /// Per worker, a fused float16 weight gradient's block rounded to half, as stored unfused.
  std::vector<std::vector<half>> weights16;

  void make_streams(unsigned workers) {
    for (unsigned w = 0; w < workers; ++w)
      streams.emplace_back(cpu_engine());
  }
};

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
StepFn image_step(const ConvGeometry& c, Pass pass, const T* in, const T* weights, T* out,
                  unsigned workers, Epilogue<T> epilogue = {}) {
  auto s = std::make_shared<ConvState>();
  s->c = c;
  const std::int64_t ocg = c.oc / c.groups, icg = c.ic / c.groups;
  {
    SingleThreadedDnnl single;
    s->plans.push_back(plan_conv(c, pass, 1, c.groups, ocg, icg, workers));
    s->make_streams(workers);
  }
  const bool fwd = pass == Pass::forward;
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
    Planned& p = s->plans[0];
    dnnl::stream& stream = s->streams[w];
    if constexpr (std::is_same_v<T, half>) {
      to_float(weights, s->weights32[w].data(), s->c.weights_size());
      p.bind(w, Role::weights, s->weights32[w].data());
    } else {
      p.bind(w, Role::weights, weights);
    }
    p.load(w, stream, Role::weights);
    // The forward pass reads src and writes dst; the data gradient the other way round.
    const Role read = pass == Pass::forward ? Role::src : Role::dst;
    const Role written = pass == Pass::forward ? Role::dst : Role::src;
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
      s->plans.push_back(plan_conv(c, Pass::backward_weights, c.n, block, ocg, icg, workers));
      if (tail != block)
        s->plans.push_back(plan_conv(c, Pass::backward_weights, c.n, tail, ocg, icg, workers));
    } else {
      s->plans.push_back(plan_conv(c, Pass::backward_weights, c.n, 1, block, c.ic, workers));
      if (tail != block)
        s->plans.push_back(plan_conv(c, Pass::backward_weights, c.n, 1, tail, c.ic, workers));
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
      Planned& p = s->plans[count == block ? 0 : 1];
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
      p.bind(w, Role::src, sf);
      p.bind(w, Role::dst, s->dst32[w].data());
      float* g32 = std::is_same_v<T, half> || update ? s->weights32[w].data()
                                                     : reinterpret_cast<float*>(wout);
      p.bind(w, Role::weights, g32);
      p.load(w, stream, Role::src);
      p.load(w, stream, Role::dst);
      p.execute(w, stream);
      p.store(w, stream, Role::weights);
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
StepFn compile_conv(CompileContext& ctx, const KernelOp& op, Pass pass, std::size_t src_at,
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
      geometry_of(op.attrs_as<ConvAttrs>(), src.shape(), weights.shape(), dst.shape());
  std::byte* sb = buffer(src_at, src_out);
  std::byte* wb = buffer(weights_at, weights_out);
  std::byte* db = buffer(dst_at, dst_out);
  const KernelTensor out = op.output(0);
  if (src.nelms() == 0 || weights.nelms() == 0 || dst.nelms() == 0) {
    PXL_ASSERT(!fusion.any()); // fuse_epilogues and fuse_product_updates leave these be
    return zero_step(buffers.outputs[0], out.nelms(), size_of(out.dtype()));
  }
  const std::byte* extra =
      buffers.inputs.size() > op.num_inputs() ? buffers.inputs.back() : nullptr;
  const unsigned workers = ctx.num_workers;
  return dispatch_float(op, out.dtype(), [&](auto type) -> StepFn {
    using T = typename decltype(type)::type;
    switch (pass) {
    case Pass::forward:
      return image_step<T>(
          c, pass, typed<const T>(sb), typed<const T>(wb), typed<T>(db), workers,
          {.bias = fusion.bias ? typed<const T>(extra) : nullptr, .relu = fusion.relu});
    case Pass::backward_data:
      return image_step<T>(c, pass, typed<const T>(db), typed<const T>(wb), typed<T>(sb), workers);
    case Pass::backward_weights: {
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
  return compile_conv(ctx, op, Pass::forward, 0, false, 1, false, 0, true, buffers);
}

StepFn compile_ConvTranspose(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  // The data gradient of the convolution from its output (input 0) to its input (output 0).
  return compile_conv(ctx, op, Pass::backward_data, 0, true, 1, false, 0, false, buffers);
}

StepFn compile_ConvWeightsGrad(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  // The convolution's output gradient (input 0) and input (input 1) -> its weights (output 0).
  return compile_conv(ctx, op, Pass::backward_weights, 1, false, 0, true, 0, false, buffers);
}

StepFn compile_fused_conv(CompileContext& ctx, const KernelOp& op, const StepFusion& fusion,
                          const OpBuffers& buffers) {
  if (op.kind() == OpKind::Conv)
    return compile_conv(ctx, op, Pass::forward, 0, false, 1, false, 0, true, buffers, fusion);
  PXL_ASSERT(op.kind() == OpKind::ConvWeightsGrad && fusion.update);
  return compile_conv(ctx, op, Pass::backward_weights, 1, false, 0, true, 0, false, buffers,
                      fusion);
}

} // namespace pxl::emu::detail
