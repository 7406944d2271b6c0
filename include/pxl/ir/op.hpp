// pxl::Op: a handle to an op of an Ir, for inspection and transforms.
#pragma once

#include "pxl/core/error.hpp"
#include "pxl/ir/attrs.hpp"
#include "pxl/ir/op_kind.hpp"
#include "pxl/ir/tensor.hpp"
#include "pxl/ir/tile_set.hpp"

#include <optional>
#include <string>
#include <vector>

namespace pxl {

/// A small value `{ir, index}` naming an op; compares by identity. Every accessor but valid()
/// and index() throws GraphError, naming itself, on an empty handle or one whose Ir is gone
/// (destroyed, and no Session keeps it).
class Op {
public:
  Op() = default;
  /// False for an empty handle and for one whose Ir is gone.
  bool valid() const;
  OpKind kind() const;
  /// "MatMul.101": the op type and its number in the Ir.
  std::string debug_name() const;
  /// Scoped name given at creation ("fc1/MatMul").
  const std::string& name() const;
  std::uint32_t index() const { return ref_.index; }
  Graph graph() const;
  std::vector<Tensor> inputs() const;
  std::vector<Tensor> outputs() const;
  Tensor input(std::size_t i) const;
  Tensor output(std::size_t i) const;
  std::size_t num_inputs() const;
  std::size_t num_outputs() const;
  const OpAttrs& attrs() const;
  /// The attributes of an op of kind `K`, typed as its row says (`op.attrs<OpKind::Slice>()`
  /// is the SliceAttrs); an internal error for an op of another kind.
  template <OpKind K>
  const op_attrs_t<K>& attrs() const {
    PXL_ASSERT(kind() == K);
    return *std::get_if<op_attrs_t<K>>(&attrs());
  }
  /// Attributes of type `A`, for code shared by kinds with one attribute type; an internal
  /// error if the op's kind carries another.
  template <typename A>
  const A& attrs_as() const {
    const A* a = std::get_if<A>(&attrs());
    PXL_ASSERT(a != nullptr);
    return *a;
  }
  std::int64_t ipu() const;
  /// The tile set of its IPU it runs on (the io_tiles() scope it was created in, if any).
  TileSet tile_set() const;
  /// The `pipeline_stage(k)` scope the op was created in, if any.
  std::optional<std::int64_t> pipeline_stage() const;
  /// Ops of the same graph that must run before this one though no data links them.
  std::vector<Op> after() const;
  /// The graph run by call and repeat (not a conditional: see called_graphs).
  std::optional<Graph> called_graph() const;
  /// Every graph this op runs: the callee of a call or repeat, a conditional's then- and
  /// else-branch (in that order); empty for other ops.
  std::vector<Graph> called_graphs() const;

  friend auto operator<=>(const Op&, const Op&) = default;

private:
  friend struct detail::HandleAccess;
  explicit Op(detail::HandleRef ref) : ref_(ref) {}

  detail::HandleRef ref_;
};

} // namespace pxl
