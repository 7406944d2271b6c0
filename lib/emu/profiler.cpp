#include "profiler.hpp"

#include "pxl/core/error.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <sstream>

namespace pxl::emu::detail {

namespace {

double micros(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

/// "Call", "Loop", "If", the op kind's PopXL name, or "copy".
std::string kind_name(const StepInfo& info) {
  return info.op ? std::string(op_type_name(info.op_kind)) : std::string("copy");
}

std::string percent(std::int64_t part, std::int64_t whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%5.1f%%",
                whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
  return buf;
}

} // namespace

Profiler::Profiler(const IrView& view, const Target& target, std::int64_t instances)
    : view_(view), target_(target), tile_sets_{tile_set_target(target, TileSet::compute),
                                               tile_set_target(target, TileSet::io)},
      instances_(instances), origin_(std::chrono::steady_clock::now()),
      timeline_(target.ipus, target.io_tiles > 0),
      by_ipu_(static_cast<std::size_t>(std::max<std::int64_t>(1, target.ipus))),
      by_graph_(view.num_graphs()), by_kind_(num_op_kinds), by_op_(view.num_ops()) {}

void Profiler::begin_run() {
  ++runs_;
  host_runs_.push_back({micros(std::chrono::steady_clock::now() - origin_), 0});
  const std::int64_t trip = round_trip_cycles(target_);
  if (events_.size() < event_limit)
    events_.push_back({StepInfo{}, timeline_.elapsed(), trip, StepCost{.host = trip}, 0, 0, true});
  else
    truncated_ = true;
  timeline_.begin_run(trip);
  total_.host += trip;
  std::ranges::fill(marks_, timeline_.elapsed());
}

void Profiler::end_run() {
  host_runs_.back().end_us = micros(std::chrono::steady_clock::now() - origin_);
}

void Profiler::on_step(const StepInfo& info, const StepTiming& timing, std::int64_t replicas) {
  const StepCost own =
      estimate(info, tile_sets_[static_cast<std::size_t>(info.tile_set)], replicas * instances_);
  const std::size_t d = timing.depth;
  const auto ipu = static_cast<std::size_t>(
      std::clamp<std::int64_t>(info.ipu, 0, static_cast<std::int64_t>(by_ipu_.size()) - 1));
  // Deeper than any step so far: every step so far ended no later than now.
  if (marks_.size() < d + 1)
    marks_.resize(d + 1, timeline_.elapsed());
  auto [start, end] = timeline_.add(d, timeline_.occupied(info, view_), own.total());
  // A control step is reported after the steps it ran: it began when the step before it at
  // its depth ended.
  if (info.kind == StepKind::call || info.kind == StepKind::repeat ||
      info.kind == StepKind::conditional)
    start = marks_[d];
  for (std::size_t k = d; k < marks_.size(); ++k)
    marks_[k] = timeline_.elapsed();
  ++steps_;
  total_ += own;
  add(by_ipu_[ipu], own);
  add(by_graph_[info.graph.value], own);
  if (info.op) {
    add(by_kind_[static_cast<std::size_t>(info.op_kind)], own);
    add(by_op_[info.op->value], own);
  } else {
    add(copies_, own);
  }
  if (events_.size() < event_limit)
    events_.push_back({info, start, end - start, own, replicas, d, false});
  else
    truncated_ = true;
}

Profile Profiler::profile() const {
  Profile p;
  p.target = target_.name;
  p.clock_hz = target_.clock_hz;
  p.runs = runs_;
  p.steps = steps_;
  p.total = total_;
  p.elapsed_cycles = timeline_.elapsed();
  auto lines = [](std::vector<ProfileLine>& out, std::size_t limit) {
    std::stable_sort(out.begin(), out.end(), [](const ProfileLine& a, const ProfileLine& b) {
      return a.cycles.total() > b.cycles.total();
    });
    if (out.size() > limit)
      out.resize(limit);
  };
  for (std::size_t i = 0; i < by_ipu_.size(); ++i)
    if (by_ipu_[i].executions)
      p.ipus.push_back({"IPU " + std::to_string(i), by_ipu_[i].executions, by_ipu_[i].cycles});
  for (std::uint32_t g = 0; g < by_graph_.size(); ++g)
    if (by_graph_[g].executions)
      p.graphs.push_back({view_.name(GraphId{g}), by_graph_[g].executions, by_graph_[g].cycles});
  for (std::size_t k = 0; k < by_kind_.size(); ++k)
    if (by_kind_[k].executions)
      p.op_kinds.push_back({std::string(op_type_name(static_cast<OpKind>(k))),
                            by_kind_[k].executions, by_kind_[k].cycles});
  if (copies_.executions)
    p.op_kinds.push_back({"copy", copies_.executions, copies_.cycles});
  for (std::uint32_t o = 0; o < by_op_.size(); ++o)
    if (by_op_[o].executions)
      p.top_ops.push_back(
          {view_.name(OpId{o}) + " (" + std::string(op_type_name(view_.kind(OpId{o}))) + ")",
           by_op_[o].executions, by_op_[o].cycles});
  lines(p.ipus, p.ipus.size());
  lines(p.graphs, p.graphs.size());
  lines(p.op_kinds, p.op_kinds.size());
  lines(p.top_ops, 10);
  return p;
}

void Profiler::write_trace(const std::string& path) const {
  using nlohmann::json;
  const double us_per_cycle = 1e6 / target_.clock_hz;
  json events = json::array();
  const auto ipus = static_cast<std::int64_t>(by_ipu_.size());
  for (std::int64_t ipu = 0; ipu < ipus; ++ipu) {
    events.push_back(
        {{"ph", "M"},
         {"name", "process_name"},
         {"pid", ipu},
         {"args",
          {{"name", "IPU " + std::to_string(ipu) + " (estimated, " + target_.name + ")"}}}});
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", ipu},
                      {"tid", 0},
                      {"args", {{"name", "BSP steps (every replica in lockstep)"}}}});
  }
  const std::int64_t host_pid = ipus;
  events.push_back({{"ph", "M"},
                    {"name", "process_name"},
                    {"pid", host_pid},
                    {"args", {{"name", "Host (wall clock)"}}}});
  events.push_back({{"ph", "M"},
                    {"name", "thread_name"},
                    {"pid", host_pid},
                    {"tid", 0},
                    {"args", {{"name", "Session::run"}}}});
  for (const Event& e : events_) {
    json args = {{"cycles", e.cycles}, {"compute", e.own.compute}, {"exchange", e.own.exchange},
                 {"sync", e.own.sync}, {"host", e.own.host},       {"depth", e.depth}};
    std::string name = "host round trip", category = "host";
    std::int64_t pid = 0;
    if (!e.round_trip) {
      const StepInfo& i = e.info;
      pid = i.ipu;
      name = i.op ? view_.name(*i.op) + " (" + kind_name(i) + ")" : std::string("copy");
      category =
          i.kind == StepKind::call || i.kind == StepKind::repeat || i.kind == StepKind::conditional
              ? "control"
          : i.op_kind == OpKind::HostLoad || i.op_kind == OpKind::HostStore ? "host"
          : e.own.compute >= e.own.exchange                                 ? "compute"
                                                                            : "exchange";
      args["graph"] = view_.name(i.graph);
      args["replicas"] = e.replicas;
      args["bytes_read"] = i.bytes_read;
      args["bytes_written"] = i.bytes_written;
      args["flops"] = i.flops;
    }
    events.push_back({{"ph", "X"},
                      {"name", name},
                      {"cat", category},
                      {"pid", pid},
                      {"tid", 0},
                      {"ts", static_cast<double>(e.start) * us_per_cycle},
                      {"dur", static_cast<double>(e.cycles) * us_per_cycle},
                      {"args", std::move(args)}});
  }
  for (std::size_t r = 0; r < host_runs_.size(); ++r)
    events.push_back({{"ph", "X"},
                      {"name", "run " + std::to_string(r + 1)},
                      {"cat", "host"},
                      {"pid", host_pid},
                      {"tid", 0},
                      {"ts", host_runs_[r].start_us},
                      {"dur", std::max(0.0, host_runs_[r].end_us - host_runs_[r].start_us)}});
  const json trace = {{"traceEvents", std::move(events)},
                      {"displayTimeUnit", "ns"},
                      {"otherData",
                       {{"target", target_.name},
                        {"clock_hz", target_.clock_hz},
                        {"truncated", truncated_},
                        {"event_limit", event_limit}}}};
  std::ofstream out(path);
  if (!out)
    throw IoError("Session::write_trace: cannot open '" + path + "' for writing");
  out << trace.dump() << '\n';
  if (!out.flush())
    throw IoError("Session::write_trace: writing '" + path + "' failed");
}

} // namespace pxl::emu::detail

