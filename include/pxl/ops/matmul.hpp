// Matrix product with NumPy's N-d semantics.
#pragma once

#include "pxl/ir/tensor.hpp"

namespace pxl::ops {

/// NumPy `matmul`: 1-d operands are promoted and the added axis removed; leading (batch)
/// axes broadcast. Operands need equal floating-point dtypes.
Tensor matmul(const Tensor& a, const Tensor& b);

/// PopXL `matmul_pow2scaled`: `matmul` of float8 operands (float8_143 or float8_152, either for
/// each), its result times 2^log2_scale as float16. Computed as pxl computes float16: the
/// operands widened to float32 exactly, products and sums in float32, rounded once to float16
/// (so with float32's range for the sums, where the IPU accumulates float16 partials).
/// `log2_scale` is an int32 scalar tensor, read when the op runs; a value outside [-32, 32)
/// stops the run with an error. Not differentiable (PopXL trains nothing in float8).
Tensor matmul_pow2scaled(const Tensor& lhs, const Tensor& rhs, const Tensor& log2_scale);

} // namespace pxl::ops
