// Shape and data-movement ops: validation and output-spec inference.
#include "pxl/ops/shape.hpp"
#include "ir/op_builder.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ir/scope.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace pxl::ops {

using detail::add_op1;

namespace {
std::string list(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

/// Reshape, flatten, squeeze and unsqueeze all lower to one Reshape op (reshape_ and flatten_
/// to ReshapeInplace): the output spec carries the new shape, so no attributes are needed.
Tensor reshape_op(const Tensor& t, Shape shape, OpKind kind = OpKind::Reshape) {
  return add_op1(kind, {t}, TensorSpec{std::move(shape), t.dtype()});
}

/// Reshape or ReshapeInplace to `shape`, with one dimension possibly -1 (inferred).
Tensor reshape_as(OpKind kind, const Tensor& t, Shape shape) {
  const std::string op(op_type_name(kind));
  std::int64_t inferred = -1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (inferred >= 0)
        throw ShapeError(op + ": only one dimension may be -1, got " + to_string(shape) + " for " +
                         to_string(t));
      inferred = static_cast<std::int64_t>(i);
    } else if (shape[i] < 0) {
      throw ShapeError(op + ": negative dimension in " + to_string(shape) + " for " + to_string(t));
    }
  }
  // The given dimensions' product, checked: the result's bytes must fit an int64 too.
  Shape given = shape;
  std::replace(given.begin(), given.end(), std::int64_t{-1}, std::int64_t{1});
  nbytes(given, t.dtype(), op + " of " + to_string(t));
  const std::int64_t known = nelms(given);
  if (inferred >= 0) {
    if (known == 0 || t.nelms() % known != 0)
      throw ShapeError(op + ": cannot reshape " + to_string(t) + " (" + std::to_string(t.nelms()) +
                       " elements) to " + to_string(shape));
    shape[static_cast<std::size_t>(inferred)] = t.nelms() / known;
  }
  if (nelms(shape) != t.nelms())
    throw ShapeError(op + ": cannot reshape " + to_string(t) + " (" + std::to_string(t.nelms()) +
                     " elements) to " + to_string(shape) + " (" + std::to_string(nelms(shape)) +
                     " elements)");
  return reshape_op(t, std::move(shape), kind);
}

