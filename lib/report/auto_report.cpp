// Poplar's autoReport engine options: POPLAR_ENGINE_OPTIONS and SessionOptions::engine_options.
#include "pxl/report.hpp"

#include "pxl/core/error.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>

namespace pxl::report {

namespace {

/// Poplar's booleans: the strings "true" and "false".
bool read_bool(const std::string& key, const std::string& value) {
  if (value == "true")
    return true;
  if (value == "false")
    return false;
  throw ValueError("engine option '" + key + "': expected \"true\" or \"false\", found \"" + value +
                   "\"");
}

/// Keys Poplar documents whose files (archive, debug info, serialised graph, lowered
/// variables) pxl has no counterpart for: checked, then ignored without a warning.
constexpr std::string_view no_counterpart[] = {
    "autoReport.outputArchive", "autoReport.outputDebugInfo", "autoReport.outputSerializedGraph",
    "autoReport.outputLoweredVars", "autoReport.streamAtEachRun"};

} // namespace

std::map<std::string, std::string> parse_engine_options(std::string_view json,
                                                        std::string_view source) {
  nlohmann::json parsed;
  try {
    parsed = nlohmann::json::parse(json);
  } catch (const nlohmann::json::parse_error& e) {
    throw ValueError(std::string(source) +
                     ": expected a JSON object such as {\"autoReport.all\": \"true\"}, found "
                     "malformed JSON (" +
                     e.what() + ")");
  }
  if (!parsed.is_object())
    throw ValueError(
        std::string(source) +
        ": expected a JSON object such as {\"autoReport.all\": \"true\"}, found a JSON " +
        parsed.type_name());
  std::map<std::string, std::string> options;
  for (const auto& [key, value] : parsed.items()) {
    if (value.is_string())
      options[key] = value.get<std::string>();
    else if (value.is_boolean() || value.is_number_integer())
      options[key] = value.dump();
    else
      throw ValueError(std::string(source) + ": engine option '" + key +
                       "': expected a string such as \"true\", found a JSON " + value.type_name() +
                       " (" + value.dump() + ")");
  }
  return options;
}

AutoReport read_auto_report(const std::map<std::string, std::string>& options) {
  AutoReport r;
  std::optional<bool> all, graph, execution;
  for (const auto& [key, value] : options) {
    if (key == "autoReport.all") {
      all = read_bool(key, value);
    } else if (key == "autoReport.outputGraphProfile") {
      graph = read_bool(key, value);
    } else if (key == "autoReport.outputExecutionProfile") {
      execution = read_bool(key, value);
    } else if (key == "debug.allowOutOfMemory") {
      r.allow_out_of_memory = read_bool(key, value);
    } else if (key == "autoReport.directory") {
      if (value.empty())
        throw ValueError("engine option 'autoReport.directory': expected a directory, found an "
                         "empty string");
      r.directory = value;
    } else if (key == "autoReport.executionProfileProgramRunCount") {
      std::size_t used = 0;
      long long count = -1;
      try {
        count = std::stoll(value, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != value.size() || count < 0)
        throw ValueError("engine option 'autoReport.executionProfileProgramRunCount': expected a "
                         "non-negative integer, found \"" +
                         value + "\"");
      r.program_run_count = count;
    } else if (std::ranges::find(no_counterpart, key) != std::end(no_counterpart)) {
      read_bool(key, value);
    } else {
      r.unknown.push_back(key);
    }
  }
  r.graph_profile = graph.value_or(all.value_or(false));
  r.execution_profile = execution.value_or(all.value_or(false));
  return r;
}

std::map<std::string, std::string>
engine_options_from_environment(const std::map<std::string, std::string>& explicit_options) {
  std::map<std::string, std::string> options;
  const char* env = std::getenv("POPLAR_ENGINE_OPTIONS");
  if (env != nullptr && std::string_view(env).find_first_not_of(" \t\r\n") != std::string::npos)
    options = parse_engine_options(env, "POPLAR_ENGINE_OPTIONS");
  for (const auto& [key, value] : explicit_options)
    options[key] = value;
  return options;
}

} // namespace pxl::report
