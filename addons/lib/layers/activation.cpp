// Activations: one table from which activate, activation_name and parse_activation read.
#include "pxl/addons/layers/activation.hpp"

#include "pxl/core/error.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/nn.hpp"

#include <array>
#include <string>
#include <utility>

namespace pxl::addons {
namespace {

constexpr std::array<std::pair<Activation, std::string_view>, 6> names{{
    {Activation::none, "linear"},
    {Activation::relu, "relu"},
    {Activation::gelu, "gelu"},
    {Activation::tanh, "tanh"},
    {Activation::sigmoid, "sigmoid"},
    {Activation::softmax, "softmax"},
}};

} // namespace

Tensor activate(Activation activation, const Tensor& x) {
  switch (activation) {
  case Activation::none:
    return x;
  case Activation::relu:
    return pxl::ops::relu(x);
  case Activation::gelu:
    return pxl::ops::gelu(x);
  case Activation::tanh:
    return pxl::ops::tanh(x);
  case Activation::sigmoid:
    return pxl::ops::sigmoid(x);
  case Activation::softmax:
    return pxl::ops::softmax(x, -1);
  }
  PXL_ASSERT(false && "activate: an Activation without a case");
  return x;
}

std::string_view activation_name(Activation activation) {
  for (const auto& [a, name] : names)
    if (a == activation)
      return name;
  PXL_ASSERT(false && "activation_name: an Activation without a name");
  return {};
}

Activation parse_activation(std::string_view name) {
  if (name == "none")
    return Activation::none;
  std::string known;
  for (const auto& [a, n] : names) {
    if (n == name)
      return a;
    known += (known.empty() ? "" : ", ") + std::string(n);
  }
  throw ValueError("parse_activation: unknown activation '" + std::string(name) +
                   "'; expected one of " + known + " (or none)");
}

} // namespace pxl::addons
