// pxl::addons::save_checkpoint / load_checkpoint: a session's variables to and from a
// safetensors file by name, in one process or across the instances of a distributed run.
#pragma once

#include "pxl/addons/module/named_tensors.hpp"
#include "pxl/session.hpp"

#include <filesystem>
#include <map>
#include <string>

namespace pxl::addons {

/// Saves the current values of `variables` (read from `session`, each under its name) to a
/// safetensors file (save_safetensors). In a distributed run every instance must call it:
/// the values are gathered as get_tensor_data gathers them, instance 0 alone writes the file,
/// and every instance returns once it is whole (dist::barrier), so that any of them may load
/// it next (the path must then be on a file system the instances share).
void save_checkpoint(Session& session, const NamedTensors& variables,
                     const std::filesystem::path& path,
                     const std::map<std::string, std::string>& metadata = {});

/// Writes the tensors of a safetensors file into `variables` of `session` by name; every
/// instance reads the file itself. ValueError listing the names missing from the file and
/// those it has in excess; ShapeError / DTypeError for a tensor that does not fit its
/// variable; IoError for a file that cannot be read.
void load_checkpoint(Session& session, const NamedTensors& variables,
                     const std::filesystem::path& path);

} // namespace pxl::addons
