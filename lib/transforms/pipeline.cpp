// transforms::pipeline: stages from placement and scopes, then the micro-batch's ops replayed
// cycle by cycle into a new graph (ramp-up and ramp-down unrolled, the steady state a loop).
#include "pxl/transforms/pipeline.hpp"

#include "pxl/core/error.hpp"
#include "pxl/ir/ir.hpp"
#include "pxl/ir/view.hpp"
#include "pxl/ops/call.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/transforms/rewrite.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace pxl::transforms {

std::string_view schedule_name(PipelineSchedule schedule) {
  switch (schedule) {
  case PipelineSchedule::grouped:
    return "grouped";
  case PipelineSchedule::interleaved:
    return "interleaved";
  case PipelineSchedule::sequential:
    return "sequential";
  }
  return "";
}

namespace {

using Stage = std::int64_t;
using StageIpus = std::vector<std::vector<std::int64_t>>;

/// When each stage works: stage s runs micro-batch m in cycle m·period + offset[s].
struct Timing {
  std::int64_t period = 1;
  std::vector<std::int64_t> offset;

  /// The micro-batch stage `s` runs in cycle `t` of a pipeline of `steps`, if any.
  std::optional<std::int64_t> micro_batch(std::size_t s, std::int64_t t, std::int64_t steps) const {
    const std::int64_t d = t - offset[s];
    if (d < 0 || d % period != 0 || d / period >= steps)
      return std::nullopt;
    return d / period;
  }
  std::int64_t cycles(std::int64_t steps) const { return (steps - 1) * period + offset.back() + 1; }
  /// Whether the `period` cycles from `t0` run every stage once (the loop's body).
  bool steady(std::int64_t t0, std::int64_t steps) const {
    for (std::size_t s = 0; s < offset.size(); ++s) {
      const std::int64_t c = t0 + (((offset[s] - t0) % period) + period) % period;
      if (!micro_batch(s, c, steps))
        return false;
    }
    return true;
  }
  /// The first cycle of a steady period, if the pipeline of `steps` ever fills.
  std::optional<std::int64_t> first_steady(std::int64_t steps) const {
    for (std::int64_t t = 0; t < cycles(steps); ++t)
      if (steady(t, steps))
        return t;
    return std::nullopt;
  }
};

Timing timing(PipelineSchedule schedule, const StageIpus& stage_ipus) {
  const auto stages = static_cast<std::int64_t>(stage_ipus.size());
  Timing r;
  r.offset.resize(stage_ipus.size());
  for (std::size_t s = 0; s < stage_ipus.size(); ++s)
    r.offset[s] = static_cast<std::int64_t>(s);
  if (schedule == PipelineSchedule::sequential) {
    r.period = stages;
  } else if (schedule == PipelineSchedule::interleaved) {
    // The period is the most stages one IPU holds; each stage takes the first cycle after its
    // predecessor's that no other stage of its IPUs uses in the period.
    std::map<std::int64_t, std::int64_t> held;
    for (const auto& ipus : stage_ipus)
      for (const std::int64_t ipu : ipus)
        r.period = std::max(r.period, ++held[ipu]);
    for (std::size_t s = 1; s < stage_ipus.size(); ++s) {
      auto taken = [&](std::int64_t cycle) {
        for (std::size_t e = 0; e < s; ++e)
          for (const std::int64_t ipu : stage_ipus[s])
            if (std::ranges::count(stage_ipus[e], ipu) > 0 &&
                r.offset[e] % r.period == cycle % r.period)
              return true;
        return false;
      };
      std::int64_t cycle = r.offset[s - 1] + 1;
      while (taken(cycle))
        ++cycle;
      r.offset[s] = cycle;
    }
  }
  return r;
}

/// A copy of `g` with every call expanded, those of the called graphs too, so that each op
/// can take its own stage.
Graph expanded_copy(Ir& ir, const Graph& g) {
  const IrView v(ir);
  IrRewriter rw(ir);
  Graph flat = ir.create_empty_graph(g.name() + "_expanded");
  std::unordered_map<std::uint32_t, Tensor> value;
  {
    auto in_flat = flat.scope();
    const std::vector<Tensor> inputs = g.inputs();
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      auto on = ipu(inputs[i].ipu());
      value.emplace(inputs[i].index(),
                    graph_input(inputs[i].spec(), inputs[i].name(), g.input_is_by_ref(i)));
    }
    for (const Tensor& c : g.constants()) {
      auto on = ipu(c.ipu());
      value.emplace(c.index(), constant(*v.data(IrView::id(c)), c.name()));
    }
  }
  for (const OpId o : v.ops(IrView::id(g))) {
    std::vector<Tensor> inputs;
    for (const TensorId t : v.inputs(o))
      inputs.push_back(value.at(t.value));
    const Op copy = rw.clone_op(v.op(o), flat, inputs);
    const auto outs = v.outputs(o);
    const auto copies = v.outputs(IrView::id(copy));
    for (std::size_t k = 0; k < outs.size(); ++k)
      value.emplace(outs[k].value, v.tensor(copies[k]));
  }
  for (bool expanded = true; expanded;) {
    expanded = false;
    const std::vector<OpId> ops(v.ops(IrView::id(flat)).begin(), v.ops(IrView::id(flat)).end());
    for (const OpId o : ops)
      if (v.kind(o) == OpKind::Call) {
        rw.inline_call(v.op(o));
        expanded = true;
      }
  }
  return flat;
}

