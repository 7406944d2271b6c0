// Matrix product with NumPy's N-d semantics.
#pragma once

#include "pxl/ir/tensor.hpp"

#include <optional>

namespace pxl::ops {

/// PopXL `matmul`'s options.
struct MatMulOptions {
  /// The type the partial sums accumulate in (PopXL's `partials_type`): float32, or float16
  /// for float16 operands. Unset: the Ir's `matmul_defaults()` for float16 operands,
  /// float32 for float32 ones. With float16 partials, each run of 16 consecutive products
  /// along the contraction (the AMP's float16 input-channel group) is summed in float32 and
  /// added to a float16 accumulator, rounding to nearest: docs/semantics.md, "Matmul partials".
  std::optional<DType> partials_type;
  /// The result's dtype (PopXL's `output_type`): the operands' (unset), or float32 for float16
  /// operands, which keeps the sums unrounded.
  std::optional<DType> output_type;
  /// The share of each tile's memory, in (0, 1], that PopLibs' planner may give the product's
  /// operand blocks and partials (PopXL's `available_memory_proportion`). Unset: the Ir's
  /// `matmul_defaults()`, PopLibs' 0.6 unless changed. It changes the estimated plan, not the
  /// result.
  std::optional<double> available_memory_proportion;
};

/// NumPy `matmul`: 1-d operands are promoted and the added axis removed; leading (batch)
/// axes broadcast. Operands need equal floating-point dtypes. A bad option is a DTypeError
/// (a type) or ValueError (the proportion) naming it.
Tensor matmul(const Tensor& a, const Tensor& b, const MatMulOptions& options);
/// matmul with the default options (a separate overload, so that `&ops::matmul` still names
/// a binary function).
Tensor matmul(const Tensor& a, const Tensor& b);

/// PopXL `matmul_pow2scaled`: `matmul` of float8 operands (float8_143 or float8_152, either for
/// each), its result times 2^log2_scale as float16. Computed as pxl computes float16: the
/// operands widened to float32 exactly, products and sums in float32, rounded once to float16
/// (so with float32's range for the sums, where the IPU accumulates float16 partials).
/// `log2_scale` is an int32 scalar tensor, read when the op runs; a value outside [-32, 32)
/// stops the run with an error. Not differentiable (PopXL trains nothing in float8).
Tensor matmul_pow2scaled(const Tensor& lhs, const Tensor& rhs, const Tensor& log2_scale);

} // namespace pxl::ops