/// Transpose or TransposeInplace; an empty permutation reverses the axes.
Tensor transpose_as(OpKind kind, const Tensor& t, std::vector<std::int64_t> perm) {
  const std::string op(op_type_name(kind));
  const auto rank = t.rank();
  if (perm.empty()) {
    perm.resize(static_cast<std::size_t>(rank));
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  if (static_cast<std::int64_t>(perm.size()) != rank)
    throw ValueError(op + ": permutation " + list(perm) + " has " + std::to_string(perm.size()) +
                     " entries but " + to_string(t) + " has rank " + std::to_string(rank));
  std::vector<bool> seen(static_cast<std::size_t>(rank), false);
  for (auto& p : perm) {
    p = normalize_axis(p, rank, op);
    if (seen[static_cast<std::size_t>(p)])
      throw ValueError(op + ": " + list(perm) + " is not a permutation of the axes of " +
                       to_string(t) + " (axis " + std::to_string(p) + " repeated)");
    seen[static_cast<std::size_t>(p)] = true;
  }
  Shape shape(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i)
    shape[i] = t.shape()[static_cast<std::size_t>(perm[i])];
  return add_op1(kind, {t}, TensorSpec{std::move(shape), t.dtype()},
                 TransposeAttrs{std::move(perm)});
}

/// Slice or SliceInplace: NumPy's t[start:stop] along `axes`.
Tensor slice_as(OpKind kind, const Tensor& t, std::vector<std::int64_t> start,
                std::vector<std::int64_t> stop, std::vector<std::int64_t> axes) {
  const std::string op(op_type_name(kind));
  const auto rank = t.rank();
  if (axes.empty()) {
    axes.resize(start.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (start.size() != axes.size() || stop.size() != axes.size())
    throw ValueError(op + ": start " + list(start) + ", stop " + list(stop) + " and axes " +
                     list(axes) + " must have the same length (slicing " + to_string(t) + ")");
  SliceAttrs attrs;
  attrs.start.assign(static_cast<std::size_t>(rank), 0);
  attrs.stop = t.shape();
  std::vector<bool> seen(static_cast<std::size_t>(rank), false);
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const auto a = static_cast<std::size_t>(normalize_axis(axes[i], rank, op));
    if (seen[a])
      throw ValueError(op + ": axis " + std::to_string(a) + " listed twice in " + list(axes));
    seen[a] = true;
    const auto dim = t.shape()[a];
    // NumPy: negative indices count from the end, then both ends clamp to [0, dim].
    auto clamp = [dim](std::int64_t v) {
      return std::clamp(v < 0 ? v + dim : v, std::int64_t{0}, dim);
    };
    attrs.start[a] = clamp(start[i]);
    attrs.stop[a] = std::max(attrs.start[a], clamp(stop[i]));
  }
  Shape shape(static_cast<std::size_t>(rank));
  for (std::size_t a = 0; a < shape.size(); ++a)
    shape[a] = attrs.stop[a] - attrs.start[a];
  return add_op1(kind, {t}, TensorSpec{std::move(shape), t.dtype()}, std::move(attrs));
}

/// Concat or ConcatInplace along `axis`.
Tensor concat_as(OpKind kind, const std::vector<Tensor>& ts, std::int64_t axis) {
  const std::string op(op_type_name(kind));
  if (ts.empty())
    throw ValueError(op + ": expected at least one tensor, got none");
  const Tensor& first = ts[0];
  if (first.rank() == 0)
    throw ShapeError(op + ": cannot concatenate scalar " + to_string(first));
  const auto a = static_cast<std::size_t>(normalize_axis(axis, first.rank(), op));
  Shape shape = first.shape();
  for (std::size_t i = 1; i < ts.size(); ++i) {
    detail::check_same_dtype(op, first, ts[i]);
    bool fits = ts[i].rank() == first.rank();
    for (std::size_t d = 0; fits && d < shape.size(); ++d)
      fits = d == a || ts[i].shape()[d] == shape[d];
    if (!fits)
      throw ShapeError(op + ": tensor " + std::to_string(i) + " " + to_string(ts[i]) +
                       " does not match " + to_string(first) +
                       " on every axis except the concatenation axis " + std::to_string(a));
    if (__builtin_add_overflow(shape[a], ts[i].shape()[a], &shape[a]))
      throw ShapeError(op + ": axis " + std::to_string(a) + " of the result would be longer " +
                       "than a 64-bit count can hold (tensor " + std::to_string(i) + " " +
                       to_string(ts[i]) + ")");
  }
  return add_op1(kind, std::span<const Tensor>(ts), TensorSpec{std::move(shape), first.dtype()},
                 AxisAttrs{static_cast<std::int64_t>(a)});
}
} // namespace

Tensor reshape(const Tensor& t, Shape shape) {
  return reshape_as(OpKind::Reshape, t, std::move(shape));
}
Tensor reshape_(const Tensor& t, Shape shape) {
  return reshape_as(OpKind::ReshapeInplace, t, std::move(shape));
}

Tensor transpose(const Tensor& t, std::vector<std::int64_t> perm) {
  return transpose_as(OpKind::Transpose, t, std::move(perm));
}
Tensor transpose_(const Tensor& t, std::vector<std::int64_t> perm) {
  return transpose_as(OpKind::TransposeInplace, t, std::move(perm));
}

Tensor flatten(const Tensor& t) { return reshape_op(t, Shape{t.nelms()}); }
Tensor flatten_(const Tensor& t) { return reshape_op(t, Shape{t.nelms()}, OpKind::ReshapeInplace); }

Tensor squeeze(const Tensor& t, std::vector<std::int64_t> axes) {
  Shape shape;
  if (axes.empty()) {
    for (auto d : t.shape())
      if (d != 1)
        shape.push_back(d);
    return reshape_op(t, std::move(shape));
  }
  axes = detail::normalize_axes("Squeeze", std::move(axes), t.rank());
  for (auto a : axes)
    if (t.shape()[static_cast<std::size_t>(a)] != 1)
      throw ValueError("Squeeze: axis " + std::to_string(a) + " of " + to_string(t) + " has size " +
                       std::to_string(t.shape()[static_cast<std::size_t>(a)]) + ", expected 1");
  for (std::int64_t i = 0; i < t.rank(); ++i)
    if (!std::binary_search(axes.begin(), axes.end(), i))
      shape.push_back(t.shape()[static_cast<std::size_t>(i)]);
  return reshape_op(t, std::move(shape));
}

Tensor unsqueeze(const Tensor& t, std::vector<std::int64_t> axes) {
  const auto out_rank = t.rank() + static_cast<std::int64_t>(axes.size());
  axes = detail::normalize_axes("Unsqueeze", std::move(axes), out_rank);
  Shape shape;
  std::size_t next = 0;
  for (std::int64_t i = 0; i < out_rank; ++i)
    shape.push_back(std::binary_search(axes.begin(), axes.end(), i) ? 1 : t.shape()[next++]);
  return reshape_op(t, std::move(shape));
}

Tensor slice(const Tensor& t, std::vector<std::int64_t> start, std::vector<std::int64_t> stop,
             std::vector<std::int64_t> axes) {
  return slice_as(OpKind::Slice, t, std::move(start), std::move(stop), std::move(axes));
}
Tensor slice_(const Tensor& t, std::vector<std::int64_t> start, std::vector<std::int64_t> stop,
              std::vector<std::int64_t> axes) {
  return slice_as(OpKind::SliceInplace, t, std::move(start), std::move(stop), std::move(axes));
}

Tensor concat(const std::vector<Tensor>& ts, std::int64_t axis) {
  return concat_as(OpKind::Concat, ts, axis);
}
Tensor concat_(const std::vector<Tensor>& ts, std::int64_t axis) {
  return concat_as(OpKind::ConcatInplace, ts, axis);
}

std::vector<Tensor> split(const Tensor& t, std::int64_t n, std::int64_t axis) {
  const auto a = normalize_axis(axis, t.rank(), "Split");
  const auto dim = t.shape()[static_cast<std::size_t>(a)];
  if (n < 1 || dim % n != 0)
    throw ValueError("Split: cannot split axis " + std::to_string(a) + " of size " +
                     std::to_string(dim) + " of " + to_string(t) + " into " + std::to_string(n) +
                     " equal parts");
  return split(t, std::vector<std::int64_t>(static_cast<std::size_t>(n), dim / n), a);
}

std::vector<Tensor> split(const Tensor& t, std::vector<std::int64_t> sizes, std::int64_t axis) {
  const auto a = normalize_axis(axis, t.rank(), "Split");
  const auto dim = t.shape()[static_cast<std::size_t>(a)];
  if (sizes.empty())
    throw ValueError("Split: expected at least one part size for " + to_string(t));
  std::int64_t total = 0;
  for (auto s : sizes) {
    if (s < 0)
      throw ValueError("Split: negative part size in " + list(sizes));
    if (__builtin_add_overflow(total, s, &total))
      throw ShapeError("Split: part sizes " + list(sizes) + " sum past a 64-bit count, but axis " +
                       std::to_string(a) + " of " + to_string(t) + " has size " +
                       std::to_string(dim));
  }
  if (total != dim)
    throw ShapeError("Split: part sizes " + list(sizes) + " sum to " + std::to_string(total) +
                     " but axis " + std::to_string(a) + " of " + to_string(t) + " has size " +
                     std::to_string(dim));
  std::vector<TensorSpec> specs;
  for (auto s : sizes) {
    Shape shape = t.shape();
    shape[static_cast<std::size_t>(a)] = s;
    specs.push_back(TensorSpec{std::move(shape), t.dtype()});
  }
  const Tensor in[] = {t};
  return detail::add_op(OpKind::Split, in, std::move(specs), SplitAttrs{std::move(sizes), a});
}

namespace {
/// Gather and TiedGather: the same op but for its type.
Tensor gather_op(OpKind kind, const Tensor& t, const Tensor& indices, std::int64_t axis) {
  const auto op = op_type_name(kind);
  detail::check_dtype(op, indices, int32, "indices");
  if (t.rank() == 0)
    throw ShapeError(std::string(op) + ": cannot index scalar " + to_string(t));
  const auto a = normalize_axis(axis, t.rank(), op);
  Shape shape(t.shape().begin(), t.shape().begin() + a);
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), t.shape().begin() + a + 1, t.shape().end());
  return add_op1(kind, {t, indices}, TensorSpec{std::move(shape), t.dtype()}, AxisAttrs{a});
}
} // namespace

