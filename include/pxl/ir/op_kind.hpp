// pxl::OpKind: the op table. Every op is declared here once; the rest is derived from it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace pxl {

// X(Kind, "PopXL op type")
// The emulator's kernels and the autodiff rules are specialisations keyed by OpKind and
// instantiated over this list, so an entry without a kernel or a grad rule fails to compile.
#define PXL_OP_TABLE(X)                                                                            \
  /* elementwise, unary */                                                                         \
  X(Negate, "Neg")                                                                                 \
  X(Abs, "Abs")                                                                                    \
  X(Exp, "Exp")                                                                                    \
  X(Log, "Log")                                                                                    \
  X(Sqrt, "Sqrt")                                                                                  \
  X(Tanh, "Tanh")                                                                                  \
  X(Sigmoid, "Sigmoid")                                                                            \
  X(Relu, "Relu")                                                                                  \
  X(Gelu, "Gelu")                                                                                  \
  X(GeluErf, "GeluErf")                                                                            \
  X(LogicalNot, "Not")                                                                             \
  X(IsNan, "IsNaN")                                                                                \
  X(Cast, "Cast")                                                                                  \
  X(Identity, "Identity")                                                                          \
  X(Detach, "Detach")                                                                              \
  /* elementwise, binary (NumPy broadcasting) */                                                   \
  X(Add, "Add")                                                                                    \
  X(Sub, "Sub")                                                                                    \
  X(Mul, "Mul")                                                                                    \
  X(Div, "Div")                                                                                    \
  X(Pow, "Pow")                                                                                    \
  X(Maximum, "Max")                                                                                \
  X(Equal, "Equal")                                                                                \
  X(Greater, "Greater")                                                                            \
  X(LogicalAnd, "And")                                                                             \
  X(LogicalOr, "Or")                                                                               \
  X(Where, "Where")                                                                                \
  /* reductions */                                                                                 \
  X(ReduceSum, "ReduceSum")                                                                        \
  X(ReduceMean, "ReduceMean")                                                                      \
  X(ReduceMax, "ReduceMax")                                                                        \
  X(ReduceMin, "ReduceMin")                                                                        \
  X(ArgMax, "ArgMax")                                                                              \
  /* linear algebra */                                                                             \
  X(MatMul, "MatMul")                                                                              \
  /* nn */                                                                                         \
  X(Softmax, "Softmax")                                                                            \
  X(LogSoftmax, "LogSoftmax")                                                                      \
  X(LayerNorm, "LayerNorm")                                                                        \
  X(Dropout, "Dropout")                                                                            \
  X(RandomNormal, "RandomNormal")                                                                  \
  X(RandomUniform, "RandomUniform")                                                                \
  X(SplitRandomSeed, "SplitRandomSeed")                                                            \
  X(NllLoss, "Nll")                                                                                \
  X(NllLossWithSoftmaxGrad, "NllWithSoftmaxGrad")                                                  \
  /* shape and data movement */                                                                    \
  X(Reshape, "Reshape")                                                                            \
  X(Transpose, "Transpose")                                                                        \
  X(Slice, "Slice")                                                                                \
  X(Concat, "Concat")                                                                              \
  X(Split, "Split")                                                                                \
  X(Gather, "Gather")                                                                              \
  X(OneHot, "OneHot")                                                                              \
  X(Init, "Init")                                                                                  \
  /* in-place updates: output aliases input 0 */                                                   \
  X(AddInplace, "AddLhsInplace")                                                                   \
  X(SubInplace, "SubtractLhsInplace")                                                              \
  X(MulInplace, "MulLhsInplace")                                                                   \
  X(ScaledAdd, "ScaledAdd")                                                                        \
  X(ScaledAddInplace, "ScaledAddLhsInplace")                                                       \
  X(Accumulate, "Accumulate")                                                                      \
  X(CopyVarUpdate, "CopyVarUpdate")                                                                \
  X(AccumulatorScale, "AccumulatorScale")                                                          \
  X(AccumulatorZero, "AccumulatorZero")                                                            \
  /* control */                                                                                    \
  X(Call, "Call")                                                                                  \
  X(Repeat, "Loop")                                                                                \
  /* host IO */                                                                                    \
  X(HostLoad, "HostLoad")                                                                          \
  X(HostStore, "HostStore")                                                                        \
  /* collectives across replicas */                                                                \
  X(ReplicatedAllReduce, "ReplicatedAllReduce")                                                    \
  X(ReplicatedAllReduceInplace, "ReplicatedAllReduceInplace")                                      \
  X(ReplicatedReduceScatter, "ReplicatedReduceScatter")                                            \
  X(ReplicatedAllGather, "ReplicatedAllGather")                                                    \
  X(ReplicatedSlice, "ReplicatedSlice")                                                            \
  X(ReplicaShardedSlice, "ReplicaShardedSlice")

enum class OpKind : std::uint8_t {
#define PXL_X(kind, name) kind,
  PXL_OP_TABLE(PXL_X)
#undef PXL_X
};

inline constexpr std::size_t num_op_kinds = 0
#define PXL_X(kind, name) +1
    PXL_OP_TABLE(PXL_X)
#undef PXL_X
    ;

/// All kinds, in table order (for tests and registries that walk the table).
inline constexpr std::array<OpKind, num_op_kinds> all_op_kinds = {
#define PXL_X(kind, name) OpKind::kind,
    PXL_OP_TABLE(PXL_X)
#undef PXL_X
};

/// The op type as print_schedule shows it ("MatMul", "Add", ...).
constexpr std::string_view op_type_name(OpKind k) {
  constexpr std::array<std::string_view, num_op_kinds> names = {
#define PXL_X(kind, name) name,
      PXL_OP_TABLE(PXL_X)
#undef PXL_X
  };
  return names[static_cast<std::size_t>(k)];
}

/// Ops whose output 0 is input 0, modified in place.
constexpr bool is_inplace(OpKind k) {
  switch (k) {
  case OpKind::AddInplace:
  case OpKind::SubInplace:
  case OpKind::MulInplace:
  case OpKind::ScaledAddInplace:
  case OpKind::Accumulate:
  case OpKind::CopyVarUpdate:
  case OpKind::AccumulatorScale:
  case OpKind::AccumulatorZero:
  case OpKind::ReplicatedAllReduceInplace:
    return true;
  default:
    return false;
  }
}

} // namespace pxl