namespace pxl::emu {

std::string Profile::summary() const {
  std::ostringstream os;
  const std::int64_t cycles = total.total();
  os << std::fixed << std::setprecision(1);
  os << "Estimated device time on " << target << " (" << std::setprecision(2) << clock_hz / 1e9
     << std::setprecision(1) << " GHz): " << elapsed_cycles << " cycles = " << seconds() * 1e6
     << " us over " << runs << " run(s) and " << steps << " step executions";
  if (runs > 0)
    os << " (" << seconds() * 1e6 / static_cast<double>(runs) << " us per run)";
  if (elapsed_cycles != cycles)
    os << "\n  work " << cycles << " cycles, " << std::setprecision(2)
       << (elapsed_cycles > 0 ? static_cast<double>(cycles) / static_cast<double>(elapsed_cycles)
                              : 0.0)
       << std::setprecision(1)
       << "x the elapsed time as the IPUs overlap; the split and tables below are of the work";
  os << "\n  compute " << detail::percent(total.compute, cycles) << "   exchange "
     << detail::percent(total.exchange, cycles) << "   sync " << detail::percent(total.sync, cycles)
     << "   host " << detail::percent(total.host, cycles) << "\n";
  auto table = [&](const char* title, const std::vector<ProfileLine>& lines) {
    if (lines.empty())
      return;
    os << title << "\n";
    for (const ProfileLine& l : lines) {
      os << "  " << std::left << std::setw(44) << l.name.substr(0, 43) << std::right
         << std::setw(10) << l.executions << " x " << std::setw(14) << l.cycles.total()
         << " cycles " << detail::percent(l.cycles.total(), cycles) << "\n";
    }
  };
  table("By IPU:", ipus);
  table("By graph:", graphs);
  table("By op kind:", op_kinds);
  table("Top ops:", top_ops);
  return os.str();
}

std::string Profile::to_json() const {
  using nlohmann::json;
  auto cost = [](const StepCost& c) {
    return json{{"compute", c.compute},
                {"exchange", c.exchange},
                {"sync", c.sync},
                {"host", c.host},
                {"total", c.total()}};
  };
  auto table = [&](const std::vector<ProfileLine>& lines) {
    json out = json::array();
    for (const ProfileLine& l : lines)
      out.push_back({{"name", l.name}, {"executions", l.executions}, {"cycles", cost(l.cycles)}});
    return out;
  };
  return json{{"target", target},
              {"clock_hz", clock_hz},
              {"runs", runs},
              {"steps", steps},
              {"elapsed_cycles", elapsed_cycles},
              {"total", cost(total)},
              {"ipus", table(ipus)},
              {"graphs", table(graphs)},
              {"op_kinds", table(op_kinds)},
              {"top_ops", table(top_ops)}}
      .dump(1);
}

} // namespace pxl::emu
