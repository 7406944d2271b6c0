// The thread-local state behind the RAII scopes: current graph, names, IPU, ordering.
#pragma once

#include "pxl/detail/ir_storage.hpp"

#include <string>
#include <vector>

namespace pxl::detail {

struct SequenceFrame {
  bool enabled = true;
  IrStorage* ir = nullptr;
  Index graph = no_index;
  Index last_op = no_index; ///< previous op created in this frame
};

struct Context {
  struct GraphFrame {
    IrStorage* ir;
    Index graph;
  };
  std::vector<GraphFrame> graphs;
  std::vector<std::string> names;
  std::vector<std::int64_t> ipus;
  std::vector<SequenceFrame> sequences;

  /// "a/b/" for the open name scopes, "" for none.
  std::string scope_prefix() const;
};

Context& context();

} // namespace pxl::detail
