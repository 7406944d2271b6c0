// The element-wise ONNX operators: arithmetic (folded on the host when both inputs are known
// at import), comparisons, unary functions, Cast, Clip and Where.
#include "folding.hpp"

#include "pxl/ir/graph.hpp"
#include "pxl/ops/elementwise.hpp"

#include <cmath>

namespace pxl::onnx::detail {
namespace {

using ::onnx::TensorProto;

// A binary operator: folded when both inputs are known, built with `op` otherwise.
using DeviceBinary = Tensor (*)(const Tensor&, const Tensor&);
OpRow binary(const char* op_type, DeviceBinary op, double (*fold)(double, double, bool),
             bool to_bool = false, const char* restriction = "") {
  return {op_type, 11, 17,
          [op, fold, to_bool](const NodeContext& c) -> Values {
            if (c.all_folded()) {
              const bool integer = is_integer_type(c.elem_type(0));
              return {fold_elementwise(
                  c, to_bool ? TensorProto::BOOL : c.elem_type(0),
                  [&](const std::vector<double>& a) { return fold(a[0], a[1], integer); })};
            }
            return {op(c.tensor(0), c.tensor(1))};
          },
          restriction};
}

using DeviceUnary = Tensor (*)(const Tensor&);
OpRow unary(const char* op_type, DeviceUnary op, std::int64_t min_opset = 11) {
  return {op_type, min_opset, 17,
          [op](const NodeContext& c) -> Values { return {op(c.tensor(0))}; }};
}

Values cast(const NodeContext& c) {
  const auto to = static_cast<std::int32_t>(c.attr_int("to", TensorProto::FLOAT));
  if (c.is_folded(0)) {
    Folded f = c.folded(0, "input");
    const bool integer = is_integer_type(to) && to != TensorProto::BOOL;
    for (auto& v : f.data)
      v = to == TensorProto::BOOL ? (v != 0) : integer ? std::trunc(v) : v;
    if (to == TensorProto::FLOAT16)
      for (auto& v : f.data)
        v = static_cast<double>(static_cast<float>(half(static_cast<float>(v))));
    else if (to == TensorProto::FLOAT)
      for (auto& v : f.data)
        v = static_cast<double>(static_cast<float>(v));
    f.elem_type = to;
    f.initializer.clear();
    return {f};
  }
  return {ops::cast(c.tensor(0), device_dtype(to, c.where(), c.float_dtype()))};
}

Values clip(const NodeContext& c) {
  double lo = -INFINITY, hi = INFINITY;
  if (c.has(1))
    lo = scalar(c, 1, "min");
  if (c.has(2))
    hi = scalar(c, 2, "max");
  if (lo > hi) // ONNX: every element becomes max
    lo = hi;
  return {ops::clip(c.tensor(0), lo, hi)};
}

Values where(const NodeContext& c) {
  if (c.all_folded())
    return {fold_elementwise(c, c.elem_type(1),
                             [](const std::vector<double>& a) { return a[0] != 0 ? a[1] : a[2]; })};
  return {ops::where(c.tensor(0), c.tensor(1), c.tensor(2))};
}

double fold_add(double a, double b, bool) { return a + b; }
double fold_sub(double a, double b, bool) { return a - b; }
double fold_mul(double a, double b, bool) { return a * b; }
double fold_div(double a, double b, bool integer) { return integer ? std::trunc(a / b) : a / b; }
double fold_pow(double a, double b, bool) { return std::pow(a, b); }
double fold_equal(double a, double b, bool) { return a == b; }
double fold_less(double a, double b, bool) { return a < b; }
double fold_greater(double a, double b, bool) { return a > b; }

Tensor pow_tensors(const Tensor& a, const Tensor& b) { return ops::pow(a, b); }

} // namespace

std::vector<OpRow> elementwise_rows() {
  return {
      binary("Add", ops::add, fold_add),
      unary("Abs", ops::abs),
      {"Cast", 11, 17, cast, "to a type with a pxl dtype (64-bit types downcast)"},
      unary("Ceil", ops::ceil),
      {"Clip", 11, 17, clip, "min and max known at import"},
      binary("Div", ops::div, fold_div),
      binary("Equal", ops::equal, fold_equal, true),
      unary("Erf", ops::erf),
      unary("Exp", ops::exp),
      unary("Floor", ops::floor),
      binary("Greater", ops::greater, fold_greater, true),
      binary("Less", ops::less, fold_less, true),
      unary("Log", ops::log),
      binary("Mul", ops::mul, fold_mul),
      unary("Neg", ops::negate),
      binary("Pow", pow_tensors, fold_pow),
      unary("Reciprocal", [](const Tensor& t) { return ops::div(constant(1.0, t.dtype()), t); }),
      unary("Relu", ops::relu),
      unary("Sigmoid", ops::sigmoid),
      unary("Sqrt", ops::sqrt),
      binary("Sub", ops::sub, fold_sub),
      unary("Tanh", ops::tanh),
      {"Where", 11, 17, where},
  };
}

} // namespace pxl::onnx::detail
