#include "ir/op_builder.hpp"
#include "ir/context.hpp"
#include "ir/handle_access.hpp"
#include "pxl/ir/graph.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace pxl::detail {

GraphRef require_graph(std::string_view op) {
  auto& ctx = context();
  if (ctx.graphs.empty())
    throw GraphError(std::string(op) +
                     ": no current graph; open one with `auto scope = graph.scope();` "
                     "(PopXL's `with graph:`)");
  const Graph& g = ctx.graphs.back();
  IrStorage* ir = HandleAccess::storage(g);
  if (ir == nullptr)
    throw GraphError(std::string(op) +
                     ": the current graph's Ir has been destroyed while its graph scope was "
                     "still open; close the scope (end the guard's life) before the Ir goes");
  return {ir, IrView::id(g)};
}

void place_output(const Op& op, std::size_t i, std::int64_t ipu) {
  HandleAccess::storage(op)->tensor(IrView::id(op.output(i))).ipu = ipu;
}

void place_output_tiles(const Op& op, std::size_t i, TileSet tiles) {
  HandleAccess::storage(op)->tensor(IrView::id(op.output(i))).tile_set = tiles;
}

void run_on_tiles(const Op& op, TileSet tiles) {
  HandleAccess::storage(op)->op(IrView::id(op)).tile_set = tiles;
  for (std::size_t i = 0; i < op.num_outputs(); ++i)
    place_output_tiles(op, i, tiles);
}

void set_replica_sharding(const Tensor& t, std::optional<ReplicaSharding> sharding) {
  HandleAccess::storage(t)->tensor(IrView::id(t)).sharding = std::move(sharding);
}

ReplicaGrouping replica_grouping_of(const Tensor& t, std::int64_t stride, std::int64_t group_size) {
  return HandleAccess::ir(*HandleAccess::storage(t), "replica sharding")
      .replica_grouping(stride, group_size);
}

SequencesSuspended::SequencesSuspended() : saved_(std::move(context().sequences)) {
  context().sequences.clear();
}
SequencesSuspended::~SequencesSuspended() { context().sequences = std::move(saved_); }

OpId append_op(IrStorage& ir, GraphId g, OpNode node, std::vector<TensorSpec> output_specs,
               const std::vector<std::string>& output_names, std::string_view scope,
               std::string_view what) {
  PXL_ASSERT(output_specs.size() == output_names.size());
  PXL_ASSERT(node.attrs.index() == attrs_index(node.kind)); // the op table row's attribute type
  for (std::size_t i = 0; i < output_specs.size(); ++i) {
    checked_nbytes(output_specs[i],
                   [&] { return std::string(what) + ": output '" + output_names[i] + "'"; });
    if (!is_device_dtype(output_specs[i].dtype))
      check_device_dtype(std::string(what) + ": output", output_names[i], output_specs[i].dtype,
                         output_specs[i].shape);
  }
  require_mutable(ir, what);
  const OpId op{static_cast<Index>(ir.ops.size())};
  node.graph = g;
  node.outputs.clear();
  node.outputs.reserve(output_specs.size());
  for (std::size_t i = 0; i < output_specs.size(); ++i) {
    const TensorId t{static_cast<Index>(ir.tensors.size())};
    ir.tensors.push_back(TensorNode{.id = {},
                                    .name = output_names[i],
                                    .spec = std::move(output_specs[i]),
                                    .kind = TensorKind::intermediate,
                                    .graph = g,
                                    .producer = op,
                                    .ipu = node.ipu,
                                    .tile_set = node.tile_set,
                                    .data = std::nullopt});
    assign_tensor_id(ir, t, scoped_tensor_id(ir, g, scope, output_names[i]));
    ir.graph(g).tensors.push_back(t);
    node.outputs.push_back(t);
  }
  const bool is_call = node.kind == OpKind::Call;
  const auto* call = std::get_if<CallAttrs>(&node.attrs);
  ir.ops.push_back(std::move(node));
  ir.graph(g).ops.push_back(op);
  if (is_call && call)
    ir.graph(GraphId{call->graph}).call_sites.push_back(op);
  return op;
}

