// pxl::report::write_html: a report directory (or two) as one self-contained page drawn with
// Chart.js, which is read from Debian's libjs-chart.js and inlined.
#include "pxl/report.hpp"

#include "pxl/core/error.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace pxl::report {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

/// PopVision's memory categories, in the order the stacked bars show them.
constexpr std::string_view categories[] = {"variables",           "constants",    "vertex_code",
                                           "vertex_state",        "control_code", "exchange_code",
                                           "not_always_live_peak"};
/// The execution phases of a step (StepCost), in the order a step's segments are drawn.
constexpr std::string_view phases[] = {"compute", "exchange", "sync", "host"};
/// Largest tensors shown.
constexpr std::size_t top_tensors = 15;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw IoError("pxl::report: cannot read '" + path.string() + "'");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

json read_json(const fs::path& path) {
  try {
    return json::parse(read_text(path));
  } catch (const json::parse_error& e) {
    throw ValueError("pxl::report: '" + path.string() +
                     "' is not a report file pxl writes: expected JSON, found malformed text (" +
                     e.what() + ")");
  }
}

/// `object[key]` as T; ValueError naming the file and key when it is missing or of another kind.
template <typename T>
T field(const json& object, std::string_view key, const fs::path& file) {
  const std::string k(key);
  if (!object.is_object() || !object.contains(k))
    throw ValueError("pxl::report: '" + file.string() + "' is not a report file pxl writes: " +
                     "expected the field '" + k + "', found none");
  try {
    return object.at(k).get<T>();
  } catch (const json::exception&) {
    throw ValueError("pxl::report: '" + file.string() + "' is not a report file pxl writes: " +
                     "the field '" + k + "' has the wrong kind (" + object.at(k).type_name() + ")");
  }
}

/// memory.json, reduced to what the page draws.
json memory_model(const fs::path& file) {
  const json m = read_json(file);
  json ipus = json::array();
  for (const json& ipu : field<json::array_t>(m, "ipus", file)) {
    json c = json::object();
    for (std::string_view cat : categories)
      c[std::string(cat)] = field<std::int64_t>(ipu, cat, file);
    ipus.push_back(
        {{"ipu", field<std::int64_t>(ipu, "ipu", file)},
         {"capacity", field<std::int64_t>(ipu, "capacity", file)},
         {"total", field<std::int64_t>(ipu, "total", file)},
         {"categories", std::move(c)},
         {"tile_capacity", field<std::int64_t>(ipu, "tile_capacity", file)},
         {"max_tile", field<std::int64_t>(ipu, "max_tile", file)},
         {"tiles", ipu.contains("tiles") ? field<std::vector<std::int64_t>>(ipu, "tiles", file)
                                         : std::vector<std::int64_t>{}},
         {"liveness", field<std::vector<std::int64_t>>(ipu, "liveness", file)},
         {"peak_step", field<std::int64_t>(ipu, "peak_step", file)},
         {"peak_step_op", field<std::string>(ipu, "peak_step_op", file)}});
  }
  if (ipus.empty())
    throw ValueError("pxl::report: '" + file.string() +
                     "' is not a report file pxl writes: expected at least one IPU, found none");
  json tensors = json::array();
  for (const json& t : field<json::array_t>(m, "tensors", file)) {
    if (tensors.size() == top_tensors)
      break;
    tensors.push_back({{"id", field<std::string>(t, "id", file)},
                       {"ipu", field<std::int64_t>(t, "ipu", file)},
                       {"bytes", field<std::int64_t>(t, "bytes", file)},
                       {"always_live", field<bool>(t, "always_live", file)}});
  }
  const json sm = field<json>(m, "streaming_memory", file);
  json buffers = json::array();
  for (const json& b : field<json::array_t>(sm, "buffers", file))
    buffers.push_back({{"name", field<std::string>(b, "name", file)},
                       {"bytes", field<std::int64_t>(b, "bytes", file)}});
  return {{"ipus", std::move(ipus)},
          {"tensors", std::move(tensors)},
          {"streaming",
           {{"capacity", field<std::int64_t>(sm, "capacity", file)},
            {"used", field<std::int64_t>(sm, "used", file)},
            {"buffers", std::move(buffers)}}}};
}

