// Kernels of the collectives. Replicas run each step in lockstep, so the kernel bound for the
// first replica of a group that this process holds (its leader) does the group's work here,
// reading every member's input and writing the outputs of the members held here; the other
// members' steps do nothing. In a distributed Session the members held by other instances
// have their inputs gathered into an InstanceExchange by the step's exchange, which runs
// before it. Work is split by output element and every element is reduced in replica order,
// so results depend neither on the number of workers nor on the number of instances; reading
// all inputs of an element before writing its outputs makes the in-place all-reduce safe.
#include "../compile_context.hpp"
#include "../instance_exchange.hpp"
#include "common.hpp"
#include "vector_math.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <vector>

namespace pxl::emu::detail {

namespace {

/// The replicas of the group of the replica being bound, under CollectiveAttrs' grouping
/// (ReplicaGrouping's rule: groups of `group_size` replicas `stride` apart, filling blocks of
/// stride × size).
struct Group {
  std::vector<std::int64_t> members; ///< in group order
  std::int64_t index = 0;            ///< of the replica being bound in the group
  std::int64_t leader_index = 0;     ///< of the first member this process holds
  bool leader() const { return index == leader_index; }
};

std::vector<std::int64_t> members_of(const CollectiveAttrs& a, std::int64_t replica) {
  const std::int64_t block = a.stride * a.group_size;
  const std::int64_t first = replica / block * block + replica % block % a.stride;
  std::vector<std::int64_t> members;
  for (std::int64_t k = 0; k < a.group_size; ++k)
    members.push_back(first + k * a.stride);
  return members;
}

Group group_of(const CompileContext& ctx, const CollectiveAttrs& a) {
  Group g;
  if (ctx.total_replicas <= 1) { // outside a Session's replicas: a group of one
    g.members = {ctx.replica};
    return g;
  }
  g.members = members_of(a, ctx.replica);
  const std::int64_t block = a.stride * a.group_size;
  g.index = ctx.replica % block / a.stride;
  g.leader_index =
      std::ranges::find_if(g.members, [&](std::int64_t m) { return ctx.is_local(m); }) -
      g.members.begin();
  return g;
}

/// Member `m`'s step buffers, when this process holds it.
const OpBuffers& local_buffers(const CompileContext& ctx, std::int64_t m, const OpBuffers& own) {
  return ctx.peers.empty() ? own : ctx.peers[static_cast<std::size_t>(m - ctx.replica_offset)];
}

/// Each member's input 0, in group order: its own buffer, or where the exchange gathered it.
template <typename T>
std::vector<const T*> member_inputs(const CompileContext& ctx, const Group& g, const OpBuffers& own,
                                    std::size_t block) {
  std::vector<const T*> r;
  for (std::int64_t m : g.members)
    r.push_back(reinterpret_cast<const T*>(ctx.peers.empty() || ctx.is_local(m)
                                               ? local_buffers(ctx, m, own).inputs[0]
                                               : ctx.exchange->input(m, block)));
  return r;
}

/// Output 0 of each member this process holds, with the member's index in the group.
template <typename T>
std::vector<std::pair<std::int64_t, T*>> local_outputs(const CompileContext& ctx, const Group& g,
                                                       const OpBuffers& own) {
  std::vector<std::pair<std::int64_t, T*>> r;
  for (std::size_t k = 0; k < g.members.size(); ++k)
    if (ctx.peers.empty() || ctx.is_local(g.members[k]))
      r.emplace_back(static_cast<std::int64_t>(k),
                     reinterpret_cast<T*>(local_buffers(ctx, g.members[k], own).outputs[0]));
  return r;
}

/// Just the pointers of local_outputs.
template <typename T>
std::vector<T*> local_output_buffers(const CompileContext& ctx, const Group& g,
                                     const OpBuffers& own) {
  std::vector<T*> r;
  for (const auto& [k, p] : local_outputs<T>(ctx, g, own))
    r.push_back(p);
  return r;
}

/// In a distributed Session whose groups span instances, the first replica's step of this
/// process gets the exchange of its collective: every local replica's input 0 (`block`
/// bytes) to every instance, before the step. Every instance decides alike (the grouping is
/// the same everywhere), so their exchanges match.
void exchange_inputs(CompileContext& ctx, const KernelOp& op, const CollectiveAttrs& a,
                     std::size_t block) {
  if (ctx.exchange == nullptr || ctx.replica != ctx.replica_offset)
    return;
  bool spans = false;
  for (std::int64_t r = 0; r < ctx.total_replicas && !spans; ++r)
    for (std::int64_t m : members_of(a, r))
      spans = spans || ctx.exchange->instance_of(m) != ctx.exchange->instance_of(r);
  if (!spans)
    return;
  std::vector<const std::byte*> inputs;
  for (const OpBuffers& b : ctx.peers)
    inputs.push_back(b.inputs[0]);
  ctx.before_step = [exchange = ctx.exchange, inputs = std::move(inputs), block,
                     what = "exchanging the inputs of " + op.debug_name()] {
    exchange->gather(inputs, block, what);
  };
}

/// The accumulator of a reduction of `T`: double for floats, int64 for int32 (wrapped back).
template <typename T>
using reduce_t = std::conditional_t<std::is_same_v<T, bool>, bool,
                                    std::conditional_t<is_float_v<T>, double, std::int64_t>>;

template <typename T>
reduce_t<T> combine(CollectiveOperator op, reduce_t<T> acc, reduce_t<T> x) {
  if constexpr (std::is_same_v<T, bool>) // construction allows only the logical operators
    return op == CollectiveOperator::logical_and ? acc && x : acc || x;
  else
    switch (op) {
    case CollectiveOperator::add:
    case CollectiveOperator::mean:
      return acc + x;
    case CollectiveOperator::square_add:
      return acc + x * x;
    case CollectiveOperator::mul:
      return acc * x;
    case CollectiveOperator::min:
      return std::min(acc, x);
    case CollectiveOperator::max:
      return std::max(acc, x);
    case CollectiveOperator::logical_and:
      return acc && x;
    case CollectiveOperator::logical_or:
      return acc || x;
    }
  return acc;
}

template <typename T>
T finish(CollectiveOperator op, reduce_t<T> acc, std::size_t n) {
  if constexpr (is_float_v<T>)
    if (op == CollectiveOperator::mean)
      acc /= static_cast<double>(n);
  if constexpr (std::is_same_v<T, std::int32_t>) {
    if (op == CollectiveOperator::mean)
      acc /= static_cast<std::int64_t>(n);
    return static_cast<T>(static_cast<std::uint32_t>(acc)); // wraps like int32 arithmetic
  } else {
    return static_cast<T>(acc);
  }
}

template <typename T>
reduce_t<T> value_of(T x) {
  return static_cast<reduce_t<T>>(static_cast<compute_t<T>>(x));
}

/// The accumulator's start: the first member's value (squared for square_add).
template <typename T>
reduce_t<T> first_term(CollectiveOperator op, T x) {
  const reduce_t<T> v = value_of(x);
  if constexpr (std::is_same_v<T, bool>)
    return v;
  else
    return op == CollectiveOperator::square_add ? v * v : v;
}

/// Output element `at` of the group's member k is op over the group of in_j[source(k, at)]
/// (-1: padding, zero), for the members held here, `out_n` elements each. With `same_output`
/// every member's output is the same (source ignores k), computed once.
template <typename T, typename Source>
StepFn reduce_step(const CompileContext& ctx, const KernelOp& op, const Group& g,
                   CollectiveOperator reduction, const OpBuffers& own, std::int64_t out_n,
                   bool same_output, Source source) {
  if (!g.leader())
    return [](unsigned, unsigned) {};
  auto in = std::make_shared<const std::vector<const T*>>(
      member_inputs<T>(ctx, g, own, op.input(0).spec().nbytes()));
  auto out = std::make_shared<const std::vector<std::pair<std::int64_t, T*>>>(
      local_outputs<T>(ctx, g, own));
  const std::int64_t rows = same_output ? 1 : static_cast<std::int64_t>(out->size());
  return [=](unsigned w, unsigned nw) {
    const std::size_t size = in->size();
    const auto [b, e] = worker_range(rows * out_n, w, nw);
    for (std::int64_t i = b; i < e; ++i) {
      const auto row = static_cast<std::size_t>(i / out_n);
      const std::int64_t at = i % out_n;
      const std::int64_t src = source((*out)[row].first, at);
      T result{};
      if (src >= 0) {
        reduce_t<T> acc = first_term(reduction, (*in)[0][src]);
        for (std::size_t j = 1; j < size; ++j)
          acc = combine<T>(reduction, acc, value_of((*in)[j][src]));
        result = finish<T>(reduction, acc, size);
      }
      if (same_output)
        for (const auto& [k, o] : *out)
          o[at] = result;
      else
        (*out)[row].second[at] = result;
    }
  };
}

/// The numeric dtypes, and bool for the logical reductions.
template <typename Build>
StepFn dispatch_reduce(const KernelOp& op, DType d, Build build) {
  if (d == bool_)
    return build(boost::hana::type_c<bool>);
  return dispatch_numeric(op, d, build);
}

PXL_VECTOR_CLONES void widen_f32(double* acc, const float* x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i)
    acc[i] = x[i];
}
PXL_VECTOR_CLONES void add_f32(double* acc, const float* x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i)
    acc[i] += x[i];
}
/// out = acc / divisor, rounded once; a power-of-two divisor is applied as its exact reciprocal
/// (the same result, without a division per element).
PXL_VECTOR_CLONES void narrow_f32(const double* acc, float* out, std::int64_t n, double divisor) {
  if (std::bit_cast<std::uint64_t>(divisor) << 12 == 0) { // a power of two: mantissa all zero
    const double reciprocal = 1.0 / divisor;
    for (std::int64_t i = 0; i < n; ++i)
      out[i] = static_cast<float>(acc[i] * reciprocal);
  } else {
    for (std::int64_t i = 0; i < n; ++i)
      out[i] = static_cast<float>(acc[i] / divisor);
  }
}