Tensor gather(const Tensor& t, const Tensor& indices, std::int64_t axis) {
  return gather_op(OpKind::Gather, t, indices, axis);
}

Tensor tied_gather(const Tensor& t, const Tensor& indices, std::int64_t axis) {
  return gather_op(OpKind::TiedGather, t, indices, axis);
}

Tensor groupedgather(const Tensor& t, const Tensor& indices, std::int64_t axis,
                     std::int64_t group_size) {
  if (group_size < 1)
    throw ValueError("GroupedGather: group_size must be >= 1, got " + std::to_string(group_size));
  if (group_size == 1)
    return gather(t, indices, axis);
  detail::check_dtype("GroupedGather", indices, int32, "indices");
  if (t.rank() < 2)
    throw ShapeError("GroupedGather: with group_size " + std::to_string(group_size) +
                     ", t must have a group axis and an axis to gather on, got " + to_string(t));
  const auto a = normalize_axis(axis, t.rank(), "GroupedGather");
  if (a == 0)
    throw ValueError("GroupedGather: axis 0 is the group axis (group_size " +
                     std::to_string(group_size) + "); gather on an axis >= 1");
  if (t.shape()[0] != group_size || indices.rank() == 0 || indices.shape()[0] != group_size)
    throw ShapeError("GroupedGather: t " + to_string(t) + " and indices " + to_string(indices) +
                     " must both have group_size " + std::to_string(group_size) +
                     " on their axis 0");
  Shape shape(t.shape().begin(), t.shape().begin() + a);
  shape.insert(shape.end(), indices.shape().begin() + 1, indices.shape().end());
  shape.insert(shape.end(), t.shape().begin() + a + 1, t.shape().end());
  return add_op1(OpKind::GroupedGather, {t, indices}, TensorSpec{std::move(shape), t.dtype()},
                 GroupedGatherAttrs{a, group_size});
}

