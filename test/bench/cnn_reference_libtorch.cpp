#include "cnn_reference.hpp"
#include "timing.hpp"

#include <torch/torch.h>

#include <algorithm>

namespace bench {
namespace {

namespace nn = torch::nn;

/// mnist::Cnn in LibTorch, with PyTorch's default initialisation.
struct CnnImpl : nn::Module {
  CnnImpl()
      : conv1(register_module("conv1",
                              nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1).bias(false)))),
        conv2(register_module("conv2",
                              nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1).bias(false)))),
        norm1(register_module("norm1", nn::BatchNorm2d(32))),
        norm2(register_module("norm2", nn::BatchNorm2d(64))),
        fc1(register_module("fc1", nn::Linear(64 * 7 * 7, 128))),
        fc2(register_module("fc2", nn::Linear(128, 10))), relu(register_module("relu", nn::ReLU())),
        pool(register_module("pool", nn::MaxPool2d(nn::MaxPool2dOptions(2)))) {}

  /// x: [batch, 784] → logits [batch, 10].
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor h = x.view({x.size(0), 1, 28, 28});
    h = pool(relu(norm1(conv1(h))));
    h = pool(relu(norm2(conv2(h))));
    return fc2(relu(fc1(h.flatten(1))));
  }

  nn::Conv2d conv1, conv2;
  nn::BatchNorm2d norm1, norm2;
  nn::Linear fc1, fc2;
  nn::ReLU relu;
  nn::MaxPool2d pool;
};
TORCH_MODULE(Cnn);

/// Images [n, 784] float32 and labels [n] int64.
struct Examples {
  torch::Tensor images, labels;

  /// Over the memory of `data`'s images; its labels converted.
  explicit Examples(LabelledImages data)
      : images(torch::from_blob(const_cast<float*>(data.images.data()),
                                {static_cast<std::int64_t>(data.labels.size()), 784},
                                torch::kFloat32)),
        labels(torch::from_blob(const_cast<std::int32_t*>(data.labels.data()),
                                {static_cast<std::int64_t>(data.labels.size())}, torch::kInt32)
                   .to(torch::kInt64)) {}
  std::int64_t size() const { return labels.size(0); }
};

/// One training step of `cnn` on images `x` and labels `y`.
void train_step(Cnn& cnn, torch::optim::Adam& adam, const torch::Tensor& x,
                const torch::Tensor& y) {
  adam.zero_grad();
  torch::nn::functional::cross_entropy(cnn->forward(x), y).backward();
  adam.step();
}

} // namespace

std::optional<double> libtorch_cnn_steps_per_second(std::int64_t batch, std::int64_t steps,
                                                    LabelledImages data, double learning_rate,
                                                    int threads) {
  torch::manual_seed(42);
  torch::set_num_threads(threads);
  Cnn cnn;
  torch::optim::Adam adam(cnn->parameters(), torch::optim::AdamOptions(learning_rate));
  const Examples all(data);
  auto step = [&](std::int64_t i) {
    const std::int64_t start = (i * batch) % (all.size() - batch + 1);
    train_step(cnn, adam, all.images.narrow(0, start, batch), all.labels.narrow(0, start, batch));
  };
  return static_cast<double>(steps) / time_calls(5, steps, step);
}

std::optional<std::vector<double>> libtorch_cnn_accuracy(LabelledImages train, LabelledImages test,
                                                         std::int64_t batch, int epochs,
                                                         double learning_rate, std::uint64_t seed,
                                                         int threads) {
  torch::manual_seed(seed);
  torch::set_num_threads(threads);
  Cnn cnn;
  torch::optim::Adam adam(cnn->parameters(), torch::optim::AdamOptions(learning_rate));
  const Examples training(train), testing(test);
  std::vector<double> accuracy;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    cnn->train();
    const torch::Tensor order = torch::randperm(training.size(), torch::kInt64);
    for (std::int64_t start = 0; start + batch <= training.size(); start += batch) {
      const torch::Tensor rows = order.narrow(0, start, batch);
      train_step(cnn, adam, training.images.index_select(0, rows),
                 training.labels.index_select(0, rows));
    }
    cnn->eval();
    torch::NoGradGuard no_grad;
    // In chunks: the first block's activations of all 10,000 test images would take 1 GB.
    std::int64_t correct = 0;
    for (std::int64_t start = 0; start < testing.size(); start += 1000) {
      const std::int64_t rows = std::min<std::int64_t>(1000, testing.size() - start);
      correct += cnn->forward(testing.images.narrow(0, start, rows))
                     .argmax(1)
                     .eq(testing.labels.narrow(0, start, rows))
                     .sum()
                     .item<std::int64_t>();
    }
    accuracy.push_back(static_cast<double>(correct) / static_cast<double>(testing.size()));
  }
  return accuracy;
}

} // namespace bench
