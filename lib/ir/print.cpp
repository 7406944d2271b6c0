// Text forms of an Ir: PopXL's schedule listing and Graphviz DOT, read through IrView.
#include "ir/handle_access.hpp"
#include "pxl/ir/ir.hpp"

#include <sstream>

namespace pxl {

namespace {
std::string ref(TensorId t) { return "%" + std::to_string(t.value); }

/// "%3 [(1, 4) float32], %5 [(4) float32]"
void refs_with_specs(std::ostream& os, const IrView& v, std::span<const TensorId> ts) {
  for (std::size_t i = 0; i < ts.size(); ++i)
    os << (i ? ", " : "") << ref(ts[i]) << " " << to_string(v.spec(ts[i]));
}

std::string debug_name(const IrView& v, OpId o) {
  return std::string(op_type_name(v.kind(o))) + "." + std::to_string(o.value);
}
} // namespace

std::string Graph::print_schedule(const std::map<Tensor, std::string>& input_names) const {
  const IrView v =
      detail::HandleAccess::view(&detail::HandleAccess::arena(*this, "Graph::print_schedule()"));
  const GraphId g = IrView::id(*this);
  std::ostringstream os;
  os << "Graph : " << v.name(g) << "\n  (";
  const auto ins = v.inputs(g);
  for (std::size_t i = 0; i < ins.size(); ++i) {
    if (i)
      os << ", ";
    if (auto it = input_names.find(v.tensor(ins[i])); it != input_names.end())
      os << it->second << "=";
    os << ref(ins[i]);
  }
  os << ") -> (";
  const auto outs = v.outputs(g);
  for (std::size_t i = 0; i < outs.size(); ++i)
    os << (i ? ", " : "") << ref(outs[i]);
  os << ") {\n";
  for (const OpId o : v.ops(g)) {
    os << "    " << debug_name(v, o) << " (";
    refs_with_specs(os, v, v.inputs(o));
    os << ") -> (";
    refs_with_specs(os, v, v.outputs(o));
    os << ")\n";
  }
  os << "  }\n";
  return os.str();
}

std::string Ir::to_dot() const {
  const IrView v(*this);
  std::ostringstream os;
  os << "digraph pxl {\n  node [fontname=\"monospace\"];\n";
  for (std::uint32_t gi = 0; gi < v.num_graphs(); ++gi) {
    const GraphId g{gi};
    os << "  subgraph cluster_" << gi << " {\n    label=\"" << v.name(g) << "\";\n"
       << "    g" << gi << " [shape=plaintext, label=\"" << v.name(g) << "\"];\n";
    for (const TensorId t : v.tensors(g))
      if (!v.producer(t))
        os << "    t" << t.value << " [shape=ellipse, label=\"" << v.id(t) << "\\n"
           << to_string(v.spec(t)) << "\"];\n";
    for (const OpId o : v.ops(g)) {
      os << "    op" << o.value << " [shape=box, label=\"" << debug_name(v, o) << "\"];\n";
      for (const TensorId in : v.inputs(o)) {
        if (auto p = v.producer(in))
          os << "    op" << p->value;
        else
          os << "    t" << in.value;
        os << " -> op" << o.value << " [label=\"%" << in.value << " " << to_string(v.spec(in))
           << "\"];\n";
      }
      for (const OpId before : v.after(o))
        os << "    op" << before.value << " -> op" << o.value << " [style=dashed];\n";
    }
    os << "  }\n";
  }
  for (std::uint32_t gi = 0; gi < v.num_graphs(); ++gi)
    for (const OpId o : v.ops(GraphId{gi}))
      for (const Callee& called : v.callees(o))
        os << "  op" << o.value << " -> g" << called.graph.value << " [style=dotted, label=\"calls "
           << v.name(called.graph) << "\"];\n";
  os << "}\n";
  return os.str();
}

} // namespace pxl
