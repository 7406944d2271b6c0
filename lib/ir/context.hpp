// The thread-local state behind the RAII scopes: current graph, names, IPU, ordering.
#pragma once

#include "ir/ir_storage.hpp"

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
  struct GraphFrame {
    IrStorage* ir;
    GraphId graph;
  };
  std::vector<GraphFrame> graphs;
  std::vector<std::string> names;
  std::vector<std::int64_t> ipus;
  std::vector<std::int64_t> pipeline_stages;
  std::vector<SequenceFrame> sequences;

  /// "a/b/" for the open name scopes, "" for none.
  std::string scope_prefix() const;
};

Context& context();

} // namespace pxl::detail
