// pxl::addons::Progress: training progress as a redrawn bar on a terminal, plain lines
// otherwise (logs, CI, pipes); the main job's and Trainer::fit's.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

#include <unistd.h>

namespace pxl::addons {

/// Reports `done / total` steps with the latest loss and the step rate. On a terminal the
/// bar is redrawn in place at most ten times a second; otherwise a line is printed every
/// tenth of the epoch, so logs stay short.
class Progress {
public:
  Progress(std::string label, std::int64_t total, std::FILE* out = stdout)
      : label_(std::move(label)), total_(total), out_(out), tty_(isatty(fileno(out)) != 0),
        start_(Clock::now()), last_draw_(start_) {}

  void update(std::int64_t done, float loss) {
    const auto now = Clock::now();
    const bool last = done == total_;
    if (tty_) {
      if (!last && now - last_draw_ < std::chrono::milliseconds(100))
        return;
      last_draw_ = now;
      draw_bar(done, loss, now);
      if (last)
        std::fputc('\n', out_);
    } else {
      const std::int64_t every = std::max<std::int64_t>(1, total_ / 10);
      if (!last && done % every != 0)
        return;
      std::fprintf(out_, "%s %lld/%lld  loss %.4f  %.0f steps/s\n", label_.c_str(),
                   static_cast<long long>(done), static_cast<long long>(total_), loss,
                   rate(done, now));
    }
    std::fflush(out_);
  }

  /// Seconds since construction.
  double elapsed() const { return seconds(Clock::now() - start_); }

private:
  using Clock = std::chrono::steady_clock;
  static double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
  double rate(std::int64_t done, Clock::time_point now) const {
    const double s = seconds(now - start_);
    return s > 0 ? static_cast<double>(done) / s : 0.0;
  }

  void draw_bar(std::int64_t done, float loss, Clock::time_point now) {
    constexpr int width = 30;
    const int filled = total_ > 0 ? static_cast<int>(width * done / total_) : width;
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.resize(width, '.');
    std::fprintf(out_, "\r%s [%s] %lld/%lld  loss %.4f  %.0f steps/s ", label_.c_str(), bar.c_str(),
                 static_cast<long long>(done), static_cast<long long>(total_), loss,
                 rate(done, now));
  }

  std::string label_;
  std::int64_t total_;
  std::FILE* out_;
  bool tty_;
  Clock::time_point start_;
  Clock::time_point last_draw_;
};

} // namespace pxl::addons
