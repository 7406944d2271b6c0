#include "planner.hpp"
#include "copy_list.hpp"
#include "first_fit.hpp"
#include "flatten.hpp"
#include "fusion.hpp"
#include "ir/handle_access.hpp"

#include "pxl/core/error.hpp"
#include "pxl/ir/op.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

namespace pxl::emu::detail {

using pxl::TensorKind;

namespace {
std::vector<bool> reachable_graphs(const IrStorage& ir) {
  std::vector<bool> seen(ir.graphs.size(), false);
  std::vector<std::uint32_t> todo{0};
  seen[0] = true;
  while (!todo.empty()) {
    const auto g = todo.back();
    todo.pop_back();
    for (auto o : ir.graphs[g].ops)
      if (const auto* c = std::get_if<CallAttrs>(&ir.op(o).attrs); c && !seen[c->graph]) {
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
  reachable_ = reachable_graphs(ir);
  allocate_static(reachable_);
  bind_static_inputs();
  plan_of(0);
}

namespace {
constexpr Index no_binding = std::numeric_limits<Index>::max();
constexpr Index unseen = no_binding - 1; ///< no outlined call site seen yet
} // namespace

void Planner::bind_static_inputs() {
  static_binding_.resize(ir_.graphs.size());
  for (std::uint32_t g = 0; g < ir_.graphs.size(); ++g)
    static_binding_[g].assign(ir_.graphs[g].inputs.size(), unseen);
  for (std::uint32_t g = 0; g < ir_.graphs.size(); ++g) {
    if (!reachable_[g])
      continue;
    for (const auto o : ir_.graphs[g].ops) {
      const auto& op = ir_.op(o);
      const auto* c = std::get_if<CallAttrs>(&op.attrs);
      if (c == nullptr || (op.kind == OpKind::Call && c->inline_graph))
        continue;
      const auto& by_ref = ir_.graphs[c->graph].input_by_ref;
      auto& binding = static_binding_[c->graph];
      for (std::size_t i = 0; i < op.inputs.size() && i < binding.size(); ++i) {
        const Index t = op.inputs[i].value;
        // A by-ref input bound to a variable or constant, and to nothing else at this site
        // (another input bound to it would see the callee's writes).
        const bool aliasable =
            i < by_ref.size() && by_ref[i] && is_static(ir_, t) &&
            std::count(op.inputs.begin(), op.inputs.end(), pxl::TensorId{t}) == 1;
        const Index here = aliasable ? t : no_binding;
        binding[i] = binding[i] == unseen || binding[i] == here ? here : no_binding;
      }
    }
  }
  for (auto& binding : static_binding_)
    std::ranges::replace(binding, unseen, no_binding);
}

void Planner::allocate_static(const std::vector<bool>& reachable) {
  std::vector<std::size_t> offsets;
  std::size_t total = 0;
  for (Index t = 0; t < ir_.tensors.size(); ++t)
    if (is_static(ir_, t) && reachable[ir_.tensors[t].graph.value]) {
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
    tensors_.push_back({node.id, ir_.graph(node.graph).name, node.ipu,
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
  FlatSchedule flat = flatten(ir_, g);
  fuse_transposes(ir_, flat);
  fuse_matmul_updates(ir_, flat);
  // Inputs every call site binds to the same variable by reference live in its buffer.
  for (std::size_t i = 0; i < flat.inputs.size(); ++i)
    if (const Index t = static_binding_[g][i]; t != no_binding) {
      flat.values[flat.inputs[i]].is_static = true;
      flat.values[flat.inputs[i]].tensor = t;
    }
  const auto num_steps = static_cast<std::int64_t>(flat.steps.size());
  const auto num_ipus = static_cast<std::size_t>(target_.ipus);
  const auto& values = flat.values;
  plan.graph = g;

  // Lifetimes over the flattened steps; the graph's inputs are live throughout (the caller
  // copies them in before the first step) and its outputs until the end.
  std::vector<Lifetime> lives(values.size(), Lifetime{num_steps, -1, 0});
  auto touch = [&](std::size_t v, std::int64_t step) {
    lives[v].first = std::min(lives[v].first, step);
    lives[v].last = std::max(lives[v].last, step);
  };
  for (std::int64_t s = 0; s < num_steps; ++s) {
    const auto& step = flat.steps[static_cast<std::size_t>(s)];
    for (auto v : step.outputs)
      touch(v, s);
    for (auto v : step.inputs)
      touch(v, s);
  }
  for (auto v : flat.inputs) {
    touch(v, 0);
    touch(v, num_steps);
  }
  for (auto v : flat.outputs)
    touch(v, num_steps);
  for (std::size_t v = 0; v < values.size(); ++v) {
    lives[v].first = std::min(lives[v].first, lives[v].last);
    lives[v].bytes = values[v].bytes;
  }

  // Place each IPU's values in that IPU's arena; static values have their own buffers.
  std::vector<std::byte*> address(values.size(), nullptr);
  plan.arenas.resize(num_ipus);
  plan.arena_bytes.assign(num_ipus, 0);
  plan.peak.assign(num_ipus, 0);
  plan.ops.assign(num_ipus, 0);
  for (std::size_t ipu = 0; ipu < num_ipus; ++ipu) {
    std::vector<Lifetime> ipu_lives;
    std::vector<std::size_t> ids;
    for (std::size_t v = 0; v < values.size(); ++v)
      if (!values[v].is_static && static_cast<std::size_t>(values[v].ipu) == ipu) {
        ipu_lives.push_back(lives[v]);
        ids.push_back(v);
      }
    std::vector<std::int64_t> offsets;
    plan.arena_bytes[ipu] = place_first_fit(ipu_lives, offsets);
    plan.arenas[ipu] = allocate_aligned(static_cast<std::size_t>(plan.arena_bytes[ipu]));
    for (std::size_t k = 0; k < ids.size(); ++k)
      address[ids[k]] = plan.arenas[ipu].get() + offsets[k];
  }
  for (std::size_t v = 0; v < values.size(); ++v) {
    if (values[v].is_static) {
      address[v] = address_[values[v].tensor];
      continue;
    }
    tensors_.push_back({ir_.tensors[values[v].tensor].id, ir_.graphs[g].name, values[v].ipu,
                        values[v].bytes, false});
  }

  for (auto v : flat.inputs) {
    plan.inputs.push_back(address[v]);
    plan.input_bytes.push_back(static_cast<std::size_t>(values[v].bytes));
  }
  for (auto v : flat.outputs) {
    plan.outputs.push_back(address[v]);
    plan.output_bytes.push_back(static_cast<std::size_t>(values[v].bytes));
  }

  // Steps, and the liveness peak (an outlined graph's peak counts at its call step). Every
  // step is code: an inlined graph's ops are counted once per inlined call site.
  std::vector<std::vector<std::int64_t>> live(
      num_ipus, std::vector<std::int64_t>(static_cast<std::size_t>(num_steps) + 1, 0));
  for (std::size_t v = 0; v < values.size(); ++v)
    if (!values[v].is_static)
      for (auto k = lives[v].first; k <= lives[v].last; ++k)
        live[static_cast<std::size_t>(values[v].ipu)][static_cast<std::size_t>(k)] +=
            static_cast<std::int64_t>(align_up(static_cast<std::size_t>(values[v].bytes)));
  for (std::int64_t s = 0; s < num_steps; ++s) {
    const auto& step = flat.steps[static_cast<std::size_t>(s)];
    plan.ops[static_cast<std::size_t>(step.ipu)] += 1;
    if (step.op == flat_copy) {
      auto copy = std::make_shared<CopyList>();
      copy->add(address[step.outputs[0]], address[step.inputs[0]],
                static_cast<std::size_t>(values[step.inputs[0]].bytes));
      plan.steps.push_back([copy](unsigned w, unsigned n) { copy->run(w, n); });
      continue;
    }
    const auto& op_node = ir_.ops[step.op];
    OpBuffers buffers;
    for (auto v : step.inputs)
      buffers.inputs.push_back(address[v]);
    for (auto v : step.outputs)
      buffers.outputs.push_back(address[v]);
    buffers.transposed_inputs = step.transposed_inputs;
    buffers.update = step.update;
    PXL_ASSERT((step.transposed_inputs == 0 && !step.update) || op_node.kind == OpKind::MatMul);
    const CompileFn compile_fn = kernel_table[static_cast<std::size_t>(op_node.kind)];
    if (compile_fn == nullptr)
      throw SessionError("Session: the emulator has no kernel for " +
                         std::string(op_type_name(op_node.kind)) + " yet");
    plan.steps.push_back(
        compile_fn(ctx_, pxl::detail::HandleAccess::op(&ir_, pxl::OpId{step.op}), buffers));
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
