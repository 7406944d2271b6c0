// pxl::addons::data::read_idx: IDX files (the MNIST family's format), raw or gzip-compressed.
#pragma once

#include "pxl/core/host_tensor.hpp"

#include <filesystem>

namespace pxl::addons::data {

/// Reads the IDX file at `path` into a HostTensor of the file's dimensions. The file may be
/// raw or gzip-compressed (told apart by the gzip magic 0x1f 0x8b, so the name does not
/// matter). Element types: IDX type code 0x08 (unsigned byte) → uint8, 0x0C (int) → int32,
/// 0x0D (float) → float32; the file's big-endian values are converted to the host's order.
///
/// Throws IoError, naming the file and what was expected and found, when the file does not
/// exist or cannot be read, when its magic number is not 0x00 0x00 <type> <rank>, when the
/// type code is unsupported, when the rank is 0, when the dimensions describe more data than
/// the file can hold (a raw file exactly; a gzip file at most 1032 bytes per compressed byte,
/// deflate's best ratio) or more than `options.max_bytes`, or when the data are shorter
/// (truncated) or longer (trailing bytes) than the dimensions say. Sizes are checked before
/// the tensor is allocated.
///
///     auto labels = read_idx("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz");
///     labels.shape() == Shape{10000};
HostTensor read_idx(const std::filesystem::path& path, const ReadOptions& options = {});

} // namespace pxl::addons::data
