#include "programs.hpp"

#include "model.hpp"

#include "pxl/addons/data/batches.hpp"
#include "pxl/addons/ops/cross_entropy.hpp"
#include "pxl/core/error.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ir/scope.hpp"
#include "pxl/ops/call.hpp"
#include "pxl/ops/host_io.hpp"
#include "pxl/ops/reduce.hpp"
#include "pxl/ops/var_updates.hpp"

#include <algorithm>
#include <cstring>
#include <string>

namespace mnist {

using pxl::Tensor;
using pxl::addons::NamedTensors;

namespace {

pxl::SessionOptions session_options(unsigned workers) { return {.workers = workers}; }

} // namespace

TrainingProgram::TrainingProgram(const TrainingOptions& options) : options_(options) {
  const std::int64_t b = options.batch_size;
  {
    auto in_main = ir_.main_graph().scope();
    images_ = pxl::h2d_stream({b, image_size}, pxl::float32, "images");
    labels_ = pxl::h2d_stream({b}, pxl::int32, "labels");
    loss_ = pxl::d2h_stream({}, pxl::float32, "loss");

    auto [factories, fwd] = Net{}.create_graph(pxl::TensorSpec{{b, image_size}, pxl::float32});
    // Gradients of the weights only: the image's gradient would be wasted work.
    auto bwd = fwd.autodiff({.grads_required = fwd.args().tensors()});
    variables_ = factories.init("", options.seed);

    // One SGD step as a graph that takes the variables by reference, so that the updates
    // land in the main graph's variables; `repeat` runs it steps_per_execution times.
    const auto names = variables_.to_dict();
    pxl::Graph step = ir_.create_empty_graph("train_step");
    {
      auto in_step = step.scope();
      NamedTensors weights;
      for (const auto& [name, var] : names)
        weights.insert(name, pxl::graph_input(var.spec(), name, /*by_ref=*/true));
      auto x = pxl::ops::host_load(*images_, "x");
      auto y = pxl::ops::host_load(*labels_, "y");
      auto fwd_info = fwd.bind(weights).call_with_info({x});
      auto [loss, dlogits] = pxl::addons::ops::cross_entropy_with_grad(fwd_info.outputs()[0], y);
      auto bwd_info =
          bwd.call_with_info({dlogits}, {}, bwd.grad_graph_info().inputs_dict(fwd_info));
      const NamedTensors grads = bwd.grads(bwd_info);
      for (const auto& [name, w] : weights.to_dict())
        pxl::ops::scaled_add_(w, grads.at(name), 1.0, -options.learning_rate);
      pxl::ops::host_store(*loss_, loss);
    }
    std::vector<Tensor> args;
    for (const auto& [name, var] : names)
      args.push_back(var);
    pxl::ops::repeat(step, options.steps_per_execution, args);
  }
  ir_.set_num_host_transfers(options.steps_per_execution);
  session_.emplace(ir_, "ipu_model", session_options(options.workers));
  attachment_.emplace(session_->attach());
}

std::vector<float> TrainingProgram::run(const pxl::HostTensor& images,
                                        const pxl::HostTensor& labels) {
  auto out = session_->run({{*images_, images}, {*labels_, labels}});
  const auto losses = out.at(*loss_).data<float>();
  return {losses.begin(), losses.end()};
}

pxl::addons::NamedTensorData TrainingProgram::weights() {
  pxl::addons::NamedTensorData data;
  for (const auto& [name, var] : variables_.to_dict())
    data.insert(name, session_->get_tensor_data(var));
  return data;
}

void TrainingProgram::load_weights(const pxl::addons::NamedTensorData& weights) {
  const auto given = weights.to_dict();
  const auto expected = variables_.to_dict();
  std::string missing, unexpected;
  for (const auto& [name, var] : expected)
    if (!given.contains(name))
      missing += " " + name;
  for (const auto& [name, data] : given)
    if (!expected.contains(name))
      unexpected += " " + name;
  if (!missing.empty() || !unexpected.empty())
    throw pxl::ValueError("mnist weights: the checkpoint does not match the Net (missing:" +
                          (missing.empty() ? std::string(" none") : missing) + "; unexpected:" +
                          (unexpected.empty() ? std::string(" none") : unexpected) + ")");
  std::map<Tensor, pxl::HostTensor> data;
  for (const auto& [name, var] : expected)
    data.emplace(var, given.at(name));
  session_->write_variables_data(data);
}

TestProgram::TestProgram(std::int64_t batch_size, unsigned workers) : batch_size_(batch_size) {
  {
    auto in_main = ir_.main_graph().scope();
    images_ = pxl::h2d_stream({batch_size, image_size}, pxl::float32, "images");
    predictions_ = pxl::d2h_stream({batch_size}, pxl::int32, "predictions");
    auto x = pxl::ops::host_load(*images_, "x");
    auto [factories, fwd] = Net{}.create_graph(x);
    variables_ = factories.init();
    auto logits = fwd.bind(variables_).call({x})[0];
    pxl::ops::host_store(*predictions_, pxl::ops::argmax(logits, 1));
  }
  session_.emplace(ir_, "ipu_model", session_options(workers));
  attachment_.emplace(session_->attach());
}

void TestProgram::copy_weights_from(TrainingProgram& training) {
  std::map<Tensor, pxl::HostTensor> data;
  for (const auto& [train_var, test_var] : training.variables().to_mapping(variables_))
    data.emplace(test_var, training.session().get_tensor_data(train_var));
  session_->write_variables_data(data);
}

double TestProgram::accuracy(const pxl::addons::data::Dataset& data) {
  namespace data_ns = pxl::addons::data;
  std::int64_t correct = 0, seen = 0;
  pxl::HostTensor padded({batch_size_, image_size}, pxl::float32);
  for (auto& batch : data_ns::batches(data, {.batch_size = batch_size_,
                                            .shuffle = false,
                                            .drop_remainder = false,
                                            .flatten = true})) {
    const std::int64_t rows = batch.labels.shape()[0];
    const pxl::HostTensor* images = &batch.images;
    if (rows < batch_size_) { // the last batch: pad with zeros, ignore the padding's results
      std::ranges::fill(padded.data<float>(), 0.0f);
      std::ranges::copy(batch.images.data<float>(), padded.data<float>().begin());
      images = &padded;
    }
    auto out = session_->run({{*images_, *images}});
    const auto predicted = out.at(*predictions_).data<std::int32_t>();
    const auto labels = batch.labels.data<std::int32_t>();
    for (std::int64_t i = 0; i < rows; ++i)
      correct += predicted[static_cast<std::size_t>(i)] == labels[static_cast<std::size_t>(i)];
    seen += rows;
  }
  return seen == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(seen);
}

} // namespace mnist
