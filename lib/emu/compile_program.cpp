// compile_program: every reachable graph to a GraphProgram, once per Session.
#include "first_fit.hpp"
#include "flatten.hpp"
#include "fusion.hpp"
#include "program.hpp"
#include "step_work.hpp"
#include "tile_mapping.hpp"

#include "aligned_bytes.hpp"

#include "pxl/core/error.hpp"
#include "pxl/emu/cost_model.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <tuple>

namespace pxl::emu::detail {

namespace {

bool is_static(const IrView& ir, TensorId t) {
  const auto k = ir.kind(t);
  return k == TensorKind::variable || k == TensorKind::constant;
}

/// The step kind of a flattened step of an op of kind `k`: a kernel, or the fused kind of the op
/// the fusions folded others into.
StepKind fused_kind(const FlatStep& step, OpKind k) {
  if (!step.is_fused())
    return StepKind::kernel;
  switch (k) {
  case OpKind::MatMul:
    return StepKind::fused_matmul;
  case OpKind::Conv:
  case OpKind::ConvWeightsGrad:
    return StepKind::fused_conv;
  default:
    return StepKind::fused_all_reduce;
  }
}

/// The IPUs whose memory a step's slots are on: 2 for an IpuCopy, one per input of an
/// AllReduce, 1 for the others.
std::int64_t ipus_touched(const ProgramStep& step) {
  std::vector<std::int64_t> on;
  for (const auto* slots : {&step.inputs, &step.outputs})
    for (const Slot& slot : *slots)
      if (std::ranges::find(on, slot.ipu) == on.end())
        on.push_back(slot.ipu);
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(on.size()));
}

class Compiler {
public:
  Compiler(const IrView& ir, const Target& target, const CompileOptions& options)
      : ir_(ir), target_(target), options_(options), tiles_(target) {}

