#include "pxl/ir/tensor.hpp"
#include "ir/handle_access.hpp"
#include "ir/op_builder.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/shape.hpp"
#include "pxl/ops/var_updates.hpp"

namespace pxl {

using detail::HandleAccess;

namespace {
/// The node behind `t`, after the check every Tensor accessor makes (`call` names it).
const detail::TensorNode& tensor_node(const Tensor& t, std::string_view call) {
  return HandleAccess::arena(t, call).tensor(IrView::id(t));
}
/// `t` after that check, for the members that build ops.
const Tensor& usable_tensor(const Tensor& t, std::string_view call) {
  detail::require_usable(t, call);
  return t;
}
} // namespace

bool Tensor::valid() const { return HandleAccess::storage(*this) != nullptr; }
const TensorSpec& Tensor::spec() const { return tensor_node(*this, "Tensor::spec()").spec; }
const Shape& Tensor::shape() const { return tensor_node(*this, "Tensor::shape()").spec.shape; }
DType Tensor::dtype() const { return tensor_node(*this, "Tensor::dtype()").spec.dtype; }
std::int64_t Tensor::rank() const { return tensor_node(*this, "Tensor::rank()").spec.rank(); }
std::int64_t Tensor::nelms() const { return tensor_node(*this, "Tensor::nelms()").spec.nelms(); }
const Shape& Tensor::meta_shape() const {
  const auto& node = tensor_node(*this, "Tensor::meta_shape()");
  return node.sharding ? node.sharding->meta_shape : node.spec.shape;
}
const std::string& Tensor::id() const { return tensor_node(*this, "Tensor::id()").id; }
const std::string& Tensor::name() const { return tensor_node(*this, "Tensor::name()").name; }
Graph Tensor::graph() const {
  return HandleAccess::graph(HandleAccess::storage(*this),
                             tensor_node(*this, "Tensor::graph()").graph);
}
std::int64_t Tensor::ipu() const { return tensor_node(*this, "Tensor::ipu()").ipu; }
TileSet Tensor::tile_set() const { return tensor_node(*this, "Tensor::tile_set()").tile_set; }
bool Tensor::is_variable() const {
  return tensor_node(*this, "Tensor::is_variable()").kind == TensorKind::variable;
}
bool Tensor::is_constant() const {
  return tensor_node(*this, "Tensor::is_constant()").kind == TensorKind::constant;
}
bool Tensor::is_graph_input() const {
  return tensor_node(*this, "Tensor::is_graph_input()").kind == TensorKind::graph_input;
}
std::optional<Op> Tensor::producer() const {
  const auto p = tensor_node(*this, "Tensor::producer()").producer;
  if (!p)
    return std::nullopt;
  return HandleAccess::op(HandleAccess::storage(*this), *p);
}

Tensor Tensor::reshape(Shape shape) const {
  return ops::reshape(usable_tensor(*this, "Tensor::reshape()"), std::move(shape));
}
Tensor Tensor::transpose(std::vector<std::int64_t> perm) const {
  return ops::transpose(usable_tensor(*this, "Tensor::transpose()"), std::move(perm));
}
Tensor Tensor::flatten() const { return ops::flatten(usable_tensor(*this, "Tensor::flatten()")); }
Tensor Tensor::detach() const { return ops::detach(usable_tensor(*this, "Tensor::detach()")); }
Tensor Tensor::slice(std::int64_t start, std::int64_t stop, std::int64_t axis) const {
  return ops::slice(usable_tensor(*this, "Tensor::slice()"), {start}, {stop}, {axis});
}
Tensor Tensor::operator[](std::int64_t i) const {
  detail::require_usable(*this, "Tensor::operator[]");
  if (rank() == 0)
    throw ValueError("Tensor::operator[]: cannot index scalar " + to_string(*this));
  const auto n = shape()[0];
  const auto j = i < 0 ? i + n : i;
  if (j < 0 || j >= n)
    throw ValueError("Tensor::operator[]: index " + std::to_string(i) +
                     " out of range for axis 0 of " + to_string(*this));
  return ops::squeeze(ops::slice(*this, {j}, {j + 1}, {0}), {0});
}

std::string to_string(const Tensor& t) {
  if (!t.valid())
    return HandleAccess::empty(t) ? "an empty Tensor" : "a Tensor of a destroyed Ir";
  return "'" + t.id() + "' " + to_string(t.spec());
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.valid())
    return os << (HandleAccess::empty(t) ? "Tensor(empty)" : "Tensor(of a destroyed Ir)");
  return os << "Tensor(" << t.id() << " " << to_string(t.spec()) << ")";
}

