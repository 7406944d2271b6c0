// The thread-local state behind the RAII scopes: current graph, names, IPU, ordering.
#pragma once

#include "ir/ir_storage.hpp"
#include "pxl/ir/graph.hpp"

#include <optional>
#include <string>
#include <vector>

namespace pxl::detail {

struct SequenceFrame {
  bool enabled = true;
  IrStorage* ir = nullptr;
  GraphId graph{};
  std::optional<OpId> last_op; ///< previous op created in this frame
};

struct Context {
  /// The open graph scopes, innermost last. Kept as handles, so that a scope left open while
  /// its Ir is destroyed is found out (require_graph) rather than read.
  std::vector<Graph> graphs;
  /// "a/b/" for the open name scopes, "" for none: kept whole, since every op and tensor
  /// made reads it.
  std::string scope_prefix;
  /// scope_prefix's length before each open name scope, innermost last.
  std::vector<std::size_t> name_scope_starts;
  std::vector<std::int64_t> ipus;
  std::vector<std::int64_t> pipeline_stages;
  std::vector<TileSet> tile_sets;
  std::vector<SequenceFrame> sequences;
  /// An open merge_exchange scope: its id, which the transfers created in it share
  /// (OpNode::exchange_group), and whether it takes transfers only (io_tile_exchange).
  struct ExchangeFrame {
    std::uint32_t group = 0;
    bool transfers_only = false;
  };
  std::vector<ExchangeFrame> exchanges; ///< innermost last
  std::uint32_t next_exchange_group = 0;
};

Context& context();

} // namespace pxl::detail