Tensor onehot(const Tensor& indices, std::int64_t num_classes, const Tensor& values,
              std::int64_t axis) {
  detail::check_dtype("OneHot", indices, int32, "indices");
  if (num_classes < 1)
    throw ValueError("OneHot: num_classes must be >= 1, got " + std::to_string(num_classes));
  if (values.shape() != Shape{2})
    throw ShapeError("OneHot: values must have shape (2,) holding [off, on], got " +
                     to_string(values));
  const auto a = normalize_axis(axis, indices.rank() + 1, "OneHot");
  Shape shape = indices.shape();
  shape.insert(shape.begin() + a, num_classes);
  return add_op1(OpKind::OneHot, {indices, values}, TensorSpec{std::move(shape), values.dtype()},
                 OneHotAttrs{num_classes, a});
}

Tensor init(Shape shape, DType dtype, std::string name, InitType type) {
  TensorSpec spec{std::move(shape), dtype};
  return add_op1(OpKind::Init, std::span<const Tensor>{}, spec, CreateAttrs{spec, type, 0.0, 0.0},
                 name);
}

namespace {
/// `indices` (int32) of t's rank and `like`'s shape, matching t on every axis but `axis`.
void check_elements(std::string_view op, const Tensor& t, const Tensor& indices,
                    std::int64_t axis) {
  detail::check_dtype(op, indices, int32, "indices");
  bool fits = indices.rank() == t.rank();
  for (std::int64_t d = 0; fits && d < t.rank(); ++d)
    fits = d == axis ||
           indices.shape()[static_cast<std::size_t>(d)] == t.shape()[static_cast<std::size_t>(d)];
  if (!fits)
    throw ShapeError(std::string(op) + ": indices " + to_string(indices) +
                     " must have the rank of " + to_string(t) +
                     " and its extent on every axis but " + std::to_string(axis));
}

/// scatter's and scatter_add's operands, named as op `kind`: `updates` (t's dtype) and the
/// indices share a shape with t's extent on every axis but `axis`. Returns the axis normalised.
std::int64_t check_scatter(OpKind kind, const Tensor& t, const Tensor& indices,
                           const Tensor& updates, std::int64_t axis) {
  const auto op = op_type_name(kind);
  if (t.rank() == 0)
    throw ShapeError(std::string(op) + ": cannot scatter into scalar " + to_string(t));
  const auto a = normalize_axis(axis, t.rank(), op);
  check_elements(op, t, indices, a);
  detail::check_same_dtype(op, t, updates);
  if (updates.shape() != indices.shape())
    throw ShapeError(std::string(op) + ": updates " + to_string(updates) +
                     " must have the shape of the indices " + to_string(indices));
  return a;
}

/// DTypeError unless scatter_reduce reduces `t`'s dtype (the floats and int32).
void check_reducible(const Tensor& t, std::string_view role) {
  if (!is_floating_point(t.dtype()) && t.dtype() != int32)
    throw DTypeError("ScatterReduce: " + std::string(role) + " " + to_string(t) +
                     " must be float32, float16 or int32");
}

/// Normalised, distinct axes with their sizes, checked against `t` (for the dynamic ops).
DynamicAttrs dynamic_attrs(std::string_view op, const Tensor& t, const Tensor& index,
                           std::vector<std::int64_t> axes, std::vector<std::int64_t> sizes) {
  detail::check_dtype(op, index, int32, "the index");
  if (axes.size() != sizes.size() || index.shape() != Shape{static_cast<std::int64_t>(axes.size())})
    throw ShapeError(std::string(op) + ": axes " + list(axes) + ", sizes " + list(sizes) +
                     " and the index " + to_string(index) + " must have one entry per axis");
  std::vector<bool> seen(static_cast<std::size_t>(t.rank()), false);
  for (std::size_t i = 0; i < axes.size(); ++i) {
    axes[i] = normalize_axis(axes[i], t.rank(), op);
    const auto a = static_cast<std::size_t>(axes[i]);
    if (seen[a])
      throw ValueError(std::string(op) + ": axis " + std::to_string(a) + " listed twice in " +
                       list(axes));
    seen[a] = true;
    if (sizes[i] < 0 || sizes[i] > t.shape()[a])
      throw ShapeError(std::string(op) + ": size " + std::to_string(sizes[i]) + " on axis " +
                       std::to_string(a) + " does not fit in " + to_string(t));
  }
  return DynamicAttrs{std::move(axes), std::move(sizes)};
}
} // namespace