/// trace.json as a timeline: per phase, the segments [start_us, end_us, track] of every step
/// (enclosing calls and loops left out), adjacent segments of a phase on a track merged.
json timeline_model(const fs::path& file) {
  const json trace = read_json(file);
  const json events = field<json>(trace, "traceEvents", file);
  if (!events.is_array())
    throw ValueError("pxl::report: '" + file.string() +
                     "' is not a report file pxl writes: 'traceEvents' is not an array");
  // The device tracks are the processes named "IPU k ..."; the host's wall clock is apart.
  std::map<std::int64_t, std::string> tracks;
  for (const json& e : events)
    if (field<std::string>(e, "ph", file) == "M" &&
        field<std::string>(e, "name", file) == "process_name") {
      const auto name = field<json>(e, "args", file).value("name", std::string());
      if (name.starts_with("IPU "))
        tracks[field<std::int64_t>(e, "pid", file)] = name.substr(0, name.find(' ', 4));
    }
  std::map<std::string_view, std::vector<std::array<double, 3>>> segments;
  std::int64_t replicas = 1, runs = 0;
  double end = 0;
  for (const json& e : events) {
    if (field<std::string>(e, "ph", file) != "X")
      continue;
    const auto pid = field<std::int64_t>(e, "pid", file);
    if (!tracks.contains(pid)) {
      ++runs; // the host track holds one slice per run
      continue;
    }
    if (field<std::string>(e, "cat", file) == "control")
      continue;
    const json args = field<json>(e, "args", file);
    replicas = std::max(replicas, args.value("replicas", std::int64_t{1}));
    const double us_per_cycle =
        field<double>(e, "dur", file) / std::max<double>(1, field<double>(args, "cycles", file));
    double at = field<double>(e, "ts", file);
    const auto track = static_cast<double>(std::distance(tracks.begin(), tracks.find(pid)));
    for (std::string_view phase : phases) {
      const double length =
          static_cast<double>(field<std::int64_t>(args, phase, file)) * us_per_cycle;
      if (length <= 0)
        continue;
      auto& s = segments[phase];
      if (!s.empty() && s.back()[2] == track && s.back()[1] >= at - 1e-9)
        s.back()[1] = std::max(s.back()[1], at + length);
      else
        s.push_back({at, at + length, track});
      at += length;
    }
    end = std::max(end, at);
  }
  json names = json::array(), by_phase = json::object();
  for (const auto& [pid, name] : tracks)
    names.push_back(name);
  std::size_t bars = 0;
  for (std::string_view phase : phases) {
    by_phase[std::string(phase)] = segments[phase];
    bars += segments[phase].size();
  }
  const json other = trace.value("otherData", json::object());
  return {{"tracks", std::move(names)},
          {"segments", std::move(by_phase)},
          {"bars", bars},
          {"runs", runs},
          {"replicas", replicas},
          {"end_us", end},
          {"truncated", other.value("truncated", false)}};
}

/// profile.json's op kinds and totals.
json profile_model(const fs::path& file) {
  const json p = read_json(file);
  json kinds = json::array();
  // What the op kinds leave of the total: the runs' host round trips.
  const json total = field<json>(p, "total", file);
  json round_trips = {{"name", "host round trip"},
                      {"executions", field<std::int64_t>(p, "runs", file)}};
  for (std::string_view phase : phases)
    round_trips[std::string(phase)] = field<std::int64_t>(total, phase, file);
  for (const json& k : field<json::array_t>(p, "op_kinds", file)) {
    json line = {{"name", field<std::string>(k, "name", file)},
                 {"executions", field<std::int64_t>(k, "executions", file)}};
    const json cycles = field<json>(k, "cycles", file);
    for (std::string_view phase : phases) {
      line[std::string(phase)] = field<std::int64_t>(cycles, phase, file);
      round_trips[std::string(phase)] = round_trips[std::string(phase)].get<std::int64_t>() -
                                        line[std::string(phase)].get<std::int64_t>();
    }
    kinds.push_back(std::move(line));
  }
  kinds.push_back(std::move(round_trips));
  auto cycles = [](const json& line) {
    std::int64_t sum = 0;
    for (std::string_view phase : phases)
      sum += line[std::string(phase)].get<std::int64_t>();
    return sum;
  };
  std::stable_sort(kinds.begin(), kinds.end(),
                   [&](const json& a, const json& b) { return cycles(a) > cycles(b); });
  return {{"op_kinds", std::move(kinds)},
          {"runs", field<std::int64_t>(p, "runs", file)},
          {"steps", field<std::int64_t>(p, "steps", file)},
          {"elapsed_cycles", field<std::int64_t>(p, "elapsed_cycles", file)},
          {"clock_hz", field<double>(p, "clock_hz", file)},
          {"target", field<std::string>(p, "target", file)}};
}