namespace {
/// An op as autodiff's messages name it: "SliceInplace.3".
std::string op_label(const IrView& view, OpId o) {
  return std::string(op_type_name(view.kind(o))) + "." + std::to_string(o.value);
}

/// "'v', a view made by SliceInplace.3", for messages.
std::string view_and_maker(const IrView& view, TensorId v, OpId maker) {
  return "'" + view.id(v) + "', a view made by " + op_label(view, maker);
}

/// The first op of graph `g` scheduled after `from` that writes the buffer of `t`, if any.
std::optional<OpId> written_after(const IrView& view, GraphId g, OpId from, TensorId t) {
  const TensorId root = view.alias_root(t);
  const auto ops = view.ops(g);
  auto it = std::find(ops.begin(), ops.end(), from);
  for (it = it == ops.end() ? it : it + 1; it != ops.end(); ++it) {
    const auto ins = view.inputs(*it);
    for (std::size_t k = 0; k < ins.size(); ++k)
      if (view.op_writes_input(*it, k) && view.alias_root(ins[k]) == root)
        return *it;
  }
  return std::nullopt;
}

/// GraphError unless view `v` (made by `made`) still shows its sources: PopXL's view shares
/// their memory and would show a later in-place change, which pxl's copy does not. A view of a
/// view is followed (`maker`, the inner view's op) down to the tensors first viewed, for
/// changes after `made`.
void check_view_current(const IrView& view, GraphId g, std::string_view op, std::size_t i,
                        TensorId v, OpId made, OpId maker) {
  for (const TensorId s : view.inputs(maker)) {
    if (const auto w = written_after(view, g, made, s))
      throw GraphError(std::string(op) + ": input " + std::to_string(i) + " " +
                       view_and_maker(view, v, made) + " of '" + view.id(s) + "', is read after " +
                       op_label(view, *w) + " modified '" + view.id(s) +
                       "' in place; PopXL's view would show the change, but pxl holds views as "
                       "copies and does not: take the view after the update");
    if (const auto p = view.producer(s); p && is_view(view.kind(*p)))
      check_view_current(view, g, op, i, v, made, *p);
  }
}

/// The rules of PopXL's views (op_flags::View), which pxl holds as copies: an op must not write
/// through a view, nor read one whose sources changed in place after it was taken.
void check_views(const IrStorage& ir, GraphId g, OpKind kind, const OpAttrs& attrs,
                 std::span<const Tensor> inputs) {
  const IrView view(HandleAccess::ir(ir, op_type_name(kind)));
  const std::string_view op = op_type_name(kind);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const TensorId t = IrView::id(inputs[i]);
    if (view.would_write_input(kind, attrs, i)) {
      const TensorId root = view.alias_root(t);
      if (const auto p = view.producer(root); p && is_view(view.kind(*p)))
        throw GraphError(std::string(op) + ": cannot modify input " + std::to_string(i) + " " +
                         to_string(inputs[i]) + " in place: it is " +
                         view_and_maker(view, root, *p) +
                         ", and PopXL would write the change through to the viewed tensor, "
                         "which pxl, holding views as copies, does not; modify the viewed "
                         "tensor itself, or use the out-of-place op to make the view");
    }
    if (const auto p = view.producer(t); p && is_view(view.kind(*p)))
      check_view_current(view, g, op, i, t, *p, *p);
  }
}
} // namespace

