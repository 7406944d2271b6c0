// pxl::addons::initializers: Keras's initializers by their Keras names, each making a variable's
// init::Initializer once the layer knows its shape.
#pragma once

#include "pxl/addons/module/init.hpp"

#include <functional>
#include <string>

namespace pxl::addons::initializers {

/// A Keras initializer (`kernel_initializer="glorot_uniform"`): what a layer turns into its
/// variable's init::Initializer once it knows the shape, with the seed handling of init (a
/// variable's data depends only on its seed). `name` is Keras's name of it.
///
///     Dense(128, Activation::relu, true, initializers::he_normal())
struct KerasInitializer {
  std::string name;
  std::function<init::Initializer(Shape)> make;

  init::Initializer operator()(Shape shape) const { return make(std::move(shape)); }
};

/// The fans Keras's variance-scaling initializers read from a shape: (in, out) for rank 2;
/// for rank ≥ 3 the last two dims times the receptive field (the product of the others, a
/// convolution kernel's spatial dims); both shape[0] for rank 1, both 1 for rank 0.
struct Fans {
  double in = 1;
  double out = 1;
};
Fans fans_of(const Shape& shape);

/// U(−l, l) with l = sqrt(6 / (fan_in + fan_out)): Keras's default kernel initializer.
KerasInitializer glorot_uniform();
/// Normal(0, σ²) truncated at ±2σ, σ = sqrt(2 / (fan_in + fan_out)) / 0.87962566103423978 (the
/// factor makes the truncated distribution's standard deviation sqrt(2 / (fan_in + fan_out))).
KerasInitializer glorot_normal();
/// Truncated normal as glorot_normal's, σ = sqrt(2 / fan_in) / 0.87962566103423978.
KerasInitializer he_normal();
/// U(−l, l) with l = sqrt(6 / fan_in).
KerasInitializer he_uniform();
/// What VarianceScaling divides its scale by: fan_in, fan_out or their mean.
enum class FanMode { fan_in, fan_out, fan_avg };
/// VarianceScaling's distribution, each of variance scale / n.
enum class Distribution { truncated_normal, untruncated_normal, uniform };
/// Keras's `VarianceScaling(scale, mode, distribution)`, of which the Glorot and He
/// initialisers are instances: with n the mode's fan, a normal of σ = sqrt(scale / n)
/// truncated at ±2σ (σ divided by 0.87962566103423978, as glorot_normal), the same untruncated,
/// or U(±sqrt(3·scale / n)). PyTorch's default for convolutions and linear layers is
/// `variance_scaling(1.0 / 3, FanMode::fan_in, Distribution::uniform)`: U(±1 / sqrt(fan_in)).
/// ValueError for a scale that is not positive.
KerasInitializer variance_scaling(double scale = 1.0, FanMode mode = FanMode::fan_in,
                                  Distribution distribution = Distribution::truncated_normal);

/// Normal(mean, stddev²); Keras's defaults. ValueError (when made) for stddev < 0.
KerasInitializer random_normal(double mean = 0.0, double stddev = 0.05);
/// U(minval, maxval); Keras's defaults. ValueError (when made) for minval > maxval.
KerasInitializer random_uniform(double minval = -0.05, double maxval = 0.05);
/// Normal(mean, stddev²) truncated at mean ± 2·stddev; Keras's defaults.
KerasInitializer truncated_normal(double mean = 0.0, double stddev = 0.05);
/// All 0: Keras's default bias initializer.
KerasInitializer zeros();
/// All 1.
KerasInitializer ones();
/// All `value`.
KerasInitializer constant(double value = 0.0);

} // namespace pxl::addons::initializers
