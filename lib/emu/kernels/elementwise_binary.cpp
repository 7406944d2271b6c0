// Element-wise binary kernels: arithmetic, comparisons and logic with NumPy broadcasting, and
// where (elementwise.cpp has the unary ones and the one-pass gradients).
#include "common.hpp"
#include "half_blocks.hpp"
#include "prefetch.hpp"
#include "vector_math.hpp"
#include "words.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace pxl::emu::detail {

namespace {

/// A run of a float16 binary op in float registers, block by block: bitwise what converting
/// each element, computing in float and rounding back gives, without a conversion call per
/// element.
template <typename F>
void half_run(const half* a, std::int64_t stride_a, const half* b, std::int64_t stride_b, half* y,
              std::int64_t len, F f) {
  float fa[half_block], fb[half_block], fy[half_block];
  for (std::int64_t j = 0; j < len; j += half_block) {
    const std::int64_t m = std::min(half_block, len - j);
    widen(a + j * stride_a, stride_a, fa, m);
    widen(b + j * stride_b, stride_b, fb, m);
    for (std::int64_t k = 0; k < m; ++k)
      fy[k] = f(fa[k], fb[k]);
    convert(fy, y + j, static_cast<std::size_t>(m));
  }
}

/// y = f(a, b) broadcast to the output shape, computing in compute_t<T>. Runs where both
/// operands are contiguous or one is constant get loops the compiler can vectorise.
template <typename T, typename Out, typename F>
StepFn binary_step(const KernelOp& op, const OpBuffers& buffers, F f) {
  const auto map =
      make_broadcast_map<2>(op.output(0).shape(), {op.input(0).shape(), op.input(1).shape()});
  const T* a = typed<const T>(buffers.inputs[0]);
  const T* b = typed<const T>(buffers.inputs[1]);
  Out* y = typed<Out>(buffers.outputs[0]);
  const std::int64_t n = op.output(0).nelms();
  using C = compute_t<T>;
  if constexpr (std::is_same_v<T, half> && std::is_same_v<Out, half>)
    return [=](unsigned w, unsigned nw) {
      const auto [begin, end] = worker_range(n, w, nw);
      map.for_runs(begin, end,
                   [&](const auto& off, const auto& inner, std::int64_t pos, std::int64_t len) {
                     half_run(a + off[0], inner[0], b + off[1], inner[1], y + pos, len, f);
                   });
    };
  else
    return [=](unsigned w, unsigned nw) {
      const auto [begin, end] = worker_range(n, w, nw);
      map.for_runs(begin, end,
                   [&](const auto& off, const auto& inner, std::int64_t pos, std::int64_t len) {
                     const T* pa = a + off[0];
                     const T* pb = b + off[1];
                     Out* py = y + pos;
                     if (inner[0] == 1 && inner[1] == 1) {
                       for_prefetched_blocks(
                           0, len,
                           [&](std::int64_t j0, std::int64_t j1) {
                             for (std::int64_t j = j0; j < j1; ++j)
                               py[j] = static_cast<Out>(f(C(pa[j]), C(pb[j])));
                           },
                           pa, pb);
                     } else if (inner[0] == 1 && inner[1] == 0) {
                       const C vb = C(pb[0]);
                       for_prefetched_blocks(
                           0, len,
                           [&](std::int64_t j0, std::int64_t j1) {
                             for (std::int64_t j = j0; j < j1; ++j)
                               py[j] = static_cast<Out>(f(C(pa[j]), vb));
                           },
                           pa);
                     } else if (inner[0] == 0 && inner[1] == 1) {
                       const C va = C(pa[0]);
                       for_prefetched_blocks(
                           0, len,
                           [&](std::int64_t j0, std::int64_t j1) {
                             for (std::int64_t j = j0; j < j1; ++j)
                               py[j] = static_cast<Out>(f(va, C(pb[j])));
                           },
                           pb);
                     } else {
                       for (std::int64_t j = 0; j < len; ++j)
                         py[j] = static_cast<Out>(f(C(pa[j * inner[0]]), C(pb[j * inner[1]])));
                     }
                   });
    };
}

/// Arithmetic: float32 and float16 with `f`, int32 with `fi` (wrap-around, never UB).
template <typename F, typename G>
StepFn arith(const KernelOp& op, const OpBuffers& buffers, F f, G fi) {
  return dispatch_numeric(op, op.input(0).dtype(), [&](auto t) {
    using T = typename decltype(t)::type;
    if constexpr (std::is_same_v<T, std::int32_t>)
      return binary_step<T, T>(op, buffers, fi);
    else
      return binary_step<T, T>(op, buffers, f);
  });
}

/// The outcomes a comparison accepts, one bit each for `outcome(a, b)`: 0 unordered (a NaN),
/// 1 less, 2 equal, 4 greater. All six comparisons of a dtype then share one loop.
enum CompareMask : unsigned {
  accept_unordered = 1u << 0,
  accept_less = 1u << 1,
  accept_equal = 1u << 2,
  accept_greater = 1u << 4,
};

template <typename C>
unsigned outcome(C a, C b) {
  return unsigned{a < b} | unsigned{a == b} << 1 | unsigned{a > b} << 2;
}

/// A comparison into bool of the dtypes the builders let compare: float32, float16, int32,
/// uint32, uint8 and bool (not int8, int16 and uint16: see docs/semantics.md, "dtypes").
StepFn compare(const KernelOp& op, const OpBuffers& buffers, unsigned accepted) {
  const auto step = [&](auto t) {
    return binary_step<typename decltype(t)::type, bool>(op, buffers, [accepted](auto a, auto b) {
      return ((accepted >> outcome(a, b)) & 1u) != 0;
    });
  };
  switch (const DType d = op.input(0).dtype()) {
  case uint32:
    return step(boost::hana::type_c<std::uint32_t>);
  case uint8:
    return step(boost::hana::type_c<std::uint8_t>);
  case bool_:
    return step(boost::hana::type_c<bool>);
  default:
    return dispatch_numeric(op, d, step);
  }
}

std::int32_t wrap(std::int64_t x) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(x));
}

} // namespace

