#include "mnist_reference.hpp"
#include "timing.hpp"

#include <torch/torch.h>

namespace bench {
namespace {

struct NetImpl : torch::nn::Module {
  NetImpl()
      : fc1(register_module("fc1", torch::nn::Linear(784, 512))),
        fc2(register_module("fc2", torch::nn::Linear(512, 512))),
        fc3(register_module("fc3", torch::nn::Linear(512, 512))),
        fc4(register_module("fc4", torch::nn::Linear(512, 10))) {
    torch::NoGradGuard no_grad;
    for (auto* l : {&fc1, &fc2, &fc3, &fc4}) {
      (*l)->weight.normal_(0.0, 0.02);
      (*l)->bias.zero_();
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    auto gelu = [](const torch::Tensor& t) { return torch::gelu(t, "tanh"); };
    return fc4(gelu(fc3(gelu(fc2(gelu(fc1(x)))))));
  }
  torch::nn::Linear fc1, fc2, fc3, fc4;
};
TORCH_MODULE(Net);

} // namespace

bool have_libtorch() { return true; }

double libtorch_steps_per_second(std::int64_t batch, std::int64_t steps,
                                 std::span<const float> images,
                                 std::span<const std::int32_t> labels, double learning_rate,
                                 int threads) {
  torch::manual_seed(42);
  torch::set_num_threads(threads);
  Net net;
  torch::optim::SGD sgd(net->parameters(), torch::optim::SGDOptions(learning_rate));
  const auto n = static_cast<std::int64_t>(labels.size());
  auto all_x = torch::from_blob(const_cast<float*>(images.data()), {n, 784}, torch::kFloat32);
  auto all_y = torch::from_blob(const_cast<std::int32_t*>(labels.data()), {n}, torch::kInt32)
                   .to(torch::kInt64);
  auto step = [&](std::int64_t i) {
    const std::int64_t start = (i * batch) % (n - batch + 1);
    auto x = all_x.narrow(0, start, batch);
    auto y = all_y.narrow(0, start, batch);
    sgd.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(net->forward(x), y);
    loss.backward();
    sgd.step();
  };
  return static_cast<double>(steps) / time_calls(5, steps, step);
}

} // namespace bench
