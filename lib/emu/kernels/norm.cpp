// The normalisations. Batch norm runs through oneDNN's batch-normalisation primitive (inference,
// training forward, backward), planned when the step is compiled, on fixed blocks of whole
// channels: a block's channels of every image are staged contiguous in float32 (widening
// float16), one primitive call normalises them, and the results are written back, rounded once.
// The blocks depend on the shape alone and a channel's statistics come from one call in
// oneDNN's fixed order, so results are bitwise identical for any number of workers.
//
// oneDNN 2.6 has no group normalisation primitive: group norm is a row kernel over whole
// (image, group) pairs, which are contiguous in the (N, C, spatial...) layout; each row is layer
// norm's (norm_rows.hpp: a fixed-order reduction in double) with the per-channel weight and
// bias spread over the row.
#include "../compile_context.hpp"
#include "common.hpp"
#include "dnnl_threads.hpp"
#include "dnnl_util.hpp"
#include "norm_rows.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <memory>
#include <vector>

namespace pxl::emu::detail {

// Named, so that in a unity batch these never meet conv.cpp's helpers of the same names
// (Pass, Role, Planned).
namespace norm_kernels {
namespace {

// ---- batch norm through oneDNN ----

enum class Pass : std::uint8_t { inference, training, backward, backward_global };

/// The tensors of oneDNN's batch normalisation, each staged per worker in float32.
enum Role : std::uint8_t {
  src,
  dst,
  diff_dst,
  diff_src,
  mean,
  variance,
  scale,
  shift,
  diff_scale,
  diff_shift,
  num_roles,
};
constexpr std::array<int, num_roles> role_arg = {
    DNNL_ARG_SRC,      DNNL_ARG_DST,   DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_SRC,   DNNL_ARG_MEAN,
    DNNL_ARG_VARIANCE, DNNL_ARG_SCALE, DNNL_ARG_SHIFT,    DNNL_ARG_DIFF_SCALE, DNNL_ARG_DIFF_SHIFT};
/// Roles holding (N, channels, spatial) data; the others hold one value per channel.
constexpr bool is_data(Role r) { return r == src || r == dst || r == diff_dst || r == diff_src; }

/// Which op input and output plays each role, in each pass.
struct Binding {
  Role role;
  std::size_t index;
};
struct PassRoles {
  std::vector<Binding> inputs, outputs;
  /// Bound to the primitive but neither loaded nor stored: oneDNN's backward pass with
  /// use_shift refuses to run without a shift, which it does not read.
  std::vector<Role> unread;
};
PassRoles roles_of(Pass p) {
  switch (p) {
  case Pass::inference: // x, scale, bias, mean, var -> y
    return {{{src, 0}, {scale, 1}, {shift, 2}, {mean, 3}, {variance, 4}}, {{dst, 0}}};
  case Pass::training: // x, scale, bias -> y, mean, var
    return {{{src, 0}, {scale, 1}, {shift, 2}}, {{dst, 0}, {mean, 1}, {variance, 2}}};
  case Pass::backward:
  case Pass::backward_global: // x, scale, mean, var, dy -> dx, d scale, d bias
    return {{{src, 0}, {scale, 1}, {mean, 2}, {variance, 3}, {diff_dst, 4}},
            {{diff_src, 0}, {diff_scale, 1}, {diff_shift, 2}},
            {shift}};
  }
  return {};
}

/// A primitive planned for blocks of `channels` channels, and per worker its arguments on that
/// worker's staging.
struct Planned {
  dnnl::primitive primitive;
  struct Bound {
    std::vector<dnnl::memory> memories;
    std::vector<dnnl_exec_arg_t> args;
  };
  std::vector<Bound> workers;

