// Reference MatMul: NumPy matmul (1-d operands promoted and their axis dropped again, batch
// axes broadcast), one dot product in double per output element; with float16 partials, the
// contract of ops::MatMulOptions::partials_type step by step in float and half.
#include "ref_util.hpp"

#include "pxl/core/half.hpp"
#include "pxl/ir/attrs.hpp"

namespace pxl::testing {

PXL_REF_KERNEL(MatMul) {
  const HostTensor& a = *inputs[0];
  const HostTensor& b = *inputs[1];
  HostTensor& y = *outputs[0];
  Shape sa = a.shape(), sb = b.shape();
  if (sa.size() == 1)
    sa.insert(sa.begin(), 1);
  if (sb.size() == 1)
    sb.push_back(1);
  const std::int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  // Walk the output as batch + (m, n): dropping a promoted size-1 axis keeps flat positions.
  Shape full(y.shape().begin(), y.shape().end() - (a.rank() > 1 ? 1 : 0) - (b.rank() > 1 ? 1 : 0));
  const Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
  full.push_back(m);
  full.push_back(n);
  const bool half_partials = op.attrs<OpKind::MatMul>().partials_type == float16;
  constexpr std::int64_t group = 16; // the AMP's float16 input-channel group
  for (std::int64_t i = 0; i < y.nelms(); ++i) {
    const Shape index = ref::unravel(i, full);
    const Shape batch(index.begin(), index.end() - 2);
    const std::int64_t row = index[index.size() - 2], col = index.back();
    const std::int64_t base_a = ref::broadcast_source(batch, batch_a) * m * k;
    const std::int64_t base_b = ref::broadcast_source(batch, batch_b) * k * n;
    const auto product = [&](std::int64_t j) {
      return ref::load(a, base_a + row * k + j) * ref::load(b, base_b + j * n + col);
    };
    if (half_partials) {
      half acc{0.0f};
      for (std::int64_t j0 = 0; j0 < k; j0 += group) {
        float sum = 0.0f; // a product of halves is exact in float
        for (std::int64_t j = j0; j < std::min(k, j0 + group); ++j)
          sum += static_cast<float>(product(j));
        acc = half(static_cast<float>(acc) + sum);
      }
      ref::store(y, i, static_cast<float>(acc));
      continue;
    }
    double acc = 0.0;
    for (std::int64_t j = 0; j < k; ++j)
      acc += product(j);
    ref::store(y, i, acc);
  }
}

} // namespace pxl::testing