/// The float32 add and mean all-reduce, the data-parallel gradient path: the same sums as
/// reduce_step (double, in replica order, one rounding), a block at a time so that the loops
/// over a block vectorise and each input is read in order.
StepFn float_sum_step(const CompileContext& ctx, const Group& g, bool mean, const OpBuffers& own,
                      std::int64_t n) {
  if (!g.leader())
    return [](unsigned, unsigned) {};
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
  auto in =
      std::make_shared<const std::vector<const float*>>(member_inputs<float>(ctx, g, own, bytes));
  auto out = std::make_shared<const std::vector<float*>>(local_output_buffers<float>(ctx, g, own));
  const double divisor = mean ? static_cast<double>(g.members.size()) : 1.0;
  return [in, out, n, divisor](unsigned w, unsigned nw) {
    constexpr std::int64_t block = 512;
    const auto [b, e] = worker_range(n, w, nw);
    alignas(64) double acc[block];
    for (std::int64_t at = b; at < e; at += block) {
      const std::int64_t m = std::min(block, e - at);
      widen_f32(acc, (*in)[0] + at, m);
      for (std::size_t j = 1; j < in->size(); ++j)
        add_f32(acc, (*in)[j] + at, m);
      // Every input of this block is read: the first output may alias an input (in place).
      narrow_f32(acc, (*out)[0] + at, m, divisor);
      for (std::size_t k = 1; k < out->size(); ++k)
        std::memcpy((*out)[k] + at, (*out)[0] + at, static_cast<std::size_t>(m) * sizeof(float));
    }
  };
}