namespace {
/// The dtypes the device only moves (op_flags::Moves): an op that computes refuses them, but
/// for float8 in the pow2-scaled ops (op_flags::Float8).
void check_computes_on(OpKind kind, const std::string& operand, DType d) {
  const std::string_view op = op_type_name(kind);
  if (is_float8(d) && !computes_float8(kind))
    throw DTypeError(std::string(op) + ": " + operand + " is " + std::string(name(d)) + ", which " +
                     std::string(op) +
                     " does not compute on: float8 is storage on the device, taken only by the "
                     "ops that move data and by the pow2-scaled ones (matmul_pow2scaled, "
                     "conv_pow2scaled, conv_transpose_pow2scaled); widen it with "
                     "ops::pow2scale_cast_from_fp8 to compute");
  if (d == int8 || d == int16 || d == uint16)
    throw DTypeError(std::string(op) + ": " + operand + " is " + std::string(name(d)) + ", which " +
                     std::string(op) +
                     " does not compute on: int8, int16 and uint16 are storage dtypes on the "
                     "device, taken only by the ops that move or convert data (cast, copies, "
                     "reshapes, slices, concat, gathers, where, streams, remote buffers); cast "
                     "to int32 or a float with ops::cast to compute");
}
} // namespace

Op add_op_node(OpKind kind, std::span<const Tensor> inputs, std::vector<TensorSpec> output_specs,
               OpAttrs attrs, std::string_view output_name) {
  const std::string_view op = op_type_name(kind);
  const GraphRef g = require_graph(op);
  IrStorage& ir = *g.ir;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.valid())
      HandleAccess::throw_unusable(t, std::string(op) + ": input " + std::to_string(i));
    if (HandleAccess::storage(t) != g.ir)
      throw GraphError(std::string(op) + ": input " + std::to_string(i) + " " + to_string(t) +
                       " belongs to another Ir");
    const GraphId tg = ir.tensor(IrView::id(t)).graph;
    if (tg != g.graph)
      throw GraphError(std::string(op) + ": input " + std::to_string(i) + " " + to_string(t) +
                       " is in graph '" + ir.graph(tg).name + "', not in the current graph '" +
                       ir.graph(g.graph).name +
                       "'; pass it to the subgraph as an input (there is no implicit capture)");
    if (const auto& r = ir.tensor(IrView::id(t)).remote)
      throw GraphError(std::string(op) + ": input " + std::to_string(i) + " " + to_string(t) +
                       " is a remote variable, stored in entry " + std::to_string(r->entry) +
                       " of remote buffer '" + ir.remote_buffers[r->buffer.value].name +
                       "' (Streaming Memory), not on the IPU; load it with "
                       "ops::remote_load(buffer, " +
                       std::to_string(r->entry) + ")");
  }
  if (!moves_only(kind)) {
    for (std::size_t i = 0; i < inputs.size(); ++i)
      check_computes_on(kind, "input " + std::to_string(i) + " " + to_string(inputs[i]),
                        inputs[i].dtype());
    for (std::size_t i = 0; i < output_specs.size(); ++i)
      check_computes_on(kind, "output " + std::to_string(i) + " " + to_string(output_specs[i]),
                        output_specs[i].dtype);
  }
  require_mutable(ir, [&] {
    return std::string(op) + ": adding an op to graph '" + ir.graph(g.graph).name + "'";
  });
  check_views(ir, g.graph, kind, attrs, inputs);
  auto& ctx = context();
  const std::int64_t placed = ctx.ipus.empty() ? 0 : ctx.ipus.back();
  // An op computes on one IPU, from tensors on that IPU: only IpuCopy and AllReduce move data
  // between IPUs (their builders check placement). Ops calling graphs bind each input to the
  // callee's, whose placement their builders check (a conditional's condition is checked here).
  const bool binds_callee = kind == OpKind::Call || kind == OpKind::Repeat;
  const std::size_t checked = crosses_ipus(kind) || binds_callee ? 0
                              : kind == OpKind::Conditional      ? 1
                                                                 : inputs.size();
  for (std::size_t i = 0; i < checked; ++i)
    if (const std::int64_t on = ir.tensor(IrView::id(inputs[i])).ipu; on != placed)
      throw GraphError(std::string(op) + ": input " + std::to_string(i) + " " +
                       to_string(inputs[i]) + " is on IPU " + std::to_string(on) +
                       " but the op is placed on IPU " + std::to_string(placed) +
                       " (inputs located on different IPUs: " + std::to_string(on) +
                       " != " + std::to_string(placed) + "); copy it there with ops::ipu_copy(" +
                       inputs[i].name() + ", " + std::to_string(placed) + ")");
  const OpFamily family = family_of(kind);
  const bool transfer = family == OpFamily::host_io || family == OpFamily::remote;
  if (!transfer && !ctx.exchanges.empty() && ctx.exchanges.back().transfers_only)
    throw GraphError(std::string(op) +
                     ": created in an io_tile_exchange() scope, which takes host and Streaming "
                     "Memory transfers only: they become one exchange on the IO tiles, which "
                     "overlaps the compute tiles' work only alone; create it outside the scope "
                     "(or open it with verify_overlap = false)");
  const auto op_index = static_cast<Index>(ir.ops.size());
  OpNode node{.kind = kind,
              .name = ctx.scope_prefix + std::string(op),
              .graph = g.graph,
              .inputs = {},
              .outputs = {},
              .attrs = std::move(attrs),
              .ipu = placed,
              .tile_set = ctx.tile_sets.empty() ? TileSet::compute : ctx.tile_sets.back(),
              .after = {},
              .pipeline_stage = ctx.pipeline_stages.empty()
                                    ? std::nullopt
                                    : std::optional<std::int64_t>(ctx.pipeline_stages.back())};
  if (transfer && !ctx.exchanges.empty())
    node.exchange_group = ctx.exchanges.back().group;
  node.inputs.reserve(inputs.size());
  for (const auto& t : inputs)
    node.inputs.push_back(IrView::id(t));
  if (!ctx.sequences.empty()) {
    const auto& seq = ctx.sequences.back();
    if (seq.enabled && seq.ir == g.ir && seq.graph == g.graph && seq.last_op)
      node.after.push_back(*seq.last_op);
  }
  std::vector<std::string> names;
  names.reserve(output_specs.size());
  for (std::size_t i = 0; i < output_specs.size(); ++i) {
    std::string name = output_name.empty() ? std::string(op) + "." + std::to_string(op_index)
                                           : std::string(output_name);
    if (output_specs.size() > 1)
      name += ":" + std::to_string(i);
    names.push_back(std::move(name));
  }
  const OpId id =
      append_op(ir, g.graph, std::move(node), std::move(output_specs), names, ctx.scope_prefix, op);
  if (!ctx.sequences.empty()) {
    auto& seq = ctx.sequences.back();
    seq.ir = g.ir;
    seq.graph = g.graph;
    seq.last_op = id;
  }
  return HandleAccess::op(g.ir, id);
}

