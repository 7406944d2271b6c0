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
  conv,
  pool,
  nn,
  random,
  shape,
  var_updates,
  call,
  host_io,
  collectives,
  remote,
  norm,
};

/// Facts about an op kind, combined with `|` in its row.
namespace op_flags {
enum : unsigned {
  Grad = 0,    ///< differentiable: `lib/ops/F_grad.cpp` defines grad_<Kind>
  NoGrad = 1,  ///< not differentiable: a gradient through it is a GraphError naming it
  Inplace = 2, ///< output 0 is input 0, modified in place
  View = 4,    ///< output 0 is PopXL's alias of its inputs (`reshape_`, `slice_`, ...): pxl
               ///< holds it as a copy and refuses what would tell the two apart, a write
               ///< through the view or a read of it after its source changed
               ///< (docs/semantics.md, "Views")
  Moves = 8,   ///< reads no value of its data operands, only moves or converts them: takes
               ///< every device dtype, int8, int16, uint16 and float8 included. The other ops
               ///< compute and refuse those (a DTypeError naming the operand;
               ///< docs/semantics.md, "dtypes")
  Float8 = 16, ///< computes on float8 operands with a power-of-two scale (the pow2-scaled
               ///< casts and products), which every other computing op refuses
};
} // namespace op_flags

/// How the cost model (lib/emu/cost_model.cpp) prices an op: the closed form of its cycles.
/// Each row names one, so that an op added to the table is never priced by a default.
enum class OpCost : std::uint8_t {
  local,              ///< 1 vector instruction per element, on the tiles that hold the output
  local_series,       ///< 4 per element (a function computed by a short series), no exchange
  exchanged,          ///< 1 per element, the inputs exchanged to the output's tiles first
  exchanged_series,   ///< 4 per element, the inputs exchanged first
  tree_reduce,        ///< a reduction as PopLibs' multi-stage reduce: each tile reduces its part
                      ///< of the input, then the partials are exchanged and reduced in stages
  tree_reduce_series, ///< the same at 4 instructions per element in the first stage
  amp,                ///< the AMP units of the output's tiles (matmul, convolutions as the
                      ///< im2col product), the inputs exchanged
  host_load,          ///< what it writes crosses the host link
  host_store,         ///< what it reads crosses the host link
  remote_load,        ///< what it writes comes from Streaming Memory, at its bandwidth
  remote_store,       ///< what it reads goes to Streaming Memory
  ipu_link,           ///< from one IPU to another, over the IPU-Link
  ring_all_reduce,    ///< a ring over the replicas, each sending 2(r - 1)/r of the bytes
  ipu_ring,           ///< an all-reduce ring over the IPUs of one replica (StepInfo::ipus), each
                      ///< IPU sending 2(n - 1)/n of its tensor over its own IPU-Link
  ring_one_way,       ///< a ring sending (r - 1)/r of the bytes (reduce-scatter, all-gather)
  replica_slice,      ///< a replica's own part, 1 instruction per element, nothing sent
  call,               ///< the callee's steps are priced; the call step only copies arguments
};

