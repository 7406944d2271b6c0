#include "pxl/ir/tensor.hpp"
#include "ir/handle_access.hpp"
#include "ir/op_builder.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/shape.hpp"
#include "pxl/ops/var_updates.hpp"

namespace pxl {

using detail::HandleAccess;

const TensorSpec& Tensor::spec() const { return ir_->tensors[index_].spec; }
const Shape& Tensor::meta_shape() const {
  const auto& node = ir_->tensors[index_];
  return node.sharding ? node.sharding->meta_shape : node.spec.shape;
}
const std::string& Tensor::id() const { return ir_->tensors[index_].id; }
const std::string& Tensor::name() const { return ir_->tensors[index_].name; }
Graph Tensor::graph() const { return HandleAccess::graph(ir_, ir_->tensors[index_].graph); }
std::int64_t Tensor::ipu() const { return ir_->tensors[index_].ipu; }
bool Tensor::is_variable() const { return ir_->tensors[index_].kind == TensorKind::variable; }
bool Tensor::is_constant() const { return ir_->tensors[index_].kind == TensorKind::constant; }
bool Tensor::is_graph_input() const { return ir_->tensors[index_].kind == TensorKind::graph_input; }
std::optional<Op> Tensor::producer() const {
  const auto p = ir_->tensors[index_].producer;
  if (!p)
    return std::nullopt;
  return HandleAccess::op(ir_, *p);
}

Tensor Tensor::reshape(Shape shape) const { return ops::reshape(*this, std::move(shape)); }
Tensor Tensor::transpose(std::vector<std::int64_t> perm) const {
  return ops::transpose(*this, std::move(perm));
}
Tensor Tensor::flatten() const { return ops::flatten(*this); }
Tensor Tensor::detach() const { return ops::detach(*this); }
Tensor Tensor::slice(std::int64_t start, std::int64_t stop, std::int64_t axis) const {
  return ops::slice(*this, {start}, {stop}, {axis});
}
Tensor Tensor::operator[](std::int64_t i) const {
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
    return "an empty Tensor";
  return "'" + t.id() + "' " + to_string(t.spec());
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.valid())
    return os << "Tensor(empty)";
  return os << "Tensor(" << t.id() << " " << to_string(t.spec()) << ")";
}

namespace {
Tensor scalar_like(const Tensor& t, double v) { return constant(v, t.dtype()); }
} // namespace

Tensor operator+(const Tensor& a, const Tensor& b) { return ops::add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return ops::sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return ops::mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return ops::div(a, b); }
Tensor operator+(const Tensor& a, double b) { return ops::add(a, scalar_like(a, b)); }
Tensor operator-(const Tensor& a, double b) { return ops::sub(a, scalar_like(a, b)); }
Tensor operator*(const Tensor& a, double b) { return ops::mul(a, scalar_like(a, b)); }
Tensor operator/(const Tensor& a, double b) { return ops::div(a, scalar_like(a, b)); }
Tensor operator+(double a, const Tensor& b) { return ops::add(scalar_like(b, a), b); }
Tensor operator-(double a, const Tensor& b) { return ops::sub(scalar_like(b, a), b); }
Tensor operator*(double a, const Tensor& b) { return ops::mul(scalar_like(b, a), b); }
Tensor operator/(double a, const Tensor& b) { return ops::div(scalar_like(b, a), b); }
Tensor operator%(const Tensor& a, const Tensor& b) { return ops::fmod(a, b); }
Tensor operator%(const Tensor& a, double b) { return ops::fmod(a, scalar_like(a, b)); }
Tensor operator%(double a, const Tensor& b) { return ops::fmod(scalar_like(b, a), b); }
Tensor operator-(const Tensor& a) { return ops::negate(a); }
Tensor& operator+=(Tensor& a, const Tensor& b) { return a = ops::add_(a, b); }
Tensor& operator+=(Tensor& a, double b) { return a = ops::add_(a, scalar_like(a, b)); }
Tensor& operator-=(Tensor& a, const Tensor& b) { return a = ops::sub_(a, b); }
Tensor& operator-=(Tensor& a, double b) { return a = ops::sub_(a, scalar_like(a, b)); }
Tensor& operator*=(Tensor& a, const Tensor& b) { return a = ops::mul_(a, b); }
Tensor& operator*=(Tensor& a, double b) { return a = ops::mul_(a, scalar_like(a, b)); }

} // namespace pxl
