// LearningRate: the constant or the tensor, and its checks.
#include "pxl/addons/optimizers/learning_rate.hpp"

#include "pxl/core/error.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ir/scope.hpp"

#include <sstream>

namespace pxl::addons::optimizers {

double LearningRate::value() const {
  if (tensor_)
    throw ValueError("LearningRate::value: the learning rate is the tensor " + tensor_->id() +
                     ", not a constant");
  return value_;
}

const Tensor& LearningRate::tensor() const {
  if (!tensor_) {
    std::ostringstream os;
    os << "LearningRate::tensor: the learning rate is the constant " << value_ << ", not a tensor";
    throw ValueError(os.str());
  }
  return *tensor_;
}

Tensor LearningRate::as_tensor() const { return tensor_ ? *tensor_ : constant(value_, float32); }

namespace impl {

void check_learning_rate(std::string_view who, const LearningRate& lr) {
  const std::string prefix = std::string(who) + ": ";
  if (!lr.is_tensor()) {
    if (!(lr.value() >= 0.0)) {
      std::ostringstream os;
      os << prefix << "lr must be >= 0, got " << lr.value();
      throw ValueError(os.str());
    }
    return;
  }
  const Tensor& t = lr.tensor();
  if (!t.valid())
    throw ValueError(prefix + "the lr tensor is a default-constructed Tensor (no tensor)");
  if (t.dtype() != float32)
    throw DTypeError(prefix + "the lr tensor must be a float32 scalar, got " + t.id() + " " +
                     pxl::to_string(t.spec()) + " (cast it)");
  if (t.rank() != 0)
    throw ShapeError(prefix + "the lr tensor must be a float32 scalar, got " + t.id() + " " +
                     pxl::to_string(t.spec()) + " (reshape it to ())");
}

void check_learning_rate_graph(std::string_view who, const LearningRate& lr) {
  if (!lr.is_tensor())
    return;
  const Graph here = current_graph();
  const Graph there = lr.tensor().graph();
  if (!(there == here))
    throw GraphError(std::string(who) + ": the lr tensor " + lr.tensor().id() +
                     " belongs to graph '" + there.name() + "', not to the current graph '" +
                     here.name() +
                     "' (subgraphs cannot read other graphs' tensors: pass the learning rate "
                     "in as an input of '" +
                     here.name() + "')");
}

} // namespace impl
} // namespace pxl::addons::optimizers