StepFn compile_Add(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return arith(
      op, buffers, [](float a, float b) { return a + b; },
      [](std::int32_t a, std::int32_t b) { return wrap(std::int64_t{a} + b); });
}

StepFn compile_Sub(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return arith(
      op, buffers, [](float a, float b) { return a - b; },
      [](std::int32_t a, std::int32_t b) { return wrap(std::int64_t{a} - b); });
}

StepFn compile_Mul(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return arith(
      op, buffers, [](float a, float b) { return a * b; },
      [](std::int32_t a, std::int32_t b) { return wrap(std::int64_t{a} * b); });
}

StepFn compile_Div(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  // int32 truncates toward zero like C++, whose two undefined cases get NumPy's values (see
  // ops::div): x / 0 is 0 rather than a trap, and INT32_MIN / -1, done in int64, wraps back
  // to INT32_MIN. The branch is int32's only; the float loops stay branch-free.
  return arith(
      op, buffers, [](float a, float b) { return a / b; },
      [](std::int32_t a, std::int32_t b) { return b == 0 ? 0 : wrap(std::int64_t{a} / b); });
}

StepFn compile_Pow(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return dispatch_float(op, op.input(0).dtype(), [&](auto t) {
    using T = typename decltype(t)::type;
    return binary_step<T, T>(op, buffers, [](float a, float b) { return std::pow(a, b); });
  });
}

StepFn compile_Fmod(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  // Floats: std::fmod, exact, so a float16 result computed in float rounds to itself. int32:
  // C++'s `%` in int64, where INT32_MIN % -1 is 0, and NumPy's 0 for x % 0 (see ops::fmod).
  return arith(
      op, buffers, [](float a, float b) { return std::fmod(a, b); },
      [](std::int32_t a, std::int32_t b) {
        return b == 0 ? 0 : static_cast<std::int32_t>(std::int64_t{a} % b);
      });
}

