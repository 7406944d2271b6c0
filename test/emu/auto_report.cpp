// Poplar's autoReport engine options (POPLAR_ENGINE_OPTIONS, SessionOptions::engine_options),
// the files a session writes with them, and pxl::report::write_html's page and errors.
#include "helpers.hpp"

#include "pxl/report.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>

#include <fcntl.h>
#include <unistd.h>

namespace test_auto_report {

using namespace pxl;
namespace fs = std::filesystem;
using Options = std::map<std::string, std::string>;
using test_emu::AddProgram;

/// A fresh directory, removed with everything in it at the end of the scope.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("pxl_" + name + "." + std::to_string(::getpid()))) {
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

/// Sets an environment variable for the scope, restoring what it was.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(std::string n, const char* value) : name(std::move(n)) {
    if (const char* v = std::getenv(name.c_str()))
      old = v;
    if (value)
      ::setenv(name.c_str(), value, 1);
    else
      ::unsetenv(name.c_str());
  }
  ~ScopedEnv() {
    if (old)
      ::setenv(name.c_str(), old->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
};

/// What the code in `fn` prints on stderr.
template <typename Fn>
std::string stderr_of(Fn&& fn) {
  std::fflush(stderr);
  const fs::path file = fs::temp_directory_path() / ("pxl_stderr." + std::to_string(::getpid()));
  const int saved = ::dup(2);
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ::dup2(fd, 2);
  ::close(fd);
  fn();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::ifstream in(file);
  std::ostringstream text;
  text << in.rdbuf();
  fs::remove(file);
  return text.str();
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  REQUIRE(in);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
}

/// The runs a trace holds: its host track's slices.
std::int64_t trace_runs(const nlohmann::json& trace) {
  std::int64_t runs = 0;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X" && e["name"].get<std::string>().starts_with("run "))
      ++runs;
  return runs;
}

/// The counts of `attribute` on the page's chart containers of kind `chart`, in order.
std::vector<std::string> attributes(const std::string& page, const std::string& chart,
                                    const std::string& attribute) {
  std::vector<std::string> found;
  const std::string marker = "data-chart=\"" + chart + "\"";
  for (std::size_t at = page.find(marker); at != std::string::npos;
       at = page.find(marker, at + 1)) {
    const std::size_t end = page.find('>', at);
    const std::size_t a = page.find(attribute + "=\"", at);
    if (a < end) {
      const std::size_t v = a + attribute.size() + 2;
      found.push_back(page.substr(v, page.find('"', v) - v));
    }
  }
  return found;
}

TEST_CASE("auto report: POPLAR_ENGINE_OPTIONS' JSON is parsed, its strings kept as Poplar spells "
          "them") {
  const Options o = report::parse_engine_options(
      R"({"autoReport.all":"true", "autoReport.directory":"with_feeds",
          "autoReport.executionProfileProgramRunCount": 10, "debug.allowOutOfMemory": true})",
      "POPLAR_ENGINE_OPTIONS");
  CHECK(o == Options{{"autoReport.all", "true"},
                     {"autoReport.directory", "with_feeds"},
                     {"autoReport.executionProfileProgramRunCount", "10"},
                     {"debug.allowOutOfMemory", "true"}});
  CHECK(report::parse_engine_options("{}", "x").empty());
  CHECK_THROWS_WITH_AS(
      report::parse_engine_options(R"({"autoReport.all": "true")", "POPLAR_ENGINE_OPTIONS"),
      doctest::Contains("POPLAR_ENGINE_OPTIONS: expected a JSON object such as "
                        "{\"autoReport.all\": \"true\"}, found malformed JSON"),
      ValueError);
  CHECK_THROWS_WITH_AS(
      report::parse_engine_options(R"(["autoReport.all"])", "POPLAR_ENGINE_OPTIONS"),
      "POPLAR_ENGINE_OPTIONS: expected a JSON object such as {\"autoReport.all\": "
      "\"true\"}, found a JSON array",
      ValueError);
  CHECK_THROWS_WITH_AS(
      report::parse_engine_options(R"({"autoReport.directory": ["a"]})", "POPLAR_ENGINE_OPTIONS"),
      "POPLAR_ENGINE_OPTIONS: engine option 'autoReport.directory': expected a string such as "
      "\"true\", found a JSON array ([\"a\"])",
      ValueError);
}

