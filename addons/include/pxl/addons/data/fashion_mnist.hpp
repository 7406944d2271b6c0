// pxl::addons::data::load_fashion_mnist: the Fashion-MNIST data set from its four IDX files.
#pragma once

#include "pxl/addons/data/dataset.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>

namespace pxl::addons::data {

/// Where Debian's `dataset-fashion-mnist` package installs the files.
inline constexpr const char* fashion_mnist_default_dir = "/usr/share/datasets/fashion-mnist";
/// Mean and standard deviation of the training images' pixels scaled to [0, 1]; `batches`
/// normalises with them by default.
inline constexpr float fashion_mnist_mean = 0.2860f;
inline constexpr float fashion_mnist_std = 0.3530f;
/// Images are 28×28 pixels in 10 classes.
inline constexpr std::int64_t fashion_mnist_rows = 28;
inline constexpr std::int64_t fashion_mnist_cols = 28;
inline constexpr std::int64_t fashion_mnist_classes = 10;

/// The 60,000-example training split or the 10,000-example test split.
enum class Split { train, test };

/// Loads one split from `dir` (train-images-idx3-ubyte.gz and train-labels-idx1-ubyte.gz, or
/// the t10k-… pair): images uint8 [N, 28, 28], labels uint8 [N], in file order. `limit`
/// keeps only the first `limit` examples (all of them when absent or larger than the split).
///
/// Throws IoError when the directory or a file is missing (naming the path and the Debian
/// package that provides the data), when a file is malformed (see `read_idx`), when the
/// images are not [N, 28, 28] or the labels not [N] uint8, when the image and label counts
/// differ, or when a label is not a class index 0–9; ValueError for a negative `limit`.
///
///     auto test = load_fashion_mnist(fashion_mnist_default_dir, Split::test, 1000);
///     test.images.shape() == Shape{1000, 28, 28};
Dataset load_fashion_mnist(const std::filesystem::path& dir = fashion_mnist_default_dir,
                           Split split = Split::train,
                           std::optional<std::int64_t> limit = std::nullopt);

} // namespace pxl::addons::data
