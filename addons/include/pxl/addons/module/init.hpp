// pxl::addons::init: seedable initialisers producing the host data of variables.
#pragma once

#include "pxl/core/host_tensor.hpp"

#include <cstdint>
#include <functional>
#include <string>

namespace pxl::addons::init {

/// A recipe for a variable's host data: its shape and a function of (shape, dtype, seed).
/// Values are drawn in double precision from a counter-based generator (element i of a
/// draw depends only on the seed and i) and then converted to the dtype, so a seed gives the
/// same data on every run and platform.
///
///     auto w = init::normal(0.0, 0.02, {784, 512});
///     HostTensor data = w(pxl::float32, /*seed=*/42);
struct Initializer {
  using Fill = std::function<HostTensor(const Shape&, DType, std::uint64_t seed)>;

  Shape shape;
  Fill fill;
  /// For printing: "normal(mean=0, std=0.02)".
  std::string description;

  /// The data for `dtype` and `seed`.
  HostTensor operator()(DType dtype, std::uint64_t seed) const;
};

Initializer zeros(Shape shape);
Initializer ones(Shape shape);
Initializer constant(double value, Shape shape);
/// Normal(mean, std²); ValueError if std < 0.
Initializer normal(double mean, double std, Shape shape);
/// Uniform on [low, high); ValueError if low > high.
Initializer uniform(double low, double high, Shape shape);
/// Normal(mean, std²) redrawn until within mean ± 2·std (TensorFlow's and popxl.addons'
/// Linear default); ValueError if std < 0.
Initializer truncated_normal(double mean, double std, Shape shape);
/// Glorot/Xavier uniform: U(-a, a), a = gain·sqrt(6 / (fan_in + fan_out)), with fan_in and
/// fan_out the last two dims (times the product of the others, the receptive field) for rank
/// ≥ 2; ValueError for rank < 2.
Initializer glorot(Shape shape, double gain = 1.0);
/// Exactly `data` (converted to the variable's dtype); the seed is ignored.
Initializer from(HostTensor data);

/// The seed of one variable: `base_seed` mixed with a hash (FNV-1a) of its full dotted name
/// and, from the second on, with `draw`, the number of variables of that name the Ir already
/// held (so draw 0 depends on the name and base seed only, never on creation order, and each
/// further variable of one name gets data of its own).
std::uint64_t seed_for(std::uint64_t base_seed, std::string_view full_name, std::uint64_t draw = 0);

} // namespace pxl::addons::init