TEST_CASE("auto report: autoReport.all sets both profiles, and a part given on its own wins") {
  const report::AutoReport none = report::read_auto_report({});
  CHECK_FALSE(none.enabled());
  CHECK(none.directory == "./");
  CHECK(none.program_run_count == 2);
  const report::AutoReport all = report::read_auto_report({{"autoReport.all", "true"}});
  CHECK(all.graph_profile);
  CHECK(all.execution_profile);
  const report::AutoReport graph_only = report::read_auto_report(
      {{"autoReport.all", "true"}, {"autoReport.outputExecutionProfile", "false"}});
  CHECK(graph_only.graph_profile);
  CHECK_FALSE(graph_only.execution_profile);
  const report::AutoReport execution_only =
      report::read_auto_report({{"autoReport.outputExecutionProfile", "true"},
                                {"autoReport.executionProfileProgramRunCount", "0"},
                                {"autoReport.directory", "out/x"}});
  CHECK_FALSE(execution_only.graph_profile);
  CHECK(execution_only.execution_profile);
  CHECK(execution_only.program_run_count == 0);
  CHECK(execution_only.directory == "out/x");
  // Keys Poplar knows but pxl has no file for are checked and not reported; others are.
  const report::AutoReport tutorial =
      report::read_auto_report({{"autoReport.outputDebugInfo", "true"},
                                {"autoReport.outputSerializedGraph", "false"},
                                {"debug.allowOutOfMemory", "true"},
                                {"debug.instrument", "true"},
                                {"autoReport.outputGraphProfil", "true"}});
  CHECK(tutorial.allow_out_of_memory);
  CHECK_FALSE(tutorial.enabled());
  CHECK(tutorial.unknown ==
        std::vector<std::string>{"autoReport.outputGraphProfil", "debug.instrument"});
}

TEST_CASE("auto report: a bad value names the key, what was expected and what was found") {
  CHECK_THROWS_WITH_AS(report::read_auto_report({{"autoReport.all", "yes"}}),
                       "engine option 'autoReport.all': expected \"true\" or \"false\", found "
                       "\"yes\"",
                       ValueError);
  CHECK_THROWS_WITH_AS(report::read_auto_report({{"autoReport.outputArchive", "1"}}),
                       "engine option 'autoReport.outputArchive': expected \"true\" or \"false\", "
                       "found \"1\"",
                       ValueError);
  for (const char* bad : {"-1", "two", "2x", ""})
    CHECK_THROWS_WITH_AS(
        report::read_auto_report({{"autoReport.executionProfileProgramRunCount", bad}}),
        ("engine option 'autoReport.executionProfileProgramRunCount': expected a non-negative "
         "integer, found \"" +
         std::string(bad) + "\"")
            .c_str(),
        ValueError);
  CHECK_THROWS_WITH_AS(report::read_auto_report({{"autoReport.directory", ""}}),
                       "engine option 'autoReport.directory': expected a directory, found an "
                       "empty string",
                       ValueError);
}

TEST_CASE("auto report: SessionOptions::engine_options win over POPLAR_ENGINE_OPTIONS key by key") {
  const ScopedEnv env("POPLAR_ENGINE_OPTIONS",
                      R"({"autoReport.all":"true", "autoReport.directory":"from_env"})");
  const Options merged = report::engine_options_from_environment({{"autoReport.directory", "x"}});
  CHECK(merged == Options{{"autoReport.all", "true"}, {"autoReport.directory", "x"}});
  const ScopedEnv blank("POPLAR_ENGINE_OPTIONS", "  ");
  CHECK(report::engine_options_from_environment({}).empty());
  const ScopedEnv bad("POPLAR_ENGINE_OPTIONS", "{autoReport.all: true}");
  AddProgram p;
  CHECK_THROWS_WITH_AS(Session(p.ir, "ipu_model"),
                       doctest::Contains("POPLAR_ENGINE_OPTIONS: expected a JSON object"),
                       ValueError);
}