json directory_model(const std::string& dir) {
  const fs::path d(dir);
  if (!fs::is_directory(d))
    throw IoError("pxl::report: '" + dir + "' is not a report directory: it does not exist");
  const fs::path memory = d / memory_file;
  if (!fs::exists(memory))
    throw IoError("pxl::report: '" + dir + "' is not a report directory: it has no " +
                  std::string(memory_file) +
                  " (a session writes one with autoReport.outputGraphProfile)");
  json model = {{"name", d.lexically_normal().string()}, {"memory", memory_model(memory)}};
  if (fs::exists(d / trace_file))
    model["timeline"] = timeline_model(d / trace_file);
  if (fs::exists(d / profile_file))
    model["profile"] = profile_model(d / profile_file);
  return model;
}

std::string escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

/// Text safe inside a <script> element: no "</" that could close it.
std::string script_safe(std::string text) {
  for (std::size_t at = 0; (at = text.find("</", at)) != std::string::npos; at += 3)
    text.replace(at, 2, "<\\/");
  return text;
}

std::string human(std::int64_t bytes) {
  std::ostringstream s;
  s << std::fixed;
  s.precision(1);
  if (bytes >= std::int64_t{1} << 30)
    s << static_cast<double>(bytes) / (std::int64_t{1} << 30) << " GiB";
  else if (bytes >= 1 << 20)
    s << static_cast<double>(bytes) / (1 << 20) << " MiB";
  else if (bytes >= 1 << 10)
    s << static_cast<double>(bytes) / (1 << 10) << " KiB";
  else
    s << bytes << " B";
  return s.str();
}

/// A chart's container: the page's script draws into it what `kind` says, from report `r`;
/// `attrs` are the counts the browser test checks.
std::string chart(std::size_t r, std::string_view kind, std::string_view attrs,
                  std::string_view height = "260px") {
  std::ostringstream s;
  s << "<div class=\"chart\" style=\"height:" << height << "\" data-chart=\"" << kind
    << "\" data-report=\"" << r << "\" " << attrs << "><canvas></canvas></div>\n";
  return s.str();
}

/// One column (a report) of each section.
struct Column {
  std::map<std::string, std::string> sections;
};

