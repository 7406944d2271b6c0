// IpuTimeline: the device time of steps reported in execution order, each IPU of a replica
// with its own clock (two with IO tiles: one per tile set), so that the IPUs of a pipeline, and
// the IO tiles' transfers beside the compute tiles' work, overlap as they do on hardware. The
// Profiler keeps one over a Session's runs; emu::estimate replays a program's steps into one.
#pragma once

#include "pxl/emu/step_observer.hpp"
#include "pxl/ir/view.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

namespace pxl::emu::detail {

class IpuTimeline {
public:
  /// `io_tiles`: the IPUs have IO tiles (Target::io_tiles), each tile set its own clock.
  IpuTimeline(std::int64_t ipus, bool io_tiles)
      : sets_(io_tiles ? 2 : 1),
        clocks_(static_cast<std::size_t>(std::max<std::int64_t>(1, ipus)) * sets_) {}

  /// At most two clocks (an IpuCopy's IPUs, or an IPU's two tile sets), without allocating:
  /// the profiler asks at every step.
  struct Ipus {
    std::array<std::size_t, 2> ipu{};
    std::size_t count = 0;
    const std::size_t* begin() const { return ipu.data(); }
    const std::size_t* end() const { return ipu.data() + count; }
    bool empty() const { return count == 0; }
  };

  /// The clocks step `info` waits for and advances: its IPU's (its tile set's) for a step that
  /// works on one IPU (an IPU-local one, a host or Streaming Memory transfer, a collective,
  /// whose peers are the other replicas' same IPU), both tile sets' for one that reads or
  /// writes the other set (StepInfo::spans_tile_sets), both IPUs' for an IpuCopy; none
  /// (meaning all) for calls, loops and conditionals, whose callees start everywhere at once.
  Ipus occupied(const StepInfo& info, const IrView& view) const {
    const std::size_t io = sets_ > 1 && info.tile_set == TileSet::io ? 1 : 0;
    auto index = [&](std::int64_t ipu) {
      const auto ipus = static_cast<std::int64_t>(clocks_.size() / sets_);
      return static_cast<std::size_t>(std::clamp<std::int64_t>(ipu, 0, ipus - 1)) * sets_ + io;
    };
    if (info.kind == StepKind::call || info.kind == StepKind::repeat ||
        info.kind == StepKind::conditional)
      return {};
    if (info.op && info.op_kind == OpKind::IpuCopy) {
      const std::size_t from = index(view.ipu(view.inputs(*info.op)[0])), to = index(info.ipu);
      return {{from, to}, from == to ? std::size_t{1} : std::size_t{2}};
    }
    const std::size_t own = index(info.ipu);
    if (sets_ > 1 && info.spans_tile_sets)
      return {{own - io, own - io + 1}, 2};
    return {{own, 0}, 1};
  }

  /// A run begins with the host round trip, on every IPU.
  void begin_run(std::int64_t round_trip) {
    horizon_ += round_trip;
    sync();
    depth_ = 0;
  }

  /// The device cycles [start, end) of a step of `cycles` at `depth` (0: the main graph's)
  /// on the IPUs `occupied`; with none, the step waits for every IPU. A step deeper than the
  /// one before begins a callee, which starts on every IPU at once.
  std::pair<std::int64_t, std::int64_t> add(std::size_t depth, const Ipus& occupied,
                                            std::int64_t cycles) {
    if (depth > depth_)
      sync();
    depth_ = depth;
    if (occupied.empty()) {
      const std::int64_t start = horizon_;
      horizon_ += cycles;
      sync();
      return {start, horizon_};
    }
    std::int64_t start = 0;
    for (const std::size_t i : occupied)
      start = std::max(start, clocks_[i]);
    const std::int64_t end = start + cycles;
    for (const std::size_t i : occupied)
      clocks_[i] = end;
    horizon_ = std::max(horizon_, end);
    return {start, end};
  }

  /// The device time elapsed so far: the latest IPU's clock.
  std::int64_t elapsed() const { return horizon_; }

  /// Whether the steps to come would overlap as they would after `other`: the same depth and
  /// the same lag of every IPU behind the elapsed time.
  bool same_phase(const IpuTimeline& other) const {
    if (depth_ != other.depth_ || clocks_.size() != other.clocks_.size())
      return false;
    for (std::size_t i = 0; i < clocks_.size(); ++i)
      if (horizon_ - clocks_[i] != other.horizon_ - other.clocks_[i])
        return false;
    return true;
  }

  /// Every clock `cycles` later: what repeating a span of steps that took `cycles` and ended
  /// in the phase it began in does.
  void advance(std::int64_t cycles) {
    horizon_ += cycles;
    for (std::int64_t& c : clocks_)
      c += cycles;
  }

private:
  /// Every IPU's clock to the horizon: a step that waits for them all.
  void sync() { std::ranges::fill(clocks_, horizon_); }

  std::size_t sets_;                 ///< clocks per IPU: 1, or 2 with IO tiles
  std::vector<std::int64_t> clocks_; ///< per IPU and tile set
  std::int64_t horizon_ = 0;         ///< the latest of clocks_
  std::size_t depth_ = 0;            ///< the depth of the step reported last
};

} // namespace pxl::emu::detail