StepFn compile_Maximum(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  // NaN propagates, as in NumPy's maximum.
  return arith(
      op, buffers, [](float a, float b) { return (a > b || a != a) ? a : b; },
      [](std::int32_t a, std::int32_t b) { return a > b ? a : b; });
}

StepFn compile_Minimum(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  // NaN propagates, as in NumPy's minimum.
  return arith(
      op, buffers, [](float a, float b) { return (a < b || a != a) ? a : b; },
      [](std::int32_t a, std::int32_t b) { return a < b ? a : b; });
}

StepFn compile_Equal(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return compare(op, buffers, accept_equal);
}

StepFn compile_NotEqual(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return compare(op, buffers, accept_unordered | accept_less | accept_greater);
}

StepFn compile_GreaterEqual(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return compare(op, buffers, accept_greater | accept_equal);
}

StepFn compile_Less(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return compare(op, buffers, accept_less);
}

StepFn compile_LessEqual(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return compare(op, buffers, accept_less | accept_equal);
}

StepFn compile_Greater(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return compare(op, buffers, accept_greater);
}

StepFn compile_LogicalAnd(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return binary_step<bool, bool>(op, buffers, [](bool a, bool b) { return a && b; });
}

StepFn compile_LogicalOr(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return binary_step<bool, bool>(op, buffers, [](bool a, bool b) { return a || b; });
}

StepFn compile_Where(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const auto map = make_broadcast_map<3>(
      op.output(0).shape(), {op.input(0).shape(), op.input(1).shape(), op.input(2).shape()});
  const std::int64_t n = op.output(0).nelms();
  const bool* c = typed<const bool>(buffers.inputs[0]);
  const std::byte* a = buffers.inputs[1];
  const std::byte* b = buffers.inputs[2];
  std::byte* y = buffers.outputs[0];
  // Where only moves elements: one loop per element width, not per dtype.
  return by_width(op.output(0).dtype(), [&](auto t) {
    using T = typename decltype(t)::type;
    return StepFn([=](unsigned w, unsigned nw) {
      const auto [begin, end] = worker_range(n, w, nw);
      const T* pa = typed<T>(a);
      const T* pb = typed<T>(b);
      T* py = typed<T>(y);
      map.for_runs(begin, end,
                   [&](const auto& off, const auto& inner, std::int64_t pos, std::int64_t len) {
                     const bool* rc = c + off[0];
                     const T* ra = pa + off[1];
                     const T* rb = pb + off[2];
                     T* ry = py + pos;
                     // Loops the compiler vectorises for a contiguous condition and operands
                     // that are contiguous or one value (a mask applied to scores, say).
                     if (inner[0] == 1 && inner[1] == 1 && inner[2] == 1) {
                       for_prefetched_blocks(
                           0, len,
                           [&](std::int64_t j0, std::int64_t j1) {
                             for (std::int64_t j = j0; j < j1; ++j)
                               ry[j] = rc[j] ? ra[j] : rb[j];
                           },
                           rc, ra, rb);
                     } else if (inner[0] == 1 && inner[1] == 1 && inner[2] == 0) {
                       const T vb = rb[0];
                       for_prefetched_blocks(
                           0, len,
                           [&](std::int64_t j0, std::int64_t j1) {
                             for (std::int64_t j = j0; j < j1; ++j)
                               ry[j] = rc[j] ? ra[j] : vb;
                           },
                           rc, ra);
                     } else if (inner[0] == 1 && inner[1] == 0 && inner[2] == 1) {
                       const T va = ra[0];
                       for_prefetched_blocks(
                           0, len,
                           [&](std::int64_t j0, std::int64_t j1) {
                             for (std::int64_t j = j0; j < j1; ++j)
                               ry[j] = rc[j] ? va : rb[j];
                           },
                           rc, rb);
                     } else {
                       for (std::int64_t j = 0; j < len; ++j)
                         ry[j] = rc[j * inner[0]] ? ra[j * inner[1]] : rb[j * inner[2]];
                     }
                   });
    });
  });
}

} // namespace pxl::emu::detail