TEST_CASE("auto report: a session writes the memory report, the trace of the first runs, the "
          "profile and the page") {
  const TempDir dir("auto_report");
  AddProgram p;
  const HostTensor x = HostTensor::full({2, 3}, float32, 1.0);
  {
    Session s(p.ir, "ipu_model",
              {.workers = 1,
               .engine_options = {{"autoReport.all", "true"},
                                  {"autoReport.directory", dir.path.string()}}});
    // At construction: the memory report and the page; the profile of no run yet.
    CHECK(read_json(dir.path / "memory.json") ==
          nlohmann::json::parse(s.memory_report().to_json()));
    CHECK(fs::exists(dir.path / "report.html"));
    CHECK_FALSE(fs::exists(dir.path / "trace.json"));
    CHECK(read_json(dir.path / "profile.json")["runs"] == 0);
    auto attached = s.attach();
    for (int r = 0; r < 3; ++r)
      s.run({{p.x, x}});
    // The execution profile turned profiling on; the trace stopped after run 2 (Poplar's
    // default count), the profile goes on until the session ends.
    CHECK(s.profile().runs == 3);
    CHECK(trace_runs(read_json(dir.path / "trace.json")) == 2);
    CHECK(read_json(dir.path / "profile.json")["runs"] == 2);
  }
  const nlohmann::json profile = read_json(dir.path / "profile.json");
  CHECK(profile["runs"] == 3);
  CHECK(profile["op_kinds"].size() > 0);
  CHECK(read_text(dir.path / "profile.txt").starts_with("Estimated device time"));
  const std::string page = read_text(dir.path / "report.html");
  CHECK(attributes(page, "memory", "data-ipus") == std::vector<std::string>{"1"});
  CHECK(attributes(page, "tiles", "data-tiles") == std::vector<std::string>{"1472"});
  CHECK(attributes(page, "timeline", "data-runs") == std::vector<std::string>{"2"});
}

TEST_CASE("auto report: the graph profile alone writes no trace, and the count bounds the trace") {
  const TempDir dir("auto_report_parts");
  AddProgram p;
  {
    Session s(p.ir, "ipu_model",
              {.workers = 1,
               .engine_options = {{"autoReport.outputGraphProfile", "true"},
                                  {"autoReport.directory", (dir.path / "graph").string()}}});
    auto attached = s.attach();
    s.run({{p.x, HostTensor::full({2, 3}, float32, 1.0)}});
    CHECK_THROWS_AS(s.profile(), SessionError); // profiling stays off
  }
  CHECK(fs::exists(dir.path / "graph" / "memory.json"));
  CHECK(fs::exists(dir.path / "graph" / "report.html"));
  CHECK_FALSE(fs::exists(dir.path / "graph" / "trace.json"));
  CHECK_FALSE(fs::exists(dir.path / "graph" / "profile.json"));
  {
    Session s(p.ir, "ipu_model",
              {.workers = 1,
               .engine_options = {{"autoReport.outputExecutionProfile", "true"},
                                  {"autoReport.executionProfileProgramRunCount", "1"},
                                  {"autoReport.directory", (dir.path / "exec").string()}}});
    auto attached = s.attach();
    for (int r = 0; r < 2; ++r)
      s.run({{p.x, HostTensor::full({2, 3}, float32, 1.0)}});
  }
  CHECK_FALSE(fs::exists(dir.path / "exec" / "memory.json"));
  CHECK(trace_runs(read_json(dir.path / "exec" / "trace.json")) == 1);
  CHECK(read_json(dir.path / "exec" / "profile.json")["runs"] == 2);
}

TEST_CASE("auto report: unknown keys are listed once on stderr, whatever the sessions") {
  AddProgram p;
  const std::string printed = stderr_of([&] {
    for (int i = 0; i < 2; ++i)
      Session s(p.ir, "ipu_model",
                {.workers = 1,
                 .engine_options = {{"pxlTest.unknownKey", "1"}, {"pxlTest.otherKey", "2"}}});
  });
  CHECK(printed == "pxl: engine options not used by pxl (ignored): pxlTest.otherKey, "
                   "pxlTest.unknownKey\n");
}

TEST_CASE("auto report: a bad option or a directory that cannot be made fails the session") {
  const TempDir dir("auto_report_bad");
  fs::create_directories(dir.path);
  write_text(dir.path / "file", "not a directory");
  AddProgram p;
  CHECK_THROWS_WITH_AS(
      Session(p.ir, "ipu_model",
              {.workers = 1,
               .engine_options = {{"autoReport.all", "true"},
                                  {"autoReport.directory", (dir.path / "file" / "sub").string()}}}),
      doctest::Contains(("Session: cannot create autoReport.directory '" +
                         (dir.path / "file" / "sub").string() + "'")
                            .c_str()),
      IoError);
  CHECK_THROWS_WITH_AS(
      Session(p.ir, "ipu_model", {.workers = 1, .engine_options = {{"autoReport.all", "on"}}}),
      "engine option 'autoReport.all': expected \"true\" or \"false\", found \"on\"", ValueError);
}

