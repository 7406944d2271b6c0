// What the converters share to fold values known at import on the host: axes, NumPy
// broadcasting, and element-wise folding.
#pragma once

#include "node_context.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pxl::onnx::detail {

using Values = std::vector<Value>;

/// Whether an ONNX element type is an integer (or bool) type.
bool is_integer_type(std::int32_t t);
/// An axis in [-rank, rank) as an index; ImportError otherwise.
std::int64_t axis_of(const NodeContext& c, std::int64_t axis, std::size_t rank);
/// Row-major strides of `s`, in elements.
std::vector<std::int64_t> strides_of(const Shape& s);
/// NumPy broadcasting of folded shapes.
Shape broadcast_shapes(const NodeContext& c, const std::vector<Shape>& shapes);
/// Element `flat` of the broadcast output read from `f`.
double broadcast_at(const Folded& f, const Shape& out, std::int64_t flat);
/// The shape of a value folded at import: its sizes not negative and its elements at most 2^24
/// (folding is for shapes, axes and small constants; a larger result would only be a model
/// that asks the host for gigabytes before anything runs).
void check_folded_shape(const NodeContext& c, const Shape& shape);
/// A scalar known at import, as a double (Clip's min and max).
double scalar(const NodeContext& c, std::size_t i, const char* what);
/// Input 0 as it is, folded or not (Identity, and Dropout in inference).
Values identity(const NodeContext& c);
/// Unsqueeze's and Squeeze's axes: an attribute before opset 13, an input from it.
std::vector<std::int64_t> axes_input(const NodeContext& c, bool required);

/// Folds an element-wise op of the node's inputs on the host.
template <typename F>
Folded fold_elementwise(const NodeContext& c, std::int32_t elem_type, F f) {
  std::vector<Shape> shapes;
  for (std::size_t i = 0; i < c.inputs(); ++i)
    shapes.push_back(c.folded(i, "operand").shape);
  Folded out{.shape = broadcast_shapes(c, shapes), .elem_type = elem_type};
  check_folded_shape(c, out.shape);
  const std::int64_t n = nelms(out.shape);
  out.data.resize(static_cast<std::size_t>(n));
  std::vector<double> args(c.inputs());
  for (std::int64_t k = 0; k < n; ++k) {
    for (std::size_t i = 0; i < c.inputs(); ++i)
      args[i] = broadcast_at(c.folded(i, "operand"), out.shape, k);
    out.data[static_cast<std::size_t>(k)] = f(args);
  }
  return out;
}

/// The rows of each family of operators (ops_elementwise.cpp, ops_shape.cpp, ops_nn.cpp);
/// op_table() holds them all.
std::vector<OpRow> elementwise_rows();
std::vector<OpRow> shape_rows();
std::vector<OpRow> nn_rows();

} // namespace pxl::onnx::detail
