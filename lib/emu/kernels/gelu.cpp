// Gelu (tanh form) as a loop the compiler vectorises: a branch-free exp in double instead of
// one libm call per element.
#include "common.hpp"

#include <bit>
#include <cstdint>
#include <limits>

namespace pxl::emu::detail {

namespace {

/// exp(t) for t in [-700, 700], relative error below 1e-13: Cody-Waite reduction to
/// r = t - k ln2 with |r| <= ln2/2, a degree-11 Taylor polynomial, then 2^k from the exponent
/// bits. No branches and no calls, so a loop over it vectorises.
inline double exp_bounded(double t) {
  constexpr double log2e = 1.4426950408889634;
  constexpr double ln2_hi = 6.93147180369123816490e-01; // 32 significant bits: k * ln2_hi is exact
  constexpr double ln2_lo = 1.90821492927058770002e-10;
  constexpr double round_magic = 0x1.8p52; // adding it rounds to an integer held in the low bits
  const double shifted = t * log2e + round_magic;
  const double k = shifted - round_magic;
  const double r = (t - k * ln2_hi) - k * ln2_lo;
  double p = 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  // The low 12 bits of `shifted` are k mod 4096; adding the bias and shifting them into the
  // exponent field gives 2^k for |k| <= 1022.
  const auto bits = (std::bit_cast<std::uint64_t>(shifted) + 1023u) << 52;
  return p * std::bit_cast<double>(bits);
}

/// gelu(x) = 0.5x(1 + tanh(u)) = x / (1 + exp(-2u)), u = sqrt(2/pi)(x + 0.044715x^3): the
/// second form has no cancellation for negative x. u is formed in double because exp(-2u)
/// amplifies its rounding error by |2u|, which float would turn into a visible relative error
/// in the tail. Beyond |2u| = 700 the result rounds to x (or to a signed zero) in float either
/// way, so the argument is clamped there; at x = -inf the quotient stays -inf/inf = NaN, as
/// the formula gives.
inline float gelu_tanh(float x) {
  const double xd = x;
  const double u = 0.7978845608028654 * (xd + 0.044715 * xd * xd * xd);
  const double t = -2.0 * u;
  const double clamped = t < -700.0 ? -700.0 : (t > 700.0 ? 700.0 : t);
  const double e = t > 700.0 ? std::numeric_limits<double>::infinity() : exp_bounded(clamped);
  return static_cast<float>(xd / (1.0 + e));
}

// ThreadSanitizer instruments the clones' resolver, which runs before TSan has started and
// crashes every program at load time; sanitized builds use the portable version only.
#if defined(__SANITIZE_THREAD__)
#define PXL_GELU_CLONES
#else
#define PXL_GELU_CLONES                                                                            \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif

// One clone per instruction set, picked once when the library loads. A clone may contract
// multiply-adds into FMAs, so the last bit can differ between machines, but within a process
// every element goes through one clone whose vector body and remainder loop contract alike:
// results do not depend on the number of workers or where a worker's range starts (tested on
// odd lengths for 1-4 workers), and stay within 1e-6 of the double reference.
PXL_GELU_CLONES void gelu_f32(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = gelu_tanh(x[i]);
}

} // namespace

StepFn compile_Gelu(CompileContext&, const Op& op, const OpBuffers& buffers) {
  const auto& spec = op.input(0).spec();
  const std::int64_t n = spec.nelms();
  switch (spec.dtype) {
  case float32: {
    const float* x = typed<const float>(buffers.inputs[0]);
    float* y = typed<float>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) {
      const auto [b, e] = worker_range(n, w, nw);
      gelu_f32(x + b, y + b, e - b);
    };
  }
  case float16: {
    const half* x = typed<const half>(buffers.inputs[0]);
    half* y = typed<half>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) {
      const auto [b, e] = worker_range(n, w, nw);
      for (std::int64_t i = b; i < e; ++i)
        y[i] = static_cast<half>(gelu_tanh(static_cast<float>(x[i])));
    };
  }
  default:
    unsupported_dtype(op, spec.dtype);
  }
}

} // namespace pxl::emu::detail
