// What the Trainer's tests share: a small classifier, data it can learn, and a fit of it.
#pragma once

#include "pxl/addons.hpp"
#include "pxl/pxl.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace pxl::test_trainer {

using addons::CompileOptions;
using addons::FitOptions;
using addons::Trainer;

inline constexpr std::int64_t features = 12, classes = 4, examples = 400;

/// Linear → relu → Linear; with `stages`, the second layer on IPU 1 (pipeline stage 1).
struct Classifier : addons::Module<Classifier> {
  bool stages = false;
  PXL_SUBMODULE(addons::Linear, fc1, 16);
  PXL_SUBMODULE(addons::Linear, fc2, classes);
  Tensor build(const Tensor& x) {
    const addons::PipelineStages split;
    Tensor h;
    {
      auto s = split.stage(0);
      h = ops::relu(fc1(x));
    }
    if (!stages)
      return fc2(h);
    auto s = split.stage(1);
    return fc2(addons::PipelineStages::input(h));
  }
};

/// Examples whose class is the largest of their first `classes` features.
inline std::pair<HostTensor, HostTensor> data(std::int64_t n, std::uint64_t seed) {
  HostTensor x = addons::init::normal(0.0, 1.0, {n, features})(float32, seed);
  std::vector<std::int32_t> y;
  const auto v = x.data<float>();
  for (std::int64_t i = 0; i < n; ++i) {
    std::int32_t best = 0;
    for (std::int32_t k = 1; k < classes; ++k)
      if (v[static_cast<std::size_t>(i * features + k)] >
          v[static_cast<std::size_t>(i * features + best)])
        best = k;
    y.push_back(best);
  }
  return {x, HostTensor(y, {n})};
}

struct Fitted {
  addons::History history;
  std::map<std::string, HostTensor> weights;
};

inline Fitted fit(CompileOptions compile, FitOptions options, bool stages = false) {
  Classifier model;
  model.stages = stages;
  Trainer trainer(model);
  compile.from_logits = true; // the Classifier's output: logits
  trainer.compile(std::move(compile));
  const auto [x, y] = data(examples, 1);
  Fitted f;
  f.history = trainer.fit(x, y, options);
  f.weights = trainer.weights();
  return f;
}

} // namespace pxl::test_trainer
