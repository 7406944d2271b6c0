#include "pxl/detail/op_builder.hpp"
#include "pxl/detail/context.hpp"
#include "pxl/ir/graph.hpp"

#include <algorithm>

namespace pxl::detail {

GraphRef require_graph(std::string_view op) {
  auto& ctx = context();
  if (ctx.graphs.empty())
    throw GraphError(std::string(op) +
                     ": no current graph; open one with `auto scope = graph.scope();` "
                     "(PopXL's `with graph:`)");
  return {ctx.graphs.back().ir, ctx.graphs.back().graph};
}

std::string describe(const Tensor& t) {
  return "'" + t.id() + "' " + to_string(t.spec());
}

std::vector<Tensor> add_op(OpKind kind, std::span<const Tensor> inputs,
                           std::vector<TensorSpec> output_specs, OpAttrs attrs,
                           std::string_view output_name) {
  const std::string_view op = op_type_name(kind);
  const GraphRef g = require_graph(op);
  IrStorage& ir = *g.ir;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.valid())
      throw GraphError(std::string(op) + ": input " + std::to_string(i) + " is an empty Tensor");
    if (t.storage() != g.ir)
      throw GraphError(std::string(op) + ": input " + std::to_string(i) + " " + describe(t) +
                       " belongs to another Ir");
    if (ir.tensors[t.index()].graph != g.graph)
      throw GraphError(std::string(op) + ": input " + std::to_string(i) + " " + describe(t) +
                       " is in graph '" + ir.graphs[ir.tensors[t.index()].graph].name +
                       "', not in the current graph '" + ir.graphs[g.graph].name +
                       "'; pass it to the subgraph as an input (there is no implicit capture)");
  }
  auto& ctx = context();
  const auto op_index = static_cast<Index>(ir.ops.size());
  OpNode node{.kind = kind,
              .name = ctx.scope_prefix() + std::string(op),
              .graph = g.graph,
              .inputs = {},
              .outputs = {},
              .attrs = std::move(attrs),
              .ipu = ctx.ipus.empty() ? 0 : ctx.ipus.back(),
              .after = {}};
  for (const auto& t : inputs) node.inputs.push_back(t.index());
  if (!ctx.sequences.empty()) {
    const auto& seq = ctx.sequences.back();
    if (seq.enabled && seq.ir == g.ir && seq.graph == g.graph && seq.last_op != no_index)
      node.after.push_back(seq.last_op);
  }
  std::vector<Tensor> outs;
  for (std::size_t i = 0; i < output_specs.size(); ++i) {
    const auto t_index = static_cast<Index>(ir.tensors.size());
    std::string name = output_name.empty() ? std::string(op) + "." + std::to_string(op_index)
                                           : std::string(output_name);
    if (output_specs.size() > 1) name += ":" + std::to_string(i);
    ir.tensors.push_back(TensorNode{.id = ctx.scope_prefix() + name,
                                    .name = name,
                                    .spec = std::move(output_specs[i]),
                                    .kind = TensorKind::intermediate,
                                    .graph = g.graph,
                                    .producer = op_index,
                                    .ipu = node.ipu,
                                    .data = std::nullopt});
    ir.graphs[g.graph].tensors.push_back(t_index);
    node.outputs.push_back(t_index);
    outs.emplace_back(g.ir, t_index);
  }
  ir.ops.push_back(std::move(node));
  ir.graphs[g.graph].ops.push_back(op_index);
  if (!ctx.sequences.empty()) {
    auto& seq = ctx.sequences.back();
    seq.ir = g.ir;
    seq.graph = g.graph;
    seq.last_op = op_index;
  }
  return outs;
}

Tensor add_op1(OpKind kind, std::span<const Tensor> inputs, TensorSpec output_spec, OpAttrs attrs,
               std::string_view output_name) {
  return add_op(kind, inputs, {std::move(output_spec)}, std::move(attrs), output_name)[0];
}

void check_same_dtype(std::string_view op, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    throw DTypeError(std::string(op) + ": operands must have the same dtype, got " + describe(a) +
                     " and " + describe(b) + "; use ops::cast to convert one");
}

void check_float(std::string_view op, const Tensor& t) {
  if (!is_floating_point(t.dtype()))
    throw DTypeError(std::string(op) + ": expected a float32 or float16 tensor, got " +
                     describe(t));
}

void check_dtype(std::string_view op, const Tensor& t, DType d, std::string_view role) {
  if (t.dtype() != d)
    throw DTypeError(std::string(op) + ": " + std::string(role) + " must be " +
                     std::string(name(d)) + ", got " + describe(t));
}

std::vector<std::int64_t> normalize_axes(std::string_view op, std::vector<std::int64_t> axes,
                                         std::int64_t rank) {
  for (auto& a : axes) a = normalize_axis(a, rank, op);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    throw ValueError(std::string(op) + ": axis repeated in the axis list");
  return axes;
}

} // namespace pxl::detail