/// w = a·w + b·r with the products and the sum in double and one rounding, as scaled_add_
/// computes it. Not cloned per ISA: an FMA would round differently from scaled_add_.
void scaled_update_f32(float* w, const float* r, std::int64_t n, double a, double b) {
  for (std::int64_t i = 0; i < n; ++i)
    w[i] = static_cast<float>(a * static_cast<double>(w[i]) + b * static_cast<double>(r[i]));
}

StepFn all_reduce(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  const auto& a = op.attrs_as<CollectiveAttrs>();
  const Group g = group_of(ctx, a);
  const std::int64_t n = op.input(0).nelms();
  if (a.variant == AllReduceVariant::identical_inputs || g.members.size() == 1)
    return copy_step(buffers.outputs[0], buffers.inputs[0], n, size_of(op.input(0).dtype()));
  exchange_inputs(ctx, op, a, op.input(0).spec().nbytes());
  if (op.input(0).dtype() == float32 &&
      (a.op == CollectiveOperator::add || a.op == CollectiveOperator::mean))
    return float_sum_step(ctx, g, a.op == CollectiveOperator::mean, buffers, n);
  return dispatch_reduce(op, op.input(0).dtype(), [&](auto type) {
    using T = typename decltype(type)::type;
    return reduce_step<T>(ctx, op, g, a.op, buffers, n, true,
                          [](std::int64_t, std::int64_t i) { return i; });
  });
}

