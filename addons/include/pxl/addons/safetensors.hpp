// pxl::addons::save_safetensors / load_safetensors: named tensors in the safetensors format.
#pragma once

#include "pxl/core/host_tensor.hpp"

#include <filesystem>
#include <map>
#include <string>

namespace pxl::addons {

/// Writes `tensors` to `path` in the safetensors format, which other tools (the Python
/// `safetensors` package, Hugging Face libraries) read: an 8-byte little-endian header
/// length, a JSON header mapping each name to {"dtype", "shape", "data_offsets"} plus an
/// optional "__metadata__" object of strings, then the tensors' raw little-endian bytes in
/// name order. Dtypes are written as F32, F16, I32, U32, U8 and BOOL.
///
/// The file appears atomically and durably: the data go to `<path>.tmp.<pid>`, are flushed to
/// disk (fsync) and the file is renamed over `path`, then the directory is fsynced, so that
/// the rename itself survives a power loss once the save returns. A reader never sees a
/// half-written checkpoint, and a save that is interrupted (even by SIGKILL) leaves the
/// previous checkpoint whole. Each save first removes the temporaries of `path` left by such
/// interrupted saves: those whose process no longer exists (a running writer's file is never
/// touched; a temporary whose process id a live process has taken since stays until it ends).
/// Throws IoError naming the path when it cannot be written, and ValueError for a tensor name
/// the format cannot hold (empty, "__metadata__", or not UTF-8; loading refuses the same
/// names, so whatever loads can be saved back) or for metadata that is not UTF-8.
///
///     save_safetensors("ckpt.safetensors", {{"fc1.weight", w}}, {{"epoch", "3"}});
void save_safetensors(const std::filesystem::path& path,
                      const std::map<std::string, HostTensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

/// Reads every tensor of the safetensors file at `path`. Throws IoError naming the file and
/// the problem when it is missing, shorter than its header says, has a header that is not
/// valid JSON (or is nested more than 64 levels deep, or holds a number out of range) or not
/// of the format's shape, a tensor name `save_safetensors` would
/// refuse, two tensors of one name, a dtype pxl does not hold (F64, BF16, I64, ...), a shape
/// whose size overflows, data offsets outside the data, overlapping, leaving gaps or not
/// matching shape × item size, BOOL bytes other than 0 and 1, or more than `options.max_bytes`
/// of tensor data. Sizes are checked against the file's size before any tensor is allocated.
std::map<std::string, HostTensor> load_safetensors(const std::filesystem::path& path,
                                                   const ReadOptions& options = {});

/// The "__metadata__" strings of the safetensors file at `path` (empty when it has none),
/// validated as `load_safetensors` does but without reading the tensor data.
std::map<std::string, std::string> load_safetensors_metadata(const std::filesystem::path& path);

} // namespace pxl::addons
