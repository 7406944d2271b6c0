// The arenas behind an Ir: graphs, tensors, ops and streams, addressed by index.
#pragma once

#include "pxl/core/host_tensor.hpp"
#include "pxl/ir/attrs.hpp"
#include "pxl/ir/op_kind.hpp"

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace pxl {
class Ir;
}

namespace pxl::detail {

using Index = std::uint32_t;
inline constexpr Index no_index = ~Index{0};

enum class TensorKind : std::uint8_t { intermediate, graph_input, variable, constant };

struct TensorNode {
  std::string id; ///< fully scoped name, unique in the Ir
  std::string name;
  TensorSpec spec;
  TensorKind kind = TensorKind::intermediate;
  Index graph = 0;
  Index producer = no_index; ///< op that writes it; no_index for inputs, variables, constants
  std::int64_t ipu = 0;
  std::optional<HostTensor> data; ///< initial value of variables and constants
};

struct OpNode {
  OpKind kind{};
  std::string name; ///< scoped debug name
  Index graph = 0;
  std::vector<Index> inputs, outputs;
  OpAttrs attrs;
  std::int64_t ipu = 0;
  std::vector<Index> after; ///< ops of the same graph this one must follow (in_sequence)
};

struct GraphNode {
  std::string name;
  std::vector<Index> inputs, outputs;
  std::vector<bool> input_by_ref;
  std::vector<Index> ops;     ///< in creation order, which is a valid topological order
  std::vector<Index> tensors; ///< every tensor owned by the graph
};

struct StreamNode {
  std::string name;
  TensorSpec spec;
  bool host_to_device = true;
};

/// Deques, not vectors: handles return references into the nodes (shapes, names,
/// attributes), and those must stay valid while later ops are added.
struct IrStorage {
  Ir* owner = nullptr;           ///< kept current when the Ir moves
  std::deque<GraphNode> graphs;  ///< graphs[0] is the main graph
  std::deque<TensorNode> tensors;
  std::deque<OpNode> ops;
  std::deque<StreamNode> streams;
  std::int64_t num_host_transfers = 1;
  std::int64_t replication_factor = 1;
  std::uint64_t unique_id = 0; ///< distinguishes Irs in messages and caches
  std::vector<std::string> graph_name_stems; ///< for uniquifying `Name_subgraph(n)`
  std::vector<Index> differentiated; ///< graphs autodiff has been applied to
};

} // namespace pxl::detail
