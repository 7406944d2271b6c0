// pxl::addons::load_remote / store_remote: named remote variables in and out of the current
// graph (popxl.addons' remote helpers).
#pragma once

#include "pxl/addons/module/named_tensors.hpp"

namespace pxl::addons {

/// Loads every remote variable of `remote` (NamedVariableFactories::init_remote) into the
/// current graph under the same keys (ops::remote_load from its entry). ValueError naming a
/// tensor that is not a remote variable.
NamedTensors load_remote(const NamedTensors& remote);
/// Stores `values` (by key) back into the entries of the remote variables of `remote`.
/// ValueError for a key of `remote` without a value, or a tensor that is not a remote
/// variable; shapes and dtypes as ops::remote_store checks them.
void store_remote(const NamedTensors& remote, const NamedTensors& values);

} // namespace pxl::addons
