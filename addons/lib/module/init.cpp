// Initialisers: counter-based random draws in double, converted to the variable's dtype.
#include "pxl/addons/module/init.hpp"

#include <cmath>
#include <sstream>

namespace pxl::addons::init {

namespace {

// SplitMix64's finaliser: a well-mixed 64-bit function of its input.
std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform in (0, 1) with 53 random bits: a pure function of (seed, counter).
double uniform01(std::uint64_t seed, std::uint64_t counter) {
  const std::uint64_t bits = mix(mix(seed) ^ counter);
  return (static_cast<double>(bits >> 11) + 0.5) / 9007199254740992.0;
}

// Standard normal by Box–Muller from two uniforms drawn at counters 2c and 2c+1.
double standard_normal(std::uint64_t seed, std::uint64_t counter) {
  const double u1 = uniform01(seed, 2 * counter);
  const double u2 = uniform01(seed, 2 * counter + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

std::string fmt(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// A tensor of `shape` whose element i is f(i) (computed in double, rounded to float32), then
// converted to `dtype`.
template <typename F>
HostTensor generate(const Shape& shape, DType dtype, F&& f) {
  HostTensor t(shape, float32);
  auto d = t.data<float>();
  for (std::size_t i = 0; i < d.size(); ++i)
    d[i] = static_cast<float>(f(static_cast<std::uint64_t>(i)));
  return dtype == float32 ? t : t.astype(dtype);
}

void check_std(double std, std::string_view what) {
  if (!(std >= 0.0))
    throw ValueError("init::" + std::string(what) + ": std must be >= 0, got " + fmt(std));
}

} // namespace

HostTensor Initializer::operator()(DType dtype, std::uint64_t seed) const {
  HostTensor t = fill(shape, dtype, seed);
  PXL_ASSERT(t.shape() == shape && t.dtype() == dtype);
  return t;
}

Initializer zeros(Shape shape) { return constant(0.0, std::move(shape)); }
Initializer ones(Shape shape) { return constant(1.0, std::move(shape)); }

Initializer constant(double value, Shape shape) {
  return {std::move(shape),
          [value](const Shape& s, DType dtype, std::uint64_t) {
            return HostTensor::full(s, dtype, value);
          },
          "constant(" + fmt(value) + ")"};
}

Initializer normal(double mean, double std, Shape shape) {
  check_std(std, "normal");
  return {std::move(shape),
          [mean, std](const Shape& s, DType dtype, std::uint64_t seed) {
            return generate(s, dtype,
                            [&](std::uint64_t i) { return mean + std * standard_normal(seed, i); });
          },
          "normal(mean=" + fmt(mean) + ", std=" + fmt(std) + ")"};
}

Initializer uniform(double low, double high, Shape shape) {
  if (!(low <= high))
    throw ValueError("init::uniform: expected low <= high, got low=" + fmt(low) +
                     ", high=" + fmt(high));
  return {std::move(shape),
          [low, high](const Shape& s, DType dtype, std::uint64_t seed) {
            return generate(
                s, dtype, [&](std::uint64_t i) { return low + (high - low) * uniform01(seed, i); });
          },
          "uniform(low=" + fmt(low) + ", high=" + fmt(high) + ")"};
}

Initializer truncated_normal(double mean, double std, Shape shape) {
  check_std(std, "truncated_normal");
  return {std::move(shape),
          [mean, std](const Shape& s, DType dtype, std::uint64_t seed) {
            return generate(s, dtype, [&](std::uint64_t i) {
              // Redraw from a sub-stream of element i; each try succeeds with p ≈ 0.954.
              for (std::uint64_t attempt = 0;; ++attempt) {
                const double z = standard_normal(mix(seed ^ mix(attempt)), i);
                if (std::abs(z) <= 2.0)
                  return mean + std * z;
              }
            });
          },
          "truncated_normal(mean=" + fmt(mean) + ", std=" + fmt(std) + ")"};
}

Initializer glorot(Shape shape, double gain) {
  if (shape.size() < 2)
    throw ValueError("init::glorot: needs a shape of rank >= 2 (fan_in, fan_out), got " +
                     pxl::to_string(shape));
  const auto rank = shape.size();
  const double receptive = static_cast<double>(pxl::nelms(std::span(shape).first(rank - 2)));
  const double fan_in = static_cast<double>(shape[rank - 2]) * receptive;
  const double fan_out = static_cast<double>(shape[rank - 1]) * receptive;
  const double a = gain * std::sqrt(6.0 / (fan_in + fan_out));
  Initializer u = uniform(-a, a, std::move(shape));
  u.description = "glorot(gain=" + fmt(gain) + ")";
  return u;
}

Initializer from(HostTensor data) {
  Shape shape = data.shape();
  std::string description = "from(" + to_string(data.spec()) + ")";
  return {std::move(shape),
          [data = std::move(data)](const Shape&, DType dtype, std::uint64_t) {
            return data.dtype() == dtype ? data : data.astype(dtype);
          },
          std::move(description)};
}

std::uint64_t seed_for(std::uint64_t base_seed, std::string_view full_name, std::uint64_t draw) {
  std::uint64_t h = 0xcbf29ce484222325ull; // FNV-1a
  for (char c : full_name) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  const std::uint64_t seed = mix(base_seed ^ mix(h));
  // Draw 0 keeps the seed every variable had before draws were counted.
  return draw == 0 ? seed : mix(seed ^ mix(draw));
}

} // namespace pxl::addons::init
