// NodeContext: a node's inputs, attributes and errors while the importer builds it.
#include "node_context.hpp"

#include <cmath>

namespace pxl::onnx::detail {

using ::onnx::TensorProto;

bool NodeContext::all_folded() const {
  for (std::size_t i = 0; i < inputs_.size(); ++i)
    if (has(i) && !is_folded(i))
      return false;
  return true;
}

Tensor NodeContext::tensor(std::size_t i) const {
  if (!has(i))
    fail("input " + std::to_string(i) + " is required");
  if (const auto* t = std::get_if<Tensor>(inputs_[i]))
    return *t;
  return materialize_(std::get<Folded>(*inputs_[i]));
}

const Folded& NodeContext::folded(std::size_t i, const char* what) const {
  if (!has(i))
    fail(std::string("input ") + std::to_string(i) + " (" + what + ") is required");
  const auto* f = std::get_if<Folded>(inputs_[i]);
  if (f == nullptr)
    fail(std::string("input ") + std::to_string(i) + " ('" + node_.input(static_cast<int>(i)) +
         "', the " + what +
         ") must be known at import (a constant, an initializer, or shape "
         "arithmetic on them), but the graph computes it");
  return *f;
}

std::vector<std::int64_t> NodeContext::ints(std::size_t i, const char* what) const {
  const Folded& f = folded(i, what);
  std::vector<std::int64_t> out;
  out.reserve(f.data.size());
  for (double v : f.data) {
    if (v != std::floor(v) || std::abs(v) > 9.007199254740992e15)
      fail(std::string("the ") + what + " must be integers, found " + std::to_string(v));
    out.push_back(static_cast<std::int64_t>(v));
  }
  return out;
}

Shape NodeContext::shape(std::size_t i) const {
  if (!has(i))
    fail("input " + std::to_string(i) + " is required");
  if (const auto* t = std::get_if<Tensor>(inputs_[i]))
    return t->shape();
  return std::get<Folded>(*inputs_[i]).shape;
}

std::int32_t NodeContext::elem_type(std::size_t i) const {
  if (!has(i))
    fail("input " + std::to_string(i) + " is required");
  if (const auto* f = std::get_if<Folded>(inputs_[i]))
    return f->elem_type;
  switch (std::get<Tensor>(*inputs_[i]).dtype()) {
  case DType::float32:
    return TensorProto::FLOAT;
  case DType::float16:
    return TensorProto::FLOAT16;
  case DType::int32:
    return TensorProto::INT32;
  case DType::uint32:
    return TensorProto::UINT32;
  case DType::uint8:
    return TensorProto::UINT8;
  case DType::bool_:
    return TensorProto::BOOL;
  case DType::int8:
    return TensorProto::INT8;
  case DType::int16:
    return TensorProto::INT16;
  case DType::uint16:
    return TensorProto::UINT16;
  case DType::int64: // host dtypes, never a tensor's
    return TensorProto::INT64;
  case DType::uint64:
    return TensorProto::UINT64;
  case DType::float64:
    return TensorProto::DOUBLE;
  case DType::float8_143: // ONNX 1.12 has no float8 (FLOAT8E4M3FNUZ came in 1.14)
  case DType::float8_152:
    return TensorProto::UNDEFINED;
  }
  return TensorProto::UNDEFINED;
}

const ::onnx::AttributeProto* NodeContext::attr(const char* name) const {
  for (const auto& a : node_.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

std::int64_t NodeContext::attr_int(const char* name, std::int64_t fallback) const {
  const auto* a = attr(name);
  if (a == nullptr)
    return fallback;
  if (a->type() != ::onnx::AttributeProto::INT)
    fail(std::string("attribute ") + name + " must be an int");
  return a->i();
}

double NodeContext::attr_float(const char* name, double fallback) const {
  const auto* a = attr(name);
  if (a == nullptr)
    return fallback;
  if (a->type() != ::onnx::AttributeProto::FLOAT)
    fail(std::string("attribute ") + name + " must be a float");
  return a->f();
}

std::string NodeContext::attr_string(const char* name, const std::string& fallback) const {
  const auto* a = attr(name);
  if (a == nullptr)
    return fallback;
  if (a->type() != ::onnx::AttributeProto::STRING)
    fail(std::string("attribute ") + name + " must be a string");
  return a->s();
}

std::vector<std::int64_t> NodeContext::attr_ints(const char* name,
                                                 std::vector<std::int64_t> fallback) const {
  const auto* a = attr(name);
  if (a == nullptr)
    return fallback;
  if (a->type() != ::onnx::AttributeProto::INTS)
    fail(std::string("attribute ") + name + " must be a list of ints");
  return {a->ints().begin(), a->ints().end()};
}

const ::onnx::TensorProto* NodeContext::attr_tensor(const char* name) const {
  const auto* a = attr(name);
  if (a == nullptr)
    return nullptr;
  if (a->type() != ::onnx::AttributeProto::TENSOR)
    fail(std::string("attribute ") + name + " must be a tensor");
  return &a->t();
}

void NodeContext::require_attr(const char* name, std::int64_t expected, const char* why) const {
  const std::int64_t found = attr_int(name, expected);
  if (found != expected)
    fail(std::string("attribute ") + name + " = " + std::to_string(found) + " is not supported (" +
         why + ")");
}

std::string NodeContext::where() const {
  return "node '" + (node_.name().empty() ? node_.output(0) : node_.name()) + "' (" +
         node_.op_type() + ", opset " + std::to_string(opset_) + ")";
}

void NodeContext::fail(const std::string& message) const {
  throw ImportError(where() + ": " + message);
}

} // namespace pxl::onnx::detail
