// A Fisher–Yates shuffle and tf.data's buffered shuffle, whose results are fixed by the seed
// alone, whatever the standard library.
#include "pxl/addons/data/shuffle.hpp"

#include "pxl/core/error.hpp"

#include <numeric>
#include <random>
#include <string>

namespace pxl::addons::data {
namespace {

/// Uniform in [0, n) without modulo bias: draws below 2^64 mod n are rejected (Lemire's
/// threshold), so each residue class is equally likely.
std::uint64_t bounded(std::mt19937_64& rng, std::uint64_t n) {
  const std::uint64_t threshold = (0 - n) % n;
  for (;;) {
    const std::uint64_t r = rng();
    if (r >= threshold)
      return r % n;
  }
}

/// SplitMix64's finaliser: spreads (seed, epoch) over the whole seed space so that nearby
/// seeds and epochs give unrelated generators.
std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// The generator of (seed, epoch): both shuffles draw from it.
std::mt19937_64 shuffle_generator(std::uint64_t seed, std::uint64_t epoch) {
  return std::mt19937_64(mix(seed ^ mix(epoch + 0x9e3779b97f4a7c15ull)));
}

} // namespace

std::vector<std::int64_t> shuffled_indices(std::int64_t n, std::uint64_t seed,
                                           std::uint64_t epoch) {
  if (n < 0)
    throw ValueError("shuffled_indices: n must be at least 0, found " + std::to_string(n));
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  std::mt19937_64 rng = shuffle_generator(seed, epoch);
  for (std::size_t i = order.size(); i > 1; --i)
    std::swap(order[i - 1], order[bounded(rng, i)]);
  return order;
}

std::vector<std::int64_t> buffered_shuffled_indices(std::int64_t n, std::int64_t buffer_size,
                                                    std::uint64_t seed, std::uint64_t epoch) {
  if (n < 0)
    throw ValueError("buffered_shuffled_indices: n must be at least 0, found " + std::to_string(n));
  if (buffer_size < 1)
    throw ValueError("buffered_shuffled_indices: the buffer size must be at least 1, found " +
                     std::to_string(buffer_size));
  if (buffer_size >= n)
    return shuffled_indices(n, seed, epoch);
  std::vector<std::int64_t> order;
  order.reserve(static_cast<std::size_t>(n));
  std::vector<std::int64_t> buffer(static_cast<std::size_t>(buffer_size));
  std::iota(buffer.begin(), buffer.end(), std::int64_t{0});
  std::int64_t next = buffer_size;
  std::mt19937_64 rng = shuffle_generator(seed, epoch);
  while (!buffer.empty()) {
    const auto slot = static_cast<std::size_t>(bounded(rng, buffer.size()));
    order.push_back(buffer[slot]);
    if (next < n) {
      buffer[slot] = next++;
    } else {
      buffer[slot] = buffer.back();
      buffer.pop_back();
    }
  }
  return order;
}

} // namespace pxl::addons::data
