// pxl::addons::Embedding: a lookup table of vectors indexed by token id.
#pragma once

#include "pxl/addons/module/initializers.hpp"
#include "pxl/addons/module/module.hpp"

#include <cstdint>

namespace pxl::addons {

/// A (vocab_size, hidden_size) table (popxl.addons' Embedding): `build(indices)` gathers one
/// row per int32 index, giving shape indices.shape + (hidden_size,). An index outside
/// [0, vocab_size) — negative ones included — gives a row of zeros, as in popxl.addons (where
/// it is what makes a vocabulary sharded across replicas work), and receives no gradient.
/// Variable `weight` of dtype `dtype`, from `embeddings_initializer` (Keras's argument; by
/// default popxl.addons' normal(0, 0.02), where Keras's Embedding would use
/// `initializers::random_uniform()`).
class Embedding : public Module<Embedding> {
public:
  /// ValueError unless both sizes are positive; DTypeError unless dtype is floating point.
  Embedding(std::int64_t vocab_size, std::int64_t hidden_size, DType dtype = float32,
            initializers::KerasInitializer embeddings_initializer =
                initializers::random_normal(0.0, 0.02));

  /// DTypeError unless `indices` is int32.
  Tensor build(const Tensor& indices);

  std::int64_t vocab_size;
  std::int64_t hidden_size;
  DType dtype;
  initializers::KerasInitializer embeddings_initializer;
};

} // namespace pxl::addons
