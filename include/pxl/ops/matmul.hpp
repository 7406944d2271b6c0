// Matrix product with NumPy's N-d semantics.
#pragma once

#include "pxl/ir/tensor.hpp"

namespace pxl::ops {

/// NumPy `matmul`: 1-d operands are promoted and the added axis removed; leading (batch)
/// axes broadcast. Operands need equal floating-point dtypes.
Tensor matmul(const Tensor& a, const Tensor& b);

} // namespace pxl::ops
