// Op attributes: the compile-time parameters an op carries besides its input tensors.
#pragma once

#include "pxl/core/shape.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace pxl {

struct NoAttrs {
  friend bool operator==(const NoAttrs&, const NoAttrs&) = default;
};

/// Reductions, squeeze-like ops: normalised, sorted axes.
struct ReduceAttrs {
  std::vector<std::int64_t> axes;
  bool keepdims = false;
  friend bool operator==(const ReduceAttrs&, const ReduceAttrs&) = default;
};

/// Ops along one normalised axis: softmax, log_softmax, concat, gather, onehot, argmax.
struct AxisAttrs {
  std::int64_t axis = 0;
  bool keepdims = false;
  friend bool operator==(const AxisAttrs&, const AxisAttrs&) = default;
};

/// TopK: how many elements, along which (normalised) axis, the largest or the smallest.
struct TopKAttrs {
  std::int64_t k = 0, axis = 0;
  bool largest = true;
  friend bool operator==(const TopKAttrs&, const TopKAttrs&) = default;
};

struct TransposeAttrs {
  std::vector<std::int64_t> perm;
  friend bool operator==(const TransposeAttrs&, const TransposeAttrs&) = default;
};

/// Per-axis [start, stop) with step 1 over every axis of the input (already normalised).
struct SliceAttrs {
  std::vector<std::int64_t> start, stop;
  friend bool operator==(const SliceAttrs&, const SliceAttrs&) = default;
};

struct SplitAttrs {
  std::vector<std::int64_t> sizes;
  std::int64_t axis = 0;
  friend bool operator==(const SplitAttrs&, const SplitAttrs&) = default;
};

struct CastAttrs {
  DType to = float32;
  friend bool operator==(const CastAttrs&, const CastAttrs&) = default;
};

/// Scalar parameters: pow's exponent when constant is a tensor; here a, b for scaled_add,
/// f for accumulate/accumulator_scale and the moving averages, eps for layer_norm, ratio for
/// dropout.
struct ScalarAttrs {
  double a = 0.0, b = 0.0;
  friend bool operator==(const ScalarAttrs&, const ScalarAttrs&) = default;
};

/// shaped_dropout: the drop probability and the shape of the mask, broadcast to the input.
struct ShapedDropoutAttrs {
  double ratio = 0.0;
  Shape shape;
  friend bool operator==(const ShapedDropoutAttrs&, const ShapedDropoutAttrs&) = default;
};

enum class InitType : std::uint8_t { zero, undef };

/// ops::init and the random generators: what to create.
struct CreateAttrs {
  TensorSpec spec;
  InitType init = InitType::zero;
  double a = 0.0, b = 0.0; ///< random_uniform: low, high; random_normal: mean, std; arange:
                           ///< start, step
  friend bool operator==(const CreateAttrs&, const CreateAttrs&) = default;
};

enum class Reduction : std::uint8_t { mean, sum, none };

struct NllAttrs {
  Reduction reduction = Reduction::mean;
  std::optional<std::int32_t> ignore_index;
  bool log_prob = false;
  double loss_grad = 1.0; ///< nll_loss_with_softmax_grad's scaling of the gradient
  friend bool operator==(const NllAttrs&, const NllAttrs&) = default;
};

/// How scatter_reduce combines the values sent to one position (PopXL's ScatterReduction):
/// `none` writes them (the last along the axis wins).
enum class ScatterReduction : std::uint8_t { sum, max, min, none };

/// scatter_reduce: the (normalised) axis and the reduction. Input 2, when present, holds the
/// initial values; the output's extent on the axis is the op's axis_size.
struct ScatterReduceAttrs {
  std::int64_t axis = 0;
  ScatterReduction reduction = ScatterReduction::sum;
  friend bool operator==(const ScatterReduceAttrs&, const ScatterReduceAttrs&) = default;
};

/// groupedgather: the (normalised) axis, never 0, which is the group axis of `group_size`.
struct GroupedGatherAttrs {
  std::int64_t axis = 1;
  std::int64_t group_size = 1;
  friend bool operator==(const GroupedGatherAttrs&, const GroupedGatherAttrs&) = default;
};

/// interpolate's algorithm (PopXL's InterpolateType).
enum class ResizeMode : std::uint8_t { nearest, linear, cubic };

/// How interpolate's nearest mode rounds a source coordinate (PopXL's InterpolateNearestType).
enum class ResizeNearestMode : std::uint8_t { round_prefer_floor, round_prefer_ceil, floor, ceil };

/// How interpolate maps an output coordinate to the input's (PopXL's
/// InterpolateCoordinateTransformationType).
enum class ResizeCoordinateTransformationMode : std::uint8_t {
  half_pixel,
  pytorch_half_pixel,
  align_corners,
  asymmetric,
  tf_crop_and_resize
};