// X(Kind, "PopXL op type", family, attribute type, flags, cost)
// The enum, names, families, flags, costs and attribute types below are derived from the rows; the
// emulator's kernels (compile_<Kind>), the autodiff rules (grad_<Kind>, for kinds with Grad)
// and the test reference (ref_<Kind>) are tables instantiated over them, so a row without its
// kernel, rule or reference fails to link.
#define PXL_OP_TABLE(X)                                                                            \
  /* elementwise, unary */                                                                         \
  X(Negate, "Neg", elementwise, NoAttrs, Grad, local)                                              \
  X(Abs, "Abs", elementwise, NoAttrs, Grad, local)                                                 \
  X(Exp, "Exp", elementwise, NoAttrs, Grad, local_series)                                          \
  X(Log, "Log", elementwise, NoAttrs, Grad, local_series)                                          \
  X(Sqrt, "Sqrt", elementwise, NoAttrs, Grad, local_series)                                        \
  X(Tanh, "Tanh", elementwise, NoAttrs, Grad, local_series)                                        \
  X(Sigmoid, "Sigmoid", elementwise, NoAttrs, Grad, local_series)                                  \
  X(Relu, "Relu", elementwise, NoAttrs, Grad, local)                                               \
  X(Gelu, "Gelu", elementwise, NoAttrs, Grad, local_series)                                        \
  X(GeluErf, "GeluErf", elementwise, NoAttrs, Grad, local_series)                                  \
  X(Erf, "Erf", elementwise, NoAttrs, Grad, local_series)                                          \
  X(Sin, "Sin", elementwise, NoAttrs, Grad, local_series)                                          \
  X(Cos, "Cos", elementwise, NoAttrs, Grad, local_series)                                          \
  X(Sign, "Sign", elementwise, NoAttrs, Grad, local)                                               \
  X(Clip, "Clip", elementwise, ScalarAttrs, Grad, local)                                           \
  X(LogicalNot, "Not", elementwise, NoAttrs, NoGrad, local)                                        \
  X(IsNan, "IsNaN", elementwise, NoAttrs, NoGrad, local)                                           \
  X(IsInf, "IsInf", elementwise, NoAttrs, NoGrad, local)                                           \
  X(IsFinite, "IsFinite", elementwise, NoAttrs, NoGrad, local)                                     \
  X(Floor, "Floor", elementwise, NoAttrs, NoGrad, local)                                           \
  X(Ceil, "Ceil", elementwise, NoAttrs, NoGrad, local)                                             \
  X(Log2, "Log2", elementwise, NoAttrs, Grad, local_series)                                        \
  X(Swish, "Swish", elementwise, NoAttrs, Grad, local_series)                                      \
  X(IncrementMod, "IncrementMod", elementwise, ScalarAttrs, NoGrad, local_series)                  \
  X(IncrementModInplace, "IncrementModInplace", elementwise, ScalarAttrs, NoGrad | Inplace,        \
    local_series)                                                                                  \
  X(Cast, "Cast", elementwise, CastAttrs, Grad | Moves, local)                                     \
  /* float8 from and to float16/float32, times 2^log2_scale (input 1, an int32 scalar) */          \
  X(Pow2ScaleThenCast, "Pow2ScaleThenCast", elementwise, CastAttrs, NoGrad | Float8, local)        \
  X(CastThenPow2Scale, "CastThenPow2Scale", elementwise, CastAttrs, NoGrad | Float8, local)        \
  X(Identity, "Identity", elementwise, NoAttrs, Grad | Moves, local)                               \
  X(Detach, "Detach", elementwise, NoAttrs, Grad | Moves, local)                                   \
  /* elementwise, in place (PopART defines no gradient for these) and detach_'s view */            \
  X(ReluInplace, "ReluInplace", elementwise, NoAttrs, NoGrad | Inplace, local)                     \
  X(GeluInplace, "GeluInplace", elementwise, NoAttrs, NoGrad | Inplace, local_series)              \
  X(GeluErfInplace, "GeluErfInplace", elementwise, NoAttrs, NoGrad | Inplace, local_series)        \
  X(ExpInplace, "ExpInplace", elementwise, NoAttrs, NoGrad | Inplace, local_series)                \
  X(SwishInplace, "SwishInplace", elementwise, NoAttrs, NoGrad | Inplace, local_series)            \
  X(DetachInplace, "DetachInplace", elementwise, NoAttrs, Grad | View | Moves, local)              \
  /* elementwise, binary (NumPy broadcasting) */                                                   \
  X(Add, "Add", elementwise, NoAttrs, Grad, local)                                                 \
  X(Sub, "Sub", elementwise, NoAttrs, Grad, local)                                                 \
  X(Mul, "Mul", elementwise, NoAttrs, Grad, local)                                                 \
  X(Div, "Div", elementwise, NoAttrs, Grad, local)                                                 \
  X(Pow, "Pow", elementwise, NoAttrs, Grad, local_series)                                          \
  X(Fmod, "Fmod", elementwise, NoAttrs, Grad, local_series)                                        \
  X(Maximum, "Max", elementwise, NoAttrs, Grad, local)                                             \
  X(Minimum, "Min", elementwise, NoAttrs, Grad, local)                                             \
  X(Equal, "Equal", elementwise, NoAttrs, NoGrad, local)                                           \
  X(NotEqual, "NotEqual", elementwise, NoAttrs, NoGrad, local)                                     \
  X(Greater, "Greater", elementwise, NoAttrs, NoGrad, local)                                       \
  X(GreaterEqual, "GreaterOrEqual", elementwise, NoAttrs, NoGrad, local)                           \
  X(Less, "Less", elementwise, NoAttrs, NoGrad, local)                                             \
  X(LessEqual, "LessOrEqual", elementwise, NoAttrs, NoGrad, local)                                 \
  X(LogicalAnd, "And", elementwise, NoAttrs, NoGrad, local)                                        \
  X(LogicalOr, "Or", elementwise, NoAttrs, NoGrad, local)                                          \
  X(Where, "Where", elementwise, NoAttrs, Grad | Moves, local)                                     \
  /* elementwise, a gradient in one pass (what autodiff emits for its op) */                       \
  X(GeluGrad, "GeluGrad", elementwise, NoAttrs, Grad, local_series)                                \
  X(TanhGrad, "TanhGrad", elementwise, NoAttrs, Grad, local)                                       \
  /* reductions */                                                                                 \
  X(ReduceSum, "ReduceSum", reduce, ReduceAttrs, Grad, tree_reduce)                                \
  X(ReduceMean, "ReduceMean", reduce, ReduceAttrs, Grad, tree_reduce)                              \
  X(ReduceMax, "ReduceMax", reduce, ReduceAttrs, Grad, tree_reduce)                                \
  X(ReduceMin, "ReduceMin", reduce, ReduceAttrs, Grad, tree_reduce)                                \
  X(ReduceProd, "ReduceProd", reduce, ReduceAttrs, Grad, tree_reduce)                              \
  X(ReduceL1, "ReduceL1", reduce, ReduceAttrs, Grad, tree_reduce)                                  \
  X(ReduceL2, "ReduceL2", reduce, ReduceAttrs, Grad, tree_reduce)                                  \
  X(ReduceSumSquare, "ReduceSumSquare", reduce, ReduceAttrs, Grad, tree_reduce)                    \
  X(ReduceLogSum, "ReduceLogSum", reduce, ReduceAttrs, Grad, tree_reduce_series)                   \
  X(ReduceLogSumExp, "ReduceLogSumExp", reduce, ReduceAttrs, Grad, tree_reduce_series)             \
  X(ArgMax, "ArgMax", reduce, AxisAttrs, NoGrad, tree_reduce)                                      \
  X(ArgMin, "ArgMin", reduce, AxisAttrs, NoGrad, tree_reduce)                                      \
  X(CumSum, "CumSum", reduce, AxisAttrs, Grad, exchanged)                                          \
  X(TopK, "TopK", reduce, TopKAttrs, Grad, exchanged)                                              \
  X(ReduceMedian, "ReduceMedian", reduce, ReduceAttrs, Grad, exchanged)                            \
  X(Histogram, "Histogram", reduce, HistogramAttrs, NoGrad, exchanged)                             \
  X(LambSquare, "LambSquare", reduce, NoAttrs, NoGrad, exchanged)                                  \
  /* linear algebra */                                                                             \
  X(MatMul, "MatMul", matmul, MatMulAttrs, Grad, amp)                                              \
  /* convolutions (conv's data gradient is a ConvTranspose, conv_transpose's a Conv) */            \
  X(Conv, "Conv", conv, ConvAttrs, Grad, amp)                                                      \
  X(ConvTranspose, "ConvTranspose", conv, ConvAttrs, Grad, amp)                                    \
  X(ConvWeightsGrad, "ConvWeightsGrad", conv, ConvAttrs, NoGrad, amp)                              \
  /* pooling over 1-3 spatial axes; vector work, each window read across the input's tiles */      \
  X(MaxPool, "MaxPool", pool, PoolAttrs, Grad, exchanged)                                          \
  X(AveragePool, "AveragePool", pool, PoolAttrs, Grad, exchanged)                                  \
  X(MaxPoolGrad, "MaxPoolGrad", pool, PoolAttrs, NoGrad, exchanged)                                \
  X(AveragePoolGrad, "AveragePoolGrad", pool, PoolAttrs, NoGrad, exchanged)                        \
  X(RoiAlign, "RoiAlign", pool, RoiAlignAttrs, Grad, exchanged)                                    \
  X(RoiAlignGrad, "RoiAlignGrad", pool, RoiAlignAttrs, NoGrad, exchanged)                          \
  /* nn */                                                                                         \
  X(Softmax, "Softmax", nn, AxisAttrs, Grad, exchanged_series)                                     \
  X(LogSoftmax, "LogSoftmax", nn, AxisAttrs, Grad, exchanged_series)                               \
  X(LayerNorm, "LayerNorm", nn, ScalarAttrs, Grad, exchanged_series)                               \
  X(SoftmaxGrad, "SoftmaxGrad", nn, AxisAttrs, Grad, exchanged_series)                             \
  X(LayerNormGrad, "LayerNormGrad", nn, ScalarAttrs, NoGrad, exchanged_series)                     \
  X(Dropout, "Dropout", nn, ScalarAttrs, Grad, exchanged)                                          \
  X(ShapedDropout, "ShapedDropout", nn, ShapedDropoutAttrs, Grad, exchanged)                       \
  X(NllLoss, "Nll", nn, NllAttrs, Grad, exchanged_series)                                          \
  X(NllLossWithSoftmaxGrad, "NllWithSoftmaxGrad", nn, NllAttrs, NoGrad, exchanged_series)          \
  /* random numbers */                                                                             \
  X(RandomNormal, "RandomNormal", random, CreateAttrs, NoGrad, local_series)                       \
  X(RandomUniform, "RandomUniform", random, CreateAttrs, NoGrad, local_series)                     \
  X(SplitRandomSeed, "SplitRandomSeed", random, ScalarAttrs, NoGrad, local)                        \
  /* shape and data movement */                                                                    \
  X(Reshape, "Reshape", shape, NoAttrs, Grad | Moves, local)                                       \
  X(Transpose, "Transpose", shape, TransposeAttrs, Grad | Moves, exchanged)                        \
  X(Slice, "Slice", shape, SliceAttrs, Grad | Moves, exchanged)                                    \
  X(Concat, "Concat", shape, AxisAttrs, Grad | Moves, exchanged)                                   \
  X(Split, "Split", shape, SplitAttrs, Grad | Moves, exchanged)                                    \
  X(Gather, "Gather", shape, AxisAttrs, Grad | Moves, exchanged)                                   \
  X(GroupedGather, "GroupedGather", shape, GroupedGatherAttrs, Grad | Moves, exchanged)            \
  X(TiedGather, "TiedGather", shape, AxisAttrs, Grad | Moves, exchanged)                           \
  X(OneHot, "OneHot", shape, OneHotAttrs, NoGrad, exchanged)                                       \
  X(Init, "Init", shape, CreateAttrs, NoGrad | Moves, local)                                       \
  X(Arange, "Arange", shape, CreateAttrs, NoGrad, local)                                           \
  X(Tril, "Tril", shape, DiagonalAttrs, Grad | Moves, exchanged)                                   \
  X(Triu, "Triu", shape, DiagonalAttrs, Grad | Moves, exchanged)                                   \
  X(Pad, "Pad", shape, PadAttrs, Grad | Moves, exchanged)                                          \
  X(Tile, "Tile", shape, TileAttrs, Grad | Moves, exchanged)                                       \
  X(Subsample, "Subsample", shape, SubsampleAttrs, Grad | Moves, exchanged)                        \
  X(TakeAlongAxis, "GatherElements", shape, AxisAttrs, Grad | Moves, exchanged)                    \
  X(Scatter, "ScatterElements", shape, AxisAttrs, Grad | Moves, exchanged)                         \
  X(ScatterReduce, "ScatterReduce", shape, ScatterReduceAttrs, Grad, exchanged)                    \
  X(DynamicSlice, "DynamicSlice", shape, DynamicAttrs, Grad | Moves, exchanged)                    \
  X(DynamicUpdate, "DynamicUpdate", shape, DynamicAttrs, Grad | Moves, exchanged)                  \
  X(IpuCopy, "IpuCopy", shape, NoAttrs, Grad | Moves, ipu_link)                                    \
  X(IoTileCopy, "IoTileCopy", shape, NoAttrs, Grad | Moves, exchanged)                             \
  /* shape, PopXL's aliasing forms (views, see op_flags::View) and the in-place dynamic update */  \
  X(ReshapeInplace, "ReshapeInplace", shape, NoAttrs, NoGrad | View | Moves, local)                \
  X(TransposeInplace, "TransposeInplace", shape, TransposeAttrs, NoGrad | View | Moves, exchanged) \
  X(SliceInplace, "SliceInplace", shape, SliceAttrs, NoGrad | View | Moves, exchanged)             \
  X(ConcatInplace, "ConcatInplace", shape, AxisAttrs, Grad | View | Moves, exchanged)              \
  X(DynamicUpdateInplace, "DynamicUpdateInplace", shape, DynamicAttrs, NoGrad | Inplace | Moves,   \
    exchanged)                                                                                     \
  X(Resize, "Resize", shape, ResizeAttrs, Grad, exchanged)                                         \
  X(ResizeGrad, "ResizeGrad", shape, ResizeAttrs, NoGrad, exchanged)                               \
  /* updates: the in-place kinds' output 0 is their input 0 */                                     \
  X(AddInplace, "AddLhsInplace", var_updates, NoAttrs, Grad | Inplace, local)                      \
  X(SubInplace, "SubtractLhsInplace", var_updates, NoAttrs, Grad | Inplace, local)                 \
  X(MulInplace, "MulLhsInplace", var_updates, NoAttrs, Grad | Inplace, local)                      \
  X(ScaledAdd, "ScaledAdd", var_updates, ScalarAttrs, Grad, local)                                 \
  X(ScaledAddInplace, "ScaledAddLhsInplace", var_updates, ScalarAttrs, Grad | Inplace, local)      \
  X(Accumulate, "Accumulate", var_updates, ScalarAttrs, Grad | Inplace, local)                     \
  X(CopyVarUpdate, "CopyVarUpdate", var_updates, NoAttrs, Grad | Inplace | Moves, local)           \
  X(AccumulatorScale, "AccumulatorScale", var_updates, ScalarAttrs, Grad | Inplace, local)         \
  X(AccumulatorZero, "AccumulatorZero", var_updates, NoAttrs, Grad | Inplace, local)               \
  X(AccumulateMovingAverage, "AccumulateMovingAverage", var_updates, ScalarAttrs, Grad | Inplace,  \
    local)                                                                                         \
  X(AccumulateMovingAverageSquare, "AccumulateMovingAverageSquare", var_updates, ScalarAttrs,      \
    Grad | Inplace, local)                                                                         \
  X(AdamUpdater, "AdamUpdater", var_updates, AdamUpdaterAttrs, NoGrad, local_series)               \
  X(AdamaxUpdater, "AdamaxUpdater", var_updates, AdamUpdaterAttrs, NoGrad, local_series)           \
  X(AccumulateSquare, "AccumulateSquare", var_updates, ScalarAttrs, Grad | Inplace, local)         \
  X(AccumulateMean, "AccumulateMean", var_updates, ScalarAttrs, Grad | Inplace, local)             \
  X(SparseAccumulate, "SparseAccumulate", var_updates, SparseAccumulateAttrs, Grad | Inplace,      \
    local)                                                                                         \
  X(AdamVarUpdate, "AdamVarUpdate", var_updates, ScalarAttrs, NoGrad | Inplace, local)             \
  /* calls */                                                                                      \
  X(Call, "Call", call, CallAttrs, Grad | Moves, call)                                             \
  X(Repeat, "Loop", call, CallAttrs, Grad | Moves, call)                                           \
  X(Conditional, "If", call, ConditionalAttrs, Grad | Moves, call)                                 \
  /* host IO */                                                                                    \
  X(HostLoad, "HostLoad", host_io, StreamAttrs, NoGrad | Moves, host_load)                         \
  X(HostStore, "HostStore", host_io, StreamAttrs, NoGrad | Moves, host_store)                      \
  X(PrintTensor, "PrintTensor", host_io, PrintAttrs, Grad, exchanged)                              \
  /* collectives across replicas */                                                                \
  X(ReplicatedAllReduce, "ReplicatedAllReduce", collectives, CollectiveAttrs, Grad,                \
    ring_all_reduce)                                                                               \
  X(ReplicatedAllReduceInplace, "ReplicatedAllReduceInplace", collectives, CollectiveAttrs,        \
    Grad | Inplace, ring_all_reduce)                                                               \
  X(ReplicatedReduceScatter, "ReplicatedReduceScatter", collectives, CollectiveAttrs, Grad,        \
    ring_one_way)                                                                                  \
  X(ReplicatedAllGather, "ReplicatedAllGather", collectives, CollectiveAttrs, Grad | Moves,        \
    ring_one_way)                                                                                  \
  X(ReplicatedSlice, "ReplicatedSlice", collectives, CollectiveAttrs, Grad | Moves, replica_slice) \
  X(ReplicaShardedSlice, "ReplicaShardedSlice", collectives, CollectiveAttrs, Grad | Moves,        \
    replica_slice)                                                                                 \
  /* collectives across the IPUs of one replica: input and output i on the i-th IPU */             \
  X(AllReduce, "AllReduce", collectives, CollectiveAttrs, Grad, ipu_ring)                          \
  /* Streaming Memory */                                                                           \
  X(RemoteLoad, "RemoteLoad", remote, RemoteAttrs, NoGrad | Moves, remote_load)                    \
  X(RemoteLoadInplace, "RemoteLoadInplace", remote, RemoteAttrs, NoGrad | Inplace | Moves,         \
    remote_load)                                                                                   \
  X(RemoteStore, "RemoteStore", remote, RemoteAttrs, NoGrad | Moves, remote_store)                 \
  X(RemoteCodeLoad, "RemoteCodeLoad", remote, CodeLoadAttrs, NoGrad, remote_load)                  \
  /* normalisation over channels: statistics read across the tiles of the input */                 \
  X(BatchNormInference, "BatchNormInference", norm, NormAttrs, Grad, exchanged)                    \
  X(BatchNormTraining, "BatchNormTraining", norm, NormAttrs, Grad, exchanged_series)               \
  X(BatchNormGrad, "BatchNormGrad", norm, NormAttrs, NoGrad, exchanged_series)                     \
  X(GroupNorm, "GroupNormalization", norm, NormAttrs, Grad, exchanged_series)                      \
  X(GroupNormGrad, "GroupNormalizationGrad", norm, NormAttrs, NoGrad, exchanged_series)