Tensor take_along_axis(const Tensor& t, const Tensor& indices, std::int64_t axis) {
  if (t.rank() == 0)
    throw ShapeError("GatherElements: cannot index scalar " + to_string(t));
  const auto a = normalize_axis(axis, t.rank(), "GatherElements");
  check_elements("GatherElements", t, indices, a);
  return add_op1(OpKind::TakeAlongAxis, {t, indices}, TensorSpec{indices.shape(), t.dtype()},
                 AxisAttrs{a});
}

Tensor scatter(const Tensor& t, const Tensor& indices, const Tensor& updates, std::int64_t axis) {
  const auto a = check_scatter(OpKind::Scatter, t, indices, updates, axis);
  return add_op1(OpKind::Scatter, {t, indices, updates}, t.spec(), AxisAttrs{a});
}

Tensor scatter_add(const Tensor& t, const Tensor& indices, const Tensor& updates,
                   std::int64_t axis) {
  const auto a = check_scatter(OpKind::ScatterReduce, t, indices, updates, axis);
  check_reducible(t, "t");
  return add_op1(OpKind::ScatterReduce, {updates, indices, t}, t.spec(),
                 ScatterReduceAttrs{a, ScatterReduction::sum});
}

Tensor scatter_reduce(const Tensor& data, const Tensor& indices, ScatterReduction reduction,
                      const std::optional<Tensor>& initial_values, std::int64_t axis,
                      std::optional<std::int64_t> axis_size, bool enable_index_broadcast) {
  const std::string op = "ScatterReduce";
  if (data.rank() == 0)
    throw ShapeError(op + ": cannot scatter the scalar data " + to_string(data));
  const auto a = normalize_axis(axis, data.rank(), op);
  const auto ax = static_cast<std::size_t>(a);
  check_reducible(data, "data");
  detail::check_dtype(op, indices, int32, "indices");
  if (!initial_values && !axis_size)
    throw ValueError(op + ": one of initial_values and axis_size must be given");
  if (axis_size && *axis_size < 1)
    throw ValueError(op + ": axis_size must be >= 1, got " + std::to_string(*axis_size));
  // The indices: data's shape, or (index broadcast) a vector along the axis: rank 1, or any
  // rank whose only extent other than 1 is the axis' (trailing axes of 1 may be left out).
  if (indices.shape() != data.shape()) {
    Shape expanded = indices.shape();
    if (expanded.size() == 1)
      expanded.insert(expanded.begin(), ax, 1);
    bool vector = expanded.size() <= data.shape().size();
    for (std::size_t d = 0; vector && d < data.shape().size(); ++d) {
      const std::int64_t e = d < expanded.size() ? expanded[d] : 1;
      vector = e == (d == ax ? data.shape()[d] : 1);
    }
    if (!vector)
      throw ShapeError(op + ": indices " + to_string(indices) + " must have the shape of data " +
                       to_string(data) + ", or be a vector of its extent on axis " +
                       std::to_string(a));
    if (!enable_index_broadcast)
      throw ValueError(op + ": indices " + to_string(indices) + " differ from the shape of data " +
                       to_string(data) + " and enable_index_broadcast is false");
  }
  Shape out = data.shape();
  if (initial_values) {
    const Tensor& init = *initial_values;
    detail::check_same_dtype(op, data, init);
    bool fits = init.rank() == data.rank();
    for (std::size_t d = 0; fits && d < out.size(); ++d)
      fits = d == ax || init.shape()[d] == out[d];
    if (!fits)
      throw ShapeError(op + ": initial_values " + to_string(init) +
                       " must have the shape of data " + to_string(data) + " but on axis " +
                       std::to_string(a));
    if (axis_size && *axis_size != init.shape()[ax])
      throw ShapeError(op + ": axis_size " + std::to_string(*axis_size) +
                       " differs from the extent of initial_values " + to_string(init) +
                       " on axis " + std::to_string(a));
    return add_op1(OpKind::ScatterReduce, {data, indices, init}, init.spec(),
                   ScatterReduceAttrs{a, reduction});
  }
  out[ax] = *axis_size;
  return add_op1(OpKind::ScatterReduce, {data, indices}, TensorSpec{std::move(out), data.dtype()},
                 ScatterReduceAttrs{a, reduction});
}