namespace {
Tensor scalar_like(const Tensor& t, double v) { return constant(v, t.dtype()); }
/// The check the operators make of their tensor operands (`op` names the operator).
void check_operator_operands(std::string_view op, const Tensor& a, const Tensor* b = nullptr) {
  detail::require_usable(a, op);
  if (b)
    detail::require_usable(*b, op);
}
} // namespace

Tensor operator+(const Tensor& a, const Tensor& b) {
  check_operator_operands("Tensor operator+", a, &b);
  return ops::add(a, b);
}
Tensor operator-(const Tensor& a, const Tensor& b) {
  check_operator_operands("Tensor operator-", a, &b);
  return ops::sub(a, b);
}
Tensor operator*(const Tensor& a, const Tensor& b) {
  check_operator_operands("Tensor operator*", a, &b);
  return ops::mul(a, b);
}
Tensor operator/(const Tensor& a, const Tensor& b) {
  check_operator_operands("Tensor operator/", a, &b);
  return ops::div(a, b);
}
Tensor operator+(const Tensor& a, double b) {
  check_operator_operands("Tensor operator+", a);
  return ops::add(a, scalar_like(a, b));
}
Tensor operator-(const Tensor& a, double b) {
  check_operator_operands("Tensor operator-", a);
  return ops::sub(a, scalar_like(a, b));
}
Tensor operator*(const Tensor& a, double b) {
  check_operator_operands("Tensor operator*", a);
  return ops::mul(a, scalar_like(a, b));
}
Tensor operator/(const Tensor& a, double b) {
  check_operator_operands("Tensor operator/", a);
  return ops::div(a, scalar_like(a, b));
}
Tensor operator+(double a, const Tensor& b) {
  check_operator_operands("Tensor operator+", b);
  return ops::add(scalar_like(b, a), b);
}
Tensor operator-(double a, const Tensor& b) {
  check_operator_operands("Tensor operator-", b);
  return ops::sub(scalar_like(b, a), b);
}
Tensor operator*(double a, const Tensor& b) {
  check_operator_operands("Tensor operator*", b);
  return ops::mul(scalar_like(b, a), b);
}
Tensor operator/(double a, const Tensor& b) {
  check_operator_operands("Tensor operator/", b);
  return ops::div(scalar_like(b, a), b);
}
Tensor operator%(const Tensor& a, const Tensor& b) {
  check_operator_operands("Tensor operator%", a, &b);
  return ops::fmod(a, b);
}
Tensor operator%(const Tensor& a, double b) {
  check_operator_operands("Tensor operator%", a);
  return ops::fmod(a, scalar_like(a, b));
}
Tensor operator%(double a, const Tensor& b) {
  check_operator_operands("Tensor operator%", b);
  return ops::fmod(scalar_like(b, a), b);
}
Tensor operator-(const Tensor& a) {
  check_operator_operands("Tensor operator-", a);
  return ops::negate(a);
}
Tensor& operator+=(Tensor& a, const Tensor& b) {
  check_operator_operands("Tensor operator+=", a, &b);
  return a = ops::add_(a, b);
}
Tensor& operator+=(Tensor& a, double b) {
  check_operator_operands("Tensor operator+=", a);
  return a = ops::add_(a, scalar_like(a, b));
}
Tensor& operator-=(Tensor& a, const Tensor& b) {
  check_operator_operands("Tensor operator-=", a, &b);
  return a = ops::sub_(a, b);
}
Tensor& operator-=(Tensor& a, double b) {
  check_operator_operands("Tensor operator-=", a);
  return a = ops::sub_(a, scalar_like(a, b));
}
Tensor& operator*=(Tensor& a, const Tensor& b) {
  check_operator_operands("Tensor operator*=", a, &b);
  return a = ops::mul_(a, b);
}
Tensor& operator*=(Tensor& a, double b) {
  check_operator_operands("Tensor operator*=", a);
  return a = ops::mul_(a, scalar_like(a, b));
}

} // namespace pxl
