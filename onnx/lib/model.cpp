// Reading, checking and building an ONNX model: the graph walk and the values it keeps.
#include "node_context.hpp"

#include "pxl/ir/graph.hpp"

#include <onnx/checker.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

namespace pxl::onnx {
namespace detail {
namespace {

using ::onnx::TensorProto;

std::string shape_text(const Shape& s) {
  std::string r = "(";
  for (std::size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

// Reads `n` little-endian elements of type T from raw bytes into doubles.
template <typename T>
std::vector<double> from_raw(const std::string& raw, std::size_t n) {
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    out[i] = static_cast<double>(v);
  }
  return out;
}

std::size_t elem_size(std::int32_t t) {
  switch (t) {
  case TensorProto::FLOAT:
  case TensorProto::INT32:
  case TensorProto::UINT32:
    return 4;
  case TensorProto::FLOAT16:
  case TensorProto::INT16:
  case TensorProto::UINT16:
    return 2;
  case TensorProto::INT8:
  case TensorProto::UINT8:
  case TensorProto::BOOL:
    return 1;
  case TensorProto::INT64:
  case TensorProto::UINT64:
  case TensorProto::DOUBLE:
    return 8;
  default:
    return 0;
  }
}

} // namespace

std::string elem_type_name(std::int32_t elem_type) {
  return TensorProto::DataType_IsValid(elem_type)
             ? TensorProto::DataType_Name(static_cast<TensorProto::DataType>(elem_type))
             : "element type " + std::to_string(elem_type);
}

DType device_dtype(std::int32_t elem_type, const std::string& what, DType float_dtype) {
  switch (elem_type) {
  case TensorProto::FLOAT:
  case TensorProto::DOUBLE: // PopXL's downcast
    return float_dtype;
  case TensorProto::FLOAT16:
    return float16;
  case TensorProto::INT32:
  case TensorProto::INT64: // PopXL's downcast
    return int32;
  case TensorProto::UINT32:
  case TensorProto::UINT64:
    return uint32;
  case TensorProto::UINT8:
    return uint8;
  case TensorProto::INT8:
    return int8;
  case TensorProto::INT16:
    return int16;
  case TensorProto::UINT16:
    return uint16;
  case TensorProto::BOOL:
    return bool_;
  default:
    throw ImportError(what + ": ONNX " + elem_type_name(elem_type) +
                      " has no pxl dtype (supported: FLOAT, FLOAT16, DOUBLE as float32, INT32, "
                      "INT64 as int32, UINT32, UINT64 as uint32, INT8, INT16, UINT16, UINT8, "
                      "BOOL)");
  }
}

Folded folded_from_proto(const TensorProto& t, const std::string& what) {
  Folded f;
  f.elem_type = t.data_type();
  for (auto d : t.dims()) {
    if (d < 0)
      throw ImportError(what + ": tensor '" + t.name() + "' has a negative dimension " +
                        std::to_string(d));
    f.shape.push_back(d);
  }
  if (t.data_location() == TensorProto::EXTERNAL)
    throw ImportError(what + ": tensor '" + t.name() +
                      "' keeps its data in an external file, which pxl does not read: save the "
                      "model with its data inline (onnx.save(model, path, "
                      "save_as_external_data=False))");
  const std::size_t size = elem_size(f.elem_type);
  if (size == 0)
    throw ImportError(what + ": tensor '" + t.name() + "' is ONNX " + elem_type_name(f.elem_type) +
                      ", which pxl does not import");
  std::size_t n = 1;
  for (auto d : f.shape) {
    if (d != 0 && n > std::numeric_limits<std::size_t>::max() / 16 / static_cast<std::size_t>(d))
      throw ImportError(what + ": tensor '" + t.name() + "' of shape " + shape_text(f.shape) +
                        " is too large");
    n *= static_cast<std::size_t>(d);
  }
  auto mismatch = [&](std::size_t found) {
    return ImportError(what + ": tensor '" + t.name() + "' of shape " + shape_text(f.shape) +
                       " expected " + std::to_string(n) + " elements, found " +
                       std::to_string(found));
  };
  if (t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    if (raw.size() != n * size)
      throw mismatch(raw.size() / size);
    switch (f.elem_type) {
    case TensorProto::FLOAT:
      f.data = from_raw<float>(raw, n);
      break;
    case TensorProto::DOUBLE:
      f.data = from_raw<double>(raw, n);
      break;
    case TensorProto::FLOAT16: {
      f.data.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t bits;
        std::memcpy(&bits, raw.data() + 2 * i, 2);
        f.data[i] = static_cast<double>(static_cast<float>(half::from_bits(bits)));
      }
      break;
    }
    case TensorProto::INT32:
      f.data = from_raw<std::int32_t>(raw, n);
      break;
    case TensorProto::UINT32:
      f.data = from_raw<std::uint32_t>(raw, n);
      break;
    case TensorProto::INT64:
      f.data = from_raw<std::int64_t>(raw, n);
      break;
    case TensorProto::UINT64:
      f.data = from_raw<std::uint64_t>(raw, n);
      break;
    case TensorProto::INT16:
      f.data = from_raw<std::int16_t>(raw, n);
      break;
    case TensorProto::UINT16:
      f.data = from_raw<std::uint16_t>(raw, n);
      break;
    case TensorProto::INT8:
      f.data = from_raw<std::int8_t>(raw, n);
      break;
    default: // UINT8, BOOL
      f.data = from_raw<std::uint8_t>(raw, n);
      break;
    }
    return f;
  }
  auto take = [&](const auto& field) {
    if (static_cast<std::size_t>(field.size()) != n)
      throw mismatch(static_cast<std::size_t>(field.size()));
    f.data.assign(field.begin(), field.end());
  };
  switch (f.elem_type) {
  case TensorProto::FLOAT:
    take(t.float_data());
    break;
  case TensorProto::DOUBLE:
    take(t.double_data());
    break;
  case TensorProto::INT64:
    take(t.int64_data());
    break;
  case TensorProto::UINT32:
  case TensorProto::UINT64:
    take(t.uint64_data());
    break;
  case TensorProto::FLOAT16:
    take(t.int32_data());
    for (auto& v : f.data)
      v = static_cast<double>(static_cast<float>(half::from_bits(static_cast<std::uint16_t>(v))));
    break;
  default: // INT32, INT16, INT8, UINT16, UINT8, BOOL: int32_data
    take(t.int32_data());
    break;
  }
  return f;
}

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

} // namespace detail

using detail::Folded;
using detail::Value;

struct Model::Impl {
  ::onnx::ModelProto proto;
  std::string what; // the file or "<bytes>", for errors
  ImportOptions options;
  std::int64_t opset = 0;
  std::vector<ValueSpec> inputs, outputs;
  std::map<std::string, Folded> initializers;
};

namespace {

ValueSpec spec_of(const ::onnx::ValueInfoProto& v, const ImportOptions& options,
                  const std::string& what, bool is_input) {
  ValueSpec s{.name = v.name()};
  if (!v.type().has_tensor_type())
    throw ImportError(what + ": " + (is_input ? "input" : "output") + " '" + v.name() +
                      "' is not a tensor (sequences and maps are not supported)");
  const auto& tt = v.type().tensor_type();
  s.dtype = detail::device_dtype(
      tt.elem_type(), what + ": " + (is_input ? "input" : "output") + " '" + v.name() + "'",
      options.float_dtype);
  const auto given = options.input_shapes.find(v.name());
  if (!tt.has_shape() && given == options.input_shapes.end())
    throw ImportError(what + ": " + (is_input ? "input" : "output") + " '" + v.name() +
                      "' has no shape: give one in ImportOptions::input_shapes");
  for (int i = 0; tt.has_shape() && i < tt.shape().dim_size(); ++i) {
    const auto& d = tt.shape().dim(i);
    s.shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
  }
  if (is_input && given != options.input_shapes.end()) {
    const Shape& g = given->second;
    if (tt.has_shape() && g.size() != s.shape.size())
      throw ImportError(what + ": input '" + v.name() + "' has rank " +
                        std::to_string(s.shape.size()) + ", ImportOptions::input_shapes gives " +
                        detail::shape_text(g));
    for (std::size_t i = 0; i < s.shape.size(); ++i)
      if (s.shape[i] >= 0 && s.shape[i] != g[i])
        throw ImportError(what + ": input '" + v.name() + "' has dimension " + std::to_string(i) +
                          " of " + std::to_string(s.shape[i]) +
                          ", ImportOptions::input_shapes gives " + detail::shape_text(g));
    s.shape = g;
  }
  return s;
}

} // namespace

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

Model Model::load(const std::filesystem::path& path, ImportOptions options) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw ImportError("ONNX model '" + path.string() + "' cannot be opened");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string bytes = std::move(buffer).str();
  return parse(std::as_bytes(std::span(bytes.data(), bytes.size())), std::move(options),
               "ONNX model '" + path.string() + "'");
}

