// pxl::Graph: a handle to the main graph or a subgraph of an Ir.
#pragma once

#include "pxl/core/host_tensor.hpp"
#include "pxl/ir/op.hpp"
#include "pxl/ir/replica_grouping.hpp"
#include "pxl/ir/scope.hpp"
#include "pxl/ir/tensor.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pxl {

/// A small value `{ir, index}` naming a graph; compares by identity. Every accessor but
/// valid() and index() throws GraphError, naming itself, on an empty handle or one whose Ir is
/// gone (destroyed, and no Session keeps it).
class Graph {
public:
  Graph() = default;

  /// False for an empty handle and for one whose Ir is gone.
  bool valid() const;
  /// Makes this the thread's current graph until the guard dies (`with graph:`).
  GraphScope scope() const { return GraphScope(*this); }

  const std::string& name() const;
  std::uint32_t index() const { return ref_.index; }
  bool is_main() const;
  /// The Ir owning this graph; GraphError once that Ir has been destroyed.
  Ir& ir() const;
  std::vector<Tensor> inputs() const;
  std::vector<Tensor> outputs() const;
  /// Whether input `i` is passed by reference (its modifications reach the caller).
  bool input_is_by_ref(std::size_t i) const;
  /// Every tensor owned by this graph, in creation order.
  std::vector<Tensor> tensors() const;
  std::vector<Tensor> variables() const;
  std::vector<Tensor> constants() const;
  /// Ops in creation order (a valid schedule).
  std::vector<Op> ops() const;
  /// Graphs called by this graph's ops, each once, in first-call order.
  std::vector<Graph> called_graphs() const;
  bool contains(const Tensor& t) const;

  /// PopXL's schedule listing:
  ///     Graph : Net_subgraph(0)
  ///       (%1, fc1.weight=%2) -> (%5) {
  ///         MatMul.3 (%1 [(1, 4) float32], %2 [(4, 2) float32]) -> (%3 [(1, 2) float32])
  ///       }
  /// `input_names` shows chosen inputs by name (addons' named args).
  std::string print_schedule(const std::map<Tensor, std::string>& input_names = {}) const;

  friend auto operator<=>(const Graph&, const Graph&) = default;

private:
  friend struct detail::HandleAccess;
  explicit Graph(detail::HandleRef ref) : ref_(ref) {}

  detail::HandleRef ref_;
};

/// Adds an input to the current graph (PopXL's `graph_input`).
Tensor graph_input(Shape shape, DType dtype, std::string name = "", bool by_ref = false);
inline Tensor graph_input(const TensorSpec& spec, std::string name = "", bool by_ref = false) {
  return graph_input(spec.shape, spec.dtype, std::move(name), by_ref);
}
/// A by-reference input of the current graph (a subgraph) for `variable`, a variable of the
/// main graph: every call, repeat or conditional in the main graph that does not bind the
/// input binds it to `variable`. Code that builds part of a graph it did not create reaches a
/// main-graph variable this way without its caller's help (optimizers::apply creating its
/// state inside a device loop's body). A call site in another subgraph must bind it itself,
/// as any input (a GraphError there names the variable). GraphError in the main graph, or
/// unless `variable` is an on-chip variable of the current graph's Ir's main graph. The input
/// takes the variable's spec and IPU, and `name` (the variable's name when empty).
///
///     auto body = ir.create_empty_graph("body");
///     auto in_body = body.scope();
///     Tensor c = graph_input_for(counter);     // counter: a main-graph variable
///     ops::add_(c, 1.0);
///     ...
///     ops::repeat(body, 10, {});               // in the main graph: c is counter
Tensor graph_input_for(const Tensor& variable, std::string name = "");
/// Marks `t`, a tensor of the current graph, as its next output.
void graph_output(const Tensor& t);

/// A variable of the main graph holding `data` (the current graph must be the main graph).
/// PopXL's `downcast`: int64, uint64 and float64 data are stored as int32, uint32 and float32
/// (floats rounded to nearest; an integer outside the 32-bit range is a ValueError naming it,
/// where PopXL would wrap it); with `downcast` false, 64-bit data is a DTypeError, as the
/// device holds no 64-bit tensors.
Tensor variable(HostTensor data, std::string name = "", bool downcast = true);
/// `data` converted to `dtype` (by convert_element, as PopXL's explicit dtype: no downcast, so
/// a 64-bit `dtype` is a DTypeError).
Tensor variable(const HostTensor& data, DType dtype, std::string name = "");

/// How a variable is shared by replicas (PopXL's `replica_grouping` and `retrieval_mode`).
struct VariableOptions {
  /// One value per group of replicas; none: one value for every replica.
  std::optional<ReplicaGrouping> replica_grouping;
  /// Only with a grouping (ValueError otherwise); one_per_group when not given.
  std::optional<RetrievalMode> retrieval_mode;
  /// PopXL's `downcast`, as for variable(data, name, downcast).
  bool downcast = true;
};
/// A variable with one value per replica group: with more than one group, `data` is shaped
/// (num_groups, *shape) and group g's replicas start from data[g] (the variable's shape is
/// `shape`); with one group, `data` is the value. ShapeError when dim 0 is not the group count.
Tensor variable(HostTensor data, std::string name, const VariableOptions& options);
/// A constant of the current graph; `downcast` as for `variable`.
Tensor constant(HostTensor data, std::string name = "", bool downcast = true);
/// `data` converted to `dtype`; a 64-bit `dtype` is a DTypeError.
Tensor constant(const HostTensor& data, DType dtype, std::string name = "");
/// A scalar constant of `dtype`.
Tensor constant(double value, DType dtype, std::string name = "");

} // namespace pxl