/// Whether an op only computes its outputs from its inputs, so running it again gives them
/// again: what recomputation may repeat.
bool pure(const IrView& v, OpId o) {
  const OpKind kind = v.kind(o);
  const OpFamily family = family_of(kind);
  if (kind == OpKind::IpuCopy || family == OpFamily::call || family == OpFamily::host_io ||
      family == OpFamily::collectives || family == OpFamily::remote)
    return false;
  for (std::size_t k = 0; k < v.inputs(o).size(); ++k)
    if (v.op_writes_input(o, k))
      return false;
  return true;
}

/// The expanded micro-batch graph's ops by stage, and what crosses between stages.
class Plan {
public:
  Plan(const IrView& v, GraphId flat, bool recompute) : v_(v) {
    ops_.assign(v.ops(flat).begin(), v.ops(flat).end());
    for (const OpId o : ops_)
      for (const TensorId t : v.inputs(o))
        consumers_[t.value].push_back(o);
    assign_stages();
    check_writes();
    check_streams();
    plan_crossings(recompute);
  }

  std::int64_t num_stages() const { return static_cast<std::int64_t>(stage_ipus_.size()); }
  const StageIpus& stage_ipus() const { return stage_ipus_; }
  Stage stage(OpId o) const { return stage_.at(o.value); }
  std::optional<Stage> producer_stage(TensorId t) const {
    const auto p = v_.producer(t);
    return p ? std::optional<Stage>(stage(*p)) : std::nullopt;
  }
  /// What opens stage s's turn in a cycle: copies into it from earlier stages and its host
  /// loads. Run first in the cycle, so that the IPUs then compute concurrently (these steps
  /// synchronise them on the emulator, as exchanges and host transfers do on hardware).
  const std::vector<OpId>& opening(Stage s) const { return opening_[static_cast<std::size_t>(s)]; }
  /// Stage s's host stores: run at the end of the cycle, for the same reason.
  const std::vector<OpId>& closing(Stage s) const { return closing_[static_cast<std::size_t>(s)]; }
  /// The rest of stage s, in schedule order.
  const std::vector<OpId>& work(Stage s) const { return work_[static_cast<std::size_t>(s)]; }
  /// Ops of earlier stages stage s runs again to recompute what it reads from them.
  const std::vector<OpId>& recomputed(Stage s) const {
    return recomputed_[static_cast<std::size_t>(s)];
  }
  /// Tensors later stages read, by the stages that read them.
  const std::map<std::uint32_t, std::set<Stage>>& readers() const { return readers_; }

private:
  void assign_stages() {
    // Forward: the largest of the scope's stage and the inputs' (one more for an IpuCopy).
    for (const OpId o : ops_) {
      Stage s = v_.pipeline_stage(o).value_or(0);
      for (const TensorId t : v_.inputs(o))
        if (const auto p = v_.producer(t))
          s = std::max(s, stage_.at(p->value) + (v_.kind(o) == OpKind::IpuCopy ? 1 : 0));
      stage_[o.value] = s;
    }
    // Sources (ops reading only graph inputs and constants, host loads among them) outside
    // any stage scope join the earliest stage reading them: a label loaded for the loss runs
    // with the loss, not in stage 0 waiting to be stashed.
    for (auto it = ops_.rbegin(); it != ops_.rend(); ++it) {
      const bool source = std::ranges::none_of(
          v_.inputs(*it), [&](TensorId t) { return v_.producer(t).has_value(); });
      if (!source || v_.pipeline_stage(*it))
        continue;
      std::optional<Stage> first;
      for (const TensorId out : v_.outputs(*it))
        if (auto c = consumers_.find(out.value); c != consumers_.end())
          for (const OpId reader : c->second)
            first = std::min(first.value_or(stage_.at(reader.value)), stage_.at(reader.value));
      if (first)
        stage_[it->value] = std::max(stage_[it->value], *first);
    }
    // Compact the stage numbers.
    std::set<Stage> used;
    for (const OpId o : ops_)
      used.insert(stage_.at(o.value));
    std::map<Stage, Stage> index;
    for (const Stage s : used)
      index.emplace(s, static_cast<Stage>(index.size()));
    stage_ipus_.resize(used.size());
    opening_.resize(used.size());
    closing_.resize(used.size());
    work_.resize(used.size());
    recomputed_.resize(used.size());
    for (const OpId o : ops_) {
      const Stage s = index.at(stage_.at(o.value));
      stage_[o.value] = s;
      auto& ipus = stage_ipus_[static_cast<std::size_t>(s)];
      if (std::ranges::count(ipus, v_.ipu(o)) == 0)
        ipus.push_back(v_.ipu(o));
      const bool copy_in =
          v_.kind(o) == OpKind::IpuCopy && producer_stage(v_.inputs(o)[0]).value_or(-1) < s;
      const bool load = v_.kind(o) == OpKind::HostLoad;
      auto& list = copy_in || load ? opening_ : v_.kind(o) == OpKind::HostStore ? closing_ : work_;
      list[static_cast<std::size_t>(s)].push_back(o);
    }
    for (auto& ipus : stage_ipus_)
      std::ranges::sort(ipus);
  }