Model Model::parse(std::span<const std::byte> bytes, ImportOptions options, std::string what) {
  auto impl = std::make_unique<Impl>();
  impl->what = std::move(what);
  impl->options = std::move(options);
  if (impl->options.float_dtype != float32 && impl->options.float_dtype != float16)
    throw DTypeError(impl->what + ": ImportOptions::float_dtype must be float32 or float16, got " +
                     std::string(name(impl->options.float_dtype)));
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
      !impl->proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw ImportError(impl->what + ": not a valid ONNX ModelProto (" +
                      std::to_string(bytes.size()) + " bytes: truncated or not ONNX)");
  // ONNX's checker only: pxl infers every shape itself as it builds, and ONNX 1.12's shape
  // inference divides by zero on some malformed convolutions and pools (found by fuzz_onnx).
  try {
    ::onnx::checker::check_model(impl->proto);
  } catch (const std::exception& e) {
    throw ImportError(impl->what + ": rejected by the ONNX checker: " + e.what());
  }
  for (const auto& o : impl->proto.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx")
      impl->opset = o.version();
  if (impl->opset < 11 || impl->opset > 17)
    throw ImportError(impl->what + ": imports opset " + std::to_string(impl->opset) +
                      " of the default domain; pxl imports opsets 11 to 17");
  const auto& g = impl->proto.graph();
  for (const auto& t : g.initializer())
    impl->initializers.emplace(t.name(), detail::folded_from_proto(t, impl->what));
  for (const auto& name : impl->options.constants)
    if (!impl->initializers.contains(name))
      throw ImportError(impl->what + ": ImportOptions::constants names '" + name +
                        "', which is not an initializer of the model");
  for (const auto& given : impl->options.input_shapes) { // clang 14: no binding in a lambda
    const std::string& name = given.first;
    const auto& in = g.input();
    if (std::none_of(in.begin(), in.end(), [&](const auto& v) { return v.name() == name; }) ||
        impl->initializers.contains(name))
      throw ImportError(impl->what + ": ImportOptions::input_shapes names '" + name +
                        "', which is not an input of the model");
  }
  for (const auto& v : g.input())
    if (!impl->initializers.contains(v.name())) // older exporters list initializers as inputs
      impl->inputs.push_back(spec_of(v, impl->options, impl->what, true));
  for (const auto& v : g.output())
    impl->outputs.push_back(spec_of(v, impl->options, impl->what, false));
  return Model(std::move(impl));
}

const std::vector<ValueSpec>& Model::inputs() const { return impl_->inputs; }
const std::vector<ValueSpec>& Model::outputs() const { return impl_->outputs; }
std::int64_t Model::opset() const { return impl_->opset; }

std::string variable_name(std::string_view onnx_name) {
  std::string key, segment;
  auto close = [&] {
    if (!segment.empty())
      key += (key.empty() ? "" : ".") + segment;
    segment.clear();
  };
  for (const char c : onnx_name) {
    if (c == '.' || c == '/')
      close();
    else
      segment += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  }
  close();
  return key.empty() ? "_" : key;
}

namespace {

HostTensor host_tensor(const Folded& f, DType dtype) {
  HostTensor t = HostTensor::full(f.shape, dtype, 0.0);
  visit_dtype(dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    auto out = t.data<T>();
    for (std::size_t i = 0; i < f.data.size(); ++i)
      out[i] = convert_element<T>(f.data[i]);
  });
  return t;
}

} // namespace

