// Reference reductions. Each output element folds, in double and in row-major order, every
// input element that maps onto it. ReduceMax/ReduceMin propagate NaN (as NumPy does); an empty
// reduction gives 0 (sum), NaN (mean), -inf/+inf (max/min; the dtype's extreme for int32).
// int32 sums wrap around like int32 arithmetic (see ref::store).
#include "ref_util.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace pxl::testing {

namespace {

/// The input shape with every reduced axis set to 1: flat positions in it are flat positions
/// in the output whether or not keepdims dropped those axes.
Shape kept_shape(const Shape& in, const std::vector<std::int64_t>& axes) {
  Shape s = in;
  for (auto a : axes)
    s[static_cast<std::size_t>(a)] = 1;
  return s;
}

/// Per output element, the fold (from `init`, in row-major input order) of its input elements.
template <typename Fold>
std::vector<double> fold(const Op& op, const HostTensor& x, std::int64_t out_nelms, double init,
                         Fold f) {
  const Shape kept = kept_shape(x.shape(), op.attrs_as<ReduceAttrs>().axes);
  std::vector<double> acc(static_cast<std::size_t>(out_nelms), init);
  for (std::int64_t i = 0; i < x.nelms(); ++i) {
    auto& a =
        acc[static_cast<std::size_t>(ref::broadcast_source(ref::unravel(i, x.shape()), kept))];
    a = f(a, ref::load(x, i));
  }
  return acc;
}

template <typename Fold>
void reduce(const Op& op, const HostTensor& x, HostTensor& y, double init, Fold f) {
  const auto acc = fold(op, x, y.nelms(), init, f);
  for (std::int64_t o = 0; o < y.nelms(); ++o)
    ref::store(y, o, acc[static_cast<std::size_t>(o)]);
}

double extreme(DType d, bool highest) {
  if (d == int32)
    return highest ? std::numeric_limits<std::int32_t>::max()
                   : std::numeric_limits<std::int32_t>::lowest();
  return highest ? std::numeric_limits<double>::infinity()
                 : -std::numeric_limits<double>::infinity();
}

} // namespace

PXL_REF_KERNEL(ReduceSum) {
  reduce(op, *inputs[0], *outputs[0], 0.0, [](double a, double v) { return a + v; });
}

PXL_REF_KERNEL(ReduceMean) {
  const HostTensor& x = *inputs[0];
  HostTensor& y = *outputs[0];
  // The count of folded elements; 0 makes an empty mean NaN.
  const double count = y.nelms() == 0 ? 0.0 : static_cast<double>(x.nelms() / y.nelms());
  const auto sums = fold(op, x, y.nelms(), 0.0, [](double a, double v) { return a + v; });
  for (std::int64_t o = 0; o < y.nelms(); ++o)
    ref::store(y, o, sums[static_cast<std::size_t>(o)] / count);
}

PXL_REF_KERNEL(ReduceMax) {
  reduce(op, *inputs[0], *outputs[0], extreme(inputs[0]->dtype(), false), [](double a, double v) {
    return std::isnan(a) || std::isnan(v) ? std::nan("") : std::max(a, v);
  });
}

PXL_REF_KERNEL(ReduceMin) {
  reduce(op, *inputs[0], *outputs[0], extreme(inputs[0]->dtype(), true), [](double a, double v) {
    return std::isnan(a) || std::isnan(v) ? std::nan("") : std::min(a, v);
  });
}

PXL_REF_KERNEL(ReduceProd) {
  if (inputs[0]->dtype() == int32) { // wraps around: the product modulo 2^32, in uint64
    reduce(op, *inputs[0], *outputs[0], 1.0, [](double a, double v) {
      const auto p = static_cast<std::uint64_t>(static_cast<std::int64_t>(a)) *
                     static_cast<std::uint64_t>(static_cast<std::int64_t>(v));
      return static_cast<double>(static_cast<std::int32_t>(static_cast<std::uint32_t>(p)));
    });
    return;
  }
  reduce(op, *inputs[0], *outputs[0], 1.0, [](double a, double v) { return a * v; });
}

