// emu::estimate of an Ir: compile_program's plan, priced step by step with the cost model.
#include "pxl/emu/estimate.hpp"

#include "ipu_timeline.hpp"
#include "ir/ir_hold.hpp"
#include "program.hpp"

#include "pxl/core/error.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <utility>

namespace pxl::emu {

namespace detail {

void check_placement(const IrView& view, const Target& target, std::string_view what) {
  const std::string who(what);
  if (target.ipus < 1 || target.tiles_per_ipu < 1 || target.bytes_per_tile < 1)
    throw SessionError(who + ": target '" + target.name +
                       "' needs at least one IPU, one tile and one byte per tile");
  if (target.io_tiles < 0 || target.io_tiles >= target.tiles_per_ipu)
    throw SessionError(who + ": target '" + target.name + "' sets " +
                       std::to_string(target.io_tiles) + " IO tiles of its " +
                       std::to_string(target.tiles_per_ipu) +
                       " tiles per IPU; Target::io_tiles must be 0 to tiles_per_ipu - 1");
  if (target.io_tiles == 0)
    for (std::uint32_t o = 0; o < view.num_ops(); ++o)
      if (view.tile_set(OpId{o}) == TileSet::io)
        throw SessionError(who + ": op '" + view.name(OpId{o}) +
                           "' runs on the IO tiles (it was created in io_tiles()), but target '" +
                           target.name + "' has none; set Target::io_tiles (PopART's numIOTiles)");
  auto placement = [&](std::string_view kind, const std::string& name, std::int64_t ipu) {
    if (ipu < 0 || ipu >= target.ipus)
      throw SessionError(who + ": " + std::string(kind) + " '" + name + "' is placed on IPU " +
                         std::to_string(ipu) + " but target '" + target.name + "' has " +
                         std::to_string(target.ipus) + " IPU(s); set Target::ipus");
  };
  for (std::uint32_t o = 0; o < view.num_ops(); ++o)
    placement("op", view.name(OpId{o}), view.ipu(OpId{o}));
  for (std::uint32_t t = 0; t < view.num_tensors(); ++t)
    placement("tensor", view.id(TensorId{t}), view.ipu(TensorId{t}));
  for (std::uint32_t o = 0; o < view.num_ops(); ++o)
    if (const auto* s = std::get_if<StreamAttrs>(&view.attrs(OpId{o}));
        s && s->stream >= view.num_streams())
      throw SessionError(who + ": op '" + view.name(OpId{o}) +
                         "' uses a stream the Ir does not have");
}

} // namespace detail

namespace {

/// The cycles of graphs' programs, each computed once.
class Pricer {
public:
  Pricer(const detail::Program& program, const Target& target, std::int64_t replicas)
      : program_(program), target_(target), replicas_(replicas), memo_(program.graphs.size()) {}

  StepCost of(GraphId g) {
    auto& memo = memo_[g.value];
    if (memo)
      return *memo;
    StepCost total;
    for (const detail::ProgramStep& step : program_.graphs[g.value]->steps) {
      total += estimate(step.info, target_, replicas_);
      if (const auto callee = callee_of(step.info))
        total += scaled(of(callee->first), callee->second);
    }
    memo = total;
    return total;
  }

  /// The graph a step runs and how many times per execution of the step: a call's callee
  /// once, a loop's body its trips, a conditional's costlier branch (the then-branch on a
  /// tie) once; none for other steps.
  std::optional<std::pair<GraphId, std::int64_t>> callee_of(const StepInfo& info) {
    if (!info.callee)
      return std::nullopt;
    if (info.kind == StepKind::conditional && info.else_callee &&
        of(*info.else_callee).total() > of(*info.callee).total())
      return std::pair{*info.else_callee, std::int64_t{1}};
    return std::pair{*info.callee, info.kind == StepKind::repeat ? info.trips : 1};
  }

private:
  static StepCost scaled(StepCost c, std::int64_t n) {
    c.compute *= n;
    c.exchange *= n;
    c.sync *= n;
    c.host *= n;
    return c;
  }