Tensor dynamic_slice(const Tensor& t, const Tensor& index, std::vector<std::int64_t> axes,
                     std::vector<std::int64_t> sizes) {
  auto attrs = dynamic_attrs("DynamicSlice", t, index, std::move(axes), std::move(sizes));
  Shape shape = t.shape();
  for (std::size_t i = 0; i < attrs.axes.size(); ++i)
    shape[static_cast<std::size_t>(attrs.axes[i])] = attrs.sizes[i];
  return add_op1(OpKind::DynamicSlice, {t, index}, TensorSpec{std::move(shape), t.dtype()},
                 std::move(attrs));
}

Tensor ipu_copy(const Tensor& t, std::int64_t destination, std::optional<std::int64_t> source) {
  detail::require_usable(t, "IpuCopy");
  if (destination < 0)
    throw ValueError("IpuCopy: destination IPU " + std::to_string(destination) + " of " +
                     to_string(t) + " must be >= 0");
  if (source && *source != t.ipu())
    throw GraphError("IpuCopy: " + to_string(t) + " is on IPU " + std::to_string(t.ipu()) +
                     ", not on the source IPU " + std::to_string(*source) + " given");
  auto on_destination = ipu(destination);
  return add_op1(OpKind::IpuCopy, {t}, t.spec());
}

Tensor io_tile_copy(const Tensor& t) {
  detail::require_usable(t, "IoTileCopy");
  auto on_its_ipu = ipu(t.ipu());
  const Tensor copy = add_op1(OpKind::IoTileCopy, {t}, t.spec());
  // To the other tile set of t's IPU, whatever scope is open, as PopXL places it.
  detail::run_on_tiles(*copy.producer(),
                       t.tile_set() == TileSet::io ? TileSet::compute : TileSet::io);
  return copy;
}

namespace {
/// DynamicUpdate or DynamicUpdateInplace: `update` written into (a copy of) `t`.
Tensor dynamic_update_as(OpKind kind, const Tensor& t, const Tensor& index, const Tensor& update,
                         std::vector<std::int64_t> axes) {
  const std::string op(op_type_name(kind));
  detail::check_same_dtype(op, t, update);
  if (update.rank() != t.rank())
    throw ShapeError(op + ": update " + to_string(update) + " must have the rank of " +
                     to_string(t));
  std::vector<std::int64_t> sizes;
  for (auto a : axes)
    sizes.push_back(update.shape()[static_cast<std::size_t>(normalize_axis(a, t.rank(), op))]);
  auto attrs = dynamic_attrs(op, t, index, std::move(axes), std::move(sizes));
  Shape expected = t.shape();
  for (std::size_t i = 0; i < attrs.axes.size(); ++i)
    expected[static_cast<std::size_t>(attrs.axes[i])] = attrs.sizes[i];
  if (update.shape() != expected)
    throw ShapeError(op + ": update " + to_string(update) + " must have the shape of " +
                     to_string(t) + " except on the updated axes " + list(attrs.axes));
  return add_op1(kind, {t, index, update}, t.spec(), std::move(attrs));
}
} // namespace

Tensor dynamic_update(const Tensor& t, const Tensor& index, const Tensor& update,
                      std::vector<std::int64_t> axes) {
  return dynamic_update_as(OpKind::DynamicUpdate, t, index, update, std::move(axes));
}
Tensor dynamic_update_(const Tensor& t, const Tensor& index, const Tensor& update,
                       std::vector<std::int64_t> axes) {
  return dynamic_update_as(OpKind::DynamicUpdateInplace, t, index, update, std::move(axes));
}

