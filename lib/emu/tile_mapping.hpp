// Where the bytes of tensors and code land on an IPU's tiles, for the memory report: Poplar's
// linear mapping from start tiles that rotate as PopART's LinearMapper rotates them, within
// each tile set (the IO tiles, or the compute tiles).
#pragma once

#include "aligned_bytes.hpp"

#include "pxl/emu/cost_model.hpp"
#include "pxl/emu/target.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace pxl::emu::detail {

/// The bytes of a `bytes` buffer on each tile it spans under the linear mapping: an even share
/// (`target` as one tile set sees it: tile_set_target).
inline std::int64_t tile_share(std::int64_t bytes, const Target& target) {
  const auto aligned = static_cast<std::int64_t>(align_up(static_cast<std::size_t>(bytes)));
  const std::int64_t tiles = tiles_spanned(aligned, target);
  return (aligned + tiles - 1) / tiles;
}

/// The tiles of one tile set of an IPU: `count` from `first`.
struct TileRange {
  std::int64_t first = 0, count = 1;
};

/// Adds `bytes` to each of the `tiles` tiles from `start` on (wrapping past the last tile of
/// `range`) of a per-tile difference array.
inline void add_to_tiles(std::vector<std::int64_t>& diff, std::int64_t start, std::int64_t tiles,
                         std::int64_t bytes, TileRange range) {
  const std::int64_t end = range.first + range.count;
  tiles = std::min(tiles, range.count);
  diff[static_cast<std::size_t>(start)] += bytes;
  if (start + tiles <= end) {
    diff[static_cast<std::size_t>(start + tiles)] -= bytes;
    return;
  }
  diff[static_cast<std::size_t>(end)] -= bytes;
  diff[static_cast<std::size_t>(range.first)] += bytes;
  diff[static_cast<std::size_t>(start + tiles - range.count)] -= bytes;
}

/// A difference array's values, one per tile.
inline std::vector<std::int64_t> per_tile(std::vector<std::int64_t> diff) {
  for (std::size_t t = 1; t < diff.size(); ++t)
    diff[t] += diff[t - 1];
  diff.pop_back();
  return diff;
}

/// The start tiles of a program's buffers and steps, per IPU and tile set: as PopART's
/// LinearMapper (willow/src/popx/linearmapper.cpp) rotates the linear mapping, each starts
/// where the one before ended, wrapping past the set's last tile, so small tensors and steps
/// spread over the tiles instead of piling up on the first.
class TileMapper {
public:
  explicit TileMapper(const Target& target)
      : target_(target), sets_{tile_set_target(target, TileSet::compute),
                               tile_set_target(target, TileSet::io)},
        next_(static_cast<std::size_t>(std::max<std::int64_t>(1, target.ipus)), {0, 0}) {}

  /// The target as tile set `s` sees it: its tiles only.
  const Target& on(TileSet s) const { return sets_[static_cast<std::size_t>(s)]; }
  TileRange range(TileSet s) const {
    return {target_.first_tile_of(s), std::max<std::int64_t>(1, target_.tiles_of(s))};
  }

  /// The first tile of the next buffer of `bytes` on `ipu`'s tile set `s`.
  std::int64_t rotate_start(std::size_t ipu, TileSet s, std::int64_t bytes) {
    return rotate_tiles(ipu, s, tiles_spanned(bytes, on(s)));
  }
  /// The first of the next `tiles` tiles of `ipu`'s tile set `s`.
  std::int64_t rotate_tiles(std::size_t ipu, TileSet s, std::int64_t tiles) {
    const std::int64_t n = std::max<std::int64_t>(1, target_.tiles_of(s));
    std::int64_t& next = next_[ipu][static_cast<std::size_t>(s)];
    const std::int64_t start = next;
    next = (start + tiles) % n;
    return target_.first_tile_of(s) + start;
  }

  /// Adds a buffer of `bytes` on tile set `s` to the per-tile difference array `diff`, from
  /// the set's next start tile.
  void add_buffer(std::vector<std::int64_t>& diff, std::size_t ipu, TileSet s, std::int64_t bytes) {
    add_to_tiles(diff, rotate_start(ipu, s, bytes), tiles_spanned(bytes, on(s)),
                 tile_share(bytes, on(s)), range(s));
  }

private:
  const Target& target_;
  std::array<Target, 2> sets_;                    ///< by TileSet
  std::vector<std::array<std::int64_t, 2>> next_; ///< per IPU and tile set, from the set's first
};

} // namespace pxl::emu::detail
