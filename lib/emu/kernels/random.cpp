// Random kernels: dropout, uniform and normal generators, seed splitting. Every value is a
// pure function of the uint32[2] seed (read when the step runs) and the element index.
#include "common.hpp"

#include "pxl/detail/random.hpp"

namespace pxl::emu::detail {

namespace {

/// y[i] = f(seed0, seed1, i) for the worker's share of the output.
template <typename F>
StepFn generate(const KernelOp& op, const OpBuffers& buffers, F f) {
  const std::uint32_t* seed = typed<const std::uint32_t>(buffers.inputs[0]);
  const std::int64_t n = op.output(0).nelms();
  return dispatch_float(op, op.output(0).dtype(), [&](auto t) -> StepFn {
    using T = typename decltype(t)::type;
    T* y = typed<T>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) {
      const std::uint32_t s0 = seed[0], s1 = seed[1];
      const auto [begin, end] = worker_range(n, w, nw);
      for (std::int64_t i = begin; i < end; ++i)
        y[i] = static_cast<T>(f(s0, s1, static_cast<std::uint64_t>(i)));
    };
  });
}

} // namespace

StepFn compile_Dropout(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const double ratio = op.attrs_as<ScalarAttrs>().a;
  // Compared in double, as the rule is stated: float(p) would flip ~1 in 2^24 decisions.
  const double p = ratio;
  const float scale = ratio < 1.0 ? static_cast<float>(1.0 / (1.0 - ratio)) : 0.0f;
  const std::int64_t n = op.output(0).nelms();
  const std::uint32_t* seed = typed<const std::uint32_t>(buffers.inputs[1]);
  return dispatch_float(op, op.input(0).dtype(), [&](auto t) -> StepFn {
    using T = typename decltype(t)::type;
    const T* x = typed<const T>(buffers.inputs[0]);
    T* y = typed<T>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) {
      const std::uint32_t s0 = seed[0], s1 = seed[1];
      const auto [begin, end] = worker_range(n, w, nw);
      for (std::int64_t i = begin; i < end; ++i) {
        const bool keep = pxl::detail::random_uniform01(s0, s1, static_cast<std::uint64_t>(i)) >= p;
        y[i] = keep ? static_cast<T>(static_cast<float>(x[i]) * scale) : T(0);
      }
    };
  });
}

StepFn compile_RandomUniform(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const auto& attrs = op.attrs_as<CreateAttrs>();
  const double low = attrs.a, width = attrs.b - attrs.a;
  return generate(op, buffers, [=](std::uint32_t s0, std::uint32_t s1, std::uint64_t i) {
    return low + width * static_cast<double>(pxl::detail::random_uniform01(s0, s1, i));
  });
}

StepFn compile_RandomNormal(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const auto& attrs = op.attrs_as<CreateAttrs>();
  const double mean = attrs.a, stddev = attrs.b;
  return generate(op, buffers, [=](std::uint32_t s0, std::uint32_t s1, std::uint64_t i) {
    return mean + stddev * static_cast<double>(pxl::detail::random_standard_normal(s0, s1, i));
  });
}

StepFn compile_SplitRandomSeed(CompileContext&, const KernelOp&, const OpBuffers& buffers) {
  const std::uint32_t* seed = typed<const std::uint32_t>(buffers.inputs[0]);
  std::vector<std::uint32_t*> outs;
  for (auto* o : buffers.outputs)
    outs.push_back(typed<std::uint32_t>(o));
  // Two words per output: too little work to split.
  return [seed, outs](unsigned w, unsigned) {
    if (w != 0)
      return;
    const std::uint32_t s0 = seed[0], s1 = seed[1];
    for (std::size_t k = 0; k < outs.size(); ++k) {
      outs[k][0] = pxl::detail::split_seed_word(s0, s1, k, 0);
      outs[k][1] = pxl::detail::split_seed_word(s0, s1, k, 1);
    }
  };
}

} // namespace pxl::emu::detail
