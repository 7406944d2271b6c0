#include "planner.hpp"
#include "first_fit.hpp"

#include "pxl/core/error.hpp"
#include "pxl/ir/op.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>

namespace pxl::emu::detail {

using pxl::detail::TensorKind;

namespace {
std::vector<bool> reachable_graphs(const IrStorage& ir) {
  std::vector<bool> seen(ir.graphs.size(), false);
  std::vector<std::uint32_t> todo{0};
  seen[0] = true;
  while (!todo.empty()) {
    const auto g = todo.back();
    todo.pop_back();
    for (auto o : ir.graphs[g].ops)
      if (const auto* c = std::get_if<CallAttrs>(&ir.ops[o].attrs); c && !seen[c->graph]) {
        seen[c->graph] = true;
        todo.push_back(c->graph);
      }
  }
  return seen;
}

bool is_static(const IrStorage& ir, Index t) {
  const auto k = ir.tensors[t].kind;
  return k == TensorKind::variable || k == TensorKind::constant;
}
} // namespace

Planner::Planner(IrStorage& ir, const Target& target, WorkerPool& pool,
                 std::vector<StreamState>& streams)
    : ir_(ir),
      target_(target), ctx_{pool, streams,
                            [this](std::uint32_t g) -> const GraphPlan& { return plan_of(g); }},
      plans_(ir.graphs.size()), address_(ir.tensors.size(), nullptr) {
  allocate_static(reachable_graphs(ir));
  plan_of(0);
}

void Planner::allocate_static(const std::vector<bool>& reachable) {
  std::vector<std::size_t> offsets;
  std::size_t total = 0;
  for (Index t = 0; t < ir_.tensors.size(); ++t)
    if (is_static(ir_, t) && reachable[ir_.tensors[t].graph]) {
      static_tensors_.push_back(t);
      offsets.push_back(total);
      total += align_up(ir_.tensors[t].spec.nbytes());
    }
  static_ = allocate_aligned(total);
  for (std::size_t i = 0; i < static_tensors_.size(); ++i) {
    const auto& node = ir_.tensors[static_tensors_[i]];
    std::byte* p = static_.get() + offsets[i];
    address_[static_tensors_[i]] = p;
    // Constants are set at compile time, as Poplar does; variables arrive with weights_from_host.
    if (node.kind == TensorKind::constant && node.data)
      std::memcpy(p, node.data->bytes().data(), node.data->nbytes());
    tensors_.push_back({node.id, ir_.graphs[node.graph].name, node.ipu,
                        static_cast<std::int64_t>(node.spec.nbytes()), true});
  }
}

const GraphPlan& Planner::plan_of(std::uint32_t graph) {
  if (!plans_[graph]) {
    plans_[graph] = std::make_unique<GraphPlan>();
    compile(graph, *plans_[graph]);
  }
  return *plans_[graph];
}

void Planner::compile(std::uint32_t g, GraphPlan& plan) {
  const auto& node = ir_.graphs[g];
  const auto num_steps = static_cast<std::int64_t>(node.ops.size());
  const auto num_ipus = static_cast<std::size_t>(target_.ipus);
  plan.graph = g;

  std::unordered_map<Index, std::int64_t> step_of;
  for (std::int64_t s = 0; s < num_steps; ++s)
    step_of[node.ops[static_cast<std::size_t>(s)]] = s;

  // One slot per buffer; an in-place op's output 0 shares its input 0's slot (or, for a
  // variable, its static buffer).
  struct Slot {
    Lifetime life;
    std::int64_t ipu;
    Index tensor;
  };
  std::vector<Slot> slots;
  std::unordered_map<Index, std::size_t> slot_of;
  for (Index t : node.tensors) {
    const auto& tn = ir_.tensors[t];
    if (is_static(ir_, t))
      continue;
    if (tn.kind == TensorKind::graph_input) {
      slot_of[t] = slots.size();
      slots.push_back({{0, num_steps, static_cast<std::int64_t>(tn.spec.nbytes())}, tn.ipu, t});
      continue;
    }
    const auto& producer = ir_.ops[tn.producer];
    if (is_inplace(producer.kind) && producer.outputs[0] == t) {
      const Index in0 = producer.inputs[0];
      if (auto it = slot_of.find(in0); it != slot_of.end())
        slot_of[t] = it->second;
      else
        address_[t] = address_[in0];
      continue;
    }
    const auto s = step_of.at(tn.producer);
    slot_of[t] = slots.size();
    slots.push_back({{s, s, static_cast<std::int64_t>(tn.spec.nbytes())}, tn.ipu, t});
  }
  auto use = [&](Index t, std::int64_t step) {
    if (auto it = slot_of.find(t); it != slot_of.end()) {
      auto& life = slots[it->second].life;
      life.last = std::max(life.last, step);
    }
  };
  for (std::int64_t s = 0; s < num_steps; ++s) {
    const auto& op = ir_.ops[node.ops[static_cast<std::size_t>(s)]];
    for (Index t : op.inputs)
      use(t, s);
    for (Index t : op.outputs)
      use(t, s);
  }
  for (Index t : node.outputs)
    use(t, num_steps);

  // Place each IPU's slots in that IPU's arena.
  plan.arenas.resize(num_ipus);
  plan.arena_bytes.assign(num_ipus, 0);
  plan.peak.assign(num_ipus, 0);
  plan.ops.assign(num_ipus, 0);
  std::vector<std::int64_t> slot_offset(slots.size(), 0);
  for (std::size_t ipu = 0; ipu < num_ipus; ++ipu) {
    std::vector<Lifetime> lives;
    std::vector<std::size_t> ids;
    for (std::size_t i = 0; i < slots.size(); ++i)
      if (static_cast<std::size_t>(slots[i].ipu) == ipu) {
        lives.push_back(slots[i].life);
        ids.push_back(i);
      }
    std::vector<std::int64_t> offsets;
    plan.arena_bytes[ipu] = place_first_fit(lives, offsets);
    plan.arenas[ipu] = allocate_aligned(static_cast<std::size_t>(plan.arena_bytes[ipu]));
    for (std::size_t k = 0; k < ids.size(); ++k)
      slot_offset[ids[k]] = offsets[k];
  }
  for (const auto& [t, i] : slot_of)
    address_[t] = plan.arenas[static_cast<std::size_t>(slots[i].ipu)].get() + slot_offset[i];
  for (const auto& s : slots)
    tensors_.push_back({ir_.tensors[s.tensor].id, node.name, s.ipu, s.life.bytes, false});

  for (Index t : node.inputs) {
    plan.inputs.push_back(address_[t]);
    plan.input_bytes.push_back(ir_.tensors[t].spec.nbytes());
  }
  for (Index t : node.outputs) {
    plan.outputs.push_back(address_[t]);
    plan.output_bytes.push_back(ir_.tensors[t].spec.nbytes());
  }

  // Steps, and the liveness peak (a called graph's peak counts at its call step).
  std::vector<std::vector<std::int64_t>> live(
      num_ipus, std::vector<std::int64_t>(static_cast<std::size_t>(num_steps) + 1, 0));
  for (const auto& s : slots)
    for (auto k = s.life.first; k <= s.life.last; ++k)
      live[static_cast<std::size_t>(s.ipu)][static_cast<std::size_t>(k)] +=
          static_cast<std::int64_t>(align_up(static_cast<std::size_t>(s.life.bytes)));
  for (std::int64_t s = 0; s < num_steps; ++s) {
    const Index o = node.ops[static_cast<std::size_t>(s)];
    const auto& op_node = ir_.ops[o];
    OpBuffers buffers;
    for (Index t : op_node.inputs)
      buffers.inputs.push_back(address_[t]);
    for (Index t : op_node.outputs)
      buffers.outputs.push_back(address_[t]);
    const CompileFn compile_fn = kernel_table[static_cast<std::size_t>(op_node.kind)];
    if (compile_fn == nullptr)
      throw SessionError("Session: the emulator has no kernel for " +
                         std::string(op_type_name(op_node.kind)) + " yet");
    plan.steps.push_back(compile_fn(ctx_, Op(&ir_, o), buffers));
    plan.ops[static_cast<std::size_t>(op_node.ipu)] += 1;
    if (const auto* c = std::get_if<CallAttrs>(&op_node.attrs)) {
      const GraphPlan& callee = plan_of(c->graph);
      for (std::size_t ipu = 0; ipu < num_ipus; ++ipu)
        live[ipu][static_cast<std::size_t>(s)] += callee.peak[ipu];
    }
  }
  for (std::size_t ipu = 0; ipu < num_ipus; ++ipu)
    plan.peak[ipu] = *std::max_element(live[ipu].begin(), live[ipu].end());
}

MemoryReport Planner::memory_report() const {
  MemoryReport r;
  const auto num_ipus = static_cast<std::size_t>(target_.ipus);
  for (std::size_t ipu = 0; ipu < num_ipus; ++ipu) {
    IpuMemory m;
    m.ipu = static_cast<std::int64_t>(ipu);
    m.capacity = target_.bytes_per_ipu();
    for (Index t : static_tensors_) {
      const auto& tn = ir_.tensors[t];
      if (static_cast<std::size_t>(tn.ipu) != ipu)
        continue;
      (tn.kind == TensorKind::variable ? m.variables : m.constants) +=
          static_cast<std::int64_t>(tn.spec.nbytes());
    }
    // An outlined graph's code exists once however many call sites it has.
    for (const auto& p : plans_)
      if (p)
        m.code += p->ops[ipu] * target_.code_bytes_per_op;
    m.not_always_live_peak = plans_[0]->peak[ipu];
    r.ipus.push_back(m);
  }
  r.tensors = tensors_;
  std::stable_sort(r.tensors.begin(), r.tensors.end(),
                   [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
  return r;
}

} // namespace pxl::emu::detail