/// interpolate (Resize) and its gradient: the scale per axis of the forward input, the
/// algorithm, the nearest rounding and the coordinate transformation.
struct ResizeAttrs {
  std::vector<float> scales;
  ResizeMode mode = ResizeMode::nearest;
  ResizeNearestMode nearest_mode = ResizeNearestMode::round_prefer_floor;
  ResizeCoordinateTransformationMode coordinate_transformation_mode =
      ResizeCoordinateTransformationMode::half_pixel;
  friend bool operator==(const ResizeAttrs&, const ResizeAttrs&) = default;
};

/// call and repeat: the called graph (by index in its Ir) and, for repeat, the trip count.
struct CallAttrs {
  std::uint32_t graph = 0;
  std::int64_t repeat_count = 1;
  /// Expand the called graph in place at this call site instead of calling one shared copy
  /// (set through ops::CallOptions; Call only).
  bool inline_graph = false;
  friend bool operator==(const CallAttrs&, const CallAttrs&) = default;
};

/// conditional: input 0 is the condition; the next `then_inputs` inputs are bound to the
/// then-branch's inputs in order, the rest to the else-branch's.
struct ConditionalAttrs {
  std::uint32_t then_graph = 0;
  std::uint32_t else_graph = 0;
  std::uint32_t then_inputs = 0;
  friend bool operator==(const ConditionalAttrs&, const ConditionalAttrs&) = default;
};

struct StreamAttrs {
  std::uint32_t stream = 0;
  friend bool operator==(const StreamAttrs&, const StreamAttrs&) = default;
};

/// A remote load or store: the buffer, and the entry (`offset`), fixed at construction or,
/// with `runtime_offset`, read from the op's last input (an int32 scalar) when it runs.
struct RemoteAttrs {
  std::uint32_t buffer = 0;
  std::int64_t offset = 0;
  bool runtime_offset = false;
  friend bool operator==(const RemoteAttrs&, const RemoteAttrs&) = default;
};

/// remote_code_load: the graph whose code is loaded, and where to.
enum class CodeLocation : std::uint8_t { executable, compute_buffer, io_buffer };
struct CodeLoadAttrs {
  std::uint32_t graph = 0;
  CodeLocation destination = CodeLocation::executable;
  friend bool operator==(const CodeLoadAttrs&, const CodeLoadAttrs&) = default;
};

struct OneHotAttrs {
  std::int64_t num_classes = 0;
  std::int64_t axis = -1; ///< normalised against the output rank
  friend bool operator==(const OneHotAttrs&, const OneHotAttrs&) = default;
};

/// How a collective combines the values of a replica group (PopXL's reduce ops).
enum class CollectiveOperator : std::uint8_t {
  add,
  mean,
  mul,
  min,
  max,
  logical_and,
  logical_or,
  square_add, ///< the sum of the squares
};

/// Which autodiff rule an all-reduce follows (PopXL's identical-inputs pair): `none` is the
/// all-reduce both ways; `identical_inputs` is the identity forward (the group's inputs are
/// known to be equal) and an all-reduce of the gradients backward; `identical_grad_inputs` is
/// an all-reduce forward and the identity backward.
enum class AllReduceVariant : std::uint8_t { none, identical_inputs, identical_grad_inputs };

/// Collectives across replicas: the operator, the replica grouping (stride and size) and, for
/// gathers and slices, the axis (normalised) or whether the gather adds a new axis.
struct CollectiveAttrs {
  CollectiveOperator op = CollectiveOperator::add;
  std::int64_t stride = 1, group_size = 1;
  std::int64_t axis = 0;
  bool new_axis = false;
  AllReduceVariant variant = AllReduceVariant::none;
  friend bool operator==(const CollectiveAttrs&, const CollectiveAttrs&) = default;
};

/// tril and triu: the diagonal kept as the border (0 the main one, k > 0 above it).
struct DiagonalAttrs {
  std::int64_t k = 0;
  friend bool operator==(const DiagonalAttrs&, const DiagonalAttrs&) = default;
};

/// pad: the elements added before and after each axis, and their value.
struct PadAttrs {
  std::vector<std::int64_t> before, after;
  double value = 0.0;
  friend bool operator==(const PadAttrs&, const PadAttrs&) = default;
};

/// tile: how many copies along each axis.
struct TileAttrs {
  std::vector<std::int64_t> repeats;
  friend bool operator==(const TileAttrs&, const TileAttrs&) = default;
};

/// subsample: every `strides[i]`-th element along axis i, starting at the first.
struct SubsampleAttrs {
  std::vector<std::int64_t> strides;
  friend bool operator==(const SubsampleAttrs&, const SubsampleAttrs&) = default;
};

/// histogram: the bins' edges (strictly increasing) and whether |x| is binned instead of x.
struct HistogramAttrs {
  std::vector<double> levels;
  bool absolute_of_input = false;
  friend bool operator==(const HistogramAttrs&, const HistogramAttrs&) = default;
};

