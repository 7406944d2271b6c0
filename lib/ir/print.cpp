// Text forms of an Ir: PopXL's schedule listing and Graphviz DOT.
#include "pxl/detail/ir_storage.hpp"
#include "pxl/ir/ir.hpp"

#include <sstream>

namespace pxl {

namespace {
std::string ref(const Tensor& t) { return "%" + std::to_string(t.index()); }
std::string ref_with_spec(const Tensor& t) { return ref(t) + " " + to_string(t.spec()); }
} // namespace

std::string Graph::print_schedule(const std::map<Tensor, std::string>& input_names) const {
  std::ostringstream os;
  os << "Graph : " << name() << "\n  (";
  const auto ins = inputs();
  for (std::size_t i = 0; i < ins.size(); ++i) {
    if (i) os << ", ";
    if (auto it = input_names.find(ins[i]); it != input_names.end()) os << it->second << "=";
    os << ref(ins[i]);
  }
  os << ") -> (";
  const auto outs = outputs();
  for (std::size_t i = 0; i < outs.size(); ++i) os << (i ? ", " : "") << ref(outs[i]);
  os << ") {\n";
  for (const auto& op : ops()) {
    os << "    " << op.debug_name() << " (";
    const auto op_ins = op.inputs();
    for (std::size_t i = 0; i < op_ins.size(); ++i) os << (i ? ", " : "") << ref_with_spec(op_ins[i]);
    os << ") -> (";
    const auto op_outs = op.outputs();
    for (std::size_t i = 0; i < op_outs.size(); ++i)
      os << (i ? ", " : "") << ref_with_spec(op_outs[i]);
    os << ")\n";
  }
  os << "  }\n";
  return os.str();
}

std::string Ir::to_dot() const {
  std::ostringstream os;
  os << "digraph pxl {\n  node [fontname=\"monospace\"];\n";
  for (const auto& g : graphs()) {
    os << "  subgraph cluster_" << g.index() << " {\n    label=\"" << g.name() << "\";\n"
       << "    g" << g.index() << " [shape=plaintext, label=\"" << g.name() << "\"];\n";
    for (const auto& t : g.tensors())
      if (!t.producer())
        os << "    t" << t.index() << " [shape=ellipse, label=\"" << t.id() << "\\n"
           << to_string(t.spec()) << "\"];\n";
    for (const auto& op : g.ops()) {
      os << "    op" << op.index() << " [shape=box, label=\"" << op.debug_name() << "\"];\n";
      for (const auto& in : op.inputs()) {
        if (auto p = in.producer()) os << "    op" << p->index();
        else os << "    t" << in.index();
        os << " -> op" << op.index() << " [label=\"%" << in.index() << " "
           << to_string(in.spec()) << "\"];\n";
      }
      for (const auto& before : op.after())
        os << "    op" << before.index() << " -> op" << op.index() << " [style=dashed];\n";
    }
    os << "  }\n";
  }
  for (const auto& g : graphs())
    for (const auto& op : g.ops())
      if (auto called = op.called_graph())
        os << "  op" << op.index() << " -> g" << called->index()
           << " [style=dotted, label=\"calls " << called->name() << "\"];\n";
  os << "}\n";
  return os.str();
}

} // namespace pxl