  Program run() {
    p_.graphs.resize(ir_.num_graphs());
    p_.stream_used.assign(ir_.num_streams(), false);
    code_.resize(static_cast<std::size_t>(target_.ipus));
    for (Code& c : code_)
      c.tiles.assign(static_cast<std::size_t>(std::max<std::int64_t>(1, target_.tiles_per_ipu)) + 1,
                     0);
    find_reachable();
    check_total_bytes();
    layout_statics();
    bind_static_inputs();
    program_of(IrView::main_graph());
    share_call_buffers();
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
      if (const RemoteLocation* r = ir_.remote_location(t)) { // in Streaming Memory
        p_.remote_variables.push_back({t, r->buffer, r->entry});
        continue;
      }
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

  /// GraphProgram::caller and ::shared for each graph called from one call step: its inputs
  /// that may share their argument's buffer (ProgramStep::shared_inputs) and its outputs,
  /// each distinct and none an input, live in the caller's buffers.
  void share_call_buffers() {
    std::vector<std::size_t> sites(p_.graphs.size(), 0);
    for (const auto& g : p_.graphs)
      if (g)
        for (const ProgramStep& step : g->steps)
          for (const GraphProgram* callee : {step.callee, step.else_callee})
            if (callee)
              ++sites[callee->graph.value];
    for (const auto& g : p_.graphs) {
      if (!g)
        continue;
      for (const ProgramStep& step : g->steps) {
        if (step.info.kind != StepKind::call || sites[step.callee->graph.value] != 1)
          continue;
        GraphProgram& callee = *p_.graphs[step.callee->graph.value];
        callee.caller = g.get();
        for (std::size_t k = 0; k < callee.inputs.size() && k < step.inputs.size(); ++k) {
          const Slot& param = callee.inputs[k];
          if (step.shared_inputs[k] && !param.is_static && !step.inputs[k].is_static &&
              param.ipu == step.inputs[k].ipu)
            callee.shared.push_back({param, step.inputs[k]});
        }
        for (std::size_t k = 0; k < step.outputs.size(); ++k) {
          const Slot& result = callee.outputs[k];
          auto is_result = [&](const Slot& s) { return s == result; };
          if (!result.is_static && result.ipu == step.outputs[k].ipu &&
              std::ranges::count_if(callee.outputs, is_result) == 1 &&
              std::ranges::none_of(callee.inputs, is_result))
            callee.shared.push_back({result, step.outputs[k]});
        }
      }
    }
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
    fuse_reshapes(ir_, flat);
    fuse_transposes(ir_, flat);
    fuse_epilogues(ir_, flat);
    fuse_product_updates(ir_, flat, !options_.stochastic_rounding);
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
    // graph's peak counts at its call step); the same for the values' per-tile shares (with
    // start tiles rotated, no tile holds more of them at once).
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
        const std::int64_t share =
            tile_share(values[v].bytes, tiles_.on(ir_.tile_set(values[v].tensor)));
        tile_live[ipu][first] += share;
        tile_live[ipu][after] -= share;
      }
    for (auto* deltas : {&live, &tile_live})
      for (auto& delta : *deltas)
        for (std::size_t s = 1; s < delta.size(); ++s)
          delta[s] += delta[s - 1];

    // Steps. Every step is code: an inlined graph's ops are counted once per inlined site.
    plan.steps.reserve(flat.steps.size());
    // Per IPU and step: the bytes a called graph adds while it runs there.
    std::vector<std::vector<std::int64_t>> call_peak(
        num_ipus, std::vector<std::int64_t>(static_cast<std::size_t>(num_steps), 0));
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
      out.info.ipus = ipus_touched(out);
      // Whether the step reads or writes a value of the other tile set than its own: through
      // a copy between the sets, which waits for both.
      const auto spans = [&](TileSet own) {
        for (const auto* list : {&step.inputs, &step.outputs})
          for (const std::size_t v : *list)
            if (ir_.tile_set(values[v].tensor) != own)
              return true;
        return false;
      };
      out.info.spans_tile_sets = spans(TileSet::compute);
      if (!step.outputs.empty())
        out.info.dtype = ir_.spec(values[step.outputs[0]].tensor).dtype;
      if (step.is_copy()) {
        out.info.kind = StepKind::copy;
        add_code(out.info);
        plan.steps.push_back(std::move(out));
        continue;
      }
      const OpId op = *step.op;
      out.info.op = op;
      out.info.op_kind = ir_.kind(op);
      out.info.tile_set = ir_.tile_set(op);
      out.info.spans_tile_sets = spans(out.info.tile_set);
      if (const auto group = ir_.exchange_group(op); group && !plan.steps.empty()) {
        const StepInfo& before = plan.steps.back().info;
        out.info.merged_exchange = before.op && ir_.exchange_group(*before.op) == group;
      }
      if (const Callees callees = ir_.callees(op); !callees.empty()) {
        const GraphProgram& callee_plan = program_of(callees[0].graph);
        out.info.kind = out.info.op_kind == OpKind::Repeat        ? StepKind::repeat
                        : out.info.op_kind == OpKind::Conditional ? StepKind::conditional
                                                                  : StepKind::call;
        out.info.callee = callees[0].graph;
        out.callee = &callee_plan;
        if (const auto* c = std::get_if<CallAttrs>(&ir_.attrs(op)))
          out.info.trips = c->repeat_count;
        // What the callee adds while it runs, its inputs that alias arguments taken out.
        std::vector<std::int64_t> peak = callee_plan.peak, tile_peak = callee_plan.tile_peak;
        alias_arguments(callees[0], callee_plan, step, s, lives, values, out.info, peak, tile_peak,
                        out.info.kind == StepKind::call ? &out.shared_inputs : nullptr);
        if (out.info.kind == StepKind::conditional) {
          // A conditional's branches never run together: the larger peak counts.
          std::vector<bool> seen(ir_.num_graphs(), false);
          check_branch(op, callees[0].graph, seen);
          check_branch(op, callees[1].graph, seen);
          out.info.else_callee = callees[1].graph;
          out.else_callee = &program_of(callees[1].graph);
          std::vector<std::int64_t> else_peak = out.else_callee->peak,
                                    else_tile_peak = out.else_callee->tile_peak;
          alias_arguments(callees[1], *out.else_callee, step, s, lives, values, out.info, else_peak,
                          else_tile_peak);
          for (std::size_t ipu = 0; ipu < num_ipus; ++ipu) {
            peak[ipu] = std::max(peak[ipu], else_peak[ipu]);
            tile_peak[ipu] = std::max(tile_peak[ipu], else_tile_peak[ipu]);
          }
        }
        for (std::size_t ipu = 0; ipu < num_ipus; ++ipu) {
          live[ipu][static_cast<std::size_t>(s)] += peak[ipu];
          tile_live[ipu][static_cast<std::size_t>(s)] += tile_peak[ipu];
          call_peak[ipu][static_cast<std::size_t>(s)] = peak[ipu];
        }
      } else {
        out.info.kind = fused_kind(step, out.info.op_kind);
        out.info.flops = flops_of(ir_, op);
        out.info.amp = amp_shape_of(ir_, op);
        if (const auto* c = std::get_if<CollectiveAttrs>(&ir_.attrs(op));
            c && out.info.op_kind != OpKind::AllReduce)
          out.info.group = c->group_size;
        out.fusion = step.fusion;
      }
      add_code(out.info);
      plan.steps.push_back(std::move(out));
    }
    for (std::size_t ipu = 0; ipu < num_ipus; ++ipu) {
      plan.peak[ipu] = *std::max_element(live[ipu].begin(), live[ipu].end());
      plan.liveness.push_back(std::vector<std::int64_t>(
          live[ipu].begin(), live[ipu].begin() + static_cast<std::ptrdiff_t>(num_steps) + 1));
      plan.tile_peak[ipu] = *std::max_element(tile_live[ipu].begin(), tile_live[ipu].end());
    }
    if (g == IrView::main_graph())
      plan.tiles_at_peak = tiles_at_peak(plan, values, lives, call_peak);
  }