Tensor arange(double start, double stop, double step, DType dtype) {
  if (dtype != int32 && !is_floating_point(dtype))
    throw DTypeError("Arange: the dtype must be int32, float32 or float16, got " +
                     std::string(name(dtype)));
  if (step == 0.0 || !std::isfinite(step) || !std::isfinite(start) || !std::isfinite(stop))
    throw ValueError("Arange: start " + std::to_string(start) + ", stop " + std::to_string(stop) +
                     " and step " + std::to_string(step) + " must be finite, and step non-zero");
  if (dtype == int32 && (start != std::trunc(start) || step != std::trunc(step)))
    throw ValueError("Arange: an int32 range needs an integral start and step, got start " +
                     std::to_string(start) + " and step " + std::to_string(step));
  const double count = std::ceil((stop - start) / step);
  if (count > 9.0e15)
    throw ShapeError("Arange: " + std::to_string(count) + " elements are more than a tensor holds");
  TensorSpec spec{{std::max<std::int64_t>(0, static_cast<std::int64_t>(count))}, dtype};
  if (dtype == int32 && spec.shape[0] > 0 &&
      (std::abs(start) > 2147483647.0 ||
       std::abs(start + static_cast<double>(spec.shape[0] - 1) * step) > 2147483647.0))
    throw ValueError("Arange: the range from " + std::to_string(start) + " by " +
                     std::to_string(step) + " leaves int32");
  return add_op1(OpKind::Arange, std::span<const Tensor>{}, spec,
                 CreateAttrs{spec, InitType::zero, start, step});
}

Tensor stack(const std::vector<Tensor>& ts, std::int64_t axis) {
  if (ts.empty())
    throw ValueError("Stack: expected at least one tensor, got none");
  const auto a = normalize_axis(axis, ts[0].rank() + 1, "Stack");
  std::vector<Tensor> parts;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    if (ts[i].shape() != ts[0].shape())
      throw ShapeError("Stack: tensor " + std::to_string(i) + " " + to_string(ts[i]) +
                       " does not have the shape of " + to_string(ts[0]));
    parts.push_back(unsqueeze(ts[i], {a}));
  }
  return concat(parts, a);
}

namespace {
Tensor triangle(OpKind kind, const Tensor& t, std::int64_t k) {
  if (t.rank() < 2)
    throw ShapeError(std::string(op_type_name(kind)) +
                     ": expected a tensor of rank 2 or more (the triangle is taken of the last "
                     "two axes), got " +
                     to_string(t));
  return add_op1(kind, {t}, t.spec(), DiagonalAttrs{k});
}
} // namespace

Tensor tril(const Tensor& t, std::int64_t k) { return triangle(OpKind::Tril, t, k); }
Tensor triu(const Tensor& t, std::int64_t k) { return triangle(OpKind::Triu, t, k); }

Tensor pad(const Tensor& t, const std::vector<std::pair<std::int64_t, std::int64_t>>& widths,
           double value) {
  if (widths.size() != static_cast<std::size_t>(t.rank()))
    throw ValueError("Pad: expected one {before, after} pair per axis of " + to_string(t) +
                     ", got " + std::to_string(widths.size()));
  PadAttrs attrs;
  attrs.value = value;
  Shape shape = t.shape();
  for (std::size_t a = 0; a < widths.size(); ++a) {
    const auto [before, after] = widths[a];
    if (before < 0 || after < 0)
      throw ValueError("Pad: the widths of axis " + std::to_string(a) + " must be >= 0, got {" +
                       std::to_string(before) + ", " + std::to_string(after) + "}");
    if (__builtin_add_overflow(shape[a], before, &shape[a]) ||
        __builtin_add_overflow(shape[a], after, &shape[a]))
      throw ShapeError("Pad: axis " + std::to_string(a) + " of " + to_string(t) +
                       " padded would be longer than a 64-bit count can hold");
    attrs.before.push_back(before);
    attrs.after.push_back(after);
  }
  nbytes(shape, t.dtype(), "Pad of " + to_string(t));
  return add_op1(OpKind::Pad, {t}, TensorSpec{std::move(shape), t.dtype()}, std::move(attrs));
}

Tensor subsample(const Tensor& t, const std::vector<std::int64_t>& strides) {
  if (strides.size() != static_cast<std::size_t>(t.rank()))
    throw ValueError("Subsample: expected one stride per axis of " + to_string(t) + ", got " +
                     list(strides));
  Shape shape = t.shape();
  for (std::size_t a = 0; a < strides.size(); ++a) {
    if (strides[a] < 1)
      throw ValueError("Subsample: strides must be >= 1, got " + list(strides) + " for " +
                       to_string(t));
    shape[a] = (shape[a] + strides[a] - 1) / strides[a];
  }
  return add_op1(OpKind::Subsample, {t}, TensorSpec{std::move(shape), t.dtype()},
                 SubsampleAttrs{strides});
}

Tensor tile(const Tensor& t, const std::vector<std::int64_t>& repeats) {
  if (repeats.size() != static_cast<std::size_t>(t.rank()))
    throw ValueError("Tile: expected one repeat count per axis of " + to_string(t) + ", got " +
                     list(repeats));
  Shape shape = t.shape();
  for (std::size_t a = 0; a < repeats.size(); ++a) {
    if (repeats[a] < 0)
      throw ValueError("Tile: repeat counts must be >= 0, got " + list(repeats));
    if (__builtin_mul_overflow(shape[a], repeats[a], &shape[a]))
      throw ShapeError("Tile: axis " + std::to_string(a) + " of " + to_string(t) +
                       " repeated would be longer than a 64-bit count can hold");
  }
  nbytes(shape, t.dtype(), "Tile of " + to_string(t));
  return add_op1(OpKind::Tile, {t}, TensorSpec{std::move(shape), t.dtype()}, TileAttrs{repeats});
}

