// Reductions over axes: sum, mean, max, min, and argmax.
#pragma once

#include "pxl/ir/tensor.hpp"

#include <optional>
#include <vector>

namespace pxl::ops {

/// Reduces over `axes` (negative counts from the end; empty or nullopt: every axis).
Tensor sum(const Tensor& t, std::optional<std::vector<std::int64_t>> axes = std::nullopt,
           bool keepdims = false);
Tensor mean(const Tensor& t, std::optional<std::vector<std::int64_t>> axes = std::nullopt,
            bool keepdims = false);
Tensor max(const Tensor& t, std::optional<std::vector<std::int64_t>> axes = std::nullopt,
           bool keepdims = false);
Tensor min(const Tensor& t, std::optional<std::vector<std::int64_t>> axes = std::nullopt,
           bool keepdims = false);
/// Index of the first maximum along `axis`, as int32.
Tensor argmax(const Tensor& t, std::int64_t axis = 0, bool keepdims = false);

} // namespace pxl::ops
