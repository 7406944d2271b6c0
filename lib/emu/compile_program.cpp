// compile_program: every reachable graph to a GraphProgram, once per Session.
#include "first_fit.hpp"
#include "flatten.hpp"
#include "fusion.hpp"
#include "program.hpp"

#include "aligned_bytes.hpp"

#include "pxl/core/error.hpp"
#include "pxl/emu/cost_model.hpp"

#include <algorithm>
#include <limits>
#include <string>

namespace pxl::emu::detail {

namespace {

/// The bytes of a `bytes` buffer on tile 0 under the linear mapping: an even share of the
/// tiles it spans.
std::int64_t tile_share(std::int64_t bytes, const Target& target) {
  const auto aligned = static_cast<std::int64_t>(align_up(static_cast<std::size_t>(bytes)));
  const std::int64_t tiles = tiles_spanned(aligned, target);
  return (aligned + tiles - 1) / tiles;
}

bool is_static(const IrView& ir, TensorId t) {
  const auto k = ir.kind(t);
  return k == TensorKind::variable || k == TensorKind::constant;
}

/// Floating-point operations of one execution of `op` (a multiply-add counts two), or its
/// element operations for kernels that do no arithmetic worth counting apart.
std::int64_t flops_of(const IrView& ir, OpId op) {
  const auto inputs = ir.inputs(op), outputs = ir.outputs(op);
  std::int64_t out = 0, in = 0;
  for (TensorId t : outputs)
    out += ir.spec(t).nelms();
  for (TensorId t : inputs)
    in = std::max(in, ir.spec(t).nelms());
  if (ir.kind(op) == OpKind::MatMul) {
    const Shape& a = ir.spec(inputs[0]).shape;
    const std::int64_t k = a.empty() ? 1 : a.back();
    return 2 * out * k;
  }
  return std::max(out, in);
}

class Compiler {
public:
  Compiler(const IrView& ir, const Target& target) : ir_(ir), target_(target) {}

  Program run() {
    p_.graphs.resize(ir_.num_graphs());
    p_.stream_used.assign(ir_.num_streams(), false);
    find_reachable();
    check_total_bytes();
    layout_statics();
    bind_static_inputs();
    program_of(IrView::main_graph());
    report_memory();
    return std::move(p_);
  }

private:
  void find_reachable() {
    p_.reachable.assign(ir_.num_graphs(), false);
    std::vector<GraphId> todo{IrView::main_graph()};
    p_.reachable[0] = true;
    while (!todo.empty()) {
      const GraphId g = todo.back();
      todo.pop_back();
      for (OpId o : ir_.ops(g)) {
        if (const auto* s = std::get_if<StreamAttrs>(&ir_.attrs(o)))
          p_.stream_used[s->stream] = true;
        for (const Callee& c : ir_.callees(o))
          if (!p_.reachable[c.graph.value]) {
            p_.reachable[c.graph.value] = true;
            todo.push_back(c.graph);
          }
      }
    }
  }

  /// Every sum of buffer sizes below (statics, arenas, liveness peaks, the report) is at most
  /// the sum over the reachable tensors, so bounding that keeps them all from overflowing:
  /// beyond 2^62 bytes no target, and no host running the plan, has the memory anyway.
  void check_total_bytes() const {
    constexpr std::int64_t limit = std::int64_t{1} << 62;
    std::int64_t total = 0;
    TensorId largest{0};
    std::int64_t largest_bytes = -1;
    for (std::uint32_t i = 0; i < ir_.num_tensors(); ++i) {
      const TensorId t{i};
      if (!p_.reachable[ir_.graph(t).value])
        continue;
      const auto bytes = static_cast<std::int64_t>(align_up(ir_.spec(t).nbytes()));
      if (bytes > largest_bytes) {
        largest = t;
        largest_bytes = bytes;
      }
      if (__builtin_add_overflow(total, bytes, &total) || total > limit)
        throw OutOfMemoryError(
            "Session: the plan's tensors need more than 2^62 bytes, more than any target (or "
            "the host emulating it) holds; the largest is '" +
            ir_.id(largest) + "' " + to_string(ir_.spec(largest)) + " on IPU " +
            std::to_string(ir_.ipu(largest)) + " with " + std::to_string(largest_bytes) + " bytes");
    }
  }

