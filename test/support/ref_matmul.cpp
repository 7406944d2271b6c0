// Reference MatMul: NumPy matmul (1-d operands promoted and their axis dropped again, batch
// axes broadcast), one dot product in double per output element.
#include "ref_util.hpp"

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
  for (std::int64_t i = 0; i < y.nelms(); ++i) {
    const Shape index = ref::unravel(i, full);
    const Shape batch(index.begin(), index.end() - 2);
    const std::int64_t row = index[index.size() - 2], col = index.back();
    const std::int64_t base_a = ref::broadcast_source(batch, batch_a) * m * k;
    const std::int64_t base_b = ref::broadcast_source(batch, batch_b) * k * n;
    double acc = 0.0;
    for (std::int64_t j = 0; j < k; ++j)
      acc += ref::load(a, base_a + row * k + j) * ref::load(b, base_b + j * n + col);
    ref::store(y, i, acc);
  }
}

} // namespace pxl::testing
