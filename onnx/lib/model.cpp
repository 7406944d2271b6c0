// Reading, checking and building an ONNX model: the graph walk and the values it keeps.
#include "node_context.hpp"

#include "pxl/ir/graph.hpp"

#include <onnx/checker.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

namespace pxl::onnx {

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