  void layout_statics() {
    for (std::uint32_t i = 0; i < ir_.num_tensors(); ++i) {
      const TensorId t{i};
      if (!is_static(ir_, t) || !p_.reachable[ir_.graph(t).value])
        continue;
      const std::size_t bytes = ir_.spec(t).nbytes();
      p_.statics.push_back({t, p_.static_bytes, bytes});
      p_.static_bytes += align_up(bytes);
      tensors_.push_back(
          {ir_.id(t), ir_.name(ir_.graph(t)), ir_.ipu(t), static_cast<std::int64_t>(bytes), true});
    }
  }

  static constexpr std::uint32_t no_binding = std::numeric_limits<std::uint32_t>::max();
  static constexpr std::uint32_t unseen = no_binding - 1; ///< no outlined call site seen yet

  /// By graph and input: the variable or constant that every outlined call site passes by
  /// reference there (the graph then works on it directly, with no copies in or back).
  void bind_static_inputs() {
    binding_.resize(ir_.num_graphs());
    for (std::uint32_t g = 0; g < ir_.num_graphs(); ++g)
      binding_[g].assign(ir_.inputs(GraphId{g}).size(), unseen);
    for (std::uint32_t g = 0; g < ir_.num_graphs(); ++g) {
      if (!p_.reachable[g])
        continue;
      for (OpId o : ir_.ops(GraphId{g})) {
        if (ir_.kind(o) == OpKind::Call && ir_.attrs_as<CallAttrs>(o).inline_graph)
          continue;
        const auto inputs = ir_.inputs(o);
        for (const Callee& callee : ir_.callees(o)) {
          auto& binding = binding_[callee.graph.value];
          for (std::size_t i = 0; i < binding.size() && callee.first_input + i < inputs.size();
               ++i) {
            const TensorId t = inputs[callee.first_input + i];
            // A by-ref input bound to a variable or constant, and to nothing else at this site
            // (another input bound to it would see the callee's writes).
            const bool aliasable = ir_.input_is_by_ref(callee.graph, i) && is_static(ir_, t) &&
                                   std::count(inputs.begin(), inputs.end(), t) == 1;
            const std::uint32_t here = aliasable ? t.value : no_binding;
            binding[i] = binding[i] == unseen || binding[i] == here ? here : no_binding;
          }
        }
      }
    }
    for (auto& binding : binding_)
      std::ranges::replace(binding, unseen, no_binding);
  }

  const GraphProgram& program_of(GraphId g) {
    auto& slot = p_.graphs[g.value];
    if (!slot) {
      slot = std::make_unique<GraphProgram>();
      compile(g, *slot);
    }
    return *slot;
  }

  Slot static_slot(TensorId t) const {
    const StaticTensor* s = p_.find_static(t);
    PXL_ASSERT(s != nullptr);
    return Slot{true, ir_.ipu(t), s->offset, s->bytes};
  }