Column column(std::size_t r, const json& model) {
  Column c;
  const json& memory = model["memory"];
  const std::size_t ipus = memory["ipus"].size();
  std::ostringstream summary;
  summary << std::fixed;
  summary.precision(1);
  summary << "<h3>" << escape(model["name"].get<std::string>()) << "</h3>\n<table>";
  for (const json& ipu : memory["ipus"])
    summary << "<tr><td>IPU " << ipu["ipu"].get<std::int64_t>() << "</td><td>"
            << human(ipu["total"].get<std::int64_t>()) << " of "
            << human(ipu["capacity"].get<std::int64_t>()) << ", most loaded tile "
            << human(ipu["max_tile"].get<std::int64_t>()) << " of "
            << human(ipu["tile_capacity"].get<std::int64_t>()) << "</td></tr>";
  if (model.contains("profile")) {
    const json& p = model["profile"];
    const double us = static_cast<double>(p["elapsed_cycles"].get<std::int64_t>()) /
                      p["clock_hz"].get<double>() * 1e6;
    const auto runs = p["runs"].get<std::int64_t>();
    summary << "<tr><td>Estimated device time</td><td>" << us << " us over " << runs << " run(s) ("
            << (runs > 0 ? us / static_cast<double>(runs) : 0.0) << " us per run), "
            << p["steps"].get<std::int64_t>() << " step executions ("
            << escape(p["target"].get<std::string>()) << ")</td></tr>";
  }
  summary << "</table>\n";
  c.sections["summary"] = summary.str();
  c.sections["memory"] = chart(r, "memory", "data-ipus=\"" + std::to_string(ipus) + "\"");
  std::string tiles;
  for (const json& ipu : memory["ipus"])
    tiles += chart(r, "tiles",
                   "data-ipu=\"" + std::to_string(ipu["ipu"].get<std::int64_t>()) +
                       "\" data-tiles=\"" + std::to_string(ipu["tiles"].size()) + "\"",
                   "200px");
  c.sections["tiles"] = tiles;
  std::string liveness;
  for (const json& ipu : memory["ipus"])
    liveness += "<p class=\"peak\">IPU " + std::to_string(ipu["ipu"].get<std::int64_t>()) +
                ": peak at step " + std::to_string(ipu["peak_step"].get<std::int64_t>()) + ", " +
                escape(ipu["peak_step_op"].get<std::string>()) + "</p>\n";
  c.sections["liveness"] =
      liveness +
      chart(r, "liveness",
            "data-ipus=\"" + std::to_string(ipus) + "\" data-steps=\"" +
                std::to_string(memory["ipus"][0]["liveness"].size()) + "\" data-peak-step=\"" +
                std::to_string(memory["ipus"][0]["peak_step"].get<std::int64_t>()) + "\"");
  c.sections["tensors"] = chart(
      r, "tensors", "data-tensors=\"" + std::to_string(memory["tensors"].size()) + "\"", "360px");
  const json& sm = memory["streaming"];
  c.sections["streaming"] =
      "<p>" + human(sm["used"].get<std::int64_t>()) + " of " +
      human(sm["capacity"].get<std::int64_t>()) + " in " + std::to_string(sm["buffers"].size()) +
      " remote buffer(s)</p>\n" +
      chart(r, "streaming", "data-buffers=\"" + std::to_string(sm["buffers"].size()) + "\"",
            "160px");
  if (model.contains("timeline")) {
    const json& t = model["timeline"];
    c.sections["timeline"] =
        "<p>" + std::to_string(t["runs"].get<std::int64_t>()) + " run(s) captured, " +
        std::to_string(t["replicas"].get<std::int64_t>()) + " replica(s) in lockstep" +
        (t["truncated"].get<bool>() ? ", truncated" : "") + "</p>\n" +
        chart(r, "timeline",
              "data-ipus=\"" + std::to_string(t["tracks"].size()) + "\" data-runs=\"" +
                  std::to_string(t["runs"].get<std::int64_t>()) + "\" data-bars=\"" +
                  std::to_string(t["bars"].get<std::size_t>()) + "\"",
              std::to_string(90 + 50 * t["tracks"].size()) + "px");
  } else {
    c.sections["timeline"] = "<p>No execution trace (autoReport.outputExecutionProfile).</p>\n";
  }
  if (model.contains("profile"))
    c.sections["op-kinds"] = chart(
        r, "op-kinds", "data-kinds=\"" + std::to_string(model["profile"]["op_kinds"].size()) + "\"",
        "360px");
  else
    c.sections["op-kinds"] = "<p>No profile (autoReport.outputExecutionProfile).</p>\n";
  return c;
}

constexpr std::string_view style = R"(
body { font-family: sans-serif; margin: 1em; color: #222; }
section { margin-bottom: 1.5em; }
.row { display: grid; gap: 1.5em; }
.chart { position: relative; width: 100%; }
table { border-collapse: collapse; font-size: 0.9em; }
td { padding: 0.1em 0.8em 0.1em 0; }
#pxl-errors { color: #b00; white-space: pre-wrap; }
)";

/// Records every script error in the page itself (data-errors and #pxl-errors), where a
/// headless browser's dumped DOM shows it.
constexpr std::string_view error_script = R"(
window.pxlErrors = [];
function pxlError(message) {
  window.pxlErrors.push(String(message));
  document.documentElement.dataset.errors = window.pxlErrors.length;
  var e = document.getElementById('pxl-errors');
  if (e) e.textContent = window.pxlErrors.join('\n');
}
window.addEventListener('error', function (e) { pxlError(e.message); });
window.addEventListener('unhandledrejection', function (e) { pxlError(e.reason); });
(function () {
  var original = console.error;
  console.error = function () { pxlError(Array.prototype.join.call(arguments, ' ')); original.apply(console, arguments); };
})();
)";