  /// Per IPU, the bytes of each tile at the graph's not-always-live peak: the values live at
  /// that step, and a called graph's peak there (spread as one tensor would be), each from the
  /// next start tile (rotate_start) in the order the values are defined.
  std::vector<std::vector<std::int64_t>>
  tiles_at_peak(const GraphProgram& plan, const std::vector<FlatValue>& values,
                const std::vector<Lifetime>& lives,
                const std::vector<std::vector<std::int64_t>>& call_peak) {
    const std::int64_t tiles = std::max<std::int64_t>(1, target_.tiles_per_ipu);
    std::vector<std::vector<std::int64_t>> r;
    for (std::size_t ipu = 0; ipu < plan.liveness.size(); ++ipu) {
      const auto& curve = plan.liveness[ipu];
      const auto at = std::max_element(curve.begin(), curve.end()) - curve.begin();
      std::vector<std::int64_t> diff(static_cast<std::size_t>(tiles) + 1, 0);
      for (std::size_t v = 0; v < values.size(); ++v)
        if (!values[v].is_static && static_cast<std::size_t>(values[v].ipu) == ipu) {
          const auto bytes =
              static_cast<std::int64_t>(align_up(static_cast<std::size_t>(values[v].bytes)));
          const TileSet set = ir_.tile_set(values[v].tensor);
          const std::int64_t start = tiles_.rotate_start(ipu, set, bytes);
          if (lives[v].first <= at && at <= lives[v].last)
            add_to_tiles(diff, start, tiles_spanned(bytes, tiles_.on(set)),
                         tile_share(bytes, tiles_.on(set)), tiles_.range(set));
        }
      if (static_cast<std::size_t>(at) < call_peak[ipu].size())
        if (const std::int64_t bytes = call_peak[ipu][static_cast<std::size_t>(at)]; bytes > 0)
          tiles_.add_buffer(diff, ipu, TileSet::compute, bytes);
      r.push_back(std::move(diff));
    }
    return r;
  }