enum class OpKind : std::uint8_t {
#define PXL_X(kind, ...) kind,
  PXL_OP_TABLE(PXL_X)
#undef PXL_X
  /// The sum reduction of ScatterReduce, by its former name.
  ScatterAdd [[deprecated("use OpKind::ScatterReduce")]] = ScatterReduce,
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
#define PXL_X(kind, name, family, attrs, flags, cost) (flags),
      PXL_OP_TABLE(PXL_X)
#undef PXL_X
  };
}();
inline constexpr std::array<OpCost, num_op_kinds> op_costs = {
#define PXL_X(kind, name, family, attrs, flags, cost) OpCost::cost,
    PXL_OP_TABLE(PXL_X)
#undef PXL_X
};
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
    PXL_F(conv)
    PXL_F(pool)
    PXL_F(nn)
    PXL_F(random)
    PXL_F(shape)
    PXL_F(var_updates)
    PXL_F(call)
    PXL_F(host_io)
    PXL_F(collectives)
    PXL_F(remote)
    PXL_F(norm)
#undef PXL_F
  }
  return "";
}

/// The row's flags (op_flags).
constexpr unsigned flags_of(OpKind k) { return detail::op_flag_sets[static_cast<std::size_t>(k)]; }

/// How the cost model prices the op (the row's OpCost).
constexpr OpCost cost_of(OpKind k) { return detail::op_costs[static_cast<std::size_t>(k)]; }