PXL_REF_KERNEL(ReduceL1) {
  reduce(op, *inputs[0], *outputs[0], 0.0, [](double a, double v) { return a + std::fabs(v); });
}

PXL_REF_KERNEL(ReduceSumSquare) {
  reduce(op, *inputs[0], *outputs[0], 0.0, [](double a, double v) { return a + v * v; });
}

namespace {
/// y = finish(Σ term(x)) per output element.
template <typename Term, typename Finish>
void reduce_finished(const Op& op, const HostTensor& x, HostTensor& y, Term term, Finish finish) {
  const auto sums = fold(op, x, y.nelms(), 0.0, [&](double a, double v) { return a + term(v); });
  for (std::int64_t o = 0; o < y.nelms(); ++o)
    ref::store(y, o, finish(sums[static_cast<std::size_t>(o)]));
}
} // namespace

PXL_REF_KERNEL(ReduceL2) {
  reduce_finished(
      op, *inputs[0], *outputs[0], [](double v) { return v * v; },
      [](double s) { return std::sqrt(s); });
}

PXL_REF_KERNEL(ReduceLogSum) {
  reduce_finished(
      op, *inputs[0], *outputs[0], [](double v) { return v; },
      [](double s) { return std::log(s); });
}

// Naively, log of the sum of exp in double: the tests keep exp(x) within double's range, and
// check the kernel's overflow-free fold at the extremes by hand.
PXL_REF_KERNEL(ReduceLogSumExp) {
  reduce_finished(
      op, *inputs[0], *outputs[0], [](double v) { return std::exp(v); },
      [](double s) { return std::log(s); });
}

namespace {
/// The index of the first extremum along the op's axis; NaN counts as the extremum, so the
/// first NaN wins over everything.
void arg_extremum(const Op& op, const HostTensor& x, HostTensor& y, bool max) {
  const auto axis = static_cast<std::size_t>(op.attrs_as<AxisAttrs>().axis);
  const Shape kept = kept_shape(x.shape(), {static_cast<std::int64_t>(axis)});
  for (std::int64_t o = 0; o < y.nelms(); ++o) {
    Shape index = ref::unravel(o, kept);
    std::int64_t best = 0;
    double best_value = 0.0;
    for (std::int64_t j = 0; j < x.shape()[axis]; ++j) {
      index[axis] = j;
      const double v = ref::load(x, ref::ravel(index, x.shape()));
      const bool better =
          !std::isnan(best_value) && (std::isnan(v) || (max ? v > best_value : v < best_value));
      if (j == 0 || better) {
        best = j;
        best_value = v;
      }
    }
    ref::store(y, o, static_cast<double>(best));
  }
}
} // namespace

PXL_REF_KERNEL(ArgMax) { arg_extremum(op, *inputs[0], *outputs[0], true); }
PXL_REF_KERNEL(ArgMin) { arg_extremum(op, *inputs[0], *outputs[0], false); }

// Each element the exact running sum (in double; int32 in int64, wrapped), rounded once.
PXL_REF_KERNEL(CumSum) {
  const HostTensor& x = *inputs[0];
  HostTensor& y = *outputs[0];
  const auto axis = static_cast<std::size_t>(op.attrs<OpKind::CumSum>().axis);
  for (std::int64_t i = 0; i < y.nelms(); ++i) {
    Shape index = ref::unravel(i, y.shape());
    const std::int64_t upto = index[axis];
    double sum = 0.0;
    std::int64_t isum = 0;
    for (std::int64_t k = 0; k <= upto; ++k) {
      index[axis] = k;
      const double v = ref::load(x, ref::ravel(index, x.shape()));
      sum += v;
      isum += static_cast<std::int64_t>(v);
    }
    ref::store(y, i,
               x.dtype() == int32 ? static_cast<double>(
                                        static_cast<std::int32_t>(static_cast<std::uint32_t>(isum)))
                                  : sum);
  }
}

