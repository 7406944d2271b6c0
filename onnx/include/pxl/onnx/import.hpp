// pxl::onnx: ONNX models (as PyTorch's exporter writes them) imported as pxl graphs, built
// from pxl's public op builders, trainable like a module written in pxl. The optional
// pxl-onnx component: built when the ONNX library is found (docs/onnx.md).
#pragma once

#include "pxl/addons/module/module.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pxl::onnx {

/// A model pxl cannot import: malformed or truncated bytes, a model the ONNX checker rejects,
/// or a node, attribute, opset or dtype outside what docs/onnx.md lists. The message names the
/// node, its op type and the opset where there is one.
class ImportError : public Error {
public:
  using Error::Error;
};

/// What an import leaves to its caller.
struct ImportOptions {
  /// Shapes that replace the model's input shapes by input name: needed where the model
  /// leaves a dimension symbolic (a batch "N"); each must agree with the model's fixed sizes.
  std::map<std::string, Shape> input_shapes;
  /// Floating-point initializers kept as constants of the graph instead of variables.
  std::set<std::string> constants;
  /// Every initializer a constant: an inference-only graph.
  bool all_constants = false;
  /// The dtype of the model's FLOAT (and DOUBLE) inputs, initializers, constants and casts on
  /// the device: float16 runs the model in half precision (DTypeError for another dtype).
  DType float_dtype = float32;
};

/// A graph input or output of a model: its ONNX name, and the shape and dtype pxl gives it
/// (-1 for a dimension the model leaves symbolic and the options do not fix).
/// 64-bit and float64 ONNX values are downcast as PopXL does (int64 → int32, float64 →
/// float32): feed int32 token ids where the model takes int64.
struct ValueSpec {
  std::string name;
  Shape shape;
  DType dtype = float32;
};

/// A parsed model that passed ONNX's checker: what it needs and gives,
/// ready to build into any graph.
class Model {
public:
  /// Reads an .onnx file; ImportError for a file that cannot be read or parsed.
  static Model load(const std::filesystem::path& path, ImportOptions options = {});
  /// The same from a model's serialized bytes; `what` names them in errors.
  static Model parse(std::span<const std::byte> bytes, ImportOptions options = {},
                     std::string what = "<bytes>");

  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

  const std::vector<ValueSpec>& inputs() const;
  const std::vector<ValueSpec>& outputs() const;
  /// The default domain's opset the model imports.
  std::int64_t opset() const;

  /// Builds the model's nodes in the current graph on `inputs`, one per `inputs()`, of their
  /// dtypes and shapes, any size where a dimension is symbolic (DTypeError or ShapeError
  /// otherwise); floating-point inputs may be float16 or float32, and the model's
  /// floating-point values then take their dtype (the Trainer's float16 mixed precision).
  /// Returns one tensor per
  /// `outputs()`. Inside a `Module` trace each floating-point initializer is a variable input
  /// named as in the model (`variable_name`, `add_variable_input`, initialised from its
  /// data), unless the
  /// options keep it a constant; outside a trace, ImportError unless `all_constants`.
  /// Initializers used as shapes, axes or indices are folded at import, as are `Shape`,
  /// `Gather`, `Unsqueeze`, `Concat` and the arithmetic on them.
  std::vector<Tensor> build(const std::vector<Tensor>& inputs) const;

private:
  struct Impl;
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// A model as a module: `create_graph` traces it into a subgraph whose positional inputs are
/// the model's inputs and whose named inputs are its variables, named as its initializers.
class OnnxModule : public addons::Module<OnnxModule> {
public:
  explicit OnnxModule(std::shared_ptr<const Model> model) : model_(std::move(model)) {}
  std::vector<Tensor> build(const std::vector<Tensor>& inputs) { return model_->build(inputs); }
  /// A model of one input and one output as a layer (what `addons::Trainer` traces).
  Tensor build(const Tensor& x);
  const Model& model() const { return *model_; }

private:
  std::shared_ptr<const Model> model_;
};

/// A model imported into an Ir as a subgraph: bind `variables.init()` and call `graph`, as
/// with any module's graph.
struct ImportedModel {
  std::shared_ptr<const Model> model;
  addons::NamedVariableFactories variables;
  addons::GraphWithNamedArgs graph;
  /// The subgraph's inputs and outputs by ONNX name.
  std::map<std::string, Tensor> inputs;
  std::map<std::string, Tensor> outputs;
};

/// The variable name (a dotted key of NamedTensors) of an initializer: `/` separates levels as
/// `.` does, other characters outside [A-Za-z0-9_] become `_`, empty levels are dropped:
/// "conv1.weight" stays, "conv2d/kernel" is "conv2d.kernel", "onnx::MatMul_7" "onnx__MatMul_7".
std::string variable_name(std::string_view onnx_name);

/// One ONNX operator of the default domain that pxl imports: the opsets, and what pxl
/// leaves out of its meaning (empty: nothing). docs/onnx.md is this list.
struct SupportedOperator {
  std::string op_type;
  std::int64_t min_opset = 0, max_opset = 0;
  std::string restriction;
};
/// Every operator pxl imports, by op type.
std::vector<SupportedOperator> supported_operators();

/// Reads, checks and builds `path` as a subgraph of `ir` (the ONNX library's checker first).
/// Every input shape must be fixed, by the model or ImportOptions::input_shapes.
ImportedModel import_model(Ir& ir, const std::filesystem::path& path,
                           const ImportOptions& options = {});
/// The same from serialized bytes.
ImportedModel import_model(Ir& ir, std::span<const std::byte> bytes,
                           const ImportOptions& options = {});

} // namespace pxl::onnx