  /// A buffer written in place must stay within one stage: each stage works on its own
  /// micro-batch, so another stage would see the wrong one's value. An activation may still
  /// be read by later stages once its own stage has finished writing it.
  void check_writes() const {
    std::map<std::uint32_t, std::vector<std::pair<OpId, bool>>> uses; // root -> (op, writes)
    for (const OpId o : ops_)
      for (std::size_t k = 0; k < v_.inputs(o).size(); ++k)
        uses[v_.alias_root(v_.inputs(o)[k]).value].emplace_back(o, v_.op_writes_input(o, k));
    for (const auto& [root, list] : uses) {
      const auto last_write =
          std::ranges::find_if(list.rbegin(), list.rend(), [](const auto& u) { return u.second; });
      if (last_write == list.rend())
        continue;
      const TensorId r{root};
      const auto made = producer_stage(r);
      const OpId writer = last_write->first;
      const Stage home = made.value_or(stage(writer));
      const auto done = last_write.base(); // the uses after the last write
      for (auto use = list.begin(); use != list.end(); ++use) {
        const auto& [o, writes] = *use;
        if (stage(o) == home || (made && !writes && use >= done))
          continue;
        throw GraphError(
            "transforms::pipeline: '" + v_.id(r) + "' is written in place by '" + v_.name(writer) +
            "' in pipeline stage " + std::to_string(stage(writer)) + " and " +
            (writes ? "written" : "read") + " by '" + v_.name(o) + "' in stage " +
            std::to_string(stage(o)) +
            (made ? "" : " (a graph input, shared by every micro-batch)") +
            "; the stages run different micro-batches at once, so a buffer written in one "
            "stage must not be used by another before it is complete (copy it first)");
      }
    }
  }

  void check_streams() {
    std::map<std::uint32_t, std::pair<OpId, Stage>> first;
    for (const OpId o : ops_) {
      if (family_of(v_.kind(o)) != OpFamily::host_io)
        continue;
      const std::uint32_t stream = v_.attrs_as<StreamAttrs>(o).stream;
      const auto [it, fresh] = first.emplace(stream, std::pair(o, stage(o)));
      if (!fresh && it->second.second != stage(o))
        throw GraphError("transforms::pipeline: host stream '" + v_.name(StreamId{stream}) +
                         "' is used by '" + v_.name(it->second.first) + "' in pipeline stage " +
                         std::to_string(it->second.second) + " and by '" + v_.name(o) +
                         "' in stage " + std::to_string(stage(o)) +
                         "; a stream's elements keep micro-batch order only within one stage");
    }
  }

  /// A value stage q reads from an earlier stage: stashed, or (recomputing) made again in q
  /// from stashed stage inputs.
  bool recomputable(TensorId t) const {
    const auto p = v_.producer(t);
    if (!p || !pure(v_, *p))
      return false;
    // An input written in place after this op read it would be read changed.
    for (const TensorId in : v_.inputs(*p))
      if (written_.contains(v_.alias_root(in).value))
        return false;
    return true;
  }