/// sparse_accumulate_: the (normalised) axis the indices select along, and the factor of the
/// accumulated slices.
struct SparseAccumulateAttrs {
  std::int64_t axis = 0;
  double factor = 1.0;
  friend bool operator==(const SparseAccumulateAttrs&, const SparseAccumulateAttrs&) = default;
};

/// dynamic_slice and dynamic_update: the axes the runtime offsets apply to and the extent of
/// the slice on each.
struct DynamicAttrs {
  std::vector<std::int64_t> axes, sizes;
  friend bool operator==(const DynamicAttrs&, const DynamicAttrs&) = default;
};

/// print_tensor: the line's title, and whether the gradient is printed too.
struct PrintAttrs {
  std::string title;
  bool print_gradient = false;
  friend bool operator==(const PrintAttrs&, const PrintAttrs&) = default;
};

/// adam_updater: the scalars of its formula, and which optional inputs follow the two moments
/// (the time step first, then the weight).
struct AdamUpdaterAttrs {
  double weight_decay = 0.0;
  double beta1 = 0.0, beta2 = 0.0; ///< used with `bias_correction` only
  double epsilon = 1e-7;
  bool bias_correction = false; ///< input 2 is the time step t: m / (1 − β1^t), v / (1 − β2^t)
  bool weight = false;          ///< the last input is the weight
  friend bool operator==(const AdamUpdaterAttrs&, const AdamUpdaterAttrs&) = default;
};

/// conv, conv_transpose and conv's weight gradient, in the terms of the convolution they run
/// (for conv_transpose, the convolution whose data gradient it is): per spatial axis the
/// stride, the padding before and after (pad_type already resolved) and the dilation; the
/// kernel's spatial extent; the groups.
/// matmul (ops::MatMulOptions): the type its partial sums accumulate in, and the share of a
/// tile's memory PopLibs' planner may give the product's operands and partials.
struct MatMulAttrs {
  DType partials_type = DType::float32;
  double available_memory_proportion = 0.6;
  friend bool operator==(const MatMulAttrs&, const MatMulAttrs&) = default;
};

struct ConvAttrs {
  std::vector<std::int64_t> strides, pads_begin, pads_end, dilations, kernel;
  std::int64_t groups = 1;
  /// The share of a tile's memory the estimated plan may use (ops::ConvOptions).
  double available_memory_proportion = 0.6;
  /// The type the partial sums accumulate in (ops::ConvOptions).
  DType partials_type = DType::float32;
  friend bool operator==(const ConvAttrs&, const ConvAttrs&) = default;
};

/// max_pool, average_pool and their gradients: per spatial axis the window's extent, the
/// stride, the explicit padding before and after (pad_type already resolved) and the dilation;
/// ceil_mode (the output's size, and with it the windows clipped at the end, comes from the
/// shapes the op joins) and, for the average, whether the explicit padding counts in the divisor.
struct PoolAttrs {
  std::vector<std::int64_t> kernel, strides, pads_begin, pads_end, dilations;
  bool ceil_mode = false;
  bool count_include_pad = false;
  friend bool operator==(const PoolAttrs&, const PoolAttrs&) = default;
};

/// roi_align and its gradient: the pooled output's height and width, the factor from ROI
/// coordinates to the feature map's, and the sampling points per bin along each axis.
struct RoiAlignAttrs {
  std::int64_t aligned_height = 1, aligned_width = 1;
  float spatial_scale = 1.0f;
  std::int64_t sampling_ratio = 1;
  friend bool operator==(const RoiAlignAttrs&, const RoiAlignAttrs&) = default;
};

/// The normalisations: epsilon, added to the variance; group_norm's groups; whether batch
/// norm's gradient takes the statistics as given (inference) rather than from the batch.
struct NormAttrs {
  double epsilon = 1e-5;
  std::int64_t num_groups = 1;
  bool global_stats = false;
  friend bool operator==(const NormAttrs&, const NormAttrs&) = default;
};

using OpAttrs =
    std::variant<NoAttrs, ReduceAttrs, AxisAttrs, TransposeAttrs, SliceAttrs, SplitAttrs, CastAttrs,
                 ScalarAttrs, CreateAttrs, NllAttrs, CallAttrs, ConditionalAttrs, StreamAttrs,
                 RemoteAttrs, OneHotAttrs, CollectiveAttrs, DiagonalAttrs, PadAttrs, TileAttrs,
                 DynamicAttrs, PrintAttrs, AdamUpdaterAttrs, TopKAttrs, ConvAttrs, PoolAttrs,
                 NormAttrs, ShapedDropoutAttrs, ScatterReduceAttrs, GroupedGatherAttrs,
                 CodeLoadAttrs, SubsampleAttrs, HistogramAttrs, SparseAccumulateAttrs, ResizeAttrs,
                 RoiAlignAttrs, MatMulAttrs>;

} // namespace pxl
