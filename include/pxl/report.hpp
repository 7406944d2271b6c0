// pxl::report: Poplar's `autoReport` engine options, and the self-contained HTML page that
// shows a session's report directory (PopVision's memory, liveness and execution views).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace pxl::report {

/// The files a report directory holds (each optional but the memory report).
inline constexpr std::string_view memory_file = "memory.json";       ///< MemoryReport::to_json
inline constexpr std::string_view trace_file = "trace.json";         ///< Session::write_trace
inline constexpr std::string_view profile_file = "profile.json";     ///< Profile::to_json
inline constexpr std::string_view profile_text_file = "profile.txt"; ///< Profile::summary
inline constexpr std::string_view html_file = "report.html";         ///< write_html

/// What Poplar's `autoReport.*` engine options ask of a session (docs/report.md).
struct AutoReport {
  /// `autoReport.outputGraphProfile`: the memory report (and the page).
  bool graph_profile = false;
  /// `autoReport.outputExecutionProfile`: the trace and the profile summary; turns on the
  /// session's profiling.
  bool execution_profile = false;
  /// `autoReport.directory` (Poplar's default "./").
  std::string directory = "./";
  /// `autoReport.executionProfileProgramRunCount`: the runs the trace captures (Poplar's
  /// default 2).
  std::int64_t program_run_count = 2;
  /// `debug.allowOutOfMemory`: SessionOptions::allow_out_of_memory.
  bool allow_out_of_memory = false;
  /// Keys that are neither autoReport's nor another key pxl reads, in order.
  std::vector<std::string> unknown;

  bool enabled() const { return graph_profile || execution_profile; }
};

/// The engine options in `json`, the text of POPLAR_ENGINE_OPTIONS: a JSON object whose values
/// are strings (booleans and integers are taken as their text). ValueError naming `source`
/// when it is not valid JSON, not an object, or holds another kind of value.
std::map<std::string, std::string> parse_engine_options(std::string_view json,
                                                        std::string_view source);

/// Reads Poplar's keys from `options`: `autoReport.all` sets outputGraphProfile and
/// outputExecutionProfile (a key given on its own wins over it, whatever the order);
/// booleans are "true" or "false", the run count a non-negative integer, the directory
/// non-empty. ValueError naming the key, what was expected and what was found. Recognised keys
/// without a counterpart here (autoReport.outputArchive, outputDebugInfo,
/// outputSerializedGraph, outputLoweredVars, streamAtEachRun) are checked and otherwise ignored;
/// any other key goes to AutoReport::unknown.
AutoReport read_auto_report(const std::map<std::string, std::string>& options);

/// The options a session uses: POPLAR_ENGINE_OPTIONS' (when set and not empty) overlaid with
/// `explicit_options` key by key (an explicit key wins).
std::map<std::string, std::string>
engine_options_from_environment(const std::map<std::string, std::string>& explicit_options);

/// One report directory, or two side by side (`dirs[0]` on the left), as one HTML page that
/// needs no network: Chart.js (Debian's libjs-chart.js) and the data are inlined. IoError
/// when a directory or its memory.json is missing, when Chart.js is not installed (naming the
/// package) or `out_path` cannot be written; ValueError when a report file is not what
/// pxl writes (naming the file and what is wrong). ValueError unless 1 or 2 directories.
void write_html(const std::vector<std::string>& dirs, const std::string& out_path);
/// The page write_html writes.
std::string html(const std::vector<std::string>& dirs);

/// Where Chart.js is read from: PXL_CHARTJS when set, else Debian's
/// /usr/share/javascript/chart.js/chart.min.js (or chart.umd.js).
std::string chartjs_path();

} // namespace pxl::report
