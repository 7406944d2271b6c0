// Gradient rules of the shape and data-movement ops.
#include "ops/grad_rule.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/matmul.hpp"
#include "pxl/ops/reduce.hpp"
#include "pxl/ops/shape.hpp"

#include <functional>
#include <numeric>

namespace pxl::detail {

using std::vector;

vector<Tensor> grad_IoTileCopy(GradContext& c) { return {ops::io_tile_copy(c.grad_output(0))}; }

vector<Tensor> grad_IpuCopy(GradContext& c) {
  return {ops::ipu_copy(c.grad_output(0), c.op().input(0).ipu(), c.op().ipu())};
}

vector<Tensor> grad_Reshape(GradContext& c) {
  return {ops::reshape(c.grad_output(0), c.op().input(0).shape())};
}

vector<Tensor> grad_Transpose(GradContext& c) {
  const auto& perm = c.op().attrs_as<TransposeAttrs>().perm;
  vector<std::int64_t> inverse(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i)
    inverse[static_cast<std::size_t>(perm[i])] = static_cast<std::int64_t>(i);
  return {ops::transpose(c.grad_output(0), inverse)};
}

vector<Tensor> grad_Slice(GradContext& c) {
  // Pad the gradient with zeros back to the input's extent, one axis at a time.
  const auto& attrs = c.op().attrs_as<SliceAttrs>();
  const Shape in_shape = c.op().input(0).shape();
  Tensor g = c.grad_output(0);
  for (std::size_t a = 0; a < in_shape.size(); ++a) {
    const auto before = attrs.start[a], after = in_shape[a] - attrs.stop[a];
    if (before == 0 && after == 0)
      continue;
    vector<Tensor> parts;
    Shape pad = g.shape();
    if (before > 0) {
      pad[a] = before;
      parts.push_back(ops::init(pad, g.dtype()));
    }
    parts.push_back(g);
    if (after > 0) {
      pad[a] = after;
      parts.push_back(ops::init(pad, g.dtype()));
    }
    g = ops::concat(parts, static_cast<std::int64_t>(a));
  }
  return {g};
}

// Back to the input's extent one axis at a time: each gradient element followed by stride - 1
// zeros along the axis (a concat on a new axis, flattened), cut to the input's extent.
vector<Tensor> grad_Subsample(GradContext& c) {
  const auto& strides = c.op().attrs<OpKind::Subsample>().strides;
  const Shape in_shape = c.op().input(0).shape();
  Tensor g = c.grad_output(0);
  for (std::size_t a = 0; a < in_shape.size(); ++a) {
    const std::int64_t k = strides[a];
    if (k == 1 || in_shape[a] == 0)
      continue;
    Shape split = g.shape();
    split.insert(split.begin() + static_cast<std::ptrdiff_t>(a) + 1, 1);
    Shape zeros = split;
    zeros[a + 1] = k - 1;
    Shape spread = g.shape();
    spread[a] *= k;
    g = ops::concat({ops::reshape(g, split), ops::init(zeros, g.dtype())},
                    static_cast<std::int64_t>(a) + 1);
    g = ops::slice(ops::reshape(g, spread), {0}, {in_shape[a]}, {static_cast<std::int64_t>(a)});
  }
  return {g};
}

vector<Tensor> grad_Concat(GradContext& c) {
  const auto axis = c.op().attrs_as<AxisAttrs>().axis;
  vector<std::int64_t> sizes;
  for (const auto& t : c.op().inputs())
    sizes.push_back(t.shape()[static_cast<std::size_t>(axis)]);
  if (sizes.size() == 1)
    return {c.grad_output(0)};
  return ops::split(c.grad_output(0), sizes, axis);
}

// concat_'s view is held as a copy, so its gradient is Concat's (PopART's ConcatInplace has it).
vector<Tensor> grad_ConcatInplace(GradContext& c) { return grad_Concat(c); }

vector<Tensor> grad_Split(GradContext& c) {
  vector<Tensor> parts;
  for (std::size_t i = 0; i < c.op().num_outputs(); ++i)
    parts.push_back(c.grad_output(i));
  return {ops::concat(parts, c.op().attrs_as<SplitAttrs>().axis)};
}

vector<Tensor> grad_Gather(GradContext& c) {
  // Scatter-add as a matmul with the one-hot of the indices: rows of the same index add up,
  // out-of-range indices contribute nothing.
  const Tensor t = c.op().input(0);
  const Tensor indices = c.fwd_input(1);
  const auto axis = c.op().attrs_as<AxisAttrs>().axis;
  const auto rank = t.rank();
  const auto n = indices.nelms();
  const auto classes = t.shape()[static_cast<std::size_t>(axis)];
  // Gradient laid out as t[:axis] + [n] + t[axis+1:], then the gathered axis moved first.
  Shape g_shape(t.shape().begin(), t.shape().begin() + axis);
  g_shape.push_back(n);
  g_shape.insert(g_shape.end(), t.shape().begin() + axis + 1, t.shape().end());
  vector<std::int64_t> to_front(static_cast<std::size_t>(rank));
  std::iota(to_front.begin(), to_front.end(), 0);
  std::rotate(to_front.begin(), to_front.begin() + axis, to_front.begin() + axis + 1);
  const Tensor g = ops::transpose(ops::reshape(c.grad_output(0), g_shape), to_front);
  const Shape front_shape = g.shape();
  const Tensor g2 = ops::reshape(g, {n, g.nelms() / std::max<std::int64_t>(n, 1)});
  const Tensor values = constant(HostTensor({0.f, 1.f}, {2}), t.dtype());
  const Tensor onehot = ops::onehot(ops::reshape(indices, {n}), classes, values, 1); // [n, classes]
  Tensor dt = ops::matmul(ops::transpose(onehot), g2); // [classes, rest]
  Shape dt_shape = front_shape;
  dt_shape[0] = classes;
  dt = ops::reshape(dt, dt_shape);
  vector<std::int64_t> back(static_cast<std::size_t>(rank));
  for (std::size_t i = 0; i < back.size(); ++i)
    back[static_cast<std::size_t>(to_front[i])] = static_cast<std::int64_t>(i);
  return {ops::transpose(dt, back), Tensor{}};
}

vector<Tensor> grad_TiedGather(GradContext& c) { return grad_Gather(c); }

// Per group, the gather's gradient: a batched matmul of the one-hot of the indices with the
// output gradient, laid out as [group, picks, rest] (out-of-range indices add nothing).
vector<Tensor> grad_GroupedGather(GradContext& c) {
  const Tensor t = c.op().input(0);
  const auto& a = c.op().attrs<OpKind::GroupedGather>();
  const Shape& shape = t.shape();
  const auto ax = static_cast<std::size_t>(a.axis);
  const std::int64_t groups = a.group_size, n = shape[ax];
  const std::int64_t before = std::accumulate(shape.begin() + 1, shape.begin() + a.axis,
                                              std::int64_t{1}, std::multiplies<>());
  const std::int64_t after = std::accumulate(shape.begin() + a.axis + 1, shape.end(),
                                             std::int64_t{1}, std::multiplies<>());
  const std::int64_t picks = c.fwd_input(1).nelms() / groups;
  Tensor g = ops::reshape(c.grad_output(0), {groups, before, picks, after});
  g = ops::reshape(ops::transpose(g, {0, 2, 1, 3}), {groups, picks, before * after});
  const Tensor values = constant(HostTensor({0.f, 1.f}, {2}), t.dtype());
  const Tensor onehot = ops::onehot(ops::reshape(c.fwd_input(1), {groups, picks}), n, values, 2);
  const Tensor dt = ops::matmul(ops::transpose(onehot, {0, 2, 1}), g); // [groups, n, rest]
  return {ops::reshape(ops::transpose(ops::reshape(dt, {groups, n, before, after}), {0, 2, 1, 3}),
                       shape),
          Tensor{}};
}

vector<Tensor> grad_Tril(GradContext& c) {
  return {ops::tril(c.grad_output(0), c.op().attrs<OpKind::Tril>().k)};
}
vector<Tensor> grad_Triu(GradContext& c) {
  return {ops::triu(c.grad_output(0), c.op().attrs<OpKind::Triu>().k)};
}

// The input's part of the output gradient.
vector<Tensor> grad_Pad(GradContext& c) {
  const auto& a = c.op().attrs<OpKind::Pad>();
  const Shape& in = c.op().input(0).shape();
  vector<std::int64_t> stop(in.size());
  for (std::size_t d = 0; d < in.size(); ++d)
    stop[d] = a.before[d] + in[d];
  return {ops::slice(c.grad_output(0), a.before, stop)};
}

// Every copy's gradient summed: the output viewed as (r0, d0, r1, d1, ...) summed over the r's.
vector<Tensor> grad_Tile(GradContext& c) {
  const auto& repeats = c.op().attrs<OpKind::Tile>().repeats;
  const Shape& in = c.op().input(0).shape();
  Shape split;
  vector<std::int64_t> copies;
  for (std::size_t d = 0; d < in.size(); ++d) {
    copies.push_back(static_cast<std::int64_t>(split.size()));
    split.push_back(repeats[d]);
    split.push_back(in[d]);
  }
  const Tensor g = ops::reshape(c.grad_output(0), split);
  return {ops::reshape(copies.empty() ? g : ops::sum(g, copies), in)};
}

vector<Tensor> grad_TakeAlongAxis(GradContext& c) {
  const Tensor t = c.op().input(0);
  const auto axis = c.op().attrs<OpKind::TakeAlongAxis>().axis;
  return {ops::scatter_add(ops::init(t.shape(), t.dtype()), c.fwd_input(1), c.grad_output(0), axis),
          Tensor{}};
}

// What scatter overwrote gets nothing; each update gets the gradient at its index.
vector<Tensor> grad_Scatter(GradContext& c) {
  const Tensor g = c.grad_output(0), indices = c.fwd_input(1);
  const Tensor updates = c.op().input(2);
  const auto axis = c.op().attrs<OpKind::Scatter>().axis;
  vector<Tensor> r(3);
  if (c.needs_grad(0))
    r[0] = ops::scatter(g, indices, ops::init(updates.shape(), updates.dtype()), axis);
  if (c.needs_grad(2))
    r[2] = ops::take_along_axis(g, indices, axis);
  return r;
}

// As PopART's: data gets the output gradient at its indices, for max and min only where it is
// the result at its position (every tie gets all of it). The initial values get the gradient
// where they are the result: everywhere for sum, where equal to it for max and min, where no
// index wrote for none.
vector<Tensor> grad_ScatterReduce(GradContext& c) {
  const auto& a = c.op().attrs<OpKind::ScatterReduce>();
  const Tensor data = c.op().input(0);
  const Tensor g = c.grad_output(0);
  Tensor indices = c.fwd_input(1);
  if (indices.shape() != data.shape()) { // broadcast along the axis: spelled out
    Shape along(static_cast<std::size_t>(data.rank()), 1);
    along[static_cast<std::size_t>(a.axis)] = data.shape()[static_cast<std::size_t>(a.axis)];
    indices = expand(ops::reshape(indices, along), data.shape());
  }
  const bool extremum =
      a.reduction == ScatterReduction::max || a.reduction == ScatterReduction::min;
  const Tensor zero = constant(0.0, g.dtype());
  vector<Tensor> r(c.op().num_inputs());
  if (c.needs_grad(0)) {
    r[0] = ops::take_along_axis(g, indices, a.axis);
    if (extremum)
      r[0] = ops::where(
          ops::equal(c.fwd_input(0), ops::take_along_axis(c.fwd_output(0), indices, a.axis)), r[0],
          zero);
  }
  if (r.size() == 3 && c.needs_grad(2)) {
    if (extremum)
      r[2] = ops::where(ops::equal(c.fwd_output(0), c.fwd_input(2)), g, zero);
    else if (a.reduction == ScatterReduction::none)
      r[2] = ops::scatter(g, indices, ops::init(data.shape(), g.dtype()), a.axis);
    else
      r[2] = g;
  }
  return r;
}

vector<Tensor> grad_DynamicSlice(GradContext& c) {
  const Tensor t = c.op().input(0);
  const auto& a = c.op().attrs<OpKind::DynamicSlice>();
  return {ops::dynamic_update(ops::init(t.shape(), t.dtype()), c.fwd_input(1), c.grad_output(0),
                              a.axes),
          Tensor{}};
}

vector<Tensor> grad_DynamicUpdate(GradContext& c) {
  const Tensor g = c.grad_output(0), index = c.fwd_input(1);
  const Tensor update = c.op().input(2);
  const auto& a = c.op().attrs<OpKind::DynamicUpdate>();
  vector<Tensor> r(3);
  if (c.needs_grad(0))
    r[0] = ops::dynamic_update(g, index, ops::init(update.shape(), update.dtype()), a.axes);
  if (c.needs_grad(2))
    r[2] = ops::dynamic_slice(g, index, a.axes, a.sizes);
  return r;
}

// Nearest only: PopART's Resize has no gradient in the other modes.
vector<Tensor> grad_Resize(GradContext& c) {
  const auto& a = c.op().attrs<OpKind::Resize>();
  if (a.mode != ResizeMode::nearest)
    throw GraphError("autodiff: " + c.op().debug_name() + " ('" + c.op().name() +
                     "') interpolates with mode 'linear', which has no gradient (as in PopXL); "
                     "detach its input or use mode 'nearest'");
  return {ops::interpolate_grad(c.grad_output(0), c.op().input(0).shape(), a.scales, a.mode,
                                a.nearest_mode, a.coordinate_transformation_mode)};
}

} // namespace pxl::detail