  void execute(unsigned w, dnnl::stream& stream) const {
    const auto& args = workers[w].args;
    const auto status = dnnl_primitive_execute(primitive.get(), stream.get(),
                                               static_cast<int>(args.size()), args.data());
    PXL_ASSERT(status == dnnl_success);
  }
};

struct BatchNormState {
  std::int64_t n = 0, c = 0, spatial = 0, block = 0, blocks = 0, tail = 0;
  PassRoles roles;
  std::vector<Planned> plans; ///< for a whole block, then for the tail when it is shorter
  std::vector<dnnl::stream> streams;
  /// Per worker and role, the float32 staging of one block.
  std::vector<std::array<std::vector<float>, num_roles>> staging;
};

Planned plan_batch_norm(BatchNormState& s, Pass pass, std::int64_t channels, float epsilon,
                        unsigned workers) {
  using namespace dnnl;
  // The spatial axes as one: the statistics are over N and all of them alike. As (N, C, H, 1):
  // oneDNN 2.6 has its plain-layout implementation for 4-d and 5-d data only (3-d gets the
  // slow reference one).
  const memory::desc data({s.n, channels, s.spatial, 1}, memory::data_type::f32,
                          memory::format_tag::nchw);
  const memory::desc per_channel({channels}, memory::data_type::f32, memory::format_tag::a);
  auto flags = normalization_flags::use_scale | normalization_flags::use_shift;
  if (pass == Pass::inference || pass == Pass::backward_global)
    flags = flags | normalization_flags::use_global_stats;
  primitive_attr attr;
  attr.set_scratchpad_mode(scratchpad_mode::user);
  const auto forward_kind =
      pass == Pass::inference ? prop_kind::forward_inference : prop_kind::forward_training;
  const batch_normalization_forward::primitive_desc fwd_pd(
      batch_normalization_forward::desc(forward_kind, data, epsilon, flags), attr, cpu_engine());
  Planned p;
  memory::desc scratch;
  if (pass == Pass::inference || pass == Pass::training) {
    p.primitive = batch_normalization_forward(fwd_pd);
    scratch = fwd_pd.scratchpad_desc();
  } else {
    const batch_normalization_backward::primitive_desc pd(
        batch_normalization_backward::desc(prop_kind::backward, data, data, epsilon, flags), attr,
        cpu_engine(), fwd_pd);
    p.primitive = batch_normalization_backward(pd);
    scratch = pd.scratchpad_desc();
  }
  for (unsigned w = 0; w < workers; ++w) {
    Planned::Bound b;
    for (const auto& list : {s.roles.inputs, s.roles.outputs})
      for (const Binding& at : list) {
        b.memories.emplace_back(is_data(at.role) ? data : per_channel, cpu_engine(),
                                s.staging[w][at.role].data());
        b.args.push_back({role_arg[at.role], b.memories.back().get()});
      }
    for (const Role r : s.roles.unread) {
      b.memories.emplace_back(per_channel, cpu_engine(), s.staging[w][r].data());
      b.args.push_back({role_arg[r], b.memories.back().get()});
    }
    // oneDNN allocates the scratchpad here, once.
    b.memories.emplace_back(scratch, cpu_engine());
    b.args.push_back({DNNL_ARG_SCRATCHPAD, b.memories.back().get()});
    p.workers.push_back(std::move(b));
  }
  return p;
}

template <typename T>
StepFn batch_norm_step(const KernelOp& op, const OpBuffers& buffers, Pass pass, unsigned workers) {
  auto s = std::make_shared<BatchNormState>();
  const Shape& shape = op.input(0).shape();
  s->n = shape[0];
  s->c = shape[1];
  s->spatial = nelms(std::span(shape).subspan(2));
  // At most 8 blocks, enough for 1 to 4 workers; fixed by the shape alone, never by the worker
  // count, so that each channel is always normalised by the same call.
  s->block = (s->c + 7) / 8;
  s->blocks = (s->c + s->block - 1) / s->block;
  s->tail = s->c - (s->blocks - 1) * s->block;
  s->roles = roles_of(pass);
  s->staging.resize(workers);
  for (auto& per_worker : s->staging)
    for (const auto& list : {s->roles.inputs, s->roles.outputs})
      for (const Binding& at : list)
        per_worker[at.role].resize(
            static_cast<std::size_t>(is_data(at.role) ? s->n * s->block * s->spatial : s->block));
  for (auto& per_worker : s->staging)
    for (const Role r : s->roles.unread)
      per_worker[r].resize(static_cast<std::size_t>(s->block));
  const auto epsilon = static_cast<float>(op.attrs_as<NormAttrs>().epsilon);
  {
    SingleThreadedDnnl single;
    s->plans.push_back(plan_batch_norm(*s, pass, s->block, epsilon, workers));
    if (s->tail != s->block)
      s->plans.push_back(plan_batch_norm(*s, pass, s->tail, epsilon, workers));
    for (unsigned w = 0; w < workers; ++w)
      s->streams.emplace_back(cpu_engine());
  }
  std::vector<const T*> in;
  std::vector<T*> out;
  for (const Binding& at : s->roles.inputs)
    in.push_back(typed<const T>(buffers.inputs[at.index]));
  for (const Binding& at : s->roles.outputs)
    out.push_back(typed<T>(buffers.outputs[at.index]));
  return [s, in, out](unsigned w, unsigned nw) {
    const auto [begin, end] = worker_range(s->blocks, w, nw);
    if (begin == end)
      return;
    SingleThreadedDnnl single;
    auto& staged = s->staging[w];
    const std::int64_t sp = s->spatial, c = s->c;
    for (std::int64_t k = begin; k < end; ++k) {
      const std::int64_t c0 = k * s->block, count = k == s->blocks - 1 ? s->tail : s->block;
      for (std::size_t i = 0; i < in.size(); ++i) {
        const Role r = s->roles.inputs[i].role;
        float* to = staged[r].data();
        if (!is_data(r)) {
          to_float(in[i] + c0, to, count);
          continue;
        }
        for (std::int64_t image = 0; image < s->n; ++image)
          to_float(in[i] + (image * c + c0) * sp, to + image * count * sp, count * sp);
      }
      s->plans[count == s->block ? 0 : 1].execute(w, s->streams[w]);
      for (std::size_t i = 0; i < out.size(); ++i) {
        const Role r = s->roles.outputs[i].role;
        const float* from = staged[r].data();
        if (!is_data(r)) {
          from_float(from, out[i] + c0, count);
          continue;
        }
        for (std::int64_t image = 0; image < s->n; ++image)
          from_float(from + image * count * sp, out[i] + (image * c + c0) * sp, count * sp);
      }
    }
  };
}

/// An input without elements: nothing to normalise; a training pass's statistics are 0 / 0
/// (NaN), the backward pass's scale and bias gradients empty sums (0).
template <typename T>
StepFn empty_batch_step(const KernelOp& op, const OpBuffers& buffers, Pass pass) {
  if (pass == Pass::inference)
    return [](unsigned, unsigned) {};
  const T value = pass == Pass::training ? T(std::numeric_limits<float>::quiet_NaN()) : T(0.0f);
  const auto channels = static_cast<std::size_t>(op.output(1).nelms());
  T* first = typed<T>(buffers.outputs[1]);
  T* second = typed<T>(buffers.outputs[2]);
  return [=](unsigned w, unsigned) {
    if (w != 0)
      return;
    std::fill(first, first + channels, value);
    std::fill(second, second + channels, value);
  };
}

StepFn compile_batch_norm(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers,
                          Pass pass) {
  const KernelTensor x = op.input(0);
  return dispatch_float(op, x.dtype(), [&](auto type) -> StepFn {
    using T = typename decltype(type)::type;
    if (x.nelms() == 0)
      return empty_batch_step<T>(op, buffers, pass);
    return batch_norm_step<T>(op, buffers, pass, ctx.num_workers);
  });
}

// ---- group norm: rows of layer norm ----

/// Group norm's rows: one per (image, group), `d` contiguous elements over `per_group`
/// channels of `spatial` positions.
struct GroupRows {
  std::int64_t rows = 0, groups = 1, per_group = 0, spatial = 0, d = 0;
};

GroupRows group_rows(const KernelOp& op) {
  const Shape& shape = op.input(0).shape();
  GroupRows g;
  g.groups = op.attrs_as<NormAttrs>().num_groups;
  g.per_group = shape[1] / g.groups;
  g.spatial = nelms(std::span(shape).subspan(2));
  g.d = g.per_group * g.spatial;
  g.rows = g.d == 0 ? 0 : shape[0] * g.groups;
  return g;
}

/// Spreads group `group`'s per-channel values of `p` over a row: each channel's value repeated
/// at its spatial positions, in float32.
template <typename T>
void spread(const T* p, const GroupRows& g, std::int64_t group, float* row) {
  for (std::int64_t k = 0; k < g.per_group; ++k) {
    const auto v = static_cast<float>(p[group * g.per_group + k]);
    std::fill(row + k * g.spatial, row + (k + 1) * g.spatial, v);
  }
}

/// Per worker, float32 rows of d elements: `count` of them.
std::shared_ptr<std::vector<std::vector<float>>> row_scratch(unsigned workers, std::int64_t d,
                                                             std::size_t count) {
  return std::make_shared<std::vector<std::vector<float>>>(
      workers, std::vector<float>(static_cast<std::size_t>(d) * count));
}

StepFn group_norm_step(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  const GroupRows g = group_rows(op);
  const double eps = op.attrs_as<NormAttrs>().epsilon;
  return dispatch_float(op, op.input(0).dtype(), [&](auto type) -> StepFn {
    using T = typename decltype(type)::type;
    // Per worker: the spread weight and bias, and for float16 the widened input and output row.
    const auto scratch = row_scratch(ctx.num_workers, g.d, std::is_same_v<T, half> ? 4 : 2);
    const T* x = typed<const T>(buffers.inputs[0]);
    const T* weight = typed<const T>(buffers.inputs[1]);
    const T* bias = typed<const T>(buffers.inputs[2]);
    T* y = typed<T>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) {
      const auto [begin, end] = worker_range(g.rows, w, nw);
      float* const ws = (*scratch)[w].data();
      float *const wrow = ws, *const brow = ws + g.d;
      for (std::int64_t r = begin; r < end; ++r) {
        const std::int64_t group = r % g.groups;
        spread(weight, g, group, wrow);
        spread(bias, g, group, brow);
        if constexpr (std::is_same_v<T, float>) {
          layer_norm_row(x + r * g.d, wrow, brow, y + r * g.d, g.d, eps);
        } else {
          float *const xrow = ws + 2 * g.d, *const yrow = ws + 3 * g.d;
          to_float(x + r * g.d, xrow, g.d);
          layer_norm_row(xrow, wrow, brow, yrow, g.d, eps);
          from_float(yrow, y + r * g.d, g.d);
        }
      }
    };
  });
}

StepFn group_norm_grad_step(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  const GroupRows g = group_rows(op);
  const double eps = op.attrs_as<NormAttrs>().epsilon;
  return dispatch_float(op, op.input(0).dtype(), [&](auto type) -> StepFn {
    using T = typename decltype(type)::type;
    // Per worker: the spread weight, and for float16 the widened x, grad, dx and grad·x̂ rows.
    const auto scratch = row_scratch(ctx.num_workers, g.d, std::is_same_v<T, half> ? 5 : 1);
    const T* x = typed<const T>(buffers.inputs[0]);
    const T* weight = typed<const T>(buffers.inputs[1]);
    const T* grad = typed<const T>(buffers.inputs[2]);
    T* dx = typed<T>(buffers.outputs[0]);
    T* gx = typed<T>(buffers.outputs[1]);
    return [=](unsigned w, unsigned nw) {
      const auto [begin, end] = worker_range(g.rows, w, nw);
      float* const ws = (*scratch)[w].data();
      float* const wrow = ws;
      for (std::int64_t r = begin; r < end; ++r) {
        const std::int64_t at = r * g.d;
        spread(weight, g, r % g.groups, wrow);
        if constexpr (std::is_same_v<T, float>) {
          layer_norm_grad_row(x + at, wrow, grad + at, dx + at, gx + at, g.d, eps);
        } else {
          float *const xrow = ws + g.d, *const grow = ws + 2 * g.d, *const dxrow = ws + 3 * g.d,
                       *const gxrow = ws + 4 * g.d;
          to_float(x + at, xrow, g.d);
          to_float(grad + at, grow, g.d);
          layer_norm_grad_row(xrow, wrow, grow, dxrow, gxrow, g.d, eps);
          from_float(dxrow, dx + at, g.d);
          from_float(gxrow, gx + at, g.d);
        }
      }
    };
  });
}

} // namespace
} // namespace norm_kernels

StepFn compile_BatchNormInference(CompileContext& ctx, const KernelOp& op,
                                  const OpBuffers& buffers) {
  return norm_kernels::compile_batch_norm(ctx, op, buffers, norm_kernels::Pass::inference);
}

StepFn compile_BatchNormTraining(CompileContext& ctx, const KernelOp& op,
                                 const OpBuffers& buffers) {
  return norm_kernels::compile_batch_norm(ctx, op, buffers, norm_kernels::Pass::training);
}

StepFn compile_BatchNormGrad(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  return norm_kernels::compile_batch_norm(ctx, op, buffers,
                                          op.attrs_as<NormAttrs>().global_stats
                                              ? norm_kernels::Pass::backward_global
                                              : norm_kernels::Pass::backward);
}

StepFn compile_GroupNorm(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  return norm_kernels::group_norm_step(ctx, op, buffers);
}

StepFn compile_GroupNormGrad(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  return norm_kernels::group_norm_grad_step(ctx, op, buffers);
}

} // namespace pxl::emu::detail
