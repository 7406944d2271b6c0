// Random kernels: uniform and normal generators, seed splitting. Every value is a pure
// function of the uint32[2] seed (read when the step runs) and the element index.
#include "common.hpp"

#include "core/random.hpp"

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