  void plan_crossings(bool recompute) {
    for (const OpId o : ops_)
      for (std::size_t k = 0; k < v_.inputs(o).size(); ++k)
        if (v_.op_writes_input(o, k))
          written_.insert(v_.alias_root(v_.inputs(o)[k]).value);
    std::vector<std::unordered_set<std::uint32_t>> rerun(work_.size());
    for (const OpId o : ops_) {
      const Stage q = stage(o);
      // Pending reads of stage q: (tensor, through a copy).
      std::vector<std::pair<TensorId, bool>> pending;
      for (const TensorId t : v_.inputs(o))
        pending.emplace_back(t, v_.kind(o) == OpKind::IpuCopy);
      while (!pending.empty()) {
        const auto [t, by_copy] = pending.back();
        pending.pop_back();
        const auto made = producer_stage(t);
        if (!made || *made >= q)
          continue;
        // A copy reads its input from the stash: it runs first in its cycle.
        if (!recompute || by_copy || !recomputable(t)) {
          readers_[t.value].insert(q);
          continue;
        }
        const OpId p = *v_.producer(t);
        if (!rerun[static_cast<std::size_t>(q)].insert(p.value).second)
          continue;
        for (const TensorId in : v_.inputs(p))
          pending.emplace_back(in, false);
      }
    }
    for (const OpId o : ops_)
      for (std::size_t s = 0; s < rerun.size(); ++s)
        if (rerun[s].contains(o.value))
          recomputed_[s].push_back(o);
  }

  const IrView& v_;
  std::vector<OpId> ops_;
  std::unordered_map<std::uint32_t, std::vector<OpId>> consumers_;
  std::unordered_map<std::uint32_t, Stage> stage_;
  StageIpus stage_ipus_;
  std::vector<std::vector<OpId>> opening_, work_, closing_, recomputed_;
  std::map<std::uint32_t, std::set<Stage>> readers_;
  std::unordered_set<std::uint32_t> written_; ///< alias roots some op writes
};

/// Replays the plan cycle by cycle into the pipelined graph: each cycle's active stages run
/// their ops on their micro-batches' values. A value a later stage reads waits in a stash,
/// keyed by micro-batch, until its last reader has run; in the loop these stashes are the
/// carried values.
class Builder {
public:
  Builder(Ir& ir, const Graph& flat, const Plan& plan, const Timing& timing, std::int64_t steps)
      : ir_(ir), v_(ir), rw_(ir), flat_(flat), plan_(plan), timing_(timing), steps_(steps) {
    for (const auto& [t, stages] : plan.readers())
      last_reader_[static_cast<std::size_t>(*stages.rbegin())].push_back(t);
  }

  /// The pipelined graph, named after `name`.
  PipelinedGraph build(const std::string& name) {
    PipelinedGraph r;
    r.graph = ir_.create_empty_graph(name + "_pipelined");
    enter(r.graph, {});
    const std::int64_t cycles = timing_.cycles(steps_);
    const std::int64_t t0 = *timing_.first_steady(steps_);
    std::int64_t loops = 0;
    while (timing_.steady(t0 + loops * timing_.period, steps_))
      ++loops;
    for (std::int64_t t = 0; t < t0; ++t)
      cycle(t);
    loop(name, t0, loops);
    for (std::int64_t t = t0 + loops * timing_.period; t < cycles; ++t)
      cycle(t);
    r.stages = plan_.num_stages();
    r.stage_ipus = plan_.stage_ipus();
    r.cycles = cycles;
    r.ramp_up_cycles = t0;
    r.main_cycles = loops * timing_.period;
    r.ramp_down_cycles = cycles - t0 - r.main_cycles;
    for (const auto& [t, stages] : plan_.readers())
      r.stashes.push_back({v_.id(TensorId{t}), *plan_.producer_stage(TensorId{t}), *stages.rbegin(),
                           depth_[t], v_.ipu(TensorId{t})});
    return r;
  }

private:
  using Env = std::unordered_map<std::uint32_t, Tensor>;

