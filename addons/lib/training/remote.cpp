#include "pxl/addons/training/remote.hpp"

#include "pxl/core/error.hpp"
#include "pxl/ir/remote_buffer.hpp"
#include "pxl/ops/remote.hpp"

namespace pxl::addons {

namespace {
RemoteEntry entry_of(std::string_view who, const std::string& key, const Tensor& t) {
  const auto e = remote_entry(t);
  if (!e)
    throw ValueError(std::string(who) + ": '" + key + "' (" +
                     (t.valid() ? "'" + t.id() + "'" : std::string("an empty tensor")) +
                     ") is not a remote variable; make it with init_remote or remote_variable");
  return *e;
}
} // namespace

NamedTensors load_remote(const NamedTensors& remote) {
  NamedTensors loaded;
  for (const auto& [key, t] : remote.items()) {
    const RemoteEntry e = entry_of("load_remote", key, t);
    loaded.insert(key, pxl::ops::remote_load(e.buffer, e.entry, key));
  }
  return loaded;
}

void store_remote(const NamedTensors& remote, const NamedTensors& values) {
  for (const auto& [key, t] : remote.items()) {
    const RemoteEntry e = entry_of("store_remote", key, t);
    if (!values.is_leaf(key))
      throw ValueError("store_remote: no value to store for '" + key + "'");
    pxl::ops::remote_store(e.buffer, e.entry, values.at(key));
  }
}

} // namespace pxl::addons