std::vector<Tensor> Model::build(const std::vector<Tensor>& inputs) const {
  const Impl& m = *impl_;
  if (inputs.size() != m.inputs.size())
    throw ImportError(m.what + ": the model takes " + std::to_string(m.inputs.size()) +
                      " inputs, build was given " + std::to_string(inputs.size()));
  std::map<std::string, Value> values;
  // The model's floating-point values take the dtype of its floating-point inputs when they
  // are given in float16 or float32 (the Trainer's mixed precision casts them), else
  // ImportOptions::float_dtype.
  DType float_dtype = m.options.float_dtype;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (m.inputs[i].dtype == m.options.float_dtype &&
        (inputs[i].dtype() == float16 || inputs[i].dtype() == float32))
      float_dtype = inputs[i].dtype();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const ValueSpec& s = m.inputs[i];
    const DType expected = s.dtype == m.options.float_dtype ? float_dtype : s.dtype;
    const Shape& given = inputs[i].shape();
    bool fits = given.size() == s.shape.size();
    for (std::size_t d = 0; fits && d < given.size(); ++d)
      fits = s.shape[d] < 0 || s.shape[d] == given[d];
    if (!fits)
      throw ShapeError(m.what + ": input '" + s.name + "' expected shape " +
                       detail::shape_text(s.shape) + ", found " +
                       detail::shape_text(inputs[i].shape()));
    if (inputs[i].dtype() != expected)
      throw DTypeError(m.what + ": input '" + s.name + "' expected dtype " +
                       std::string(name(expected)) + ", found " +
                       std::string(name(inputs[i].dtype())));
    values.emplace(s.name, inputs[i]);
  }
  for (const auto& [name, f] : m.initializers) {
    Folded copy = f;
    copy.initializer = name;
    values.emplace(name, std::move(copy));
  }
  // Each initializer becomes one variable (or constant), made at its first device use.
  std::map<std::string, Tensor> materialized;
  auto materialize = [&](const Folded& f) -> Tensor {
    const DType dtype =
        detail::device_dtype(f.elem_type, m.what + ": tensor '" + f.initializer + "'", float_dtype);
    if (f.initializer.empty())
      return constant(host_tensor(f, dtype));
    if (auto it = materialized.find(f.initializer); it != materialized.end())
      return it->second;
    const bool trainable = (dtype == float32 || dtype == float16) && !m.options.all_constants &&
                           !m.options.constants.contains(f.initializer);
    Tensor t;
    if (trainable) {
      try {
        t = addons::add_variable_input(variable_name(f.initializer),
                                       addons::init::from(host_tensor(f, dtype)), dtype);
      } catch (const GraphError& e) {
        throw ImportError(m.what + ": initializer '" + f.initializer +
                          "' would be a variable, which needs a Module trace (OnnxModule, "
                          "import_model), or ImportOptions::all_constants: " +
                          e.what());
      } catch (const ValueError& e) { // two names that map to one key, or a key and its prefix
        throw ImportError(m.what + ": initializer '" + f.initializer + "' as variable '" +
                          variable_name(f.initializer) + "': " + e.what());
      }
    } else {
      t = constant(host_tensor(f, dtype), f.initializer);
    }
    materialized.emplace(f.initializer, t);
    return t;
  };
  for (const auto& node : m.proto.graph().node()) {
    std::vector<const Value*> node_inputs;
    for (const auto& name : node.input()) {
      if (name.empty()) {
        node_inputs.push_back(nullptr);
        continue;
      }
      const auto it = values.find(name);
      if (it == values.end())
        throw ImportError(m.what + ": node '" + node.name() + "' (" + node.op_type() + ") reads '" +
                          name + "', which no node, input or initializer gives");
      node_inputs.push_back(&it->second);
    }
    const detail::NodeContext ctx(node, m.opset, float_dtype, std::move(node_inputs), materialize);
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      ctx.fail("operators of domain '" + node.domain() + "' are not supported");
    const detail::OpRow* row = detail::find_op(node.op_type());
    if (row == nullptr)
      ctx.fail("operator " + node.op_type() +
               " is not supported (docs/onnx.md lists those that "
               "are)");
    if (m.opset < row->min_opset || m.opset > row->max_opset)
      ctx.fail("pxl imports " + node.op_type() + " at opsets " + std::to_string(row->min_opset) +
               " to " + std::to_string(row->max_opset));
    std::vector<Value> outs;
    try {
      outs = row->build(ctx);
    } catch (const ImportError&) {
      throw;
    } catch (const Error& e) { // a pxl builder's error: say which node it came from
      ctx.fail(e.what());
    }
    for (std::size_t i = 0; i < outs.size() && i < static_cast<std::size_t>(node.output_size());
         ++i)
      if (!node.output(static_cast<int>(i)).empty())
        values.insert_or_assign(node.output(static_cast<int>(i)), std::move(outs[i]));
    for (int i = static_cast<int>(outs.size()); i < node.output_size(); ++i)
      if (!node.output(i).empty())
        ctx.fail("output " + std::to_string(i) + " ('" + node.output(i) + "') is not supported");
  }
  std::vector<Tensor> result;
  for (const ValueSpec& s : m.outputs) {
    const auto it = values.find(s.name);
    if (it == values.end())
      throw ImportError(m.what + ": output '" + s.name + "' is not computed by any node");
    Tensor t = std::holds_alternative<Tensor>(it->second)
                   ? std::get<Tensor>(it->second)
                   : materialize(std::get<Folded>(it->second));
    result.push_back(t);
  }
  return result;
}