TEST_CASE("auto report: a write that fails later is an IoError from run, and printed by the "
          "destructor") {
  const TempDir dir("auto_report_later");
  AddProgram p;
  const std::string where = "cannot create autoReport.directory '" + dir.path.string() + "'";
  const std::string printed = stderr_of([&] {
    Session s(p.ir, "ipu_model",
              {.workers = 1,
               .engine_options = {{"autoReport.all", "true"},
                                  {"autoReport.directory", dir.path.string()}}});
    auto attached = s.attach();
    fs::remove_all(dir.path);
    write_text(dir.path, "a file where the directory was");
    CHECK_THROWS_WITH_AS(s.run({{p.x, HostTensor::full({2, 3}, float32, 1.0)}}),
                         doctest::Contains(where.c_str()), IoError);
  });
  CHECK(printed.starts_with("pxl: Session: " + where));
}

TEST_CASE("auto report: the memory report's tile map agrees with its histogram and mean") {
  AddProgram p;
  Session s(p.ir, "ipu_model", {.workers = 1});
  const emu::MemoryReport memory = s.memory_report();
  const emu::IpuMemory& m = memory.ipus.at(0);
  REQUIRE(m.tiles.size() == static_cast<std::size_t>(s.target().tiles_per_ipu));
  std::vector<std::int64_t> histogram(10, 0);
  for (const std::int64_t b : m.tiles)
    ++histogram[static_cast<std::size_t>(std::min<std::int64_t>(9, b * 10 / m.tile_capacity))];
  CHECK(histogram == m.tile_histogram);
  CHECK(std::accumulate(m.tiles.begin(), m.tiles.end(), std::int64_t{0}) /
            static_cast<std::int64_t>(m.tiles.size()) ==
        m.tile_mean);
  CHECK(m.tiles[0] > 0);
  CHECK(m.tiles[0] <= m.max_tile);
}

TEST_CASE("report: the page has a chart per IPU where it should, and names the replicas") {
  const TempDir dir("report_ipus");
  Ir ir;
  ir.set_replication_factor(2);
  HostToDeviceStream x;
  {
    auto in_main = ir.main_graph().scope();
    x = h2d_stream({2, 3}, float32, "x");
    const DeviceToHostStream y = d2h_stream({2, 3}, float32, "y");
    const Tensor on0 = ops::host_load(x) * 2.0;
    Tensor on1;
    {
      auto scope = ipu(1);
      on1 = ops::ipu_copy(on0, 1) + 1.0;
    }
    ops::host_store(y, ops::ipu_copy(on1, 0));
  }
  {
    Session s(ir, "ipu_model",
              {.workers = 1,
               .engine_options = {{"autoReport.all", "true"},
                                  {"autoReport.directory", dir.path.string()}}});
    auto attached = s.attach();
    s.run({{x, HostTensor::full({2, 2, 3}, float32, 1.0)}});
  }
  const std::string page = read_text(dir.path / "report.html");
  CHECK(attributes(page, "memory", "data-ipus") == std::vector<std::string>{"2"});
  CHECK(attributes(page, "tiles", "data-ipu") == std::vector<std::string>{"0", "1"});
  CHECK(attributes(page, "liveness", "data-ipus") == std::vector<std::string>{"2"});
  CHECK(attributes(page, "timeline", "data-ipus") == std::vector<std::string>{"2"});
  CHECK(page.find("1 run(s) captured, 2 replica(s) in lockstep") != std::string::npos);
}

