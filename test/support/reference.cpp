// The reference evaluator's core: environments, in-place aliasing, kernel dispatch, streams.
#include "reference.hpp"
#include "replicated_reference.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <set>

namespace pxl::testing {

namespace {
/// One entry per op kind, in table order; a kind without a ref_<Kind> fails to link.
constexpr std::array<RefKernel, num_op_kinds> ref_kernels = {
#define PXL_X(kind, ...) &ref_##kind,
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
std::set<std::uint32_t> streams_used_by(const IrView& ir, OpKind kind) {
  std::set<std::uint32_t> r;
  for (std::uint32_t o = 0; o < ir.num_ops(); ++o)
    if (ir.kind(OpId{o}) == kind)
      r.insert(ir.attrs_as<StreamAttrs>(OpId{o}).stream);
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

void ReferenceEvaluator::join(std::shared_ptr<Rendezvous> rendezvous, std::int64_t replica) {
  rendezvous_ = std::move(rendezvous);
  replica_ = replica;
}

std::int64_t ReferenceEvaluator::index_in_group(std::int64_t stride,
                                                std::int64_t group_size) const {
  if (!rendezvous_)
    return 0;
  return ir_.replica_grouping(stride, group_size).index_in_group(replica_);
}

std::vector<HostTensor> ReferenceEvaluator::exchange(const HostTensor& value, std::int64_t stride,
                                                     std::int64_t group_size) {
  if (!rendezvous_)
    return {value};
  const ReplicaGrouping g = ir_.replica_grouping(stride, group_size);
  return rendezvous_->exchange(replica_, g.replicas(g.group_of(replica_)), value);
}

Value ReferenceEvaluator::variable_value(std::uint32_t index) {
  auto it = variables_.find(index);
  if (it == variables_.end()) {
    const IrView view(ir_);
    const HostTensor* data = view.data(TensorId{index});
    PXL_ASSERT(data != nullptr);
    HostTensor value = *data;
    // A grouped variable starts from its group's value (this evaluator's replica), a sharded
    // one from its shard of that value.
    const ReplicaSharding* sharding = view.sharding(TensorId{index});
    if (const VariableGrouping* g = view.grouping(TensorId{index});
        g && g->grouping.num_groups() > 1) {
      value = HostTensor(sharding ? sharding->meta_shape : view.spec(TensorId{index}).shape,
                         data->dtype());
      const std::size_t bytes = value.nbytes();
      std::memcpy(value.bytes().data(),
                  data->bytes().data() +
                      static_cast<std::size_t>(g->grouping.group_of(replica_)) * bytes,
                  bytes);
    }
    if (sharding)
      value = replica_shard(value, sharding->shards(), sharding->group.index_in_group(replica_));
    it = variables_.emplace(index, std::make_shared<HostTensor>(std::move(value))).first;
  }
  return it->second;
}

HostTensor& ReferenceEvaluator::remote_entry(std::uint32_t buffer, std::int64_t entry) {
  const IrView view(ir_);
  const RemoteBufferId id{buffer};
  if (entry < 0 || entry >= view.entries(id))
    throw GraphError("reference: offset " + std::to_string(entry) + " is out of range for " +
                     "remote buffer '" + view.name(id) + "'");
  auto it = remote_.find({buffer, entry});
  if (it == remote_.end()) {
    Value v = std::make_shared<HostTensor>(view.spec(id));
    for (std::uint32_t t = 0; t < view.num_tensors(); ++t)
      if (const RemoteLocation* r = view.remote_location(TensorId{t});
          r && r->buffer == id && r->entry == entry)
        v = variable_value(t); // the variable's storage is the entry
    it = remote_.emplace(std::pair{buffer, entry}, std::move(v)).first;
  }
  return *it->second;
}

const HostTensor& ReferenceEvaluator::variable(const Tensor& v) const {
  if (!v.valid() || !IrView(ir_).owns(v) || !v.is_variable())
    throw GraphError("ReferenceEvaluator::variable: " +
                     (v.valid() ? "'" + v.id() + "'" : std::string("an empty tensor")) +
                     " is not a variable of this Ir");
  if (auto it = variables_.find(v.index()); it != variables_.end())
    return *it->second;
  return *IrView(ir_).data(IrView::id(v));
}

Value ReferenceEvaluator::value(const Tensor& t) const {
  PXL_ASSERT(!frames_.empty());
  const auto it = frames_.back()->find(t.index());
  PXL_ASSERT(it != frames_.back()->end());
  return it->second;
}

std::vector<Value> ReferenceEvaluator::evaluate_values(const Graph& graph,
                                                       std::vector<Value> inputs) {
  const IrView ir(ir_);
  if (!ir.owns(graph))
    throw GraphError("ReferenceEvaluator: graph '" + graph.name() + "' belongs to another Ir");
  const GraphId g = IrView::id(graph);
  const auto g_inputs = ir.inputs(g);
  if (inputs.size() != g_inputs.size())
    throw GraphError("ReferenceEvaluator: graph '" + ir.name(g) + "' takes " +
                     std::to_string(g_inputs.size()) + " inputs, got " +
                     std::to_string(inputs.size()));

  Env env;
  env.reserve(ir.tensors(g).size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto& spec = ir.spec(g_inputs[i]);
    if (inputs[i]->spec() != spec)
      throw ShapeError("ReferenceEvaluator: input " + std::to_string(i) + " of graph '" +
                       ir.name(g) + "' is " + to_string(spec) + ", got a host tensor " +
                       to_string(inputs[i]->spec()));
    // By-ref inputs alias the caller's storage; the others are the callee's own copies.
    env[g_inputs[i].value] =
        ir.input_is_by_ref(g, i) ? inputs[i] : std::make_shared<HostTensor>(*inputs[i]);
  }
  for (const TensorId t : ir.tensors(g)) {
    if (ir.kind(t) == TensorKind::variable)
      env[t.value] = variable_value(t.value);
    else if (ir.kind(t) == TensorKind::constant)
      env[t.value] = std::make_shared<HostTensor>(*ir.data(t));
  }

  frames_.push_back(&env);
  FrameGuard guard{frames_};
  std::vector<const HostTensor*> in;
  std::vector<HostTensor*> out;
  std::vector<Value> out_values;
  for (const OpId op : ir.ops(g)) {
    const OpKind kind = ir.kind(op);
    const auto op_inputs = ir.inputs(op);
    const auto op_outputs = ir.outputs(op);
    in.clear();
    out.clear();
    out_values.clear();
    for (const TensorId t : op_inputs) {
      PXL_ASSERT(env.count(t.value) == 1);
      in.push_back(env[t.value].get());
    }
    for (std::size_t k = 0; k < op_outputs.size(); ++k) {
      // An in-place op writes into its first input, so later readers see the update.
      out_values.push_back(k == 0 && is_inplace(kind)
                               ? env[op_inputs[0].value]
                               : std::make_shared<HostTensor>(ir.spec(op_outputs[k])));
      out.push_back(out_values.back().get());
    }
    ref_kernels[static_cast<std::size_t>(kind)](*this, ir.op(op), in, out);
    for (std::size_t k = 0; k < op_outputs.size(); ++k)
      env[op_outputs[k].value] = out_values[k];
  }

  std::vector<Value> results;
  for (const TensorId t : ir.outputs(g))
    results.push_back(env.at(t.value));
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
  const IrView ir(ir_);
  const StreamId s{stream};
  const auto it = h2d_feed_.find(stream);
  if (it == h2d_feed_.end())
    throw StreamError("HostLoad: stream '" + ir.name(s) +
                      "' has no data; feed it through ReferenceEvaluator::run");
  const HostTensor& feed = it->second;
  const auto n = feed.shape()[0];
  auto& position = h2d_position_[stream];
  HostTensor element(ir.spec(s));
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
  const IrView ir(ir_);
  const std::int64_t nht = ir.num_host_transfers();

  const auto loaded = streams_used_by(ir, OpKind::HostLoad);
  std::set<std::string> missing, unexpected;
  for (auto s : loaded)
    if (!h2d.contains(ir.name(StreamId{s})))
      missing.insert(ir.name(StreamId{s}));
  for (const auto& entry : h2d) {
    const auto& name = entry.first;
    if (std::none_of(loaded.begin(), loaded.end(),
                     [&](std::uint32_t s) { return ir.name(StreamId{s}) == name; }))
      unexpected.insert(name);
  }
  if (!missing.empty() || !unexpected.empty())
    throw StreamError("ReferenceEvaluator::run: the arrays given do not match the h2d streams "
                      "the Ir loads; missing: " +
                      quoted_list(missing) + "; unexpected: " + quoted_list(unexpected));

  h2d_feed_.clear();
  h2d_position_.clear();
  d2h_out_.clear();
  for (auto s : loaded) {
    const std::string& name = ir.name(StreamId{s});
    const TensorSpec& spec = ir.spec(StreamId{s});
    const HostTensor& array = h2d.at(name);
    const TensorSpec expected{host_array_shape(spec, nht), spec.dtype};
    if (array.spec() != expected)
      throw StreamError("ReferenceEvaluator::run: stream '" + name + "' of " + to_string(spec) +
                        " with num_host_transfers " + std::to_string(nht) + " needs an array " +
                        to_string(expected) + ", got " + to_string(array.spec()));
    Shape with_leading = spec.shape;
    with_leading.insert(with_leading.begin(), nht);
    h2d_feed_.emplace(s, array.reshaped(std::move(with_leading)));
  }

  evaluate_values(ir_.main_graph(), {});

  std::map<std::string, HostTensor> results;
  for (auto s : streams_used_by(ir, OpKind::HostStore)) {
    const TensorSpec& spec = ir.spec(StreamId{s});
    HostTensor array(host_array_shape(spec, nht), spec.dtype);
    const auto& stored = d2h_out_[s];
    for (std::size_t j = 0; j < stored.size(); ++j) {
      const auto slot = static_cast<std::size_t>(static_cast<std::int64_t>(j) % nht);
      std::memcpy(array.bytes().data() + slot * stored[j].nbytes(), stored[j].bytes().data(),
                  stored[j].nbytes());
    }
    results.emplace(ir.name(StreamId{s}), std::move(array));
  }
  return results;
}

} // namespace pxl::testing