Tensor OnnxModule::build(const Tensor& x) {
  if (model_->inputs().size() != 1 || model_->outputs().size() != 1)
    throw ImportError("OnnxModule::build(x) needs a model of one input and one output; this "
                      "one has " +
                      std::to_string(model_->inputs().size()) + " and " +
                      std::to_string(model_->outputs().size()) + ": call build with a vector");
  return model_->build({x})[0];
}

namespace {

ImportedModel import(Ir& ir, std::shared_ptr<const Model> model) {
  auto in_main = ir.main_graph().scope();
  std::vector<TensorSpec> specs;
  for (const auto& s : model->inputs()) {
    for (std::size_t d = 0; d < s.shape.size(); ++d)
      if (s.shape[d] < 0)
        throw ImportError("ONNX model: input '" + s.name + "' leaves dimension " +
                          std::to_string(d) +
                          " symbolic: give its shape in ImportOptions::input_shapes");
    specs.push_back({s.shape, s.dtype});
  }
  OnnxModule module(model);
  auto [factories, graph] = module.create_graph(specs);
  ImportedModel r{.model = model, .variables = std::move(factories), .graph = std::move(graph)};
  const auto positional = r.graph.positional_inputs();
  for (std::size_t i = 0; i < model->inputs().size(); ++i)
    r.inputs.emplace(model->inputs()[i].name, positional.at(i));
  const auto outs = r.graph.graph().outputs();
  for (std::size_t i = 0; i < model->outputs().size(); ++i)
    r.outputs.emplace(model->outputs()[i].name, outs.at(i));
  return r;
}

} // namespace

ImportedModel import_model(Ir& ir, const std::filesystem::path& path,
                           const ImportOptions& options) {
  return import(ir, std::make_shared<const Model>(Model::load(path, options)));
}

ImportedModel import_model(Ir& ir, std::span<const std::byte> bytes, const ImportOptions& options) {
  return import(ir, std::make_shared<const Model>(Model::parse(bytes, options)));
}

} // namespace pxl::onnx