std::vector<Tensor> add_op(OpKind kind, std::span<const Tensor> inputs,
                           std::vector<TensorSpec> output_specs, OpAttrs attrs,
                           std::string_view output_name) {
  return add_op_node(kind, inputs, std::move(output_specs), std::move(attrs), output_name)
      .outputs();
}

Tensor add_op1(OpKind kind, std::span<const Tensor> inputs, TensorSpec output_spec, OpAttrs attrs,
               std::string_view output_name) {
  std::vector<TensorSpec> specs; // not from an initializer list, which would copy the shape
  specs.push_back(std::move(output_spec));
  return add_op_node(kind, inputs, std::move(specs), std::move(attrs), output_name).output(0);
}

void check_device_dtype(std::string_view call, std::string_view name, DType dtype,
                        const Shape& shape) {
  if (!is_device_dtype(dtype))
    throw DTypeError(std::string(call) + " '" + std::string(name) + "' would be " +
                     to_string(TensorSpec{shape, dtype}) +
                     ", a host dtype: PopXL's devices hold no 64-bit tensors (int64, uint64, "
                     "float64); use " +
                     std::string(pxl::name(downcast_dtype(dtype))) +
                     ", the dtype PopXL's downcast stores it as");
}

HostTensor downcast_for_device(std::string_view call, std::string_view name, HostTensor data,
                               bool downcast) {
  const DType from = data.dtype(), to = downcast_dtype(from);
  if (from == to)
    return data;
  const std::string what = std::string(call) + " '" + std::string(name) + "'";
  if (!downcast)
    throw DTypeError(std::string(what) + " holds " + to_string(data.spec()) +
                     " data with downcast = false, but PopXL's devices hold no 64-bit tensors; "
                     "pass downcast = true (PopXL's default) to store it as " +
                     std::string(pxl::name(to)) + ", or convert it with HostTensor::astype");
  if (is_integral(from))
    visit_dtype(from, [&](auto type) {
      using T = typename decltype(type)::type;
      if constexpr (std::is_integral_v<T> && sizeof(T) == 8) {
        using Narrow = std::conditional_t<std::is_signed_v<T>, std::int32_t, std::uint32_t>;
        const auto values = data.template data<T>();
        const auto bad = std::find_if(values.begin(), values.end(), [](T v) {
          return v < T{std::numeric_limits<Narrow>::min()} ||
                 v > T{std::numeric_limits<Narrow>::max()};
        });
        if (bad != values.end())
          throw ValueError(
              std::string(what) + " holds " + std::string(pxl::name(from)) + " value " +
              std::to_string(*bad) + " at element " + std::to_string(bad - values.begin()) +
              ", outside " + std::string(pxl::name(to)) + "'s range [" +
              std::to_string(std::numeric_limits<Narrow>::min()) + ", " +
              std::to_string(std::numeric_limits<Narrow>::max()) +
              "]: downcasting it would wrap it to " + std::to_string(static_cast<Narrow>(*bad)) +
              " (PopXL's NumPy cast does so silently); convert it with HostTensor::astype to "
              "keep the wrapped value");
      }
    });
  return data.astype(to);
}

