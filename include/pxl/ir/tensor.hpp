// pxl::Tensor: a handle to a tensor of an Ir (intermediate, graph input, variable or constant).
#pragma once

#include "pxl/core/shape.hpp"
#include "pxl/fwd.hpp"
#include "pxl/ir/handle_ref.hpp"
#include "pxl/ir/tile_set.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>

namespace pxl {

/// A small value `{ir, index}` naming a tensor of an Ir; compares by identity.
/// Operators create ops in the current graph: `a + b`, `a * 2.0`, `-a`, `a += b` (in place).
/// Every accessor but valid() and index() throws GraphError, naming itself, on an empty handle
/// or one whose Ir is gone (destroyed, and no Session keeps it).
class Tensor {
public:
  Tensor() = default;

  /// False for an empty handle (default-constructed, or left so by a call that threw) and for
  /// one whose Ir is gone.
  bool valid() const;
  const TensorSpec& spec() const;
  const Shape& shape() const;
  DType dtype() const;
  std::int64_t rank() const;
  std::int64_t nelms() const;
  /// The whole tensor's shape when this is one replica's shard of it (see replica_sharding;
  /// PopXL's `meta_shape`), else shape().
  const Shape& meta_shape() const;
  /// Unique in the Ir, as in PopXL: the name with its graph's scope (none in the main graph,
  /// "Linear_subgraph(0)/" in a subgraph) and name scopes ("layer1/weight"); a tensor whose id
  /// would repeat an earlier one's gets PopXL's suffix `__t<n>` ("weight", "weight__t1",
  /// "weight__t2", ... for three variables named "weight"). For messages and debugging:
  /// programs look tensors up by handle or NamedTensors key, never by id.
  const std::string& id() const;
  /// The name it was created with, without any scope or suffix; several tensors may share it
  /// (e.g. the "weight" of two `init()`s of one module).
  const std::string& name() const;
  /// Number shown as `%n` by print_schedule.
  std::uint32_t index() const { return ref_.index; }
  Graph graph() const;
  std::int64_t ipu() const;
  /// The tile set of its IPU it lives on (PopXL's `Tensor.tile_set`): its op's, or for a graph
  /// input, variable or constant the one current when it was made.
  TileSet tile_set() const;
  bool is_variable() const;
  bool is_constant() const;
  bool is_graph_input() const;
  /// The op producing this tensor, if it is an op output.
  std::optional<Op> producer() const;

  Tensor reshape(Shape shape) const;
  /// Permute axes; an empty permutation reverses them.
  Tensor transpose(std::vector<std::int64_t> perm = {}) const;
  Tensor T() const { return transpose(); }
  Tensor flatten() const;
  /// Same values; blocks gradients.
  Tensor detach() const;
  /// Element `i` along axis 0, the axis removed (NumPy `t[i]`; negative counts from the end).
  Tensor operator[](std::int64_t i) const;
  /// NumPy `t[start:stop]` along `axis` (negative indices count from the end).
  Tensor slice(std::int64_t start, std::int64_t stop, std::int64_t axis = 0) const;

  friend auto operator<=>(const Tensor&, const Tensor&) = default;
  friend std::ostream& operator<<(std::ostream& os, const Tensor& t);

private:
  friend struct detail::HandleAccess;
  friend struct std::hash<Tensor>;
  explicit Tensor(detail::HandleRef ref) : ref_(ref) {}

  detail::HandleRef ref_;
};

/// "'x' [(2, 3) float32]": the tensor as pxl's error messages show it ("an empty Tensor"
/// for a default-constructed one, "a Tensor of a destroyed Ir" for one whose Ir is gone).
std::string to_string(const Tensor& t);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);
/// `ops::fmod` (the remainder with the sign of `a`), as PopXL's `%`.
Tensor operator%(const Tensor& a, const Tensor& b);
Tensor operator%(const Tensor& a, double b);
Tensor operator%(double a, const Tensor& b);
Tensor operator-(const Tensor& a);
/// In-place add, subtract and multiply (`ops::add_`, `sub_`, `mul_`): `a` becomes the op's
/// output, which aliases the old `a`. Autodiff differentiates them (`y += f(x)` residuals).
Tensor& operator+=(Tensor& a, const Tensor& b);
Tensor& operator+=(Tensor& a, double b);
Tensor& operator-=(Tensor& a, const Tensor& b);
Tensor& operator-=(Tensor& a, double b);
Tensor& operator*=(Tensor& a, const Tensor& b);
Tensor& operator*=(Tensor& a, double b);

} // namespace pxl

template <>
struct std::hash<pxl::Tensor> {
  std::size_t operator()(const pxl::Tensor& t) const noexcept { return t.ref_.hash(); }
};
