// Fashion-MNIST: two IDX files per split, checked against each other and the data set's shape.
#include "pxl/addons/data/fashion_mnist.hpp"

#include "pxl/addons/data/idx.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <system_error>
#include <utility>

namespace pxl::addons::data {
namespace {

constexpr const char* package_hint =
    "; the Fashion-MNIST files come with Debian's dataset-fashion-mnist package "
    "(sudo apt-get install dataset-fashion-mnist), or pass the directory that holds them";

std::filesystem::path existing_file(const std::filesystem::path& dir, const char* name) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw IoError("Fashion-MNIST directory '" + dir.string() + "' does not exist" + package_hint);
  auto path = dir / name;
  if (!std::filesystem::exists(path, ec))
    throw IoError("Fashion-MNIST file '" + path.string() + "' does not exist" + package_hint);
  return path;
}

/// The first `n` rows of `t` (a copy: the rest of the split is not kept alive).
HostTensor first_rows(HostTensor t, std::int64_t n) {
  if (n == t.shape()[0])
    return t;
  Shape shape = t.shape();
  shape[0] = n;
  HostTensor out(shape, t.dtype());
  if (out.nbytes() > 0) // an empty tensor's data pointer may be null
    std::memcpy(out.bytes().data(), t.bytes().data(), out.nbytes());
  return out;
}

} // namespace

Dataset load_fashion_mnist(const std::filesystem::path& dir, Split split,
                           std::optional<std::int64_t> limit) {
  if (limit && *limit < 0)
    throw ValueError("load_fashion_mnist: limit must be at least 0, found " +
                     std::to_string(*limit));
  const bool train = split == Split::train;
  const auto images_path =
      existing_file(dir, train ? "train-images-idx3-ubyte.gz" : "t10k-images-idx3-ubyte.gz");
  const auto labels_path =
      existing_file(dir, train ? "train-labels-idx1-ubyte.gz" : "t10k-labels-idx1-ubyte.gz");

  HostTensor images = read_idx(images_path);
  HostTensor labels = read_idx(labels_path);
  if (images.dtype() != uint8 || images.rank() != 3 || images.shape()[1] != fashion_mnist_rows ||
      images.shape()[2] != fashion_mnist_cols)
    throw IoError("Fashion-MNIST images '" + images_path.string() +
                  "': expected uint8 [N, 28, 28], found " + to_string(images.spec()));
  if (labels.dtype() != uint8 || labels.rank() != 1)
    throw IoError("Fashion-MNIST labels '" + labels_path.string() +
                  "': expected uint8 [N], found " + to_string(labels.spec()));
  if (images.shape()[0] != labels.shape()[0])
    throw IoError("Fashion-MNIST split in '" + dir.string() +
                  "': " + std::to_string(images.shape()[0]) + " images in '" +
                  images_path.filename().string() + "' but " + std::to_string(labels.shape()[0]) +
                  " labels in '" + labels_path.filename().string() + "'; expected equal counts");
  const auto values = labels.data<std::uint8_t>();
  if (const auto bad = std::find_if(values.begin(), values.end(),
                                    [](std::uint8_t v) { return v >= fashion_mnist_classes; });
      bad != values.end())
    throw IoError("Fashion-MNIST labels '" + labels_path.string() + "': label " +
                  std::to_string(*bad) + " at index " + std::to_string(bad - values.begin()) +
                  " is not a class index 0-9");

  const std::int64_t n = std::min(images.shape()[0], limit.value_or(images.shape()[0]));
  return {first_rows(std::move(images), n), first_rows(std::move(labels), n)};
}

} // namespace pxl::addons::data