/// A byte-copying step for the group leader: out_k[e] = in_{j(k, e)}[i(k, e)] for every member
/// k, `map(e) -> {j, i}` over `out_n` elements of `elem` bytes.
template <typename Map>
StepFn gather_step(const CompileContext& ctx, const KernelOp& op, const Group& g,
                   const OpBuffers& own, std::int64_t out_n, std::size_t elem, Map map) {
  if (!g.leader())
    return [](unsigned, unsigned) {};
  auto in = std::make_shared<const std::vector<const std::byte*>>(
      member_inputs<std::byte>(ctx, g, own, op.input(0).spec().nbytes()));
  auto out =
      std::make_shared<const std::vector<std::byte*>>(local_output_buffers<std::byte>(ctx, g, own));
  return [=](unsigned w, unsigned nw) {
    const auto [b, e] = worker_range(out_n, w, nw);
    for (std::int64_t i = b; i < e; ++i) {
      const auto [j, at] = map(i);
      const std::byte* src =
          (*in)[static_cast<std::size_t>(j)] + static_cast<std::size_t>(at) * elem;
      for (std::byte* o : *out)
        std::memcpy(o + static_cast<std::size_t>(i) * elem, src, elem);
    }
  };
}

/// Replica `k`'s part of a tensor split along an axis: out[o][i] = in[o][k·chunk + i], with
/// `outer` rows of `full` input and `chunk` output elements; input elements past `limit` read
/// as zero (a padded shard).
StepFn slice_step(const OpBuffers& buffers, std::int64_t k, std::int64_t outer, std::int64_t full,
                  std::int64_t chunk, std::int64_t limit, std::size_t elem) {
  const std::byte* in = buffers.inputs[0];
  std::byte* out = buffers.outputs[0];
  return [=](unsigned w, unsigned nw) {
    const auto [b, e] = worker_range(outer * chunk, w, nw);
    for (std::int64_t i = b; i < e; ++i) {
      const std::int64_t src = i / chunk * full + k * chunk + i % chunk;
      std::byte* dst = out + static_cast<std::size_t>(i) * elem;
      if (src < limit)
        std::memcpy(dst, in + static_cast<std::size_t>(src) * elem, elem);
      else
        std::memset(dst, 0, elem);
    }
  };
}

} // namespace

StepFn compile_fused_all_reduce(CompileContext& ctx, const KernelOp& op,
                                const StepFusion::Update& update, const OpBuffers& buffers) {
  const auto& a = op.attrs_as<CollectiveAttrs>();
  const Group g = group_of(ctx, a);
  const std::size_t bytes = op.input(0).spec().nbytes();
  exchange_inputs(ctx, op, a, bytes);
  if (!g.leader())
    return [](unsigned, unsigned) {};
  const std::int64_t n = op.input(0).nelms();
  auto in = std::make_shared<const std::vector<const float*>>(
      member_inputs<float>(ctx, g, buffers, bytes));
  auto out =
      std::make_shared<const std::vector<float*>>(local_output_buffers<float>(ctx, g, buffers));
  const double divisor =
      a.op == CollectiveOperator::mean ? static_cast<double>(g.members.size()) : 1.0;
  const double keep = update.keep, scale = update.scale;
  return [in, out, n, divisor, keep, scale](unsigned w, unsigned nw) {
    constexpr std::int64_t block = 512;
    const auto [b, e] = worker_range(n, w, nw);
    alignas(64) double acc[block];
    alignas(64) float reduced[block];
    for (std::int64_t at = b; at < e; at += block) {
      const std::int64_t m = std::min(block, e - at);
      widen_f32(acc, (*in)[0] + at, m);
      for (std::size_t j = 1; j < in->size(); ++j)
        add_f32(acc, (*in)[j] + at, m);
      narrow_f32(acc, reduced, m, divisor);
      for (float* t : *out)
        scaled_update_f32(t + at, reduced, m, keep, scale);
    }
  };
}

StepFn compile_ReplicatedAllReduce(CompileContext& ctx, const KernelOp& op,
                                   const OpBuffers& buffers) {
  return all_reduce(ctx, op, buffers);
}

StepFn compile_ReplicatedAllReduceInplace(CompileContext& ctx, const KernelOp& op,
                                          const OpBuffers& buffers) {
  return all_reduce(ctx, op, buffers);
}

StepFn compile_ReplicatedReduceScatter(CompileContext& ctx, const KernelOp& op,
                                       const OpBuffers& buffers) {
  const auto& a = op.attrs_as<CollectiveAttrs>();
  const Group g = group_of(ctx, a);
  const std::int64_t n = op.input(0).nelms(), shard = op.output(0).nelms();
  const auto size = static_cast<std::int64_t>(g.members.size());
  if (size > 1)
    exchange_inputs(ctx, op, a, op.input(0).spec().nbytes());
  return dispatch_reduce(op, op.input(0).dtype(), [&](auto type) {
    using T = typename decltype(type)::type;
    // Output element `at` of member k is input element k·shard + at (padding past n).
    auto source = [n, shard](std::int64_t k, std::int64_t at) {
      const std::int64_t src = k * shard + at;
      return src < n ? src : -1;
    };
    // Alone, this replica keeps shard 0: the whole tensor, padded.
    return reduce_step<T>(ctx, op, g, a.op, buffers, shard, size == 1, source);
  });
}