/// Builds each chart's configuration from the inlined data; Chart.js draws it.
constexpr std::string_view charts_script = R"(
(function () {
  var data = JSON.parse(document.getElementById('pxl-data').textContent);
  var palette = { variables: '#4e79a7', constants: '#59a14f', vertex_code: '#edc948',
    vertex_state: '#b07aa1', control_code: '#ff9da7', exchange_code: '#9c755f',
    not_always_live_peak: '#e15759', compute: '#4e79a7', exchange: '#f28e2b', sync: '#bab0ac',
    host: '#e15759' };
  var lines = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1', '#9c755f'];
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  var heat = function (fraction) {
    var f = Math.max(0, Math.min(1, fraction));
    return 'hsl(' + Math.round(240 * (1 - f)) + ', 75%, 50%)';
  };
  var timelineEnd = 0;
  var opKindsEnd = 0;
  data.reports.forEach(function (r) {
    if (r.timeline) timelineEnd = Math.max(timelineEnd, r.timeline.end_us);
    if (r.profile) r.profile.op_kinds.forEach(function (l) {
      opKindsEnd = Math.max(opKindsEnd, data.phases.reduce(function (s, p) { return s + l[p]; }, 0)); });
  });
  var configs = {
    memory: function (r) {
      return { type: 'bar',
        data: { labels: r.memory.ipus.map(function (m) { return 'IPU ' + m.ipu; }),
          datasets: data.categories.map(function (c) {
            return { label: c, backgroundColor: palette[c],
              data: r.memory.ipus.map(function (m) { return m.categories[c]; }) }; }) },
        options: { indexAxis: 'y', scales: { x: { stacked: true, title: { display: true, text: 'bytes' } },
          y: { stacked: true } } } };
    },
    tiles: function (r, el) {
      var m = r.memory.ipus.filter(function (i) { return String(i.ipu) === el.dataset.ipu; })[0];
      return { type: 'bar',
        data: { labels: m.tiles.map(function (_, t) { return t; }),
          datasets: [{ label: 'IPU ' + m.ipu + ': bytes per tile (blue: empty, red: full)', data: m.tiles,
            backgroundColor: m.tiles.map(function (b) { return heat(b / m.tile_capacity); }),
            barPercentage: 1, categoryPercentage: 1 }] },
        options: { plugins: { legend: { display: true } },
          scales: { x: { title: { display: true, text: 'tile' }, ticks: { maxTicksLimit: 16 } },
            y: { title: { display: true, text: 'bytes' } } } } };
    },
    liveness: function (r) {
      return { type: 'line',
        data: { labels: r.memory.ipus[0].liveness.map(function (_, s) { return s; }),
          datasets: r.memory.ipus.map(function (m, i) {
            return { label: 'IPU ' + m.ipu + ' not-always-live bytes (peak at step ' + m.peak_step + ')',
              data: m.liveness, borderColor: lines[i % lines.length], pointRadius: 0, stepped: true }; }) },
        options: { scales: { x: { title: { display: true, text: 'step' } },
          y: { title: { display: true, text: 'bytes' } } } } };
    },
    tensors: function (r) {
      return { type: 'bar',
        data: { labels: r.memory.tensors.map(function (t) { return t.id + ' (IPU ' + t.ipu + ')'; }),
          datasets: [{ label: 'bytes', data: r.memory.tensors.map(function (t) { return t.bytes; }),
            backgroundColor: r.memory.tensors.map(function (t) {
              return t.always_live ? palette.variables : palette.not_always_live_peak; }) }] },
        options: { indexAxis: 'y', plugins: { legend: { display: false } } } };
    },
    streaming: function (r) {
      var s = r.memory.streaming;
      return { type: 'bar',
        data: { labels: s.buffers.map(function (b) { return b.name; }),
          datasets: [{ label: 'bytes per remote buffer', backgroundColor: palette.variables,
            data: s.buffers.map(function (b) { return b.bytes; }) }] },
        options: { indexAxis: 'y' } };
    },
    timeline: function (r) {
      var t = r.timeline;
      return { type: 'bar',
        data: { labels: t.tracks,
          datasets: data.phases.map(function (p) {
            return { label: p, backgroundColor: palette[p], grouped: false, barPercentage: 0.8,
              data: t.segments[p].map(function (s) { return { x: [s[0], s[1]], y: t.tracks[s[2]] }; }) }; }) },
        options: { indexAxis: 'y', parsing: { xAxisKey: 'x', yAxisKey: 'y' },
          plugins: { tooltip: { enabled: false } },
          scales: { x: { type: 'linear', min: 0, max: timelineEnd,
            title: { display: true, text: 'estimated device time (us)' } } } } };
    },
    'op-kinds': function (r) {
      var k = r.profile.op_kinds;
      return { type: 'bar',
        data: { labels: k.map(function (l) { return l.name + ' x' + l.executions; }),
          datasets: data.phases.map(function (p) {
            return { label: p, backgroundColor: palette[p], data: k.map(function (l) { return l[p]; }) }; }) },
        options: { indexAxis: 'y', scales: { x: { stacked: true, max: opKindsEnd,
          title: { display: true, text: 'cycles (every run)' } },
          y: { stacked: true, ticks: { autoSkip: false } } } } };
    }
  };
  var drawn = 0;
  document.querySelectorAll('[data-chart]').forEach(function (el) {
    var r = data.reports[Number(el.dataset.report)];
    var chart = new Chart(el.querySelector('canvas'), configs[el.dataset.chart](r, el));
    var elements = 0;
    chart.data.datasets.forEach(function (_, i) { elements += chart.getDatasetMeta(i).data.length; });
    el.dataset.rendered = elements;
    ++drawn;
  });
  document.documentElement.dataset.charts = drawn;
  document.documentElement.dataset.status = 'ok';
})();
)";

} // namespace