namespace {
std::string resize_mode_name(ResizeMode m) {
  constexpr const char* names[] = {"nearest", "linear", "cubic"};
  const auto k = static_cast<std::size_t>(m);
  return k < std::size(names) ? names[k] : "unknown (" + std::to_string(k) + ")";
}

/// Validates interpolate's arguments for an input of `in` and returns its output shape.
Shape resize_shape(const char* op, const Shape& in, const ResizeAttrs& a) {
  if (a.scales.size() != in.size())
    throw ValueError(std::string(op) +
                     ": expected one scale factor per axis of an input of shape " + to_string(in) +
                     ", got " + std::to_string(a.scales.size()));
  if (a.mode != ResizeMode::nearest && a.mode != ResizeMode::linear)
    throw ValueError(std::string(op) + ": mode '" + resize_mode_name(a.mode) +
                     "' is not supported; pxl implements 'nearest' and 'linear'");
  using C = ResizeCoordinateTransformationMode;
  if (a.coordinate_transformation_mode == C::tf_crop_and_resize)
    throw ValueError(std::string(op) +
                     ": coordinate_transformation_mode 'tf_crop_and_resize' is not supported "
                     "(PopART's Resize has no lowering for it)");
  if (static_cast<int>(a.coordinate_transformation_mode) > static_cast<int>(C::asymmetric) ||
      static_cast<int>(a.nearest_mode) > static_cast<int>(ResizeNearestMode::ceil))
    throw ValueError(std::string(op) + ": unknown nearest_mode or coordinate_transformation_mode");
  Shape out(in.size());
  for (std::size_t d = 0; d < in.size(); ++d) {
    const float s = a.scales[d];
    if (!(s > 0.0f) || !std::isfinite(s))
      throw ValueError(std::string(op) + ": scale factors must be positive and finite, got " +
                       std::to_string(s) + " for axis " + std::to_string(d));
    const float extent = std::floor(static_cast<float>(in[d]) * s);
    if (!(extent < 4.6e18f))
      throw ShapeError(std::string(op) + ": axis " + std::to_string(d) + " of shape " +
                       to_string(in) + " scaled by " + std::to_string(s) +
                       " would be longer than a 64-bit count can hold");
    out[d] = static_cast<std::int64_t>(extent);
  }
  return out;
}
} // namespace

Tensor interpolate(const Tensor& t, const std::vector<float>& scale_factor, ResizeMode mode,
                   ResizeNearestMode nearest_mode,
                   ResizeCoordinateTransformationMode coordinate_transformation_mode) {
  detail::check_float("interpolate", t);
  ResizeAttrs attrs{scale_factor, mode, nearest_mode, coordinate_transformation_mode};
  Shape shape = resize_shape("interpolate", t.shape(), attrs);
  nbytes(shape, t.dtype(), "interpolate of " + to_string(t));
  return add_op1(OpKind::Resize, {t}, TensorSpec{std::move(shape), t.dtype()}, std::move(attrs));
}

Tensor interpolate_grad(const Tensor& grad, const Shape& input_shape,
                        const std::vector<float>& scale_factor, ResizeMode mode,
                        ResizeNearestMode nearest_mode,
                        ResizeCoordinateTransformationMode coordinate_transformation_mode) {
  detail::check_float("interpolate_grad", grad);
  ResizeAttrs attrs{scale_factor, mode, nearest_mode, coordinate_transformation_mode};
  const Shape out = resize_shape("interpolate_grad", input_shape, attrs);
  if (mode != ResizeMode::nearest)
    throw ValueError("interpolate_grad: mode '" + resize_mode_name(mode) +
                     "' has no gradient (PopART's Resize trains with 'nearest' only)");
  if (grad.shape() != out)
    throw ShapeError("interpolate_grad: grad " + to_string(grad) +
                     " must have interpolate's output shape " + to_string(out) +
                     " for an input of shape " + to_string(input_shape));
  nbytes(input_shape, grad.dtype(), "interpolate_grad of " + to_string(grad));
  return add_op1(OpKind::ResizeGrad, {grad}, TensorSpec{input_shape, grad.dtype()},
                 std::move(attrs));
}

} // namespace pxl::ops
