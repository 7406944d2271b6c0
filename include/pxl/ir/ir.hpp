// pxl::Ir: owns the main graph, subgraphs, tensors, ops and streams of a program.
#pragma once

#include "pxl/ir/graph.hpp"
#include "pxl/ir/replica_grouping.hpp"
#include "pxl/ir/stream.hpp"

#include <concepts>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

namespace pxl {

struct MatMulAttrs;

namespace detail {
template <typename T>
struct is_tensor_vector : std::false_type {};
template <>
struct is_tensor_vector<std::vector<Tensor>> : std::true_type {};
template <typename T>
struct is_tensor_tuple : std::false_type {};
template <typename... Ts>
struct is_tensor_tuple<std::tuple<Ts...>> : std::bool_constant<(std::same_as<Ts, Tensor> && ...)> {
};
template <typename T, typename U>
struct is_tensor_tuple<std::pair<T, U>>
    : std::bool_constant<std::same_as<T, Tensor> && std::same_as<U, Tensor>> {};
} // namespace detail

/// Arguments that become graph inputs when tracing: a spec, a tensor (only its spec is used),
/// or a vector of either.
template <typename T>
concept TraceInput = std::same_as<std::remove_cvref_t<T>, TensorSpec> ||
    std::same_as<std::remove_cvref_t<T>, Tensor> ||
    std::same_as<std::remove_cvref_t<T>, std::vector<TensorSpec>> ||
    std::same_as<std::remove_cvref_t<T>, std::vector<Tensor>>;

/// What a traced callable may return: nothing, a tensor, a vector or a tuple of tensors.
template <typename T>
concept TraceOutput = std::is_void_v<T> || std::same_as<T, Tensor> ||
    detail::is_tensor_vector<T>::value || detail::is_tensor_tuple<T>::value;

/// The whole program. Movable, not copyable; handles into it stay valid across moves.
/// Once a Session is made from it the Ir is frozen: every change (ops, graphs, streams,
/// variables, the replication factor, num_host_transfers, autodiff) throws GraphError until
/// that Session is gone.
class Ir {
public:
  /// `replication_factor` replicas each run the same program on their own data.
  explicit Ir(std::int64_t replication_factor = 1);
  Ir(Ir&&) noexcept;
  Ir& operator=(Ir&&) noexcept;
  Ir(const Ir&) = delete;
  Ir& operator=(const Ir&) = delete;
  ~Ir();

  Graph main_graph() const;
  /// Distinguishes this Ir from every other Ir of the process (ids are never reused); stays
  /// the same when the Ir is moved.
  std::uint64_t id() const;

  /// Traces `fn` into a new subgraph named `<name>_subgraph(<n>)`: every TensorSpec/Tensor
  /// argument becomes a graph input (in order) and `fn` receives it as a Tensor; any other
  /// argument is passed through unchanged. The returned tensors become the graph outputs.
  template <typename Fn, typename... Args>
  Graph create_graph(std::string_view name, Fn&& fn, Args&&... args);
  /// As above, named "subgraph".
  template <typename Fn, typename... Args>
  requires(!std::convertible_to<Fn, std::string_view>) Graph create_graph(Fn&& fn, Args&&... args) {
    return create_graph("subgraph", std::forward<Fn>(fn), std::forward<Args>(args)...);
  }
  /// A new subgraph to fill by hand under `graph.scope()` with graph_input / graph_output.
  Graph create_empty_graph(std::string_view name = "graph");

  std::vector<Graph> graphs() const;
  std::vector<HostToDeviceStream> h2d_streams() const;
  std::vector<DeviceToHostStream> d2h_streams() const;

  /// How many times each host stream is fed per `Session::run` (Poplar's batches per step).
  std::int64_t num_host_transfers() const;
  void set_num_host_transfers(std::int64_t n);
  std::int64_t replication_factor() const;
  void set_replication_factor(std::int64_t n);
  /// What the matmuls created from now on take where their ops::MatMulOptions leave it unset
  /// (PopART's session option `partialsTypeMatMuls` and its matmuls' available memory
  /// proportion): by default float32 partials and 0.6. The partials type reaches float16
  /// matmuls only; float32 ones always accumulate in float32. A partials type other than
  /// float32 or float16 is a DTypeError, a proportion outside (0, 1] a ValueError.
  const MatMulAttrs& matmul_defaults() const;
  void set_matmul_defaults(const MatMulAttrs& defaults);
  /// Replicas grouped `group_size` at a time, `stride` apart (PopXL's `replica_grouping`);
  /// `group_size` 0 means all replicas. ValueError unless stride × group_size divides the
  /// replication factor.
  ReplicaGrouping replica_grouping(std::int64_t stride = 1, std::int64_t group_size = 0) const;

  /// Graphviz DOT of every graph (clusters), ops as boxes, tensors on the edges.
  std::string to_dot() const;

private:
  friend struct detail::HandleAccess;
  /// A new empty subgraph named after `stem` for create_graph to trace into (out of line, so
  /// the template needs nothing from the library's internals).
  Graph begin_traced_graph(std::string_view stem);
  /// Shared with the IrHolds of Sessions, which keep it readable after the Ir is gone.
  std::shared_ptr<detail::IrStorage> storage_;
};

namespace detail {
inline Tensor trace_arg(const TensorSpec& s) { return graph_input(s); }
inline Tensor trace_arg(const Tensor& t) { return graph_input(t.spec()); }
inline std::vector<Tensor> trace_arg(const std::vector<TensorSpec>& v) {
  std::vector<Tensor> r;
  for (const auto& s : v)
    r.push_back(graph_input(s));
  return r;
}
inline std::vector<Tensor> trace_arg(const std::vector<Tensor>& v) {
  std::vector<Tensor> r;
  for (const auto& t : v)
    r.push_back(graph_input(t.spec()));
  return r;
}
template <typename A>
decltype(auto) as_trace_arg(A&& a) {
  if constexpr (TraceInput<A>)
    return trace_arg(a);
  else
    return std::forward<A>(a);
}

template <typename R>
void mark_outputs(R&& r) {
  using T = std::remove_cvref_t<R>;
  if constexpr (std::same_as<T, Tensor>)
    graph_output(r);
  else if constexpr (is_tensor_vector<T>::value)
    for (const auto& t : r)
      graph_output(t);
  else
    std::apply([](const auto&... ts) { (graph_output(ts), ...); }, r);
}
} // namespace detail

template <typename Fn, typename... Args>
Graph Ir::create_graph(std::string_view name, Fn&& fn, Args&&... args) {
  Graph g = begin_traced_graph(name);
  auto in_g = g.scope();
  // Braced initialisation evaluates the arguments left to right, so inputs keep their order.
  auto traced = std::tuple<decltype(detail::as_trace_arg(std::forward<Args>(args)))...>{
      detail::as_trace_arg(std::forward<Args>(args))...};
  using R = decltype(std::apply(std::forward<Fn>(fn), std::move(traced)));
  static_assert(TraceOutput<std::remove_cvref_t<R>>,
                "create_graph: the callable must return void, Tensor, std::vector<Tensor> or a "
                "tuple of Tensors");
  if constexpr (std::is_void_v<R>)
    std::apply(std::forward<Fn>(fn), std::move(traced));
  else
    detail::mark_outputs(std::apply(std::forward<Fn>(fn), std::move(traced)));
  return g;
}

} // namespace pxl
