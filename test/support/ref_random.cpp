// Reference random kernels: the counter-based generator of lib/core/random.hpp, element i
// drawn at counter i, mapped in double and rounded to the output dtype.
#include "ref_util.hpp"

#include "core/random.hpp"

namespace pxl::testing {

PXL_REF_KERNEL(RandomUniform) {
  const auto& attrs = op.attrs_as<CreateAttrs>();
  const auto [s0, s1] = ref::seed_words(*inputs[0]);
  HostTensor& y = *outputs[0];
  for (std::int64_t i = 0; i < y.nelms(); ++i) {
    const double u = pxl::detail::random_uniform01(s0, s1, static_cast<std::uint64_t>(i));
    ref::store(y, i, attrs.a + (attrs.b - attrs.a) * u);
  }
}

PXL_REF_KERNEL(RandomNormal) {
  const auto& attrs = op.attrs_as<CreateAttrs>();
  const auto [s0, s1] = ref::seed_words(*inputs[0]);
  HostTensor& y = *outputs[0];
  for (std::int64_t i = 0; i < y.nelms(); ++i) {
    const double z = pxl::detail::random_standard_normal(s0, s1, static_cast<std::uint64_t>(i));
    ref::store(y, i, attrs.a + attrs.b * z);
  }
}

PXL_REF_KERNEL(SplitRandomSeed) {
  const auto [s0, s1] = ref::seed_words(*inputs[0]);
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    auto out = outputs[k]->data<std::uint32_t>();
    out[0] = pxl::detail::split_seed_word(s0, s1, k, 0);
    out[1] = pxl::detail::split_seed_word(s0, s1, k, 1);
  }
}

} // namespace pxl::testing
