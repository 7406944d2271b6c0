// Keras's initializers as recipes over init's seedable Initializers.
#include "pxl/addons/module/initializers.hpp"

#include <cmath>
#include <span>
#include <sstream>

namespace pxl::addons::initializers {
namespace {

/// The standard deviation of a standard normal truncated at ±2, which Keras divides out.
constexpr double truncated_stddev = 0.87962566103423978;

/// `init` under Keras's `name`.
KerasInitializer keras_named(std::string name, std::function<init::Initializer(Shape)> init) {
  return {std::move(name), std::move(init)};
}

} // namespace

Fans fans_of(const Shape& shape) {
  const std::size_t rank = shape.size();
  if (rank == 0)
    return {};
  if (rank == 1)
    return {static_cast<double>(shape[0]), static_cast<double>(shape[0])};
  const auto receptive = static_cast<double>(pxl::nelms(std::span(shape).first(rank - 2)));
  return {static_cast<double>(shape[rank - 2]) * receptive,
          static_cast<double>(shape[rank - 1]) * receptive};
}

KerasInitializer glorot_uniform() {
  return keras_named("glorot_uniform", [](Shape shape) {
    const Fans f = fans_of(shape);
    const double limit = std::sqrt(6.0 / (f.in + f.out));
    return init::uniform(-limit, limit, std::move(shape));
  });
}

KerasInitializer glorot_normal() {
  return keras_named("glorot_normal", [](Shape shape) {
    const Fans f = fans_of(shape);
    return init::truncated_normal(0.0, std::sqrt(2.0 / (f.in + f.out)) / truncated_stddev,
                                  std::move(shape));
  });
}

KerasInitializer he_normal() {
  return keras_named("he_normal", [](Shape shape) {
    const Fans f = fans_of(shape);
    return init::truncated_normal(0.0, std::sqrt(2.0 / f.in) / truncated_stddev, std::move(shape));
  });
}

KerasInitializer he_uniform() {
  return keras_named("he_uniform", [](Shape shape) {
    const double limit = std::sqrt(6.0 / fans_of(shape).in);
    return init::uniform(-limit, limit, std::move(shape));
  });
}

KerasInitializer variance_scaling(double scale, FanMode mode, Distribution distribution) {
  if (!(scale > 0)) {
    std::ostringstream os;
    os << "variance_scaling: scale must be positive, got " << scale;
    throw ValueError(os.str());
  }
  return keras_named("variance_scaling", [scale, mode, distribution](Shape shape) {
    const Fans f = fans_of(shape);
    const double n = mode == FanMode::fan_in    ? f.in
                     : mode == FanMode::fan_out ? f.out
                                                : (f.in + f.out) / 2;
    switch (distribution) {
    case Distribution::truncated_normal:
      return init::truncated_normal(0.0, std::sqrt(scale / n) / truncated_stddev, std::move(shape));
    case Distribution::untruncated_normal:
      return init::normal(0.0, std::sqrt(scale / n), std::move(shape));
    case Distribution::uniform:
      break;
    }
    const double limit = std::sqrt(3.0 * scale / n);
    return init::uniform(-limit, limit, std::move(shape));
  });
}

KerasInitializer random_normal(double mean, double stddev) {
  return keras_named("random_normal", [mean, stddev](Shape shape) {
    return init::normal(mean, stddev, std::move(shape));
  });
}

KerasInitializer random_uniform(double minval, double maxval) {
  return keras_named("random_uniform", [minval, maxval](Shape shape) {
    return init::uniform(minval, maxval, std::move(shape));
  });
}

KerasInitializer truncated_normal(double mean, double stddev) {
  return keras_named("truncated_normal", [mean, stddev](Shape shape) {
    return init::truncated_normal(mean, stddev, std::move(shape));
  });
}

KerasInitializer zeros() {
  return keras_named("zeros", [](Shape shape) { return init::zeros(std::move(shape)); });
}

KerasInitializer ones() {
  return keras_named("ones", [](Shape shape) { return init::ones(std::move(shape)); });
}

KerasInitializer constant(double value) {
  return keras_named("constant",
                     [value](Shape shape) { return init::constant(value, std::move(shape)); });
}

} // namespace pxl::addons::initializers