TEST_CASE("report: write_html compares two directories, and refuses what it cannot read") {
  const TempDir dir("report_html");
  AddProgram p;
  for (const char* name : {"a", "b"}) {
    Session s(p.ir, "ipu_model",
              {.workers = 1,
               .engine_options = {{"autoReport.all", "true"},
                                  {"autoReport.directory", (dir.path / name).string()}}});
    auto attached = s.attach();
    s.run({{p.x, HostTensor::full({2, 3}, float32, 1.0)}});
  }
  const fs::path out = dir.path / "compare.html";
  report::write_html({(dir.path / "a").string(), (dir.path / "b").string()}, out.string());
  const std::string page = read_text(out);
  CHECK(page.find("data-reports=\"2\"") != std::string::npos);
  CHECK(attributes(page, "memory", "data-report") == std::vector<std::string>{"0", "1"});
  CHECK(attributes(page, "timeline", "data-runs") == std::vector<std::string>{"1", "1"});
  // Self-contained: Chart.js inlined, nothing loaded from elsewhere.
  CHECK(page.find("<script src") == std::string::npos);
  CHECK(page.find("Chart.js v") != std::string::npos);

  CHECK_THROWS_WITH_AS(report::html({}),
                       "pxl::report: expected one report directory, or two to compare, found 0",
                       ValueError);
  const std::string a = (dir.path / "a").string();
  CHECK_THROWS_WITH_AS(report::html({a, a, a}),
                       "pxl::report: expected one report directory, or two to compare, found 3",
                       ValueError);
  const std::string missing = (dir.path / "missing").string();
  CHECK_THROWS_WITH_AS(
      report::html({missing}),
      ("pxl::report: '" + missing + "' is not a report directory: it does not exist").c_str(),
      IoError);
  const fs::path empty = dir.path / "empty";
  fs::create_directories(empty);
  CHECK_THROWS_WITH_AS(report::html({empty.string()}),
                       doctest::Contains("is not a report directory: it has no memory.json"),
                       IoError);
  write_text(empty / "memory.json", "{\"ipus\": [");
  CHECK_THROWS_WITH_AS(report::html({empty.string()}),
                       doctest::Contains("memory.json' is not a report file pxl writes: expected "
                                         "JSON, found malformed text"),
                       ValueError);
  write_text(empty / "memory.json", "{\"tensors\": []}");
  CHECK_THROWS_WITH_AS(report::html({empty.string()}),
                       doctest::Contains("memory.json' is not a report file pxl writes: expected "
                                         "the field 'ipus', found none"),
                       ValueError);
  write_text(empty / "memory.json", "{\"ipus\": [], \"tensors\": []}");
  CHECK_THROWS_WITH_AS(report::html({empty.string()}),
                       doctest::Contains("memory.json' is not a report file pxl writes: expected "
                                         "at least one IPU, found none"),
                       ValueError);
  nlohmann::json memory = read_json(dir.path / "a" / "memory.json");
  memory["ipus"][0]["liveness"] = "many";
  write_text(empty / "memory.json", memory.dump());
  CHECK_THROWS_WITH_AS(report::html({empty.string()}),
                       doctest::Contains("memory.json' is not a report file pxl writes: the field "
                                         "'liveness' has the wrong kind (string)"),
                       ValueError);
  fs::copy_file(dir.path / "a" / "memory.json", empty / "memory.json",
                fs::copy_options::overwrite_existing);
  write_text(empty / "trace.json", "{\"traceEvents\": {}}");
  CHECK_THROWS_WITH_AS(report::html({empty.string()}),
                       doctest::Contains("trace.json' is not a report file pxl writes: "
                                         "'traceEvents' is not an array"),
                       ValueError);
  fs::remove(empty / "trace.json");
  write_text(empty / "profile.json",
             R"({"runs": 1, "total": {"compute": 0, "exchange": 0, "sync": 0, "host": 0}})");
  CHECK_THROWS_WITH_AS(report::html({empty.string()}),
                       doctest::Contains("profile.json' is not a report file pxl writes: expected "
                                         "the field 'op_kinds', found none"),
                       ValueError);
  CHECK_THROWS_WITH_AS(report::write_html({a}, (dir.path / "no" / "such" / "page.html").string()),
                       doctest::Contains("pxl::report: cannot open '"), IoError);
  {
    const ScopedEnv no_chartjs("PXL_CHARTJS", "/nonexistent/chart.min.js");
    CHECK_THROWS_WITH_AS(report::html({a}),
                         doctest::Contains("Chart.js is not installed: expected "
                                           "'/nonexistent/chart.min.js' (Debian's package "
                                           "libjs-chart.js"),
                         IoError);
  }
}

} // namespace test_auto_report
