// pxl::addons::data::shuffled_indices: a seeded permutation, identical on every platform.
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

} // namespace pxl::addons::data
