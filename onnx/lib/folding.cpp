// Folding helpers shared by the converters (folding.hpp).
#include "folding.hpp"

#include <algorithm>
#include <string>

namespace pxl::onnx::detail {

using ::onnx::TensorProto;

bool is_integer_type(std::int32_t t) {
  return t != TensorProto::FLOAT && t != TensorProto::FLOAT16 && t != TensorProto::DOUBLE &&
         t != TensorProto::BFLOAT16;
}

std::int64_t axis_of(const NodeContext& c, std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r)
    c.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  return axis < 0 ? axis + r : axis;
}

std::vector<std::int64_t> strides_of(const Shape& s) {
  std::vector<std::int64_t> st(s.size(), 1);
  for (std::size_t i = s.size(); i-- > 1;)
    st[i - 1] = st[i] * s[i];
  return st;
}

Shape broadcast_shapes(const NodeContext& c, const std::vector<Shape>& shapes) {
  std::size_t rank = 0;
  for (const auto& s : shapes)
    rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const auto& s : shapes)
    for (std::size_t i = 0; i < s.size(); ++i) {
      auto& o = out[rank - s.size() + i];
      if (s[i] != 1 && o != 1 && s[i] != o)
        c.fail("shapes do not broadcast");
      if (s[i] != 1)
        o = s[i];
    }
  return out;
}

double broadcast_at(const Folded& f, const Shape& out, std::int64_t flat) {
  if (f.data.size() == 1)
    return f.data[0];
  const auto st_out = strides_of(out);
  const auto st_in = strides_of(f.shape);
  std::int64_t index = 0;
  const std::size_t offset = out.size() - f.shape.size();
  for (std::size_t a = 0; a < out.size(); ++a) {
    const std::int64_t i = (flat / st_out[a]) % out[a];
    if (a >= offset && f.shape[a - offset] != 1)
      index += i * st_in[a - offset];
  }
  return f.data[static_cast<std::size_t>(index)];
}

void check_folded_shape(const NodeContext& c, const Shape& shape) {
  std::int64_t n = 1;
  for (const auto d : shape) {
    if (d < 0)
      c.fail("a size of " + std::to_string(d) + " is negative");
    n = d == 0 || n <= (std::int64_t{1} << 24) / d ? n * d : (std::int64_t{1} << 24) + 1;
  }
  if (n > (std::int64_t{1} << 24))
    c.fail("the value known at import would hold more than 2^24 elements; pxl folds only "
           "shapes and small constants");
}

std::vector<std::int64_t> axes_input(const NodeContext& c, bool required) {
  if (c.opset() < 13)
    return c.attr_ints("axes");
  if (!c.has(1)) {
    if (required)
      c.fail("input 1 (axes) is required");
    return {};
  }
  return c.ints(1, "axes");
}

double scalar(const NodeContext& c, std::size_t i, const char* what) {
  const Folded& f = c.folded(i, what);
  if (f.data.size() != 1)
    c.fail(std::string("the ") + what + " must be a scalar");
  return f.data[0];
}

Values identity(const NodeContext& c) {
  if (c.is_folded(0))
    return {c.folded(0, "input")};
  return {c.tensor(0)};
}

} // namespace pxl::onnx::detail
