#include "flags.hpp"

#include <CLI/CLI.hpp>

#include <limits>

namespace bench {

struct Flags::Impl {
  explicit Impl(const std::string& description) : app(description) {}
  CLI::App app;
};

namespace {

template <typename T>
void add(CLI::App& app, const std::string& name, T& value, const std::string& help,
         std::optional<std::int64_t> min, std::optional<std::int64_t> max) {
  CLI::Option* option = app.add_option(name, value, help)->capture_default_str();
  if (min || max)
    option->check(CLI::Range(min.value_or(std::numeric_limits<std::int64_t>::min()),
                             max.value_or(std::numeric_limits<std::int64_t>::max())));
}

} // namespace

Flags::Flags(const std::string& description) : impl_(std::make_unique<Impl>(description)) {}
Flags::~Flags() = default;

Flags& Flags::option(const std::string& name, int& value, const std::string& help,
                     std::optional<std::int64_t> min, std::optional<std::int64_t> max) {
  add(impl_->app, name, value, help, min, max);
  return *this;
}
Flags& Flags::option(const std::string& name, unsigned& value, const std::string& help,
                     std::optional<std::int64_t> min, std::optional<std::int64_t> max) {
  add(impl_->app, name, value, help, min, max);
  return *this;
}
Flags& Flags::option(const std::string& name, std::int64_t& value, const std::string& help,
                     std::optional<std::int64_t> min, std::optional<std::int64_t> max) {
  add(impl_->app, name, value, help, min, max);
  return *this;
}

Flags& Flags::flag(const std::string& name, bool& value, const std::string& help) {
  impl_->app.add_flag(name, value, help);
  return *this;
}

std::optional<int> Flags::parse(int argc, char** argv) {
  try {
    impl_->app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return impl_->app.exit(e);
  }
  return std::nullopt;
}

} // namespace bench
