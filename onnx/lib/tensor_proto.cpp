// ONNX's TensorProtos and element types as pxl reads them: their data as values known at
// import, and the dtypes they take on the device.
#include "node_context.hpp"

#include <cstring>
#include <limits>

namespace pxl::onnx::detail {

using ::onnx::TensorProto;

std::string shape_text(const Shape& s) {
  std::string r = "(";
  for (std::size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

namespace {

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

} // namespace pxl::onnx::detail