  void compile(GraphId g, GraphProgram& plan) {
    FlatSchedule flat = flatten(ir_, g);
    fuse_transposes(ir_, flat);
    fuse_matmul_updates(ir_, flat);
    fuse_all_reduce_updates(ir_, flat);
    // Inputs every call site binds to the same variable by reference live in its buffer.
    for (std::size_t i = 0; i < flat.inputs.size(); ++i)
      if (const std::uint32_t t = binding_[g.value][i]; t != no_binding) {
        flat.values[flat.inputs[i]].is_static = true;
        flat.values[flat.inputs[i]].tensor = TensorId{t};
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

    // Place each IPU's values in that IPU's arena; static values are in the static block.
    std::vector<Slot> slots(values.size());
    plan.arena_bytes.assign(num_ipus, 0);
    plan.peak.assign(num_ipus, 0);
    plan.tile_peak.assign(num_ipus, 0);
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
      plan.arena_bytes[ipu] = static_cast<std::size_t>(place_first_fit(ipu_lives, offsets));
      for (std::size_t k = 0; k < ids.size(); ++k)
        slots[ids[k]] =
            Slot{false, static_cast<std::int64_t>(ipu), static_cast<std::size_t>(offsets[k]),
                 static_cast<std::size_t>(values[ids[k]].bytes)};
    }
    for (std::size_t v = 0; v < values.size(); ++v) {
      if (values[v].is_static) {
        slots[v] = static_slot(values[v].tensor);
        continue;
      }
      tensors_.push_back({ir_.id(values[v].tensor), ir_.name(g), values[v].ipu, values[v].bytes,
                          false, lives[v].first, lives[v].last});
    }
    for (auto v : flat.inputs)
      plan.inputs.push_back(slots[v]);
    for (auto v : flat.outputs)
      plan.outputs.push_back(slots[v]);

    // The liveness peak per IPU, from the changes in live bytes at each step (an outlined
    // graph's peak counts at its call step); the same for tile 0's share of them.
    std::vector<std::vector<std::int64_t>> live(
        num_ipus, std::vector<std::int64_t>(static_cast<std::size_t>(num_steps) + 2, 0));
    std::vector<std::vector<std::int64_t>> tile_live = live;
    for (std::size_t v = 0; v < values.size(); ++v)
      if (!values[v].is_static) {
        const auto bytes =
            static_cast<std::int64_t>(align_up(static_cast<std::size_t>(values[v].bytes)));
        const auto ipu = static_cast<std::size_t>(values[v].ipu);
        const auto first = static_cast<std::size_t>(lives[v].first);
        const auto after = static_cast<std::size_t>(lives[v].last) + 1;
        live[ipu][first] += bytes;
        live[ipu][after] -= bytes;
        const std::int64_t share = tile_share(values[v].bytes, target_);
        tile_live[ipu][first] += share;
        tile_live[ipu][after] -= share;
      }
    for (auto* deltas : {&live, &tile_live})
      for (auto& delta : *deltas)
        for (std::size_t s = 1; s < delta.size(); ++s)
          delta[s] += delta[s - 1];

    // Steps. Every step is code: an inlined graph's ops are counted once per inlined site.
    plan.steps.reserve(flat.steps.size());
    for (std::int64_t s = 0; s < num_steps; ++s) {
      const auto& step = flat.steps[static_cast<std::size_t>(s)];
      plan.ops[static_cast<std::size_t>(step.ipu)] += 1;
      ProgramStep out;
      for (auto v : step.inputs) {
        out.inputs.push_back(slots[v]);
        out.info.bytes_read += values[v].bytes;
      }
      for (auto v : step.outputs) {
        out.outputs.push_back(slots[v]);
        out.info.bytes_written += values[v].bytes;
      }
      out.info.graph = g;
      out.info.ipu = step.ipu;
      if (!step.outputs.empty())
        out.info.dtype = ir_.spec(values[step.outputs[0]].tensor).dtype;
      if (step.is_copy()) {
        out.info.kind = StepKind::copy;
        plan.steps.push_back(std::move(out));
        continue;
      }
      const OpId op = *step.op;
      out.info.op = op;
      out.info.op_kind = ir_.kind(op);
      if (const Callees callees = ir_.callees(op); !callees.empty()) {
        const GraphProgram& callee_plan = program_of(callees[0].graph);
        out.info.kind = out.info.op_kind == OpKind::Repeat        ? StepKind::repeat
                        : out.info.op_kind == OpKind::Conditional ? StepKind::conditional
                                                                  : StepKind::call;
        out.info.callee = callees[0].graph;
        out.callee = &callee_plan;
        if (const auto* c = std::get_if<CallAttrs>(&ir_.attrs(op)))
          out.info.trips = c->repeat_count;
        // A conditional's branches never run together: the larger peak counts.
        std::vector<std::int64_t> peak = callee_plan.peak, tile_peak = callee_plan.tile_peak;
        if (out.info.kind == StepKind::conditional) {
          std::vector<bool> seen(ir_.num_graphs(), false);
          check_branch(op, callees[0].graph, seen);
          check_branch(op, callees[1].graph, seen);
          out.info.else_callee = callees[1].graph;
          out.else_callee = &program_of(callees[1].graph);
          for (std::size_t ipu = 0; ipu < num_ipus; ++ipu) {
            peak[ipu] = std::max(peak[ipu], out.else_callee->peak[ipu]);
            tile_peak[ipu] = std::max(tile_peak[ipu], out.else_callee->tile_peak[ipu]);
          }
        }
        for (std::size_t ipu = 0; ipu < num_ipus; ++ipu) {
          live[ipu][static_cast<std::size_t>(s)] += peak[ipu];
          tile_live[ipu][static_cast<std::size_t>(s)] += tile_peak[ipu];
        }
      } else {
        out.info.kind = !step.is_fused()                     ? StepKind::kernel
                        : out.info.op_kind == OpKind::MatMul ? StepKind::fused_matmul
                                                             : StepKind::fused_all_reduce;
        out.info.flops = flops_of(ir_, op);
        out.fusion = step.fusion;
      }
      plan.steps.push_back(std::move(out));
    }
    for (std::size_t ipu = 0; ipu < num_ipus; ++ipu) {
      plan.peak[ipu] = *std::max_element(live[ipu].begin(), live[ipu].end());
      plan.liveness.push_back(std::vector<std::int64_t>(
          live[ipu].begin(), live[ipu].begin() + static_cast<std::ptrdiff_t>(num_steps) + 1));
      plan.tile_peak[ipu] = *std::max_element(tile_live[ipu].begin(), tile_live[ipu].end());
    }
  }

