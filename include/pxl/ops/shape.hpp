// Shape and data-movement ops: reshape, transpose, slicing, concat/split, gather, onehot, init.
#pragma once

#include "pxl/ir/attrs.hpp"
#include "pxl/ir/tensor.hpp"

#include <optional>
#include <vector>

namespace pxl::ops {

/// One dimension may be -1 (inferred). The element count must not change.
Tensor reshape(const Tensor& t, Shape shape);
/// Permute axes; empty reverses them.
Tensor transpose(const Tensor& t, std::vector<std::int64_t> perm = {});
/// To 1-d.
Tensor flatten(const Tensor& t);
/// Removes the given size-1 axes, or every size-1 axis when none are given.
Tensor squeeze(const Tensor& t, std::vector<std::int64_t> axes = {});
/// Inserts size-1 axes at the given positions of the output.
Tensor unsqueeze(const Tensor& t, std::vector<std::int64_t> axes);
/// NumPy `t[start:stop]` along each listed axis (all axes if `axes` is empty); negative
/// indices count from the end and are clamped like NumPy's.
Tensor slice(const Tensor& t, std::vector<std::int64_t> start, std::vector<std::int64_t> stop,
             std::vector<std::int64_t> axes = {});
Tensor concat(const std::vector<Tensor>& ts, std::int64_t axis = 0);
/// Into `n` equal parts along `axis`.
std::vector<Tensor> split(const Tensor& t, std::int64_t n, std::int64_t axis = 0);
/// Into parts of the given sizes along `axis`.
std::vector<Tensor> split(const Tensor& t, std::vector<std::int64_t> sizes, std::int64_t axis = 0);
/// `t` indexed along `axis` by int32 `indices`: shape t[:axis] + indices + t[axis+1:].
/// Out-of-range indices yield zeros.
Tensor gather(const Tensor& t, const Tensor& indices, std::int64_t axis = 0);
/// One-hot of int32 `indices` with `num_classes` classes inserted at `axis`; `values` is
/// [off, on] and sets the dtype.
Tensor onehot(const Tensor& indices, std::int64_t num_classes, const Tensor& values,
              std::int64_t axis = -1);
/// A fresh tensor in the current graph: zero-filled, or with unspecified contents (`undef`).
Tensor init(Shape shape, DType dtype, std::string name = "", InitType type = InitType::zero);

} // namespace pxl::ops
