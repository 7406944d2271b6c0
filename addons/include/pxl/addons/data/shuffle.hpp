// pxl::addons::data::shuffled_indices: seeded permutations (a full shuffle, and tf.data's
// buffered shuffle), identical on every platform.
#pragma once

#include <cstdint>
#include <vector>

namespace pxl::addons::data {

/// A permutation of 0 … n-1 that depends only on `seed` and `epoch`: std::mt19937_64 (whose
/// output the C++ standard fixes) drives a Fisher–Yates shuffle with pxl's own unbiased
/// bounded draw, because std::uniform_int_distribution and std::shuffle differ between
/// standard libraries. Different epochs of one seed give different orders.
///
///     shuffled_indices(5, 42) == shuffled_indices(5, 42);  // on every compiler and library
std::vector<std::int64_t> shuffled_indices(std::int64_t n, std::uint64_t seed,
                                           std::uint64_t epoch = 0);

/// The order in which tf.data's `shuffle(buffer_size)` visits 0 … n-1: a buffer holds the
/// next `buffer_size` elements of the input; each output is a uniformly drawn element of the
/// buffer, whose slot the next input element then takes (once the input is exhausted, the
/// buffer drains in random order). An element can only come out once it has entered the
/// buffer, so output i is below i + buffer_size: a small buffer shuffles locally, a buffer of
/// 1 keeps the order. With `buffer_size >= n` it is a full shuffle, exactly
/// `shuffled_indices(n, seed, epoch)`. The draws are seeded by (seed, epoch) as there.
/// ValueError for n < 0 or buffer_size < 1.
///
///     buffered_shuffled_indices(5, 1, 42) == {0, 1, 2, 3, 4};
///     buffered_shuffled_indices(60000, 60000, 7) == shuffled_indices(60000, 7);
std::vector<std::int64_t> buffered_shuffled_indices(std::int64_t n, std::int64_t buffer_size,
                                                    std::uint64_t seed, std::uint64_t epoch = 0);

} // namespace pxl::addons::data
