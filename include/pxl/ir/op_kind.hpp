// pxl::OpKind: the op table. Every op is declared here once; the rest is derived from it.
#pragma once

#include "pxl/ir/attrs.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <variant>

namespace pxl {

/// The family an op belongs to, and the stem of its files in every layer: its builders in
/// `include/pxl/ops/F.hpp` and `lib/ops/F.cpp`, gradient rules in `lib/ops/F_grad.cpp`,
/// kernels in `lib/emu/kernels/F.cpp` (call ops have none: the Executor runs their callee),
/// reference kernels in `test/support/ref_F.cpp`, tests in `test/ops/F.cpp` and
/// `test/kernels/F.cpp`. A test checks that these files exist.
enum class OpFamily : std::uint8_t {
  elementwise,
  reduce,
  matmul,
  nn,
  random,
  shape,
  var_updates,
  call,
  host_io,
  collectives,
  remote,
};

/// Facts about an op kind, combined with `|` in its row.
namespace op_flags {
enum : unsigned {
  Grad = 0,    ///< differentiable: `lib/ops/F_grad.cpp` defines grad_<Kind>
  NoGrad = 1,  ///< not differentiable: a gradient through it is a GraphError naming it
  Inplace = 2, ///< output 0 is input 0, modified in place
};
} // namespace op_flags

// X(Kind, "PopXL op type", family, attribute type, flags)
// The enum, names, families, flags and attribute types below are derived from the rows; the
// emulator's kernels (compile_<Kind>), the autodiff rules (grad_<Kind>, for kinds with Grad)
// and the test reference (ref_<Kind>) are tables instantiated over them, so a row without its
// kernel, rule or reference fails to link.
#define PXL_OP_TABLE(X)                                                                            \
  /* elementwise, unary */                                                                         \
  X(Negate, "Neg", elementwise, NoAttrs, Grad)                                                     \
  X(Abs, "Abs", elementwise, NoAttrs, Grad)                                                        \
  X(Exp, "Exp", elementwise, NoAttrs, Grad)                                                        \
  X(Log, "Log", elementwise, NoAttrs, Grad)                                                        \
  X(Sqrt, "Sqrt", elementwise, NoAttrs, Grad)                                                      \
  X(Tanh, "Tanh", elementwise, NoAttrs, Grad)                                                      \
  X(Sigmoid, "Sigmoid", elementwise, NoAttrs, Grad)                                                \
  X(Relu, "Relu", elementwise, NoAttrs, Grad)                                                      \
  X(Gelu, "Gelu", elementwise, NoAttrs, Grad)                                                      \
  X(GeluErf, "GeluErf", elementwise, NoAttrs, Grad)                                                \
  X(Erf, "Erf", elementwise, NoAttrs, Grad)                                                        \
  X(Sin, "Sin", elementwise, NoAttrs, Grad)                                                        \
  X(Cos, "Cos", elementwise, NoAttrs, Grad)                                                        \
  X(Sign, "Sign", elementwise, NoAttrs, Grad)                                                      \
  X(Clip, "Clip", elementwise, ScalarAttrs, Grad)                                                  \
  X(LogicalNot, "Not", elementwise, NoAttrs, NoGrad)                                               \
  X(IsNan, "IsNaN", elementwise, NoAttrs, NoGrad)                                                  \
  X(Cast, "Cast", elementwise, CastAttrs, Grad)                                                    \
  X(Identity, "Identity", elementwise, NoAttrs, Grad)                                              \
  X(Detach, "Detach", elementwise, NoAttrs, Grad)                                                  \
  /* elementwise, binary (NumPy broadcasting) */                                                   \
  X(Add, "Add", elementwise, NoAttrs, Grad)                                                        \
  X(Sub, "Sub", elementwise, NoAttrs, Grad)                                                        \
  X(Mul, "Mul", elementwise, NoAttrs, Grad)                                                        \
  X(Div, "Div", elementwise, NoAttrs, Grad)                                                        \
  X(Pow, "Pow", elementwise, NoAttrs, Grad)                                                        \
  X(Maximum, "Max", elementwise, NoAttrs, Grad)                                                    \
  X(Minimum, "Min", elementwise, NoAttrs, Grad)                                                    \
  X(Equal, "Equal", elementwise, NoAttrs, NoGrad)                                                  \
  X(NotEqual, "NotEqual", elementwise, NoAttrs, NoGrad)                                            \
  X(Greater, "Greater", elementwise, NoAttrs, NoGrad)                                              \
  X(GreaterEqual, "GreaterOrEqual", elementwise, NoAttrs, NoGrad)                                  \
  X(Less, "Less", elementwise, NoAttrs, NoGrad)                                                    \
  X(LessEqual, "LessOrEqual", elementwise, NoAttrs, NoGrad)                                        \
  X(LogicalAnd, "And", elementwise, NoAttrs, NoGrad)                                               \
  X(LogicalOr, "Or", elementwise, NoAttrs, NoGrad)                                                 \
  X(Where, "Where", elementwise, NoAttrs, Grad)                                                    \
  /* elementwise, a gradient in one pass (what autodiff emits for its op) */                       \
  X(GeluGrad, "GeluGrad", elementwise, NoAttrs, Grad)                                              \
  X(TanhGrad, "TanhGrad", elementwise, NoAttrs, Grad)                                              \
  /* reductions */                                                                                 \
  X(ReduceSum, "ReduceSum", reduce, ReduceAttrs, Grad)                                             \
  X(ReduceMean, "ReduceMean", reduce, ReduceAttrs, Grad)                                           \
  X(ReduceMax, "ReduceMax", reduce, ReduceAttrs, Grad)                                             \
  X(ReduceMin, "ReduceMin", reduce, ReduceAttrs, Grad)                                             \
  X(ArgMax, "ArgMax", reduce, AxisAttrs, NoGrad)                                                   \
  X(ArgMin, "ArgMin", reduce, AxisAttrs, NoGrad)                                                   \
  X(CumSum, "CumSum", reduce, AxisAttrs, Grad)                                                     \
  /* linear algebra */                                                                             \
  X(MatMul, "MatMul", matmul, NoAttrs, Grad)                                                       \
  /* nn */                                                                                         \
  X(Softmax, "Softmax", nn, AxisAttrs, Grad)                                                       \
  X(LogSoftmax, "LogSoftmax", nn, AxisAttrs, Grad)                                                 \
  X(LayerNorm, "LayerNorm", nn, ScalarAttrs, Grad)                                                 \
  X(SoftmaxGrad, "SoftmaxGrad", nn, AxisAttrs, Grad)                                               \
  X(LayerNormGrad, "LayerNormGrad", nn, ScalarAttrs, NoGrad)                                       \
  X(Dropout, "Dropout", nn, ScalarAttrs, Grad)                                                     \
  X(NllLoss, "Nll", nn, NllAttrs, Grad)                                                            \
  X(NllLossWithSoftmaxGrad, "NllWithSoftmaxGrad", nn, NllAttrs, NoGrad)                            \
  /* random numbers */                                                                             \
  X(RandomNormal, "RandomNormal", random, CreateAttrs, NoGrad)                                     \
  X(RandomUniform, "RandomUniform", random, CreateAttrs, NoGrad)                                   \
  X(SplitRandomSeed, "SplitRandomSeed", random, ScalarAttrs, NoGrad)                               \
  /* shape and data movement */                                                                    \
  X(Reshape, "Reshape", shape, NoAttrs, Grad)                                                      \
  X(Transpose, "Transpose", shape, TransposeAttrs, Grad)                                           \
  X(Slice, "Slice", shape, SliceAttrs, Grad)                                                       \
  X(Concat, "Concat", shape, AxisAttrs, Grad)                                                      \
  X(Split, "Split", shape, SplitAttrs, Grad)                                                       \
  X(Gather, "Gather", shape, AxisAttrs, Grad)                                                      \
  X(OneHot, "OneHot", shape, OneHotAttrs, NoGrad)                                                  \
  X(Init, "Init", shape, CreateAttrs, NoGrad)                                                      \
  X(Arange, "Arange", shape, CreateAttrs, NoGrad)                                                  \
  X(Tril, "Tril", shape, DiagonalAttrs, Grad)                                                      \
  X(Triu, "Triu", shape, DiagonalAttrs, Grad)                                                      \
  X(Pad, "Pad", shape, PadAttrs, Grad)                                                             \
  X(Tile, "Tile", shape, TileAttrs, Grad)                                                          \
  X(TakeAlongAxis, "GatherElements", shape, AxisAttrs, Grad)                                       \
  X(Scatter, "ScatterElements", shape, AxisAttrs, Grad)                                            \
  X(ScatterAdd, "ScatterReduce", shape, AxisAttrs, Grad)                                           \
  X(DynamicSlice, "DynamicSlice", shape, DynamicAttrs, Grad)                                       \
  X(DynamicUpdate, "DynamicUpdate", shape, DynamicAttrs, Grad)                                     \
  X(IpuCopy, "IpuCopy", shape, NoAttrs, Grad)                                                      \
  /* updates: the in-place kinds' output 0 is their input 0 */                                     \
  X(AddInplace, "AddLhsInplace", var_updates, NoAttrs, Grad | Inplace)                             \
  X(SubInplace, "SubtractLhsInplace", var_updates, NoAttrs, Grad | Inplace)                        \
  X(MulInplace, "MulLhsInplace", var_updates, NoAttrs, Grad | Inplace)                             \
  X(ScaledAdd, "ScaledAdd", var_updates, ScalarAttrs, Grad)                                        \
  X(ScaledAddInplace, "ScaledAddLhsInplace", var_updates, ScalarAttrs, Grad | Inplace)             \
  X(Accumulate, "Accumulate", var_updates, ScalarAttrs, Grad | Inplace)                            \
  X(CopyVarUpdate, "CopyVarUpdate", var_updates, NoAttrs, Grad | Inplace)                          \
  X(AccumulatorScale, "AccumulatorScale", var_updates, ScalarAttrs, Grad | Inplace)                \
  X(AccumulatorZero, "AccumulatorZero", var_updates, NoAttrs, Grad | Inplace)                      \
  X(AccumulateMovingAverage, "AccumulateMovingAverage", var_updates, ScalarAttrs, Grad | Inplace)  \
  X(AccumulateMovingAverageSquare, "AccumulateMovingAverageSquare", var_updates, ScalarAttrs,      \
    Grad | Inplace)                                                                                \
  X(AdamUpdater, "AdamUpdater", var_updates, AdamUpdaterAttrs, NoGrad)                             \
  /* calls */                                                                                      \
  X(Call, "Call", call, CallAttrs, Grad)                                                           \
  X(Repeat, "Loop", call, CallAttrs, Grad)                                                         \
  X(Conditional, "If", call, ConditionalAttrs, Grad)                                               \
  /* host IO */                                                                                    \
  X(HostLoad, "HostLoad", host_io, StreamAttrs, NoGrad)                                            \
  X(HostStore, "HostStore", host_io, StreamAttrs, NoGrad)                                          \
  X(PrintTensor, "PrintTensor", host_io, PrintAttrs, Grad)                                         \
  /* collectives across replicas */                                                                \
  X(ReplicatedAllReduce, "ReplicatedAllReduce", collectives, CollectiveAttrs, Grad)                \
  X(ReplicatedAllReduceInplace, "ReplicatedAllReduceInplace", collectives, CollectiveAttrs,        \
    Grad | Inplace)                                                                                \
  X(ReplicatedReduceScatter, "ReplicatedReduceScatter", collectives, CollectiveAttrs, Grad)        \
  X(ReplicatedAllGather, "ReplicatedAllGather", collectives, CollectiveAttrs, Grad)                \
  X(ReplicatedSlice, "ReplicatedSlice", collectives, CollectiveAttrs, Grad)                        \
  X(ReplicaShardedSlice, "ReplicaShardedSlice", collectives, CollectiveAttrs, Grad)                \
  /* Streaming Memory */                                                                           \
  X(RemoteLoad, "RemoteLoad", remote, RemoteAttrs, NoGrad)                                         \
  X(RemoteLoadInplace, "RemoteLoadInplace", remote, RemoteAttrs, NoGrad | Inplace)                 \
  X(RemoteStore, "RemoteStore", remote, RemoteAttrs, NoGrad)

enum class OpKind : std::uint8_t {
#define PXL_X(kind, ...) kind,
  PXL_OP_TABLE(PXL_X)
#undef PXL_X
};

inline constexpr std::size_t num_op_kinds = 0
#define PXL_X(kind, ...) +1
    PXL_OP_TABLE(PXL_X)
#undef PXL_X
    ;

/// All kinds, in table order (for tests and registries that walk the table).
inline constexpr std::array<OpKind, num_op_kinds> all_op_kinds = {
#define PXL_X(kind, ...) OpKind::kind,
    PXL_OP_TABLE(PXL_X)
#undef PXL_X
};

// The op table's columns, by kind. At namespace scope, so that each is one object in
// read-only data: a constexpr local of a function called at run time is rebuilt on the
// stack at every call.
namespace detail {
inline constexpr std::array<std::string_view, num_op_kinds> op_type_names = {
#define PXL_X(kind, name, ...) name,
    PXL_OP_TABLE(PXL_X)
#undef PXL_X
};
inline constexpr std::array<OpFamily, num_op_kinds> op_families = {
#define PXL_X(kind, name, family, ...) OpFamily::family,
    PXL_OP_TABLE(PXL_X)
#undef PXL_X
};
inline constexpr std::array<unsigned, num_op_kinds> op_flag_sets = [] {
  using namespace op_flags;
  return std::array<unsigned, num_op_kinds>{
#define PXL_X(kind, name, family, attrs, flags) (flags),
      PXL_OP_TABLE(PXL_X)
#undef PXL_X
  };
}();
} // namespace detail

/// The op type as print_schedule shows it ("MatMul", "Add", ...).
constexpr std::string_view op_type_name(OpKind k) {
  return detail::op_type_names[static_cast<std::size_t>(k)];
}

constexpr OpFamily family_of(OpKind k) { return detail::op_families[static_cast<std::size_t>(k)]; }

/// The family's file stem ("elementwise", "var_updates", ...).
constexpr std::string_view family_name(OpFamily f) {
  switch (f) {
#define PXL_F(f)                                                                                   \
  case OpFamily::f:                                                                                \
    return #f;
    PXL_F(elementwise)
    PXL_F(reduce)
    PXL_F(matmul)
    PXL_F(nn)
    PXL_F(random)
    PXL_F(shape)
    PXL_F(var_updates)
    PXL_F(call)
    PXL_F(host_io)
    PXL_F(collectives)
    PXL_F(remote)
#undef PXL_F
  }
  return "";
}

/// The row's flags (op_flags).
constexpr unsigned flags_of(OpKind k) { return detail::op_flag_sets[static_cast<std::size_t>(k)]; }

/// Ops whose output 0 is input 0, modified in place.
constexpr bool is_inplace(OpKind k) { return (flags_of(k) & op_flags::Inplace) != 0; }
/// Ops with a gradient rule; a gradient through any other is a GraphError naming it.
constexpr bool is_differentiable(OpKind k) { return (flags_of(k) & op_flags::NoGrad) == 0; }

/// The attribute type of each kind: `op_attrs_t<OpKind::Slice>` is SliceAttrs.
template <OpKind K>
struct OpRow;
#define PXL_X(kind, name, family, attrs, flags)                                                    \
  template <>                                                                                      \
  struct OpRow<OpKind::kind> {                                                                     \
    using Attrs = attrs;                                                                           \
  };
PXL_OP_TABLE(PXL_X)
#undef PXL_X
template <OpKind K>
using op_attrs_t = typename OpRow<K>::Attrs;

namespace detail {
template <typename T, typename... Ts>
constexpr std::size_t index_in(std::variant<Ts...>*) {
  constexpr bool is[] = {std::is_same_v<T, Ts>...};
  for (std::size_t i = 0; i < sizeof...(Ts); ++i)
    if (is[i])
      return i;
  return sizeof...(Ts);
}

inline constexpr std::array<std::size_t, num_op_kinds> op_attrs_indices = {
#define PXL_X(kind, name, family, attrs, flags) index_in<attrs>(static_cast<OpAttrs*>(nullptr)),
    PXL_OP_TABLE(PXL_X)
#undef PXL_X
};
} // namespace detail

/// The index, in OpAttrs, of kind k's attribute type: ops are built with it (checked).
constexpr std::size_t attrs_index(OpKind k) {
  return detail::op_attrs_indices[static_cast<std::size_t>(k)];
}

} // namespace pxl