// Each line sorted whole (stably, so ties keep index order), the first k kept. NaN ranks above
// every number.
PXL_REF_KERNEL(TopK) {
  const HostTensor& x = *inputs[0];
  const auto& a = op.attrs<OpKind::TopK>();
  const auto axis = static_cast<std::size_t>(a.axis);
  const Shape lines = kept_shape(x.shape(), {a.axis});
  const std::int64_t n = x.shape()[axis];
  for (std::int64_t l = 0; l < nelms(lines); ++l) {
    Shape index = ref::unravel(l, lines);
    std::vector<std::pair<double, std::int64_t>> line;
    for (std::int64_t j = 0; j < n; ++j) {
      index[axis] = j;
      line.emplace_back(ref::load(x, ref::ravel(index, x.shape())), j);
    }
    std::stable_sort(line.begin(), line.end(), [&](const auto& p, const auto& q) {
      const bool pn = std::isnan(p.first), qn = std::isnan(q.first);
      if (pn || qn)
        return pn != qn && (a.largest ? pn : qn);
      return a.largest ? p.first > q.first : p.first < q.first;
    });
    for (std::int64_t j = 0; j < a.k; ++j) {
      index[axis] = j;
      const std::int64_t at = ref::ravel(index, outputs[0]->shape());
      ref::store(*outputs[0], at, line[static_cast<std::size_t>(j)].first);
      ref::store(*outputs[1], at, static_cast<double>(line[static_cast<std::size_t>(j)].second));
    }
  }
}

// Each output's elements in row-major order over the reduced axes, sorted whole (stably, NaN
// last): the element at (n - 1) / 2 is the median, its place in that order the index.
PXL_REF_KERNEL(ReduceMedian) {
  const HostTensor& x = *inputs[0];
  const Shape kept = kept_shape(x.shape(), op.attrs_as<ReduceAttrs>().axes);
  std::vector<std::vector<std::pair<double, std::int64_t>>> groups(
      static_cast<std::size_t>(outputs[0]->nelms()));
  for (std::int64_t i = 0; i < x.nelms(); ++i) {
    auto& g =
        groups[static_cast<std::size_t>(ref::broadcast_source(ref::unravel(i, x.shape()), kept))];
    g.emplace_back(ref::load(x, i), static_cast<std::int64_t>(g.size()));
  }
  for (std::size_t o = 0; o < groups.size(); ++o) {
    auto& g = groups[o];
    std::stable_sort(g.begin(), g.end(), [](const auto& p, const auto& q) {
      const bool pn = std::isnan(p.first), qn = std::isnan(q.first);
      if (pn || qn)
        return qn && !pn;
      return p.first < q.first;
    });
    const auto& m = g[(g.size() - 1) / 2];
    ref::store(*outputs[0], static_cast<std::int64_t>(o), m.first);
    ref::store(*outputs[1], static_cast<std::int64_t>(o), static_cast<double>(m.second));
  }
}

// Each element into the bin of the levels (rounded to its dtype) it is not below: the count
// of levels x is not below, NaN being below none.
PXL_REF_KERNEL(Histogram) {
  const HostTensor& x = *inputs[0];
  const auto& a = op.attrs<OpKind::Histogram>();
  std::vector<double> counts(a.levels.size() + 1, 0.0);
  for (std::int64_t i = 0; i < x.nelms(); ++i) {
    double v = ref::load(x, i);
    if (a.absolute_of_input)
      v = std::abs(v);
    std::size_t bin = 0;
    while (bin < a.levels.size() && !(v < ref::round_to(x.dtype(), a.levels[bin])))
      ++bin;
    counts[bin] += 1.0;
  }
  for (std::size_t b = 0; b < counts.size(); ++b)
    ref::store(*outputs[0], static_cast<std::int64_t>(b), counts[b]);
}

PXL_REF_KERNEL(LambSquare) {
  double sum = 0.0;
  for (std::int64_t i = 0; i < inputs[0]->nelms(); ++i)
    sum += ref::load(*inputs[0], i) * ref::load(*inputs[0], i);
  ref::store(*outputs[0], 0, sum);
}

} // namespace pxl::testing
