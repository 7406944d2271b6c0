// Reductions over axes: sum, mean, max, min, prod, the norms and log-sums, argmax and argmin;
// the running sum cumsum.
#pragma once

#include "pxl/ir/tensor.hpp"

#include <optional>
#include <utility>
#include <vector>

namespace pxl::ops {

/// Reduces over `axes` (negative counts from the end; empty or nullopt: every axis). max and
/// min propagate NaN. Reducing zero elements gives the identity of the fold: sum 0, mean NaN
/// (0 / 0), max -inf and min +inf for floats, INT32_MIN and INT32_MAX for int32 (NumPy raises
/// for max/min of nothing; pxl keeps running).
Tensor sum(const Tensor& t, std::optional<std::vector<std::int64_t>> axes = std::nullopt,
           bool keepdims = false);
Tensor mean(const Tensor& t, std::optional<std::vector<std::int64_t>> axes = std::nullopt,
            bool keepdims = false);
Tensor max(const Tensor& t, std::optional<std::vector<std::int64_t>> axes = std::nullopt,
           bool keepdims = false);
Tensor min(const Tensor& t, std::optional<std::vector<std::int64_t>> axes = std::nullopt,
           bool keepdims = false);
/// The product (float32, float16 or int32, which wraps around; of nothing: 1). Its gradient is
/// exact where elements are 0: the product of the others.
Tensor prod(const Tensor& t, std::optional<std::vector<std::int64_t>> axes = std::nullopt,
            bool keepdims = false);
/// Σ|x|, the L1 norm (float32 or float16, as the rest below).
Tensor l1(const Tensor& t, std::optional<std::vector<std::int64_t>> axes = std::nullopt,
          bool keepdims = false);
/// √Σx², the L2 norm. Its gradient x / l2 is taken as 0 where the norm is 0.
Tensor l2(const Tensor& t, std::optional<std::vector<std::int64_t>> axes = std::nullopt,
          bool keepdims = false);
/// Σx².
Tensor sumsquare(const Tensor& t, std::optional<std::vector<std::int64_t>> axes = std::nullopt,
                 bool keepdims = false);
/// log Σx.
Tensor logsum(const Tensor& t, std::optional<std::vector<std::int64_t>> axes = std::nullopt,
              bool keepdims = false);
/// log Σexp(x), without overflow: the largest element is factored out as the fold goes
/// (+inf gives +inf; of nothing, or of -inf only: -inf).
Tensor logsumexp(const Tensor& t, std::optional<std::vector<std::int64_t>> axes = std::nullopt,
                 bool keepdims = false);
/// Index of the first maximum along `axis` (a NaN counts as the maximum), as int32. An axis of
/// size 0 is a ValueError, as in NumPy.
Tensor argmax(const Tensor& t, std::int64_t axis = 0, bool keepdims = false);
/// Index of the first minimum along `axis` (a NaN counts as the minimum), as argmax.
Tensor argmin(const Tensor& t, std::int64_t axis = 0, bool keepdims = false);
/// The `k` largest (or smallest) elements along `axis` and their int32 indices, PopXL's topk:
/// shapes of `t` with `k` on `axis`. They come in order, best first, whatever `sorted` says
/// (ONNX leaves the order of an unsorted TopK open). Ties go to the lower index; NaN ranks
/// above every number, as in a NumPy sort (first when largest, last when smallest). The
/// gradient flows to the selected elements. ValueError unless 0 <= k <= t's extent on `axis`.
std::pair<Tensor, Tensor> topk(const Tensor& t, std::int64_t k, std::int64_t axis = -1,
                               bool largest = true, bool sorted = true);
/// The median over `axes` (as sum's), PopXL's median (PopART's ReduceMedian): of n elements the
/// lower median, the element of rank (n - 1) / 2 in ascending order (n even: the smaller of
/// the middle two, not their mean). NaN ranks above every number (a NumPy sort's order). The
/// gradient flows to the element the median was taken from. float32, float16 or int32.
/// ValueError when the reduced axes hold no element.
Tensor median(const Tensor& t, std::optional<std::vector<std::int64_t>> axes = std::nullopt,
              bool keepdims = false);
/// median's values and their int32 indices, the op's second output (which PopXL's median
/// drops): where in the reduced axes, flattened row-major in axis order, the median was taken
/// from. Among equal elements the median is the one of lowest index.
std::pair<Tensor, Tensor>
median_with_indices(const Tensor& t, std::optional<std::vector<std::int64_t>> axes = std::nullopt,
                    bool keepdims = false);
/// PopXL's histogram: counts of the elements of `t` (float32 or float16, all of it) in the
/// len(levels) + 1 bins the strictly increasing `levels` bound, as uint32: bin 0 counts
/// x < levels[0], bin i counts levels[i-1] <= x < levels[i], the last x >= levels.back()
/// (and NaN, which is below no level). With `absolute_of_input`, |x| is binned. The levels
/// are rounded to t's dtype first, as PopART does. Not differentiable. ValueError for levels
/// that are empty or not strictly increasing.
Tensor histogram(const Tensor& t, const std::vector<double>& levels, bool absolute_of_input);
/// PopXL's lamb_square: the sum of the squares of every element of `t` (float32 or float16),
/// a float32 scalar (shape {}), summed in double: LAMB's squared norms r1 and r2 for
/// var_updates::adam_var_update. Not differentiable (nor is PopART's LambSquareOp).
Tensor lamb_square(const Tensor& t);
/// Running sum along `axis`, of `t`'s shape (element i holds the sum of elements 0..i), as
/// PyTorch's cumsum. float32 sums in double, float16 in float (rounded once per element);
/// int32 wraps around.
Tensor cumsum(const Tensor& t, std::int64_t axis = 0);

} // namespace pxl::ops
