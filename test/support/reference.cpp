// The reference evaluator's core: environments, in-place aliasing, kernel dispatch, streams.
#include "reference.hpp"

#include "pxl/detail/ir_storage.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <set>

namespace pxl::testing {

namespace {
using detail::Index;
using detail::TensorKind;

/// One entry per op kind, in table order; a kind without a ref_<Kind> fails to link.
constexpr std::array<RefKernel, num_op_kinds> ref_kernels = {
#define PXL_X(kind, name) &ref_##kind,
    PXL_OP_TABLE(PXL_X)
#undef PXL_X
};

/// Pops the environment pushed for a graph evaluation, also when a kernel throws.
struct FrameGuard {
  std::vector<const std::unordered_map<std::uint32_t, Value>*>& frames;
  ~FrameGuard() { frames.pop_back(); }
};

std::string quoted_list(const std::set<std::string>& names) {
  std::string s;
  for (const auto& n : names)
    s += (s.empty() ? "'" : ", '") + n + "'";
  return s.empty() ? "none" : s;
}

/// Streams read by some HostLoad (or written by some HostStore) anywhere in the Ir.
std::set<std::uint32_t> streams_used_by(const detail::IrStorage& ir, OpKind kind) {
  std::set<std::uint32_t> r;
  for (const auto& op : ir.ops)
    if (op.kind == kind)
      r.insert(std::get<StreamAttrs>(op.attrs).stream);
  return r;
}

Shape host_array_shape(const TensorSpec& spec, std::int64_t num_host_transfers) {
  Shape s = spec.shape;
  if (num_host_transfers != 1)
    s.insert(s.begin(), num_host_transfers);
  return s;
}
} // namespace

ReferenceEvaluator::ReferenceEvaluator(const Ir& ir) : ir_(ir) {}

Value ReferenceEvaluator::variable_value(std::uint32_t index) {
  auto it = variables_.find(index);
  if (it == variables_.end()) {
    const auto& node = ir_.storage()->tensors[index];
    PXL_ASSERT(node.data.has_value());
    it = variables_.emplace(index, std::make_shared<HostTensor>(*node.data)).first;
  }
  return it->second;
}

const HostTensor& ReferenceEvaluator::variable(const Tensor& v) const {
  if (!v.valid() || v.storage() != ir_.storage() || !v.is_variable())
    throw GraphError("ReferenceEvaluator::variable: " +
                     (v.valid() ? "'" + v.id() + "'" : std::string("an empty tensor")) +
                     " is not a variable of this Ir");
  if (auto it = variables_.find(v.index()); it != variables_.end())
    return *it->second;
  return *ir_.storage()->tensors[v.index()].data;
}

Value ReferenceEvaluator::value(const Tensor& t) const {
  PXL_ASSERT(!frames_.empty());
  const auto it = frames_.back()->find(t.index());
  PXL_ASSERT(it != frames_.back()->end());
  return it->second;
}

std::vector<Value> ReferenceEvaluator::evaluate_values(const Graph& graph,
                                                       std::vector<Value> inputs) {
  if (graph.storage() != ir_.storage())
    throw GraphError("ReferenceEvaluator: graph '" + graph.name() + "' belongs to another Ir");
  const detail::IrStorage& ir = *ir_.storage();
  const detail::GraphNode& g = ir.graphs[graph.index()];
  if (inputs.size() != g.inputs.size())
    throw GraphError("ReferenceEvaluator: graph '" + g.name + "' takes " +
                     std::to_string(g.inputs.size()) + " inputs, got " +
                     std::to_string(inputs.size()));

  Env env;
  env.reserve(g.tensors.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto& spec = ir.tensors[g.inputs[i]].spec;
    if (inputs[i]->spec() != spec)
      throw ShapeError("ReferenceEvaluator: input " + std::to_string(i) + " of graph '" + g.name +
                       "' is " + to_string(spec) + ", got a host tensor " +
                       to_string(inputs[i]->spec()));
    // By-ref inputs alias the caller's storage; the others are the callee's own copies.
    env[g.inputs[i]] = g.input_by_ref[i] ? inputs[i] : std::make_shared<HostTensor>(*inputs[i]);
  }
  for (Index t : g.tensors) {
    const auto& node = ir.tensors[t];
    if (node.kind == TensorKind::variable)
      env[t] = variable_value(t);
    else if (node.kind == TensorKind::constant)
      env[t] = std::make_shared<HostTensor>(*node.data);
  }

  frames_.push_back(&env);
  FrameGuard guard{frames_};
  std::vector<const HostTensor*> in;
  std::vector<HostTensor*> out;
  std::vector<Value> out_values;
  for (Index op_index : g.ops) {
    const detail::OpNode& op = ir.ops[op_index];
    in.clear();
    out.clear();
    out_values.clear();
    for (Index t : op.inputs) {
      PXL_ASSERT(env.count(t) == 1);
      in.push_back(env[t].get());
    }
    for (std::size_t k = 0; k < op.outputs.size(); ++k) {
      // An in-place op writes into its first input, so later readers see the update.
      out_values.push_back(k == 0 && is_inplace(op.kind)
                               ? env[op.inputs[0]]
                               : std::make_shared<HostTensor>(ir.tensors[op.outputs[k]].spec));
      out.push_back(out_values.back().get());
    }
    ref_kernels[static_cast<std::size_t>(op.kind)](*this, Op(ir_.storage(), op_index), in, out);
    for (std::size_t k = 0; k < op.outputs.size(); ++k)
      env[op.outputs[k]] = out_values[k];
  }

  std::vector<Value> results;
  for (Index t : g.outputs)
    results.push_back(env.at(t));
  return results;
}

std::vector<HostTensor> ReferenceEvaluator::evaluate(const Graph& graph,
                                                     std::vector<HostTensor> inputs) {
  std::vector<Value> values;
  for (auto& t : inputs)
    values.push_back(std::make_shared<HostTensor>(std::move(t)));
  std::vector<HostTensor> results;
  for (const auto& v : evaluate_values(graph, std::move(values)))
    results.push_back(*v);
  return results;
}

HostTensor ReferenceEvaluator::next_h2d(std::uint32_t stream) {
  const auto& node = ir_.storage()->streams[stream];
  const auto it = h2d_feed_.find(stream);
  if (it == h2d_feed_.end())
    throw StreamError("HostLoad: stream '" + node.name +
                      "' has no data; feed it through ReferenceEvaluator::run");
  const HostTensor& feed = it->second;
  const auto n = feed.shape()[0];
  auto& position = h2d_position_[stream];
  HostTensor element(node.spec);
  const auto offset = static_cast<std::size_t>(position % n) * element.nbytes();
  std::memcpy(element.bytes().data(), feed.bytes().data() + offset, element.nbytes());
  ++position;
  return element;
}

void ReferenceEvaluator::push_d2h(std::uint32_t stream, const HostTensor& t) {
  d2h_out_[stream].push_back(t);
}

std::map<std::string, HostTensor>
ReferenceEvaluator::run(const std::map<std::string, HostTensor>& h2d) {
  const detail::IrStorage& ir = *ir_.storage();
  const std::int64_t nht = ir.num_host_transfers;

  const auto loaded = streams_used_by(ir, OpKind::HostLoad);
  std::set<std::string> missing, unexpected;
  for (auto s : loaded)
    if (!h2d.contains(ir.streams[s].name))
      missing.insert(ir.streams[s].name);
  for (const auto& [name, array] : h2d)
    if (std::none_of(loaded.begin(), loaded.end(),
                     [&](std::uint32_t s) { return ir.streams[s].name == name; }))
      unexpected.insert(name);
  if (!missing.empty() || !unexpected.empty())
    throw StreamError("ReferenceEvaluator::run: the arrays given do not match the h2d streams "
                      "the Ir loads; missing: " +
                      quoted_list(missing) + "; unexpected: " + quoted_list(unexpected));

  h2d_feed_.clear();
  h2d_position_.clear();
  d2h_out_.clear();
  for (auto s : loaded) {
    const auto& stream = ir.streams[s];
    const HostTensor& array = h2d.at(stream.name);
    const TensorSpec expected{host_array_shape(stream.spec, nht), stream.spec.dtype};
    if (array.spec() != expected)
      throw StreamError("ReferenceEvaluator::run: stream '" + stream.name + "' of " +
                        to_string(stream.spec) + " with num_host_transfers " + std::to_string(nht) +
                        " needs an array " + to_string(expected) + ", got " +
                        to_string(array.spec()));
    Shape with_leading = stream.spec.shape;
    with_leading.insert(with_leading.begin(), nht);
    h2d_feed_.emplace(s, array.reshaped(std::move(with_leading)));
  }

  evaluate_values(Graph(ir_.storage(), 0), {});

  std::map<std::string, HostTensor> results;
  for (auto s : streams_used_by(ir, OpKind::HostStore)) {
    const auto& stream = ir.streams[s];
    HostTensor array(host_array_shape(stream.spec, nht), stream.spec.dtype);
    const auto& stored = d2h_out_[s];
    for (std::size_t j = 0; j < stored.size(); ++j) {
      const auto slot = static_cast<std::size_t>(static_cast<std::int64_t>(j) % nht);
      std::memcpy(array.bytes().data() + slot * stored[j].nbytes(), stored[j].bytes().data(),
                  stored[j].nbytes());
    }
    results.emplace(stream.name, std::move(array));
  }
  return results;
}

} // namespace pxl::testing