StepFn compile_ReplicatedAllGather(CompileContext& ctx, const KernelOp& op,
                                   const OpBuffers& buffers) {
  const auto& a = op.attrs_as<CollectiveAttrs>();
  const Group g = group_of(ctx, a);
  const auto size = static_cast<std::int64_t>(g.members.size());
  if (size > 1)
    exchange_inputs(ctx, op, a, op.input(0).spec().nbytes());
  const Shape& s = op.input(0).shape();
  const std::size_t elem = size_of(op.input(0).dtype());
  // The output is [outer][size][inner]: the group's inputs, each [outer][inner], interleaved
  // along the gathered axis (outer = 1 for a new leading axis).
  std::int64_t outer = 1, inner = op.input(0).nelms();
  if (!a.new_axis) {
    outer = 1;
    for (std::int64_t d = 0; d < a.axis; ++d)
      outer *= s[static_cast<std::size_t>(d)];
    inner = op.input(0).nelms() / std::max<std::int64_t>(outer, 1);
  }
  return gather_step(ctx, op, g, buffers, outer * size * inner, elem,
                     [size, inner](std::int64_t e) -> std::pair<std::int64_t, std::int64_t> {
                       const std::int64_t o = e / (size * inner), rem = e % (size * inner);
                       return {rem / inner, o * inner + rem % inner};
                     });
}

StepFn compile_ReplicatedSlice(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  const auto& a = op.attrs_as<CollectiveAttrs>();
  const Group g = group_of(ctx, a);
  const Shape& s = op.input(0).shape();
  std::int64_t outer = 1;
  for (std::int64_t d = 0; d < a.axis; ++d)
    outer *= s[static_cast<std::size_t>(d)];
  const std::int64_t full = op.input(0).nelms() / std::max<std::int64_t>(outer, 1);
  const std::int64_t chunk = op.output(0).nelms() / std::max<std::int64_t>(outer, 1);
  return slice_step(buffers, g.index, outer, full, chunk, op.input(0).nelms(),
                    size_of(op.input(0).dtype()));
}

StepFn compile_ReplicaShardedSlice(CompileContext& ctx, const KernelOp& op,
                                   const OpBuffers& buffers) {
  const auto& a = op.attrs_as<CollectiveAttrs>();
  const Group g = group_of(ctx, a);
  const std::int64_t n = op.input(0).nelms(), shard = op.output(0).nelms();
  return slice_step(buffers, g.index, 1, n, shard, n, size_of(op.input(0).dtype()));
}

// Across the IPUs of one replica: every input is this replica's, so each replica's step does
// its own reduction, element by element over the inputs in order (the outputs are equal).
StepFn compile_AllReduce(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const auto& a = op.attrs_as<CollectiveAttrs>();
  const std::int64_t n = op.input(0).nelms();
  const std::size_t elem = size_of(op.input(0).dtype());
  if (a.variant == AllReduceVariant::identical_inputs) // the identity on every IPU
    return [buffers, n, elem](unsigned w, unsigned nw) {
      for (std::size_t k = 0; k < buffers.inputs.size(); ++k)
        copy_step(buffers.outputs[k], buffers.inputs[k], n, elem)(w, nw);
    };
  return dispatch_reduce(op, op.input(0).dtype(), [&](auto type) -> StepFn {
    using T = typename decltype(type)::type;
    std::vector<const T*> in;
    std::vector<T*> out;
    for (std::size_t k = 0; k < buffers.inputs.size(); ++k) {
      in.push_back(reinterpret_cast<const T*>(buffers.inputs[k]));
      out.push_back(reinterpret_cast<T*>(buffers.outputs[k]));
    }
    return [in = std::move(in), out = std::move(out), op = a.op, n](unsigned w, unsigned nw) {
      const auto [b, e] = worker_range(n, w, nw);
      for (std::int64_t i = b; i < e; ++i) {
        reduce_t<T> acc = first_term(op, in[0][i]);
        for (std::size_t j = 1; j < in.size(); ++j)
          acc = combine<T>(op, acc, value_of(in[j][i]));
        const T result = finish<T>(op, acc, in.size());
        for (T* o : out)
          o[i] = result;
      }
    };
  });
}

} // namespace pxl::emu::detail
