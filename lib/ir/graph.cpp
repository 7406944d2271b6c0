#include "pxl/ir/graph.hpp"
#include "pxl/detail/context.hpp"
#include "pxl/detail/op_builder.hpp"
#include "pxl/ir/ir.hpp"

#include <algorithm>
#include <sstream>

namespace pxl {

using detail::Index;
using detail::TensorKind;

const std::string& Graph::name() const { return ir_->graphs[index_].name; }
Ir& Graph::ir() const { return Ir::of(ir_); }

namespace {
std::vector<Tensor> handles(detail::IrStorage* ir, const std::vector<Index>& ids) {
  std::vector<Tensor> r;
  r.reserve(ids.size());
  for (auto i : ids) r.emplace_back(ir, i);
  return r;
}
} // namespace

std::vector<Tensor> Graph::inputs() const { return handles(ir_, ir_->graphs[index_].inputs); }
std::vector<Tensor> Graph::outputs() const { return handles(ir_, ir_->graphs[index_].outputs); }
bool Graph::input_is_by_ref(std::size_t i) const {
  const auto& g = ir_->graphs[index_];
  if (i >= g.input_by_ref.size())
    throw ValueError("Graph::input_is_by_ref: graph '" + g.name + "' has " +
                     std::to_string(g.inputs.size()) + " inputs, asked for input " +
                     std::to_string(i));
  return g.input_by_ref[i];
}
std::vector<Tensor> Graph::tensors() const { return handles(ir_, ir_->graphs[index_].tensors); }

std::vector<Tensor> Graph::variables() const {
  std::vector<Tensor> r;
  for (auto i : ir_->graphs[index_].tensors)
    if (ir_->tensors[i].kind == TensorKind::variable) r.emplace_back(ir_, i);
  return r;
}
std::vector<Tensor> Graph::constants() const {
  std::vector<Tensor> r;
  for (auto i : ir_->graphs[index_].tensors)
    if (ir_->tensors[i].kind == TensorKind::constant) r.emplace_back(ir_, i);
  return r;
}
std::vector<Op> Graph::ops() const {
  std::vector<Op> r;
  for (auto i : ir_->graphs[index_].ops) r.emplace_back(ir_, i);
  return r;
}
std::vector<Graph> Graph::called_graphs() const {
  std::vector<Graph> r;
  for (const auto& op : ops())
    if (auto g = op.called_graph(); g && std::find(r.begin(), r.end(), *g) == r.end())
      r.push_back(*g);
  return r;
}
bool Graph::contains(const Tensor& t) const {
  return t.storage() == ir_ && ir_->tensors[t.index()].graph == index_;
}

namespace {
Tensor add_tensor(detail::GraphRef g, std::string name, TensorSpec spec, TensorKind kind,
                  std::optional<HostTensor> data) {
  auto& ir = *g.ir;
  const auto index = static_cast<Index>(ir.tensors.size());
  auto& ctx = detail::context();
  if (name.empty()) name = "t" + std::to_string(index);
  ir.tensors.push_back(detail::TensorNode{.id = ctx.scope_prefix() + name,
                                          .name = name,
                                          .spec = std::move(spec),
                                          .kind = kind,
                                          .graph = g.graph,
                                          .producer = detail::no_index,
                                          .ipu = ctx.ipus.empty() ? 0 : ctx.ipus.back(),
                                          .data = std::move(data)});
  ir.graphs[g.graph].tensors.push_back(index);
  return Tensor(g.ir, index);
}
} // namespace

Tensor graph_input(Shape shape, DType dtype, std::string name, bool by_ref) {
  const auto g = detail::require_graph("graph_input");
  for (auto d : shape)
    if (d < 0) throw ShapeError("graph_input: negative dimension in " + to_string(shape));
  if (g.graph == 0)
    throw GraphError("graph_input: the main graph takes no inputs; use pxl::variable, "
                     "pxl::constant or ops::host_load to bring data into it");
  Tensor t = add_tensor(g, std::move(name), TensorSpec{std::move(shape), dtype},
                        TensorKind::graph_input, std::nullopt);
  g.ir->graphs[g.graph].inputs.push_back(t.index());
  g.ir->graphs[g.graph].input_by_ref.push_back(by_ref);
  return t;
}

void graph_output(const Tensor& t) {
  const auto g = detail::require_graph("graph_output");
  if (!t.valid() || t.storage() != g.ir || t.storage()->tensors[t.index()].graph != g.graph)
    throw GraphError("graph_output: " + (t.valid() ? detail::describe(t) : std::string("tensor")) +
                     " is not in the current graph '" + g.ir->graphs[g.graph].name + "'");
  if (g.graph == 0)
    throw GraphError("graph_output: the main graph has no outputs; use ops::host_store to send "
                     "data to the host");
  g.ir->graphs[g.graph].outputs.push_back(t.index());
}

Tensor variable(HostTensor data, std::string name) {
  const auto g = detail::require_graph("variable");
  if (g.graph != 0)
    throw GraphError("variable: variables live in the main graph only, but the current graph is '" +
                     g.ir->graphs[g.graph].name +
                     "'; create it under ir.main_graph().scope() and pass it to the subgraph "
                     "as an input");
  TensorSpec spec = data.spec();
  return add_tensor(g, std::move(name), std::move(spec), TensorKind::variable, std::move(data));
}
Tensor variable(const HostTensor& data, DType dtype, std::string name) {
  return variable(data.astype(dtype), std::move(name));
}

Tensor constant(HostTensor data, std::string name) {
  const auto g = detail::require_graph("constant");
  TensorSpec spec = data.spec();
  return add_tensor(g, std::move(name), std::move(spec), TensorKind::constant, std::move(data));
}
Tensor constant(const HostTensor& data, DType dtype, std::string name) {
  return constant(data.astype(dtype), std::move(name));
}
Tensor constant(double value, DType dtype, std::string name) {
  return constant(HostTensor::full({}, dtype, value), std::move(name));
}

} // namespace pxl
