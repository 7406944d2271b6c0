// A benchmark's command line. CLI11 parses it, compiled once for every benchmark (flags.cpp,
// in the benchmarks' support library) instead of once per benchmark.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace bench {

/// Options `--name VALUE`, each with its default shown in `--help`:
///
///     bench::Flags flags("What this benchmark measures");
///     flags.option("--reps", reps, "Timings per figure", 1);
///     if (const auto exit_code = flags.parse(argc, argv))
///       return *exit_code;
class Flags {
public:
  explicit Flags(const std::string& description);
  ~Flags();
  Flags(const Flags&) = delete;
  Flags& operator=(const Flags&) = delete;

  /// An option setting `value`; values below `min` (or above `max`) are refused.
  Flags& option(const std::string& name, int& value, const std::string& help,
                std::optional<std::int64_t> min = std::nullopt,
                std::optional<std::int64_t> max = std::nullopt);
  Flags& option(const std::string& name, unsigned& value, const std::string& help,
                std::optional<std::int64_t> min = std::nullopt,
                std::optional<std::int64_t> max = std::nullopt);
  Flags& option(const std::string& name, std::int64_t& value, const std::string& help,
                std::optional<std::int64_t> min = std::nullopt,
                std::optional<std::int64_t> max = std::nullopt);

  /// A switch `--name` (no value) that sets `value` to true.
  Flags& flag(const std::string& name, bool& value, const std::string& help);

  /// Parses the command line. Returns the exit code for main to return when it was `--help`
  /// (0, the help printed) or a mistake (CLI11's, its message printed); nothing otherwise.
  std::optional<int> parse(int argc, char** argv);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace bench