  /// GraphError unless `branch` (and every graph it runs) can run on some replicas only: a
  /// replica skipping a host load or store would leave the stream's elements unaligned with
  /// the replicas, and a collective needs every replica of its group.
  void check_branch(OpId conditional, GraphId branch, std::vector<bool>& seen) const {
    if (seen[branch.value])
      return;
    seen[branch.value] = true;
    for (OpId o : ir_.ops(branch)) {
      const OpKind k = ir_.kind(o);
      if (k == OpKind::HostLoad || k == OpKind::HostStore || family_of(k) == OpFamily::collectives)
        throw GraphError("Session: " + ir_.op(conditional).debug_name() + " ('" +
                         ir_.name(conditional) + "') runs graph '" + ir_.name(branch) +
                         "' in a branch, and it contains " + ir_.op(o).debug_name() + " ('" +
                         ir_.name(o) +
                         "'); a branch runs only on the replicas whose condition chose it, so "
                         "it cannot use host streams or collectives: move " +
                         std::string(op_type_name(k)) + " out of the conditional");
      for (const Callee& c : ir_.callees(o))
        check_branch(conditional, c.graph, seen);
    }
  }

  void report_memory() {
    MemoryReport& r = p_.memory;
    const auto num_ipus = static_cast<std::size_t>(target_.ipus);
    for (std::size_t ipu = 0; ipu < num_ipus; ++ipu) {
      IpuMemory m;
      m.ipu = static_cast<std::int64_t>(ipu);
      m.capacity = target_.bytes_per_ipu();
      m.tile_capacity = target_.bytes_per_tile;
      for (const StaticTensor& s : p_.statics) {
        if (static_cast<std::size_t>(ir_.ipu(s.tensor)) != ipu)
          continue;
        (ir_.kind(s.tensor) == TensorKind::variable ? m.variables : m.constants) +=
            static_cast<std::int64_t>(s.bytes);
        m.max_tile += tile_share(static_cast<std::int64_t>(s.bytes), target_);
      }
      // An outlined graph's code exists once however many call sites it has.
      for (const auto& g : p_.graphs)
        if (g)
          m.code += g->ops[ipu] * target_.code_bytes_per_op;
      m.not_always_live_peak = p_.main().peak[ipu];
      const GraphProgram& main = p_.main();
      m.liveness = main.liveness[ipu];
      m.peak_step = std::max_element(m.liveness.begin(), m.liveness.end()) - m.liveness.begin();
      if (static_cast<std::size_t>(m.peak_step) < main.steps.size()) {
        const StepInfo& at = main.steps[static_cast<std::size_t>(m.peak_step)].info;
        m.peak_step_op = at.op ? ir_.op(*at.op).debug_name() + " '" + ir_.name(*at.op) + "'"
                               : std::string("copy");
      } else {
        m.peak_step_op = "end";
      }
      const std::int64_t tiles = std::max<std::int64_t>(1, target_.tiles_per_ipu);
      m.max_tile += (m.code + tiles - 1) / tiles + p_.main().tile_peak[ipu];
      r.ipus.push_back(m);
    }
    r.tensors = std::move(tensors_);
    std::stable_sort(r.tensors.begin(), r.tensors.end(),
                     [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
  }

  const IrView& ir_;
  const Target& target_;
  Program p_;
  std::vector<std::vector<std::uint32_t>> binding_;
  std::vector<TensorMemory> tensors_;
};

} // namespace

const StaticTensor* Program::find_static(TensorId t) const {
  auto it = std::ranges::lower_bound(statics, t, {}, &StaticTensor::tensor);
  return it != statics.end() && it->tensor == t ? &*it : nullptr;
}

Program compile_program(const IrView& view, const Target& target) {
  return Compiler(view, target).run();
}

} // namespace pxl::emu::detail
