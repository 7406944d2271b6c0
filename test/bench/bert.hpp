// BERT pre-training (Devlin et al. 2019) as Graphcore's PopART BERT builds it for its
// published results: post-layer-norm encoder layers, the masked-language-model head on the
// first `masked` positions (the application packs the masked tokens first) with its output
// projection tied to the word embedding, pipelined over IPUs with PipelineStages. The next-
// sentence head (two classes on the first token, under 0.1% of the work) is left out. For the
// cost model's fidelity benchmark: trained by addons::Trainer, estimated offline.
#pragma once

#include <pxl/addons.hpp>
#include <pxl/pxl.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace bench::bert {

struct Shape {
  std::int64_t layers, hidden, heads;
  std::int64_t vocabulary = 30400; ///< PopART BERT's vocab_length (30,522 padded down)
  std::int64_t sequence = 128;
  std::int64_t masked = 20; ///< masked tokens per sequence, first in the sequence
  std::int64_t positions = 512;
  pxl::DType dtype = pxl::float16;
  /// Encoder layers per IPU, IPU 0 first; the embedding and the head are on IPU 0.
  std::vector<std::int64_t> layers_per_ipu;
};

/// Multi-head self-attention over every position (no padding in the benchmark's data).
struct Attention : pxl::addons::Module<Attention> {
  explicit Attention(const Shape& s) : shape(s) {}
  Shape shape;
  PXL_SUBMODULE(pxl::addons::Linear, qkv, 3 * shape.hidden);
  PXL_SUBMODULE(pxl::addons::Linear, out, shape.hidden);
  pxl::Tensor build(const pxl::Tensor& x) {
    const std::int64_t n = x.shape()[0], width = shape.hidden / shape.heads;
    const auto parts = pxl::ops::split(qkv(x), 3, 2);
    const auto per_head = [&](const pxl::Tensor& t) { // [n, seq, hidden] -> [n, heads, seq, w]
      return pxl::ops::transpose(pxl::ops::reshape(t, {n, shape.sequence, shape.heads, width}),
                                 {0, 2, 1, 3});
    };
    const pxl::Tensor q = per_head(parts[0]), k = per_head(parts[1]), v = per_head(parts[2]);
    const pxl::Tensor scores = pxl::ops::matmul(q, pxl::ops::transpose(k, {0, 1, 3, 2})) *
                               (1.0 / std::sqrt(static_cast<double>(width)));
    const pxl::Tensor mixed = pxl::ops::matmul(pxl::ops::softmax(scores, -1), v);
    return out(pxl::ops::reshape(pxl::ops::transpose(mixed, {0, 2, 1, 3}),
                                 {n, shape.sequence, shape.hidden}));
  }
};

/// An encoder layer: attention and a GELU feed-forward network of 4·hidden, each followed by
/// its residual and a layer norm (BERT's post-norm).
struct Layer : pxl::addons::Module<Layer> {
  explicit Layer(const Shape& s) : shape(s) {}
  Shape shape;
  PXL_SUBMODULE(Attention, attention, shape);
  PXL_SUBMODULE(pxl::addons::LayerNorm, attention_norm);
  PXL_SUBMODULE(pxl::addons::Linear, expand, 4 * shape.hidden);
  PXL_SUBMODULE(pxl::addons::Linear, contract, shape.hidden);
  PXL_SUBMODULE(pxl::addons::LayerNorm, output_norm);
  pxl::Tensor build(const pxl::Tensor& x) {
    const pxl::Tensor h = attention_norm(x + attention(x));
    return output_norm(h + contract(pxl::ops::gelu(expand(h))));
  }
};

/// tokens [n, sequence] int32 -> the masked positions' logits [n, masked, vocabulary].
struct Bert : pxl::addons::Module<Bert> {
  explicit Bert(const Shape& s) : shape(s) {
    for (std::int64_t l = 0; l < s.layers; ++l)
      layers.push_back(pxl::addons::named_module<Layer>("layer" + std::to_string(l), s));
  }
  Shape shape;
  std::vector<Layer> layers;
  PXL_SUBMODULE(pxl::addons::LayerNorm, embedding_norm);
  PXL_SUBMODULE(pxl::addons::Linear, head_transform, shape.hidden);
  PXL_SUBMODULE(pxl::addons::LayerNorm, head_norm);

  pxl::Tensor build(const pxl::Tensor& tokens) {
    namespace init = pxl::addons::init;
    const pxl::addons::PipelineStages stages = stage_mapping();
    const pxl::DType d = shape.dtype;
    pxl::Tensor words, h;
    {
      auto s = stages.stage(0);
      words = add_variable_input("word_embeddings",
                                 init::normal(0.0, 0.02, {shape.vocabulary, shape.hidden}), d);
      const pxl::Tensor positions = add_variable_input(
          "position_embeddings", init::normal(0.0, 0.02, {shape.positions, shape.hidden}), d);
      const pxl::Tensor segment =
          add_variable_input("token_type_embedding", init::normal(0.0, 0.02, {shape.hidden}), d);
      h = pxl::ops::gather(words, tokens) + pxl::ops::slice(positions, {0}, {shape.sequence}, {0}) +
          segment;
      h = embedding_norm(h);
    }
    std::size_t next = 0;
    for (std::size_t ipu = 0; ipu < shape.layers_per_ipu.size(); ++ipu) {
      auto s = stages.stage(static_cast<std::int64_t>(ipu));
      h = pxl::addons::PipelineStages::input(h);
      for (std::int64_t l = 0; l < shape.layers_per_ipu[ipu]; ++l)
        h = layers.at(next++)(h);
    }
    auto s = stages.stage(static_cast<std::int64_t>(shape.layers_per_ipu.size()));
    h = pxl::ops::slice(pxl::addons::PipelineStages::input(h), {0}, {shape.masked}, {1});
    h = head_norm(pxl::ops::gelu(head_transform(h)));
    const pxl::Tensor bias = add_variable_input("head_bias", init::zeros({shape.vocabulary}), d);
    return pxl::ops::matmul(h, pxl::ops::transpose(words)) + bias;
  }

private:
  /// Stage k on IPU k for the encoder's IPUs, then the head back on IPU 0, beside the word
  /// embedding it shares.
  pxl::addons::PipelineStages stage_mapping() const {
    std::vector<std::int64_t> mapping;
    for (std::size_t ipu = 0; ipu < shape.layers_per_ipu.size(); ++ipu)
      mapping.push_back(static_cast<std::int64_t>(ipu));
    mapping.push_back(0);
    return pxl::addons::PipelineStages(mapping);
  }
};

} // namespace bench::bert