void check_same_dtype(std::string_view op, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    throw DTypeError(std::string(op) + ": operands must have the same dtype, got " + to_string(a) +
                     " and " + to_string(b) + "; use ops::cast to convert one");
}

void check_float(std::string_view op, const Tensor& t) {
  if (!is_floating_point(t.dtype()))
    throw DTypeError(std::string(op) + ": expected a float32 or float16 tensor, got " +
                     to_string(t));
}

void check_log2_scale(std::string_view op, const Tensor& log2_scale) {
  if (log2_scale.dtype() != int32)
    throw DTypeError(std::string(op) + ": log2_scale must be an int32 tensor, got " +
                     to_string(log2_scale));
  if (log2_scale.rank() != 0)
    throw ShapeError(std::string(op) + ": log2_scale must be a scalar tensor, got " +
                     to_string(log2_scale));
}

void check_float8(std::string_view op, const Tensor& t, std::string_view role) {
  if (!is_float8(t.dtype()))
    throw DTypeError(std::string(op) + ": " + std::string(role) +
                     " must be float8_143 or float8_152, got " + to_string(t) +
                     "; convert it with ops::pow2scale_cast_to_fp8");
}

void check_dtype(std::string_view op, const Tensor& t, DType d, std::string_view role) {
  if (t.dtype() != d)
    throw DTypeError(std::string(op) + ": " + std::string(role) + " must be " +
                     std::string(name(d)) + ", got " + to_string(t));
}

std::vector<std::int64_t> normalize_axes(std::string_view op, std::vector<std::int64_t> axes,
                                         std::int64_t rank) {
  for (auto& a : axes)
    a = normalize_axis(a, rank, op);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    throw ValueError(std::string(op) + ": axis repeated in the axis list");
  return axes;
}

} // namespace pxl::detail
