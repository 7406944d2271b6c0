// Embedding layer.
#include "pxl/addons/layers/embedding.hpp"

#include "pxl/ops/shape.hpp"

#include <utility>

namespace pxl::addons {

Embedding::Embedding(std::int64_t vocab, std::int64_t hidden, DType table_dtype,
                     initializers::KerasInitializer table_initializer)
    : vocab_size(vocab), hidden_size(hidden), dtype(table_dtype),
      embeddings_initializer(std::move(table_initializer)) {
  if (vocab_size <= 0 || hidden_size <= 0)
    throw ValueError("Embedding: vocab_size and hidden_size must be positive, got " +
                     std::to_string(vocab_size) + " and " + std::to_string(hidden_size));
  if (!is_floating_point(dtype))
    throw DTypeError("Embedding: the table must be float32 or float16, got " +
                     std::string(pxl::name(dtype)));
}

Tensor Embedding::build(const Tensor& indices) {
  if (indices.dtype() != int32)
    throw DTypeError("Embedding: expected int32 indices, got " +
                     std::string(pxl::name(indices.dtype())) +
                     " (cast them with pxl::ops::cast(indices, pxl::int32))");
  Tensor weight =
      add_variable_input("weight", embeddings_initializer({vocab_size, hidden_size}), dtype);
  // The core gather already yields zeros for out-of-range indices: the documented behaviour.
  return pxl::ops::gather(weight, indices, 0);
}

} // namespace pxl::addons
