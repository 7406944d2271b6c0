// Pools through oneDNN's pooling primitives, on pxl's plain (N, C, spatial...) layout. Every
// primitive is planned once, when the step is compiled, for one image with all its channels, and
// the steps split the batch over the workers by whole images: each output element is computed by
// the same primitive whatever the worker count, so results are bitwise identical for any split.
// float16 is widened to float32, pooled, and rounded once on store.
//
// MaxPoolGrad runs the forward primitive in training mode for its workspace (each window's
// argmax), then the backward one, which sends each output gradient to that argmax. Each of
// oneDNN 2.6's max-pooling implementations (jit, simple_nchw, ref) keeps a window's running
// maximum and replaces it only by a strictly larger tap, walking the taps in the window's
// row-major order, so the argmax is the first of the window's largest elements, as pxl
// promises: the backward primitive can be used as it is. test/kernels/pool.cpp checks it on
// inputs full of ties for every geometry it runs, on whichever implementation the CPU gets.
//
// oneDNN's average that includes padding divides by the whole kernel, a ceil_mode window's part
// past the padding too. pxl counts the explicit padding but not that part, as ONNX and PyTorch
// do, so an average with count_include_pad pools a copy of the image padded with zeros by
// oneDNN's average that excludes padding: the explicit padding is then input, the extra part
// padding.
#include "../compile_context.hpp"
#include "common.hpp"
#include "dnnl_threads.hpp"
#include "dnnl_util.hpp"

#include "pxl/core/half.hpp"

#include <dnnl.hpp>

#include <array>
#include <cstring>
#include <memory>
#include <vector>

namespace pxl::emu::detail {

namespace {

using dims = dnnl::memory::dims;

/// A pool in oneDNN's terms over one image: src (1, C, staged...), dst (1, C, out...), where
/// `staged` is the input, or with `pad_staged` the input with its explicit padding.
struct PoolGeometry {
  std::int64_t n = 0, c = 0;
  dims in, staged, offset, out, kernel, strides, dilates, pad_l, pad_r;
  bool pad_staged = false;

  std::int64_t in_image() const { return c * product(in); }
  std::int64_t staged_image() const { return c * product(staged); }
  std::int64_t out_image() const { return c * product(out); }
  dnnl::memory::desc image(const dims& spatial) const {
    dims d{1, c};
    d.insert(d.end(), spatial.begin(), spatial.end());
    return dense(d);
  }
};

/// The geometry of a pool of attributes `a` from an input of shape `src` to an output of shape
/// `dst`; `pad_staged` for an average with count_include_pad.
PoolGeometry pool_geometry_of(const PoolAttrs& a, const Shape& src, const Shape& dst,
                              bool pad_staged) {
  PoolGeometry g;
  g.n = src[0];
  g.c = src[1];
  g.pad_staged = pad_staged;
  g.in.assign(src.begin() + 2, src.end());
  g.out.assign(dst.begin() + 2, dst.end());
  g.kernel = a.kernel;
  g.strides = a.strides;
  for (std::size_t i = 0; i < g.in.size(); ++i) {
    g.dilates.push_back(a.dilations[i] - 1); // oneDNN counts the gaps between taps
    const std::int64_t span = a.dilations[i] * (a.kernel[i] - 1) + 1;
    const std::int64_t pb = a.pads_begin[i], pe = a.pads_end[i];
    // How far ceil_mode's last window runs past the padding after the input.
    const std::int64_t past =
        std::max<std::int64_t>(0, (g.out[i] - 1) * a.strides[i] + span - (g.in[i] + pb + pe));
    g.staged.push_back(pad_staged ? g.in[i] + pb + pe : g.in[i]);
    g.offset.push_back(pad_staged ? pb : 0);
    g.pad_l.push_back(pad_staged ? 0 : pb);
    g.pad_r.push_back(pad_staged ? past : pe + past);
  }
  return g;
}

/// Where row `r` (along the last axis) of the (C, in...) image starts in the (C, staged...) one.
std::int64_t staged_row(const PoolGeometry& g, std::int64_t r) {
  std::int64_t stride = g.staged.back(), at = g.offset.back();
  for (std::size_t i = g.in.size() - 1; i-- > 0;) {
    at += (r % g.in[i] + g.offset[i]) * stride;
    r /= g.in[i];
    stride *= g.staged[i];
  }
  return at + r * stride; // r is the channel now
}

/// Copies the (C, in...) image `from` into the (C, staged...) image `to` at the geometry's
/// offset, widened to float.
template <typename T>
void stage_in(const PoolGeometry& g, const T* from, float* to) {
  const std::int64_t len = g.in.back(), rows = g.in_image() / len;
  for (std::int64_t r = 0; r < rows; ++r) {
    float* row = to + staged_row(g, r);
    if constexpr (std::is_same_v<T, half>)
      convert(from + r * len, row, static_cast<std::size_t>(len));
    else
      std::memcpy(row, from + r * len, static_cast<std::size_t>(len) * sizeof(float));
  }
}

/// The inverse of stage_in: the (C, in...) part of the staged image `from`, rounded to `T`.
template <typename T>
void stage_out(const PoolGeometry& g, const float* from, T* to) {
  const std::int64_t len = g.in.back(), rows = g.in_image() / len;
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = from + staged_row(g, r);
    if constexpr (std::is_same_v<T, half>)
      convert(row, to + r * len, static_cast<std::size_t>(len));
    else
      std::memcpy(to + r * len, row, static_cast<std::size_t>(len) * sizeof(float));
  }
}

/// A planned primitive and, per worker, the memory objects of its arguments, whose data
/// handles the step points at each image's buffers.
struct PlannedPool {
  dnnl::primitive primitive;
  struct Bound {
    std::vector<dnnl::memory> memory; ///< by argument, the scratchpad last
    std::vector<dnnl_exec_arg_t> args;
  };
  std::vector<Bound> workers;