  const detail::Program& program_;
  const Target& target_;
  std::int64_t replicas_;
  std::vector<std::optional<StepCost>> memo_;
};

/// One run's cycles by op kind: every graph's steps times the graph's executions per run
/// (a loop body's trips times its caller's, a conditional's costlier branch), found callers
/// first, so each graph is walked once however many sites call it.
std::vector<ProfileLine> op_kinds(const detail::Program& program, const Target& target,
                                  std::int64_t replicas, Pricer& pricer, GraphId main) {
  const std::size_t n = program.graphs.size();
  // The graphs in reverse postorder from the main graph: every caller before its callees.
  std::vector<GraphId> order;
  std::vector<bool> seen(n);
  const std::function<void(GraphId)> visit = [&](GraphId g) {
    seen[g.value] = true;
    for (const detail::ProgramStep& step : program.graphs[g.value]->steps)
      if (const auto callee = pricer.callee_of(step.info); callee && !seen[callee->first.value])
        visit(callee->first);
    order.push_back(g);
  };
  visit(main);
  std::ranges::reverse(order);
  std::vector<std::int64_t> executions(n);
  executions[main.value] = 1;
  std::vector<ProfileLine> kinds(num_op_kinds + 1);
  for (const GraphId g : order)
    for (const detail::ProgramStep& step : program.graphs[g.value]->steps) {
      const std::int64_t times = executions[g.value];
      ProfileLine& line =
          kinds[step.info.op ? static_cast<std::size_t>(step.info.op_kind) : num_op_kinds];
      const StepCost c = estimate(step.info, target, replicas);
      line.executions += times;
      line.cycles += {c.compute * times, c.exchange * times, c.sync * times, c.host * times};
      if (const auto callee = pricer.callee_of(step.info))
        executions[callee->first.value] += times * callee->second;
    }
  std::vector<ProfileLine> r;
  for (std::size_t k = 0; k < kinds.size(); ++k)
    if (kinds[k].executions) {
      kinds[k].name = k < num_op_kinds ? std::string(op_type_name(static_cast<OpKind>(k))) : "copy";
      r.push_back(std::move(kinds[k]));
    }
  std::ranges::stable_sort(r, [](const ProfileLine& a, const ProfileLine& b) {
    return a.cycles.total() > b.cycles.total();
  });
  return r;
}

/// The elapsed cycles of a run: its steps replayed in the order a Session runs them into an
/// IpuTimeline, as its Profiler would (a conditional takes its costlier branch). A loop's
/// iterations are replayed until one ends in the phase it began in; every later iteration
/// then takes the same time, and the rest are added at once.
class Replay {
public:
  Replay(const detail::Program& program, const IrView& view, const Target& target,
         std::int64_t replicas, Pricer& pricer)
      : program_(program), view_(view), target_(target), replicas_(replicas), pricer_(pricer),
        timeline_(target.ipus, target.io_tiles > 0) {}

  std::int64_t run(GraphId main) {
    timeline_.begin_run(round_trip_cycles(target_));
    graph(main, 0);
    return timeline_.elapsed();
  }

private:
  void graph(GraphId g, std::size_t depth) {
    for (const detail::ProgramStep& step : program_.graphs[g.value]->steps) {
      // A control step is reported after the steps it ran, one level deeper.
      if (const auto callee = pricer_.callee_of(step.info)) {
        if (step.info.kind == StepKind::repeat)
          loop(callee->first, callee->second, depth + 1);
        else
          graph(callee->first, depth + 1);
      }
      timeline_.add(depth, timeline_.occupied(step.info, view_),
                    estimate(step.info, target_, replicas_).total());
    }
  }

  void loop(GraphId body, std::int64_t trips, std::size_t depth) {
    for (std::int64_t k = 0; k < trips; ++k) {
      const detail::IpuTimeline before = timeline_;
      graph(body, depth);
      if (k > 0 && timeline_.same_phase(before)) {
        timeline_.advance((trips - k - 1) * (timeline_.elapsed() - before.elapsed()));
        return;
      }
    }
  }

  const detail::Program& program_;
  const IrView& view_;
  const Target& target_;
  std::int64_t replicas_;
  Pricer& pricer_;
  detail::IpuTimeline timeline_;
};

} // namespace

IrEstimate estimate(const Ir& ir, const Target& target) {
  const pxl::detail::IrHold hold(ir);
  const IrView view = hold.view();
  detail::check_placement(view, target, "emu::estimate");
  const detail::Program program = detail::compile_program(view, target);
  IrEstimate e;
  e.target = target.name;
  e.clock_hz = target.clock_hz;
  e.replicas = view.replication_factor();
  e.memory = program.memory;
  Pricer pricer(program, target, e.replicas);
  for (std::uint32_t g = 0; g < program.graphs.size(); ++g)
    if (program.graphs[g])
      e.graphs.push_back({view.name(GraphId{g}), pricer.of(GraphId{g})});
  e.run = e.graphs.front().cycles;
  e.run.host += round_trip_cycles(target);
  e.elapsed_cycles = Replay(program, view, target, e.replicas, pricer).run(view.main_graph());
  e.op_kinds = op_kinds(program, target, e.replicas, pricer, view.main_graph());
  return e;
}

} // namespace pxl::emu
