// The importer's view of one ONNX node while it is built: its inputs as pxl tensors or as
// values folded at import, its attributes, and errors that name it.
#pragma once

#include "pxl/onnx/import.hpp"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace pxl::onnx::detail {

/// A value known at import: a constant, an initializer, or what folding made of them. Held
/// in double, exact for every float32, float16 and integer below 2^53 (shapes, axes, indices).
struct Folded {
  Shape shape;
  std::int32_t elem_type = ::onnx::TensorProto::FLOAT; ///< ONNX's TensorProto::DataType
  std::vector<double> data;
  /// The initializer it is, if any: a device use makes it that initializer's variable.
  std::string initializer;
};

/// An ONNX value: a tensor of the graph being built, or a value folded at import.
using Value = std::variant<Tensor, Folded>;

/// pxl's dtype for an ONNX element type on the device: 64-bit ones downcast, FLOAT and DOUBLE
/// as `float_dtype` (ImportOptions::float_dtype); ImportError naming `what` for a type pxl has
/// no device dtype for.
DType device_dtype(std::int32_t elem_type, const std::string& what, DType float_dtype = float32);
/// ONNX's name of an element type ("FLOAT", "INT64").
std::string elem_type_name(std::int32_t elem_type);
/// A shape as errors print it: "(2, 3)", "(4,)".
std::string shape_text(const Shape& s);

class NodeContext {
public:
  /// `materialize` turns a folded value into a tensor of the graph (a variable for a
  /// trainable initializer, a constant otherwise).
  NodeContext(const ::onnx::NodeProto& node, std::int64_t opset, DType float_dtype,
              std::vector<const Value*> inputs, std::function<Tensor(const Folded&)> materialize)
      : node_(node), opset_(opset), float_dtype_(float_dtype), inputs_(std::move(inputs)),
        materialize_(std::move(materialize)) {}

  const ::onnx::NodeProto& node() const { return node_; }
  std::int64_t opset() const { return opset_; }
  /// The device dtype of the model's FLOAT values (ImportOptions::float_dtype).
  DType float_dtype() const { return float_dtype_; }
  std::size_t inputs() const { return inputs_.size(); }
  /// Whether input i is given (ONNX leaves optional inputs out or names them "").
  bool has(std::size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  bool all_folded() const;
  bool is_folded(std::size_t i) const {
    return has(i) && std::holds_alternative<Folded>(*inputs_[i]);
  }
  /// Input i as a tensor of the graph; ImportError if it is missing.
  Tensor tensor(std::size_t i) const;
  /// Input i's value known at import (ImportError if it is computed by the graph, naming
  /// `what` the node needs it for: "shape", "axes").
  const Folded& folded(std::size_t i, const char* what) const;
  /// A folded input as integers (exact: ImportError for a fraction).
  std::vector<std::int64_t> ints(std::size_t i, const char* what) const;
  /// The static shape and ONNX element type of input i.
  Shape shape(std::size_t i) const;
  std::int32_t elem_type(std::size_t i) const;

  bool has_attr(const char* name) const { return attr(name) != nullptr; }
  std::int64_t attr_int(const char* name, std::int64_t fallback) const;
  double attr_float(const char* name, double fallback) const;
  std::string attr_string(const char* name, const std::string& fallback) const;
  std::vector<std::int64_t> attr_ints(const char* name,
                                      std::vector<std::int64_t> fallback = {}) const;
  const ::onnx::TensorProto* attr_tensor(const char* name) const;
  /// ImportError unless attribute `name` is absent or `expected` ("storage_order must be 0").
  void require_attr(const char* name, std::int64_t expected, const char* why) const;

  /// The node's description for errors: node "/conv1/Conv" (Conv, opset 13).
  std::string where() const;
  /// Throws ImportError: `where(): message`.
  [[noreturn]] void fail(const std::string& message) const;

private:
  const ::onnx::AttributeProto* attr(const char* name) const;

  const ::onnx::NodeProto& node_;
  std::int64_t opset_;
  DType float_dtype_;
  std::vector<const Value*> inputs_;
  std::function<Tensor(const Folded&)> materialize_;
};

/// A TensorProto's data (ImportError naming `what` for external data or a size mismatch).
Folded folded_from_proto(const ::onnx::TensorProto& t, const std::string& what);

/// One supported ONNX operator: its row of docs/onnx.md.
struct OpRow {
  const char* op_type;
  std::int64_t min_opset, max_opset;
  /// Builds the node's outputs from its inputs (each a tensor, or folded where the op is
  /// folded on the host: `fold` below).
  std::function<std::vector<Value>(const NodeContext&)> build;
  /// What pxl leaves out of the operator's meaning (empty: nothing).
  const char* restriction = "";
};
/// The supported operators, by op type.
const std::vector<OpRow>& op_table();
const OpRow* find_op(const std::string& op_type);

} // namespace pxl::onnx::detail