  /// Makes `g` the graph being built; its inputs mirror the micro-batch graph's, after
  /// `carried` leading ones.
  void enter(const Graph& g, const std::vector<Tensor>& carried) {
    graph_ = g;
    constants_.clear();
    inputs_.clear();
    auto in_g = g.scope();
    for (const Tensor& c : carried) {
      auto on = ipu(c.ipu());
      graph_input(c.spec(), c.name());
    }
    const std::vector<Tensor> inputs = flat_.inputs();
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      auto on = ipu(inputs[i].ipu());
      inputs_.emplace(inputs[i].index(),
                      graph_input(inputs[i].spec(), inputs[i].name(), flat_.input_is_by_ref(i)));
    }
  }

  Tensor value(TensorId t, const Env& env, std::int64_t mb) {
    if (auto it = env.find(t.value); it != env.end())
      return it->second;
    if (auto it = inputs_.find(t.value); it != inputs_.end())
      return it->second;
    if (v_.kind(t) == TensorKind::constant) {
      auto [it, fresh] = constants_.try_emplace(t.value);
      if (fresh) {
        auto in_g = graph_.scope();
        auto on = ipu(v_.ipu(t));
        it->second = constant(*v_.data(t), v_.name(t));
      }
      return it->second;
    }
    return stash_.at(t.value).at(mb);
  }

  std::vector<Tensor> inputs_of(OpId o, const Env& env, std::int64_t mb) {
    std::vector<Tensor> inputs;
    for (const TensorId t : v_.inputs(o))
      inputs.push_back(value(t, env, mb));
    return inputs;
  }

  void run(OpId o, Env& env, std::int64_t mb, bool keep) {
    emit(o, inputs_of(o, env, mb), env, mb, keep);
  }

  void emit(OpId o, const std::vector<Tensor>& inputs, Env& env, std::int64_t mb, bool keep) {
    const Op copy = rw_.clone_op(v_.op(o), graph_, inputs);
    const auto outs = v_.outputs(o);
    const auto made = v_.outputs(IrView::id(copy));
    for (std::size_t k = 0; k < outs.size(); ++k) {
      const Tensor out = v_.tensor(made[k]);
      env[outs[k].value] = out;
      if (keep && plan_.readers().contains(outs[k].value)) {
        auto& held = stash_[outs[k].value];
        held[mb] = out;
        depth_[outs[k].value] =
            std::max(depth_[outs[k].value], static_cast<std::int64_t>(held.size()));
      }
    }
  }

  /// Pipeline cycle t: the active stages' copies and loads, then each stage's work, latest
  /// first, each releasing the stashed values it was the last to read before the earlier
  /// stages stash new ones (so a value waits q − p cycles for its reader, PopART's stash
  /// depth), then the host stores.
  void cycle(std::int64_t t) {
    std::vector<std::pair<Stage, std::int64_t>> active;
    for (Stage s = plan_.num_stages() - 1; s >= 0; --s)
      if (const auto mb = timing_.micro_batch(static_cast<std::size_t>(s), t, steps_))
        active.emplace_back(s, *mb);
    std::map<Stage, Env> envs;
    for (const auto& [s, mb] : active)
      for (const OpId o : plan_.opening(s))
        run(o, envs[s], mb, true);
    std::vector<std::tuple<OpId, std::vector<Tensor>, Stage, std::int64_t>> stores;
    for (const auto& [s, mb] : active) {
      for (const OpId o : plan_.recomputed(s))
        run(o, envs[s], mb, false);
      for (const OpId o : plan_.work(s))
        run(o, envs[s], mb, true);
      // A store's value is taken now: the stash may release it below.
      for (const OpId o : plan_.closing(s))
        stores.emplace_back(o, inputs_of(o, envs[s], mb), s, mb);
      for (const std::uint32_t read : last_reader_[static_cast<std::size_t>(s)])
        if (auto it = stash_.find(read); it != stash_.end()) {
          it->second.erase(mb);
          if (it->second.empty())
            stash_.erase(it);
        }
    }
    for (const auto& [o, inputs, s, mb] : stores)
      emit(o, inputs, envs[s], mb, false);
  }

  /// `loops` periods from cycle t0 as a Repeat: the stashes at the period's start are the
  /// loop's carried values, as the period moves every stage on by one micro-batch.
  void loop(const std::string& name, std::int64_t t0, std::int64_t loops) {
    std::vector<std::pair<std::uint32_t, std::int64_t>> keys;
    std::vector<Tensor> carried;
    for (const auto& [t, held] : stash_)
      for (const auto& [mb, x] : held) {
        keys.emplace_back(t, mb);
        carried.push_back(x);
      }
    const Graph outer = graph_;
    const auto outer_inputs = inputs_;
    const auto outer_constants = constants_;
    Graph body = ir_.create_empty_graph(name + "_cycle");
    enter(body, carried);
    const std::vector<Tensor> body_inputs = body.inputs();
    stash_.clear();
    for (std::size_t i = 0; i < keys.size(); ++i)
      stash_[keys[i].first][keys[i].second] = body_inputs[i];
    for (std::int64_t t = t0; t < t0 + timing_.period; ++t)
      cycle(t);
    {
      auto in_body = body.scope();
      std::size_t i = 0;
      for (const auto& [t, held] : stash_)
        for (const auto& [mb, x] : held) {
          PXL_ASSERT(i < keys.size() && keys[i].first == t && keys[i].second + 1 == mb);
          ++i;
          // A value still waiting is passed on; as its own output it would be overwritten
          // by the carry of the one before it.
          const bool passed_on = std::ranges::count(body_inputs, x) > 0;
          auto on = ipu(x.ipu());
          graph_output(passed_on ? ops::identity(x) : x);
        }
      PXL_ASSERT(i == keys.size());
    }
    graph_ = outer;
    inputs_ = outer_inputs;
    constants_ = outer_constants;
    std::vector<Tensor> args = carried;
    for (const Tensor& in : flat_.inputs())
      args.push_back(inputs_.at(in.index()));
    std::vector<Tensor> outs;
    {
      auto in_outer = outer.scope();
      outs = ops::repeat(body, loops, args);
    }
    stash_.clear();
    for (std::size_t i = 0; i < keys.size(); ++i)
      stash_[keys[i].first][keys[i].second + loops] = outs[i];
  }

  Ir& ir_;
  const IrView v_;
  IrRewriter rw_;
  const Graph flat_;
  const Plan& plan_;
  const Timing& timing_;
  const std::int64_t steps_;
  Graph graph_;                                                   ///< being built
  std::unordered_map<std::uint32_t, Tensor> inputs_;              ///< flat input -> graph_'s
  std::unordered_map<std::uint32_t, Tensor> constants_;           ///< flat constant -> graph_'s
  std::map<std::uint32_t, std::map<std::int64_t, Tensor>> stash_; ///< tensor -> mb -> value
  std::map<std::uint32_t, std::int64_t> depth_;
  std::map<std::size_t, std::vector<std::uint32_t>> last_reader_; ///< stage -> tensors
};

} // namespace