  /// Takes out of a call's `peak` (and its per-tile share) the inputs of the callee that may share
  /// the caller's argument (PopXL's aliasZeroCopy): one the callee does not write, or takes by
  /// reference, or whose argument the caller no longer needs after step `s` and passes only
  /// there. Inputs bound to a variable by reference live in the variable already. Both kinds
  /// are recorded as passed without a copy (StepInfo::aliased_bytes).
  void alias_arguments(const Callee& callee_at, const GraphProgram& callee_plan,
                       const FlatStep& step, std::int64_t s, const std::vector<Lifetime>& lives,
                       const std::vector<FlatValue>& values, StepInfo& info,
                       std::vector<std::int64_t>& peak, std::vector<std::int64_t>& tile_peak,
                       std::vector<bool>* shared = nullptr) const {
    const GraphId callee = callee_at.graph;
    if (shared)
      shared->assign(callee_plan.inputs.size(), false);
    for (std::size_t k = 0;
         k < callee_plan.inputs.size() && callee_at.first_input + k < step.inputs.size(); ++k) {
      const Slot& input = callee_plan.inputs[k];
      const std::size_t arg = step.inputs[callee_at.first_input + k];
      if (input.is_static) {
        info.aliased_bytes += values[arg].bytes;
        continue;
      }
      const bool written = ir_.input_is_written(callee, k);
      // Passed twice to this callee (a conditional's other branch does not run with it).
      const std::size_t end =
          std::min(step.inputs.size(), callee_at.first_input + callee_plan.inputs.size());
      const bool shared_elsewhere =
          std::count(step.inputs.begin() + static_cast<std::ptrdiff_t>(callee_at.first_input),
                     step.inputs.begin() + static_cast<std::ptrdiff_t>(end), arg) > 1;
      const bool safe =
          !shared_elsewhere && (!written || ir_.input_is_by_ref(callee, k) || lives[arg].last <= s);
      if (!safe)
        continue;
      if (shared)
        (*shared)[k] = true;
      const auto ipu = static_cast<std::size_t>(input.ipu);
      const auto bytes = static_cast<std::int64_t>(align_up(input.bytes));
      peak[ipu] = std::max<std::int64_t>(0, peak[ipu] - bytes);
      tile_peak[ipu] = std::max<std::int64_t>(
          0, tile_peak[ipu] - tile_share(static_cast<std::int64_t>(input.bytes),
                                         tiles_.on(ir_.tile_set(values[arg].tensor))));
      info.aliased_bytes += values[arg].bytes;
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
      const std::int64_t tiles = std::max<std::int64_t>(1, target_.tiles_per_ipu);
      // Always-live bytes by tile (a difference array): variables, constants and code.
      std::vector<std::int64_t> always = code_[ipu].tiles;
      for (const StaticTensor& s : p_.statics) {
        if (static_cast<std::size_t>(ir_.ipu(s.tensor)) != ipu)
          continue;
        (ir_.kind(s.tensor) == TensorKind::variable ? m.variables : m.constants) +=
            static_cast<std::int64_t>(s.bytes);
        tiles_.add_buffer(always, ipu, ir_.tile_set(s.tensor),
                          static_cast<std::int64_t>(align_up(s.bytes)));
      }
      // Code: an outlined graph's steps were compiled, and counted, once.
      const Code& code = code_[ipu];
      for (const auto& [codelet, spanned] : code.codelets) {
        m.vertex_code += target_.vertex_code_bytes * spanned;
        add_to_tiles(always, code.codelet_start.at(codelet), spanned, target_.vertex_code_bytes,
                     tiles_.range(std::get<TileSet>(codelet)));
      }
      m.vertex_state = code.vertex_state;
      m.control_code = code.control;
      m.exchange_code = code.exchange;
      for (const auto& g : p_.graphs)
        if (g)
          m.steps += g->ops[ipu];
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
      const std::vector<std::int64_t> always_by_tile = per_tile(always);
      // The most loaded tile's always-live bytes, and the most any tile holds of the values
      // live at once (a bound: every value's share, as if they all shared a tile).
      m.max_tile =
          *std::max_element(always_by_tile.begin(), always_by_tile.end()) + main.tile_peak[ipu];
      std::vector<std::int64_t> at_peak = per_tile(main.tiles_at_peak[ipu]);
      m.tile_histogram.assign(10, 0);
      m.tiles.resize(at_peak.size());
      std::int64_t sum = 0;
      for (std::size_t t = 0; t < at_peak.size(); ++t) {
        const std::int64_t bytes = always_by_tile[t] + at_peak[t];
        m.tiles[t] = bytes;
        sum += bytes;
        const std::int64_t bucket =
            m.tile_capacity > 0 ? std::min<std::int64_t>(9, bytes * 10 / m.tile_capacity) : 9;
        ++m.tile_histogram[static_cast<std::size_t>(bucket)];
      }
      m.tile_mean = sum / tiles;
      r.ipus.push_back(m);
    }
    r.streaming.capacity = target_.ipus * target_.streaming_memory_bytes_per_ipu;
    for (std::uint32_t b = 0; b < ir_.num_remote_buffers(); ++b) {
      const RemoteBufferId id{b};
      const auto entry = static_cast<std::int64_t>(align_up(ir_.spec(id).nbytes()));
      r.streaming.buffers.push_back(
          {ir_.name(id), ir_.entries(id), entry, entry * ir_.entries(id)});
      r.streaming.used += entry * ir_.entries(id);
    }
    r.tensors = std::move(tensors_);
    std::stable_sort(r.tensors.begin(), r.tensors.end(),
                     [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
  }

  /// The code of step `info` (compiled once) on its IPU: vertex state, control and exchange
  /// code on each tile it spans (from the next start tile), and its codelet on those tiles.
  void add_code(const StepInfo& info) {
    const auto ipu = static_cast<std::size_t>(info.ipu);
    Code& code = code_[ipu];
    const std::int64_t tiles = step_tiles(info, tiles_.on(info.tile_set));
    const std::int64_t start = tiles_.rotate_tiles(ipu, info.tile_set, tiles);
    // Transfers to and from the host or Streaming Memory are stream copies: no vertices.
    const bool transfer =
        info.op && (family_of(info.op_kind) == OpFamily::remote ||
                    info.op_kind == OpKind::HostLoad || info.op_kind == OpKind::HostStore);
    const bool kernel =
        (info.kind == StepKind::kernel || info.kind == StepKind::fused_matmul ||
         info.kind == StepKind::fused_conv || info.kind == StepKind::fused_all_reduce) &&
        !transfer;
    const std::int64_t state =
        kernel ? target_.vertex_state_bytes * std::max<std::int64_t>(1, target_.workers_per_tile)
               : 0;
    const std::int64_t exchange = exchanges_between_tiles(info) ? target_.exchange_code_bytes : 0;
    code.vertex_state += state * tiles;
    code.control += target_.control_code_bytes * tiles;
    code.exchange += exchange * tiles;
    add_to_tiles(code.tiles, start, tiles, state + target_.control_code_bytes + exchange,
                 tiles_.range(info.tile_set));
    if (kernel) {
      const auto codelet = std::make_tuple(info.kind, info.op_kind, info.dtype, info.tile_set);
      std::int64_t& spanned = code.codelets[codelet];
      if (tiles > spanned) // on the tiles of the widest step running it
        code.codelet_start[codelet] = start;
      spanned = std::max(spanned, tiles);
    }
  }

  /// An IPU's code so far, by category, and per tile (a difference array).
  struct Code {
    std::int64_t vertex_state = 0, control = 0, exchange = 0;
    std::vector<std::int64_t> tiles;
    /// By codelet (step kind, op kind, dtype, on a tile set): the most tiles a step running it
    /// spans.
    std::map<std::tuple<StepKind, OpKind, DType, TileSet>, std::int64_t> codelets;
    /// By codelet: the first tile of that widest step.
    std::map<std::tuple<StepKind, OpKind, DType, TileSet>, std::int64_t> codelet_start;
  };

  const IrView& ir_;
  const Target& target_;
  CompileOptions options_;
  Program p_;
  std::vector<std::vector<std::uint32_t>> binding_;
  std::vector<TensorMemory> tensors_;
  std::vector<Code> code_; ///< per IPU
  TileMapper tiles_;       ///< where buffers and steps start
};

} // namespace

const StaticTensor* Program::find_static(TensorId t) const {
  auto it = std::ranges::lower_bound(statics, t, {}, &StaticTensor::tensor);
  return it != statics.end() && it->tensor == t ? &*it : nullptr;
}

const RemoteVariable* Program::find_remote(TensorId t) const {
  auto it = std::ranges::lower_bound(remote_variables, t, {}, &RemoteVariable::tensor);
  return it != remote_variables.end() && it->tensor == t ? &*it : nullptr;
}

Program compile_program(const IrView& view, const Target& target, const CompileOptions& options) {
  return Compiler(view, target, options).run();
}

} // namespace pxl::emu::detail