std::string chartjs_path() {
  if (const char* env = std::getenv("PXL_CHARTJS"); env != nullptr && *env != '\0')
    return env;
  for (const char* candidate : {"/usr/share/javascript/chart.js/chart.min.js",
                                "/usr/share/javascript/chart.js/chart.umd.js"})
    if (fs::exists(candidate))
      return candidate;
  return "/usr/share/javascript/chart.js/chart.min.js";
}

std::string html(const std::vector<std::string>& dirs) {
  if (dirs.empty() || dirs.size() > 2)
    throw ValueError("pxl::report: expected one report directory, or two to compare, found " +
                     std::to_string(dirs.size()));
  const std::string chartjs = chartjs_path();
  if (!fs::exists(chartjs))
    throw IoError("pxl::report: Chart.js is not installed: expected '" + chartjs +
                  "' (Debian's package libjs-chart.js; `apt-get install libjs-chart.js`, or "
                  "set PXL_CHARTJS to a Chart.js 3 UMD build)");
  json reports = json::array();
  std::vector<Column> columns;
  for (std::size_t r = 0; r < dirs.size(); ++r) {
    reports.push_back(directory_model(dirs[r]));
    columns.push_back(column(r, reports.back()));
  }
  json cats = json::array(), phase_names = json::array();
  for (std::string_view c : categories)
    cats.push_back(c);
  for (std::string_view p : phases)
    phase_names.push_back(p);
  const json data = {{"reports", reports}, {"categories", cats}, {"phases", phase_names}};

  std::ostringstream page;
  page << "<!DOCTYPE html>\n<html lang=\"en\" data-status=\"loading\" data-errors=\"0\" "
          "data-reports=\""
       << dirs.size() << "\">\n<head>\n<meta charset=\"utf-8\">\n<title>pxl report: ";
  for (std::size_t r = 0; r < dirs.size(); ++r)
    page << (r ? " vs " : "") << escape(reports[r]["name"].get<std::string>());
  page << "</title>\n<style>" << style << ".row { grid-template-columns: repeat(" << dirs.size()
       << ", minmax(0, 1fr)); }\n</style>\n<script>" << error_script << "</script>\n<script>\n"
       << script_safe(read_text(chartjs)) << "\n</script>\n</head>\n<body>\n"
       << "<h1>pxl report (estimated, IPU Model)</h1>\n<div id=\"pxl-errors\"></div>\n";
  const std::pair<std::string_view, std::string_view> sections[] = {
      {"summary", "Summary"},
      {"timeline", "Execution timeline per IPU of the captured runs"},
      {"op-kinds", "Time by op kind"},
      {"memory", "Memory per IPU by category (one replica)"},
      {"tiles", "Tile map: bytes per tile at the not-always-live peak"},
      {"liveness", "Liveness: not-always-live bytes over the main program's steps"},
      {"tensors", "Largest tensors (always live in blue)"},
      {"streaming", "Streaming Memory"}};
  for (const auto& [id, title] : sections) {
    page << "<section data-section=\"" << id << "\">\n<h2>" << title
         << "</h2>\n<div class=\"row\">\n";
    for (const Column& c : columns)
      page << "<div class=\"col\">\n" << c.sections.at(std::string(id)) << "</div>\n";
    page << "</div>\n</section>\n";
  }
  page << "<script type=\"application/json\" id=\"pxl-data\">" << script_safe(data.dump())
       << "</script>\n<script>" << charts_script << "</script>\n</body>\n</html>\n";
  return page.str();
}

void write_html(const std::vector<std::string>& dirs, const std::string& out_path) {
  const std::string page = html(dirs);
  std::ofstream out(out_path, std::ios::binary);
  if (!out)
    throw IoError("pxl::report: cannot open '" + out_path + "' for writing");
  out << page;
  if (!out.flush())
    throw IoError("pxl::report: writing '" + out_path + "' failed");
}

} // namespace pxl::report