std::int64_t min_steps(PipelineSchedule schedule, const StageIpus& stage_ipus) {
  if (stage_ipus.empty())
    return 1;
  const Timing t = timing(schedule, stage_ipus);
  for (std::int64_t steps = 1;; ++steps)
    if (t.first_steady(steps))
      return steps;
}

PipelinedGraph pipeline(const Graph& micro_batch, const PipelineOptions& options) {
  if (micro_batch.is_main())
    throw GraphError("transforms::pipeline: the main graph cannot be pipelined; build one "
                     "micro-batch in a subgraph and call the pipelined graph from the main one");
  Ir& ir = micro_batch.ir();
  IrRewriter(ir).require_mutable("transforms::pipeline: pipelining graph '" + micro_batch.name() +
                                 "'");
  if (!micro_batch.outputs().empty())
    throw GraphError("transforms::pipeline: graph '" + micro_batch.name() + "' has " +
                     std::to_string(micro_batch.outputs().size()) +
                     " outputs, but a pipeline returns none: store per-micro-batch results "
                     "with ops::host_store or accumulate them into by-ref inputs");
  if (options.steps < 1)
    throw ValueError("transforms::pipeline: steps (micro-batches per call) must be at least 1, "
                     "got " +
                     std::to_string(options.steps));
  const Graph flat = expanded_copy(ir, micro_batch);
  const IrView v(ir);
  const Plan plan(v, IrView::id(flat), options.recompute);
  if (plan.num_stages() == 0)
    throw GraphError("transforms::pipeline: graph '" + micro_batch.name() + "' has no ops");
  const std::int64_t needed = min_steps(options.schedule, plan.stage_ipus());
  if (options.steps < needed)
    throw ValueError("transforms::pipeline: the " + std::string(schedule_name(options.schedule)) +
                     " schedule of " + std::to_string(plan.num_stages()) +
                     " pipeline stages needs at least " + std::to_string(needed) +
                     " micro-batches (steps) to fill the pipeline, got " +
                     std::to_string(options.steps));
  const Timing t = timing(options.schedule, plan.stage_ipus());
  return Builder(ir, flat, plan, t, options.steps).build(micro_batch.name());
}

} // namespace pxl::transforms