  /// Binds argument `k` (in the order given to `plan`) of worker `w` to `data`.
  void bind(unsigned w, std::size_t k, const float* data) {
    workers[w].memory[k].set_data_handle(const_cast<float*>(data));
  }
  void execute(unsigned w, dnnl::stream& stream) {
    const auto& args = workers[w].args;
    const auto status = dnnl_primitive_execute(primitive.get(), stream.get(),
                                               static_cast<int>(args.size()), args.data());
    PXL_ASSERT(status == dnnl_success);
  }
};

/// Plans `primitive` with arguments `args` of descriptors `descs` for `workers` workers. The
/// workspace argument, if any, is worker w's `workspace[w]` (in oneDNN's layout, written by the
/// forward pass and read by the backward one); the others are bound to the kernel's buffers
/// before each call.
PlannedPool plan_primitive(dnnl::primitive primitive, const std::vector<int>& args,
                           const std::vector<dnnl::memory::desc>& descs,
                           const dnnl::memory::desc& scratch,
                           const std::vector<dnnl::memory>& workspace, unsigned workers) {
  PlannedPool p;
  p.primitive = std::move(primitive);
  for (unsigned w = 0; w < workers; ++w) {
    PlannedPool::Bound b;
    for (std::size_t k = 0; k < args.size(); ++k) {
      b.memory.push_back(args[k] == DNNL_ARG_WORKSPACE
                             ? workspace[w]
                             : dnnl::memory(descs[k], cpu_engine(), DNNL_MEMORY_NONE));
      b.args.push_back({args[k], b.memory.back().get()});
    }
    b.memory.emplace_back(scratch, cpu_engine());
    b.args.push_back({DNNL_ARG_SCRATCHPAD, b.memory.back().get()});
    p.workers.push_back(std::move(b));
  }
  return p;
}

enum class PoolOp : std::uint8_t { max, average, max_grad, average_grad };

/// What a step owns: its plans (forward, backward or both), per-worker streams and float32
/// staging.
struct PoolState {
  PoolGeometry g;
  PoolOp kind = PoolOp::max;
  std::vector<PlannedPool> fwd, bwd;   ///< empty or one plan each
  std::vector<dnnl::memory> workspace; ///< per worker, max_grad's argmax of each window
  std::vector<dnnl::stream> streams;
  /// Per worker: the staged input image, the pooled image, the output gradient widened, the
  /// input gradient staged (each empty where the step uses the tensors' buffers directly).
  std::vector<std::vector<float>> src32, dst32, dd32, ds32;
};

// Argument positions in the plans.
constexpr std::size_t src_arg = 0, dst_arg = 1;
constexpr std::size_t diff_dst_arg = 0, diff_src_arg = 1;

std::shared_ptr<PoolState> plan_pool(const PoolGeometry& g, PoolOp kind, unsigned workers) {
  using namespace dnnl;
  SingleThreadedDnnl single;
  auto s = std::make_shared<PoolState>();
  s->g = g;
  s->kind = kind;
  const bool max = kind == PoolOp::max || kind == PoolOp::max_grad;
  const bool grad = kind == PoolOp::max_grad || kind == PoolOp::average_grad;
  const auto alg = max ? algorithm::pooling_max : algorithm::pooling_avg_exclude_padding;
  const memory::desc src = g.image(g.staged), dst = g.image(g.out);
  primitive_attr attr;
  attr.set_scratchpad_mode(scratchpad_mode::user);
  const pooling_v2_forward::desc fd(
      grad ? prop_kind::forward_training : prop_kind::forward_inference, alg, src, dst, g.strides,
      g.kernel, g.dilates, g.pad_l, g.pad_r);
  const pooling_v2_forward::primitive_desc fpd(fd, attr, cpu_engine());
  if (kind != PoolOp::average_grad) {
    std::vector<int> args{DNNL_ARG_SRC, DNNL_ARG_DST};
    std::vector<memory::desc> descs{src, dst};
    if (kind == PoolOp::max_grad) {
      args.push_back(DNNL_ARG_WORKSPACE);
      descs.push_back(fpd.workspace_desc());
      for (unsigned w = 0; w < workers; ++w)
        s->workspace.emplace_back(fpd.workspace_desc(), cpu_engine());
    }
    s->fwd.push_back(plan_primitive(pooling_v2_forward(fpd), args, descs, fpd.scratchpad_desc(),
                                    s->workspace, workers));
  }
  if (grad) {
    const pooling_v2_backward::desc bd(alg, src, dst, g.strides, g.kernel, g.dilates, g.pad_l,
                                       g.pad_r);
    const pooling_v2_backward::primitive_desc bpd(bd, attr, cpu_engine(), fpd);
    std::vector<int> args{DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_SRC};
    std::vector<memory::desc> descs{dst, src};
    if (kind == PoolOp::max_grad) {
      args.push_back(DNNL_ARG_WORKSPACE);
      descs.push_back(bpd.workspace_desc());
    }
    s->bwd.push_back(plan_primitive(pooling_v2_backward(bpd), args, descs, bpd.scratchpad_desc(),
                                    s->workspace, workers));
  }
  for (unsigned w = 0; w < workers; ++w)
    s->streams.emplace_back(cpu_engine());
  return s;
}

/// The step of a pool (`x` → `y`) or of its gradient (`dy`, and `x` for the max → `dx`), over
/// whole images.
template <typename T>
StepFn pool_step(const PoolGeometry& g, PoolOp kind, const T* x, T* y, const T* dy, T* dx,
                 unsigned workers) {
  auto s = plan_pool(g, kind, workers);
  constexpr bool is_half = std::is_same_v<T, half>;
  const auto sized = [workers](std::vector<std::vector<float>>& v, std::int64_t n) {
    v.assign(workers, std::vector<float>(static_cast<std::size_t>(n), 0.0f));
  };
  const bool stage = is_half || g.pad_staged;
  if (!s->fwd.empty() && stage)
    sized(s->src32, g.staged_image());
  if (kind == PoolOp::max_grad || (!s->fwd.empty() && is_half))
    sized(s->dst32, g.out_image());
  if (!s->bwd.empty() && is_half)
    sized(s->dd32, g.out_image());
  if (!s->bwd.empty() && stage)
    sized(s->ds32, g.staged_image());
  return [s, x, y, dy, dx](unsigned w, unsigned nw) {
    const PoolGeometry& geo = s->g;
    const bool staging = is_half || geo.pad_staged;
    const auto [begin, end] = worker_range(geo.n, w, nw);
    if (begin == end)
      return;
    SingleThreadedDnnl single;
    dnnl::stream& stream = s->streams[w];
    for (std::int64_t i = begin; i < end; ++i) {
      if (!s->fwd.empty()) {
        PlannedPool& p = s->fwd[0];
        const T* xi = x + i * geo.in_image();
        if (staging) {
          stage_in(geo, xi, s->src32[w].data());
          p.bind(w, src_arg, s->src32[w].data());
        } else {
          p.bind(w, src_arg, reinterpret_cast<const float*>(xi));
        }
        // The max gradient's pooled image is oneDNN's only.
        float* yf = s->dst32.empty() ? reinterpret_cast<float*>(y + i * geo.out_image())
                                     : s->dst32[w].data();
        p.bind(w, dst_arg, yf);
        p.execute(w, stream);
        if constexpr (is_half)
          if (s->kind != PoolOp::max_grad)
            convert(yf, y + i * geo.out_image(), static_cast<std::size_t>(geo.out_image()));
      }
      if (!s->bwd.empty()) {
        PlannedPool& p = s->bwd[0];
        const T* dyi = dy + i * geo.out_image();
        if constexpr (is_half) {
          convert(dyi, s->dd32[w].data(), static_cast<std::size_t>(geo.out_image()));
          p.bind(w, diff_dst_arg, s->dd32[w].data());
        } else {
          p.bind(w, diff_dst_arg, dyi);
        }
        T* dxi = dx + i * geo.in_image();
        p.bind(w, diff_src_arg, staging ? s->ds32[w].data() : reinterpret_cast<float*>(dxi));
        p.execute(w, stream);
        if (staging)
          stage_out(geo, s->ds32[w].data(), dxi);
      }
    }
  };
}

StepFn compile_pool(CompileContext& ctx, const KernelOp& op, PoolOp kind,
                    const OpBuffers& buffers) {
  const bool grad = kind == PoolOp::max_grad || kind == PoolOp::average_grad;
  // The pool's input and output: a gradient's output and input 0.
  const KernelTensor src = grad ? op.output(0) : op.input(0);
  const KernelTensor dst = grad ? op.input(0) : op.output(0);
  const KernelTensor out = op.output(0);
  if (src.nelms() == 0 || dst.nelms() == 0)
    return zero_step(buffers.outputs[0], out.nelms(), size_of(out.dtype()));
  const PoolAttrs& a = op.attrs_as<PoolAttrs>();
  const PoolGeometry g =
      pool_geometry_of(a, src.shape(), dst.shape(),
                       kind != PoolOp::max && kind != PoolOp::max_grad && a.count_include_pad);
  const unsigned workers = ctx.num_workers;
  return dispatch_float(op, out.dtype(), [&](auto type) -> StepFn {
    using T = typename decltype(type)::type;
    switch (kind) {
    case PoolOp::max:
    case PoolOp::average:
      return pool_step<T>(g, kind, typed<const T>(buffers.inputs[0]), typed<T>(buffers.outputs[0]),
                          nullptr, nullptr, workers);
    case PoolOp::max_grad:
      return pool_step<T>(g, kind, typed<const T>(buffers.inputs[1]), nullptr,
                          typed<const T>(buffers.inputs[0]), typed<T>(buffers.outputs[0]), workers);
    case PoolOp::average_grad:
      return pool_step<T>(g, kind, nullptr, nullptr, typed<const T>(buffers.inputs[0]),
                          typed<T>(buffers.outputs[0]), workers);
    }
    return {};
  });
}

} // namespace

StepFn compile_MaxPool(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  return compile_pool(ctx, op, PoolOp::max, buffers);
}

StepFn compile_AveragePool(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  return compile_pool(ctx, op, PoolOp::average, buffers);
}

StepFn compile_MaxPoolGrad(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  // The output gradient (input 0) and the pool's input (input 1) -> the input gradient.
  return compile_pool(ctx, op, PoolOp::max_grad, buffers);
}

StepFn compile_AveragePoolGrad(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  return compile_pool(ctx, op, PoolOp::average_grad, buffers);
}

} // namespace pxl::emu::detail