/// Ops whose output 0 is input 0, modified in place.
constexpr bool is_inplace(OpKind k) { return (flags_of(k) & op_flags::Inplace) != 0; }
/// Whether the op reads tensors of other IPUs than its own (the one kind of op that may):
/// IpuCopy, and AllReduce across the IPUs of a replica.
constexpr bool crosses_ipus(OpKind k) { return k == OpKind::IpuCopy || k == OpKind::AllReduce; }
/// Ops whose output 0 is PopXL's alias (view) of their inputs, held as a copy (op_flags::View).
constexpr bool is_view(OpKind k) { return (flags_of(k) & op_flags::View) != 0; }
/// Ops with a gradient rule; a gradient through any other is a GraphError naming it.
/// Ops that only move or convert their data (op_flags::Moves), the ones int8, int16 and uint16
/// reach.
constexpr bool moves_only(OpKind k) { return (flags_of(k) & op_flags::Moves) != 0; }
/// Ops that compute on float8 operands (op_flags::Float8).
constexpr bool computes_float8(OpKind k) { return (flags_of(k) & op_flags::Float8) != 0; }
constexpr bool is_differentiable(OpKind k) { return (flags_of(k) & op_flags::NoGrad) == 0; }

/// The attribute type of each kind: `op_attrs_t<OpKind::Slice>` is SliceAttrs.
template <OpKind K>
struct OpRow;
#define PXL_X(kind, name, family, attrs, flags, cost)                                              \
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
#define PXL_X(kind, name, family, attrs, flags, cost)                                              \
  index_in<attrs>(static_cast<OpAttrs*>(nullptr)),
    PXL_OP_TABLE(PXL_X)
#undef PXL_X
};
} // namespace detail

/// The index, in OpAttrs, of kind k's attribute type: ops are built with it (checked).
constexpr std::size_t attrs_index(OpKind k) {
  return detail::op_attrs_indices[static_cast<std::size_t>(k)];
}

} // namespace pxl
