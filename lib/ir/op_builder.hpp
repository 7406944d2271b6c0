// How ops are added to the current graph: validation helpers shared by every op family.
#pragma once

#include "ir/context.hpp"
#include "ir/handle_check.hpp"
#include "ir/ir_storage.hpp"
#include "pxl/core/error.hpp"
#include "pxl/core/host_tensor.hpp"
#include "pxl/ir/op.hpp"
#include "pxl/ir/replica_sharding.hpp"
#include "pxl/ir/tensor.hpp"

#include <concepts>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pxl::detail {

struct GraphRef {
  IrStorage* ir;
  GraphId graph;
};

/// The current graph; GraphError naming `op` when no graph scope is open.
GraphRef require_graph(std::string_view op);

/// The bytes of a tensor of `spec`; a ShapeError prefixed with `what()` (built only then)
/// when the count overflows.
template <std::invocable Describe>
std::int64_t checked_nbytes(const TensorSpec& spec, Describe&& what) {
  try {
    return nbytes(spec.shape, spec.dtype);
  } catch (const ShapeError& e) {
    throw ShapeError(std::string(what()) + ": " + e.what());
  }
}

/// Appends `node` (its kind, name, inputs, attributes, IPU and ordering set; graph and outputs
/// not) to the end of graph `g`'s schedule, with one new output tensor per spec: named
/// `output_names[i]`, id `scope + name`, on the op's IPU. Registers call sites. Checks only
/// the freeze (naming `what`); callers validate the inputs.
OpId append_op(IrStorage& ir, GraphId g, OpNode node, std::vector<TensorSpec> output_specs,
               const std::vector<std::string>& output_names, std::string_view scope,
               std::string_view what);

/// Adds an op to the current graph after checking that every input lives in it; returns it
/// (its outputs have the given specs).
Op add_op_node(OpKind kind, std::span<const Tensor> inputs, std::vector<TensorSpec> output_specs,
               OpAttrs attrs = NoAttrs{}, std::string_view output_name = "");
/// As add_op_node, returning the op's outputs.
std::vector<Tensor> add_op(OpKind kind, std::span<const Tensor> inputs,
                           std::vector<TensorSpec> output_specs, OpAttrs attrs = NoAttrs{},
                           std::string_view output_name = "");
Tensor add_op1(OpKind kind, std::span<const Tensor> inputs, TensorSpec output_spec,
               OpAttrs attrs = NoAttrs{}, std::string_view output_name = "");
inline Tensor add_op1(OpKind kind, std::initializer_list<Tensor> inputs, TensorSpec output_spec,
                      OpAttrs attrs = NoAttrs{}, std::string_view output_name = "") {
  return add_op1(kind, std::span<const Tensor>(inputs.begin(), inputs.size()),
                 std::move(output_spec), std::move(attrs), output_name);
}

/// Puts output `i` of `op`, an op just built, on `ipu` rather than the op's own: a call's
/// outputs live where its callee returns them.
void place_output(const Op& op, std::size_t i, std::int64_t ipu);
/// Puts output `i` of `op`, an op just built, on `tiles` of its IPU rather than the op's own.
void place_output_tiles(const Op& op, std::size_t i, TileSet tiles);
/// Runs `op`, an op just built, on `tiles` of its IPU, and puts its outputs there.
void run_on_tiles(const Op& op, TileSet tiles);
/// Records that `t`, the output of an op just built, is one replica's shard as `sharding`
/// says (none: a whole value).
void set_replica_sharding(const Tensor& t, std::optional<ReplicaSharding> sharding);
/// The replica grouping (stride, group size) of `t`'s Ir, for a sharding.
ReplicaGrouping replica_grouping_of(const Tensor& t, std::int64_t stride, std::int64_t group_size);

/// While it lives, ops are built as if no `in_sequence` scope were open on this thread; the
/// open ones resume, unchanged, when it ends. For a transform that builds another graph in
/// the middle of one (autodiff, differentiating a called graph): the enclosing sequence must
/// neither order the other graph's ops nor take its last op as its own.
class SequencesSuspended {
public:
  SequencesSuspended();
  ~SequencesSuspended();
  SequencesSuspended(const SequencesSuspended&) = delete;
  SequencesSuspended& operator=(const SequencesSuspended&) = delete;

private:
  std::vector<SequenceFrame> saved_;
};

/// DTypeError unless a tensor of `dtype` and `shape` may live on the device (not int64, uint64
/// or float64), naming it as `call 'name'` ("Cast: output 'y'", "variable 'w'"); the message
/// is built only then.
void check_device_dtype(std::string_view call, std::string_view name, DType dtype,
                        const Shape& shape);
/// Host data on its way to the device as PopXL's `downcast` argument says: a 64-bit dtype is
/// stored as its 32-bit one (int64 → int32, uint64 → uint32, float64 → float32, rounded to
/// nearest) when `downcast`, a DTypeError otherwise; other data passes unchanged. An integer
/// outside the 32-bit range is a ValueError naming it and its index, where PopXL (NumPy's
/// astype) would wrap it silently. Errors name the data as `call 'name'`.
HostTensor downcast_for_device(std::string_view call, std::string_view name, HostTensor data,
                               bool downcast);

/// DTypeError unless `a` and `b` share a dtype.
void check_same_dtype(std::string_view op, const Tensor& a, const Tensor& b);
/// DTypeError unless `t` has a floating-point dtype.
void check_float(std::string_view op, const Tensor& t);
/// DTypeError unless `t` has dtype `d`.
void check_dtype(std::string_view op, const Tensor& t, DType d, std::string_view role);
/// A float8 op's `log2_scale`: an int32 scalar (its value, checked in [-32, 32) when the op
/// runs), else a DTypeError or ShapeError naming it.
void check_log2_scale(std::string_view op, const Tensor& log2_scale);
/// `t`, an operand of a pow2-scaled op, is float8_143 or float8_152, else a DTypeError.
void check_float8(std::string_view op, const Tensor& t, std::string_view role);
/// Normalised, sorted, unique axes; ValueError on a bad or repeated axis.
std::vector<std::int64_t> normalize_axes(std::string_view op, std::vector<std::int64_t> axes,
                                         std::int64_t rank);

} // namespace pxl::detail
