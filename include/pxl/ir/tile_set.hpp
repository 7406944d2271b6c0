// pxl::TileSet: which of an IPU's two tile sets an op runs on and a tensor lives on.
#pragma once

#include <cstdint>
#include <string_view>

namespace pxl {

/// An IPU's tiles split in two (PopXL's `TileSet`): the compute tiles, where ops run by
/// default, and the IO tiles (emu::Target::io_tiles of them, PopART's `numIOTiles`), where ops
/// created in an `io_tiles()` scope run, so that host and Streaming Memory transfers there
/// overlap the compute tiles' work.
enum class TileSet : std::uint8_t { compute, io };

/// "compute" or "io", as PopXL's `Tensor.tile_set` names them.
constexpr std::string_view tile_set_name(TileSet s) { return s == TileSet::io ? "io" : "compute"; }

} // namespace pxl
