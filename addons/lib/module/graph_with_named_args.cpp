// GraphWithNamedArgs and BoundGraph: calling graphs whose parameter inputs are named.
#include "pxl/addons/module/graph_with_named_args.hpp"

#include "pxl/addons/autodiff.hpp"

#include <set>
#include <sstream>

namespace pxl::addons {

namespace {

// Graph input → parent tensor for the named inputs of `g` present in `args`.
void bind_named(const GraphWithNamedArgs& g, const NamedTensors& args,
                std::map<Tensor, Tensor>& bound) {
  for (const auto& [key, input] : g.args().items())
    if (args.is_leaf(key))
      bound[input] = args.at(key);
}

// Graph input → parent tensor for the pairs of `inputs_dict`, which must bind inputs of `graph`.
void bind_dict(const Graph& graph, const InputsDict& inputs_dict, std::map<Tensor, Tensor>& bound) {
  const auto ins = graph.inputs();
  for (const auto& [in, parent] : inputs_dict) {
    if (std::find(ins.begin(), ins.end(), in) == ins.end())
      throw GraphError("call of " + graph.name() + ": inputs_dict binds " + in.id() +
                       ", which is not an input of the graph");
    bound[in] = parent;
  }
}

// Completes `bound` with the positional `inputs` and calls the graph.
CallSiteInfo call_bound(const GraphWithNamedArgs& g, std::map<Tensor, Tensor> bound,
                        const std::vector<Tensor>& inputs, pxl::ops::CallOptions options) {
  const Graph graph = g.graph();
  std::map<Tensor, std::string> names;
  for (const auto& [key, input] : g.args().items())
    names.emplace(input, key);

  std::vector<std::string> missing;
  std::vector<Tensor> open;
  for (const auto& in : graph.inputs()) {
    if (bound.contains(in))
      continue;
    if (auto it = names.find(in); it != names.end())
      missing.push_back(it->second);
    else
      open.push_back(in);
  }
  if (!missing.empty())
    throw GraphError("call of " + graph.name() +
                     ": named inputs not bound: " + impl::join_keys(missing) +
                     " (bind them with bind(named_tensors) or pass them as args)");
  if (open.size() != inputs.size())
    throw GraphError("call of " + graph.name() + ": expected " + std::to_string(open.size()) +
                     " positional input(s), got " + std::to_string(inputs.size()));
  for (std::size_t i = 0; i < open.size(); ++i)
    bound[open[i]] = inputs[i];

  InputsDict dict;
  for (const auto& in : graph.inputs())
    dict.emplace_back(in, bound.at(in));
  return pxl::ops::call_with_info(graph, {}, dict, options);
}

} // namespace

GraphWithNamedArgs::GraphWithNamedArgs(Graph graph, NamedTensors args,
                                       std::optional<transforms::GradGraphInfo> grad_info,
                                       NamedTensors named_outputs)
    : graph_(graph), args_(std::move(args)), grad_info_(std::move(grad_info)),
      named_outputs_(std::move(named_outputs)) {
  const auto ins = graph_.inputs();
  for (const auto& [key, t] : args_.items())
    if (std::find(ins.begin(), ins.end(), t) == ins.end())
      throw GraphError("GraphWithNamedArgs: named arg '" + key + "' (" + t.id() +
                       ") is not an input of " + graph_.name());
  const auto outs = graph_.outputs();
  for (const auto& [key, t] : named_outputs_.items())
    if (std::find(outs.begin(), outs.end(), t) == outs.end())
      throw GraphError("GraphWithNamedArgs: named output '" + key + "' (" + t.id() +
                       ") is not an output of " + graph_.name());
}

std::vector<Tensor> GraphWithNamedArgs::positional_inputs() const {
  std::set<Tensor> named;
  for (const auto& t : args_.values_flat())
    named.insert(t);
  std::vector<Tensor> r;
  for (const auto& in : graph_.inputs())
    if (!named.contains(in))
      r.push_back(in);
  return r;
}

BoundGraph GraphWithNamedArgs::bind(const NamedTensors& args) const {
  std::map<Tensor, Tensor> bound;
  bind_named(*this, args, bound);
  return BoundGraph(*this, std::move(bound));
}

std::vector<Tensor> GraphWithNamedArgs::call(const std::vector<Tensor>& inputs,
                                             const NamedTensors& args) const {
  return call_with_info(inputs, args).outputs();
}

CallSiteInfo GraphWithNamedArgs::call_with_info(const std::vector<Tensor>& inputs,
                                                const NamedTensors& args) const {
  return call_with_info(inputs, args, {});
}

std::vector<Tensor> GraphWithNamedArgs::call(const std::vector<Tensor>& inputs,
                                             const NamedTensors& args,
                                             const InputsDict& inputs_dict,
                                             pxl::ops::CallOptions options) const {
  return call_with_info(inputs, args, inputs_dict, options).outputs();
}

CallSiteInfo GraphWithNamedArgs::call_with_info(const std::vector<Tensor>& inputs,
                                                const NamedTensors& args,
                                                const InputsDict& inputs_dict,
                                                pxl::ops::CallOptions options) const {
  std::map<Tensor, Tensor> bound;
  bind_dict(graph_, inputs_dict, bound);
  bind_named(*this, args, bound);
  return call_bound(*this, std::move(bound), inputs, options);
}

std::string GraphWithNamedArgs::print_schedule() const {
  std::map<Tensor, std::string> names;
  for (const auto& [key, t] : args_.items())
    names.emplace(t, key);
  // The core listing has two header lines, then one line per op in schedule order.
  std::istringstream lines(graph_.print_schedule(names));
  const auto ops = graph_.ops();
  std::ostringstream os;
  std::string line;
  for (std::size_t n = 0; std::getline(lines, line); ++n) {
    os << line;
    if (n >= 2 && n - 2 < ops.size()) {
      const auto called = ops[n - 2].called_graphs();
      for (std::size_t k = 0; k < called.size(); ++k)
        os << (k == 0 ? " calls " : " or ") << called[k].name();
    }
    os << "\n";
  }
  return os.str();
}

GraphWithNamedArgs GraphWithNamedArgs::autodiff(transforms::AutodiffOptions options) const {
  return addons::autodiff(*this, std::move(options));
}

const transforms::GradGraphInfo& GraphWithNamedArgs::grad_graph_info() const {
  if (!grad_info_)
    throw ValueError("GraphWithNamedArgs::grad_graph_info: " + graph_.name() +
                     " is not a gradient graph (make one with autodiff)");
  return *grad_info_;
}

NamedTensors GraphWithNamedArgs::grads(const CallSiteInfo& grad_call) const {
  grad_graph_info();
  if (grad_call.called_graph() != graph_)
    throw GraphError("GraphWithNamedArgs::grads: the call site calls " +
                     grad_call.called_graph().name() + ", not " + graph_.name());
  return named_outputs_.map([&](const Tensor& out) { return grad_call.graph_to_parent(out); });
}

BoundGraph::BoundGraph(GraphWithNamedArgs graph, std::map<Tensor, Tensor> bound)
    : graph_(std::move(graph)), bound_(std::move(bound)) {}

std::vector<Tensor> BoundGraph::call(const std::vector<Tensor>& inputs,
                                     const NamedTensors& args) const {
  return call_with_info(inputs, args).outputs();
}

CallSiteInfo BoundGraph::call_with_info(const std::vector<Tensor>& inputs,
                                        const NamedTensors& args) const {
  return call_with_info(inputs, args, {});
}

std::vector<Tensor> BoundGraph::call(const std::vector<Tensor>& inputs, const NamedTensors& args,
                                     const InputsDict& inputs_dict,
                                     pxl::ops::CallOptions options) const {
  return call_with_info(inputs, args, inputs_dict, options).outputs();
}

CallSiteInfo BoundGraph::call_with_info(const std::vector<Tensor>& inputs, const NamedTensors& args,
                                        const InputsDict& inputs_dict,
                                        pxl::ops::CallOptions options) const {
  auto bound = bound_;
  bind_dict(graph_.graph(), inputs_dict, bound);
  bind_named(graph_, args, bound);
  return call_bound(graph_, std::move(bound), inputs, options);
}

BoundGraph BoundGraph::bind(const NamedTensors& args) const {
  auto bound = bound_;
  bind_named(graph_, args, bound);
  return BoundGraph(graph_, std::move(bound));
}

} // namespace pxl::addons
