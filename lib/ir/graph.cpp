#include "pxl/ir/graph.hpp"
#include "ir/context.hpp"
#include "ir/handle_access.hpp"
#include "ir/op_builder.hpp"
#include "pxl/ir/ir.hpp"
#include "pxl/ir/scope.hpp"

#include <algorithm>
#include <sstream>

namespace pxl {

using detail::HandleAccess;

namespace {
/// The arena behind `g`, after the check every Graph accessor makes (`call` names it).
detail::IrStorage& graph_arena(const Graph& g, std::string_view call) {
  return HandleAccess::arena(g, call);
}
std::vector<Tensor> handles(detail::IrStorage* ir, const std::vector<TensorId>& ids) {
  std::vector<Tensor> r;
  r.reserve(ids.size());
  for (auto i : ids)
    r.push_back(HandleAccess::tensor(ir, i));
  return r;
}
} // namespace

bool Graph::valid() const { return HandleAccess::storage(*this) != nullptr; }
const std::string& Graph::name() const {
  return graph_arena(*this, "Graph::name()").graph(IrView::id(*this)).name;
}
bool Graph::is_main() const {
  graph_arena(*this, "Graph::is_main()");
  return IrView::id(*this) == IrView::main_graph();
}
Ir& Graph::ir() const { return HandleAccess::ir(graph_arena(*this, "Graph::ir()"), "Graph::ir"); }

std::vector<Tensor> Graph::inputs() const {
  auto& ir = graph_arena(*this, "Graph::inputs()");
  return handles(&ir, ir.graph(IrView::id(*this)).inputs);
}
std::vector<Tensor> Graph::outputs() const {
  auto& ir = graph_arena(*this, "Graph::outputs()");
  return handles(&ir, ir.graph(IrView::id(*this)).outputs);
}
bool Graph::input_is_by_ref(std::size_t i) const {
  const auto& g = graph_arena(*this, "Graph::input_is_by_ref()").graph(IrView::id(*this));
  if (i >= g.input_by_ref.size())
    throw ValueError("Graph::input_is_by_ref: graph '" + g.name + "' has " +
                     std::to_string(g.inputs.size()) + " inputs, asked for input " +
                     std::to_string(i));
  return g.input_by_ref[i];
}
std::vector<Tensor> Graph::tensors() const {
  auto& ir = graph_arena(*this, "Graph::tensors()");
  return handles(&ir, ir.graph(IrView::id(*this)).tensors);
}

namespace {
std::vector<Tensor> tensors_of_kind(const Graph& g, TensorKind kind, std::string_view call) {
  auto& ir = graph_arena(g, call);
  std::vector<Tensor> r;
  for (auto i : ir.graph(IrView::id(g)).tensors)
    if (ir.tensor(i).kind == kind)
      r.push_back(HandleAccess::tensor(&ir, i));
  return r;
}
} // namespace

std::vector<Tensor> Graph::variables() const {
  return tensors_of_kind(*this, TensorKind::variable, "Graph::variables()");
}
std::vector<Tensor> Graph::constants() const {
  return tensors_of_kind(*this, TensorKind::constant, "Graph::constants()");
}
std::vector<Op> Graph::ops() const {
  auto& ir = graph_arena(*this, "Graph::ops()");
  std::vector<Op> r;
  for (auto i : ir.graph(IrView::id(*this)).ops)
    r.push_back(HandleAccess::op(&ir, i));
  return r;
}
std::vector<Graph> Graph::called_graphs() const {
  graph_arena(*this, "Graph::called_graphs()");
  std::vector<Graph> r;
  for (const auto& op : ops())
    for (const Graph& g : op.called_graphs())
      if (std::find(r.begin(), r.end(), g) == r.end())
        r.push_back(g);
  return r;
}
bool Graph::contains(const Tensor& t) const {
  // A query: an empty tensor, or one of a destroyed Ir, is in no graph.
  auto& ir = graph_arena(*this, "Graph::contains()");
  return HandleAccess::storage(t) == &ir && ir.tensor(IrView::id(t)).graph == IrView::id(*this);
}

namespace {
Tensor add_tensor(detail::GraphRef g, std::string name, TensorSpec spec, TensorKind kind,
                  std::optional<HostTensor> data) {
  auto& ir = *g.ir;
  const TensorId index{static_cast<detail::Index>(ir.tensors.size())};
  auto& ctx = detail::context();
  if (name.empty())
    name = "t" + std::to_string(index.value);
  const char* what = kind == TensorKind::graph_input ? "graph_input"
                     : kind == TensorKind::variable  ? "variable"
                                                     : "constant";
  detail::checked_nbytes(spec, [&] { return std::string(what) + " '" + name + "'"; });
  detail::check_device_dtype(what, name, spec.dtype, spec.shape);
  ir.tensors.push_back(detail::TensorNode{.id = {},
                                          .name = name,
                                          .spec = std::move(spec),
                                          .kind = kind,
                                          .graph = g.graph,
                                          .producer = std::nullopt,
                                          .ipu = ctx.ipus.empty() ? 0 : ctx.ipus.back(),
                                          .tile_set = current_tile_set(),
                                          .data = std::move(data)});
  detail::assign_tensor_id(ir, index,
                           detail::scoped_tensor_id(ir, g.graph, ctx.scope_prefix, name));
  ir.graph(g.graph).tensors.push_back(index);
  return HandleAccess::tensor(g.ir, index);
}
} // namespace

Tensor graph_input(Shape shape, DType dtype, std::string name, bool by_ref) {
  const auto g = detail::require_graph("graph_input");
  if (g.graph == IrView::main_graph())
    throw GraphError("graph_input: the main graph takes no inputs; use pxl::variable, "
                     "pxl::constant or ops::host_load to bring data into it");
  detail::require_mutable(*g.ir, "graph_input: adding an input to graph '" +
                                     g.ir->graph(g.graph).name + "'");
  Tensor t = add_tensor(g, std::move(name), TensorSpec{std::move(shape), dtype},
                        TensorKind::graph_input, std::nullopt);
  g.ir->graph(g.graph).inputs.push_back(IrView::id(t));
  g.ir->graph(g.graph).input_by_ref.push_back(by_ref);
  return t;
}

Tensor graph_input_for(const Tensor& var, std::string name) {
  const auto g = detail::require_graph("graph_input_for");
  const std::string what = var.valid() ? to_string(var) : std::string("an empty Tensor");
  if (g.graph == IrView::main_graph())
    throw GraphError("graph_input_for: the current graph is the main graph, which takes no "
                     "inputs; call it in the subgraph that should read " +
                     what);
  if (!var.valid() || HandleAccess::storage(var) != g.ir ||
      g.ir->tensor(IrView::id(var)).graph != IrView::main_graph() ||
      g.ir->tensor(IrView::id(var)).kind != TensorKind::variable ||
      g.ir->tensor(IrView::id(var)).remote)
    throw GraphError("graph_input_for: expected an on-chip variable of the main graph of graph '" +
                     g.ir->graph(g.graph).name + "''s Ir, got " + what +
                     "; a remote variable is read with ops::remote_load in any graph instead");
  const auto& node = g.ir->tensor(IrView::id(var));
  if (name.empty())
    name = node.name;
  const Tensor t = graph_input(node.spec, std::move(name), /*by_ref=*/true);
  auto& input = g.ir->tensor(IrView::id(t));
  input.ipu = node.ipu;
  input.tile_set = node.tile_set;
  input.bound_by_default = IrView::id(var);
  return t;
}

void graph_output(const Tensor& t) {
  const auto g = detail::require_graph("graph_output");
  if (!t.valid() || HandleAccess::storage(t) != g.ir ||
      g.ir->tensor(IrView::id(t)).graph != g.graph)
    throw GraphError("graph_output: " + (t.valid() ? to_string(t) : std::string("tensor")) +
                     " is not in the current graph '" + g.ir->graph(g.graph).name + "'");
  if (g.graph == IrView::main_graph())
    throw GraphError("graph_output: the main graph has no outputs; use ops::host_store to send "
                     "data to the host");
  detail::require_mutable(*g.ir, "graph_output: adding an output to graph '" +
                                     g.ir->graph(g.graph).name + "'");
  g.ir->graph(g.graph).outputs.push_back(IrView::id(t));
}

Tensor variable(HostTensor data, std::string name, bool downcast) {
  const auto g = detail::require_graph("variable");
  if (g.graph != IrView::main_graph())
    throw GraphError("variable: variables live in the main graph only, but the current graph is '" +
                     g.ir->graph(g.graph).name +
                     "'; create it under ir.main_graph().scope() and pass it to the subgraph "
                     "as an input");
  detail::require_mutable(*g.ir, "variable: adding variable '" + name + "'");
  data = detail::downcast_for_device("variable", name, std::move(data), downcast);
  TensorSpec spec = data.spec();
  return add_tensor(g, std::move(name), std::move(spec), TensorKind::variable, std::move(data));
}
Tensor variable(const HostTensor& data, DType dtype, std::string name) {
  detail::check_device_dtype("variable", name, dtype, data.shape());
  return variable(data.astype(dtype), std::move(name), /*downcast=*/false);
}

Tensor variable(HostTensor data, std::string name, const VariableOptions& options) {
  if (!options.replica_grouping) {
    if (options.retrieval_mode)
      throw ValueError("variable: a retrieval mode was given for '" + name +
                       "', which has no replica grouping; retrieval modes choose how a grouped "
                       "variable is read back (give VariableOptions::replica_grouping too)");
    return variable(std::move(data), std::move(name), options.downcast);
  }
  const ReplicaGrouping& grouping = *options.replica_grouping;
  const auto g = detail::require_graph("variable");
  const Ir& ir = detail::HandleAccess::ir(*g.ir, "variable");
  if (grouping.ir_id() != ir.id() || grouping.replication_factor() != ir.replication_factor())
    throw ValueError("variable: " + grouping.to_string() + " for '" + name +
                     "' was not made by this Ir's replica_grouping (replication factor " +
                     std::to_string(ir.replication_factor()) + ")");
  data = detail::downcast_for_device("variable", name, std::move(data), options.downcast);
  TensorSpec spec = data.spec();
  if (grouping.num_groups() > 1) {
    if (spec.shape.empty() || spec.shape.front() != grouping.num_groups())
      throw ShapeError("variable: '" + name + "' has a replica grouping of " +
                       std::to_string(grouping.num_groups()) +
                       " groups, so its data needs one value per group, shaped (" +
                       std::to_string(grouping.num_groups()) + ", *shape); got " +
                       to_string(spec.shape));
    spec.shape.erase(spec.shape.begin());
  }
  const Tensor t = variable(HostTensor(spec), std::move(name));
  auto& node = g.ir->tensor(IrView::id(t));
  node.data = std::move(data);
  node.grouping =
      VariableGrouping{grouping, options.retrieval_mode.value_or(RetrievalMode::one_per_group)};
  return t;
}

Tensor constant(HostTensor data, std::string name, bool downcast) {
  const auto g = detail::require_graph("constant");
  detail::require_mutable(*g.ir, "constant: adding constant '" + name + "' to graph '" +
                                     g.ir->graph(g.graph).name + "'");
  data = detail::downcast_for_device("constant", name, std::move(data), downcast);
  TensorSpec spec = data.spec();
  return add_tensor(g, std::move(name), std::move(spec), TensorKind::constant, std::move(data));
}
Tensor constant(const HostTensor& data, DType dtype, std::string name) {
  detail::check_device_dtype("constant", name, dtype, data.shape());
  return constant(data.astype(dtype), std::move(name), /*downcast=*/false);
}
Tensor constant(double value, DType dtype, std::string name) {
  detail::check_device_dtype("constant", name, dtype, {});
  return constant(HostTensor::full({}, dtype, value), std::move(name), /*downcast=*/false);
}

} // namespace pxl
