// pxl::addons::optimizers::LearningRate: a learning rate fixed at build time or read at run time.
#pragma once

#include "pxl/ir/tensor.hpp"

#include <optional>
#include <string_view>

namespace pxl::addons::optimizers {

/// An optimizer's learning rate: a constant of the step graph, or a float32 scalar tensor read
/// on every step, so a schedule can change it between runs of one compiled Session. Converts
/// implicitly from both:
///
///     SGD{{.lr = 0.1}};                                  // a constant
///     auto lr = pxl::variable(pxl::HostTensor::scalar(0.1f), "lr");   // main graph
///     SGD{{.lr = lr}};                                   // read at run time
///     session.write_variable_data(lr, ...);              // between runs
///
/// The tensor may be a main-graph variable, a value loaded from a host stream
/// (`ops::host_load`), or any float32 scalar of the graph `optimizers::apply` is called in
/// (in a device loop: the loop body's input for it). The optimizer's step graph takes it as a
/// by-value input after the gradient.
class LearningRate {
public:
  LearningRate(double value) : value_(value) {}
  LearningRate(Tensor tensor) : tensor_(tensor) {}

  bool is_tensor() const { return tensor_.has_value(); }
  /// The constant. ValueError when the learning rate is a tensor.
  double value() const;
  /// The tensor. ValueError when the learning rate is a constant.
  const Tensor& tensor() const;
  /// The tensor, or the constant as a float32 scalar constant of the current graph.
  Tensor as_tensor() const;
  /// 0.1's `double lr`, for one release: the constant (ValueError for a tensor).
  [[deprecated("use lr.value(): the learning rate may be a tensor")]] operator double() const {
    return value();
  }

private:
  double value_ = 0.0;
  std::optional<Tensor> tensor_;
};

// impl: what the templates here call out of line. Exported, since the templates are
// instantiated in users' code, but not API (`detail` namespaces are private to the binary).
namespace impl {
/// ValueError for a negative (or NaN) constant; DTypeError / ShapeError for a tensor that is
/// not a float32 scalar. `who` names the optimizer.
void check_learning_rate(std::string_view who, const LearningRate& lr);
/// GraphError unless a tensor learning rate belongs to the current graph (subgraphs cannot
/// read the main graph's tensors: pass the value in as an input of the graph).
void check_learning_rate_graph(std::string_view who, const LearningRate& lr);
} // namespace impl

} // namespace pxl::addons::optimizers
