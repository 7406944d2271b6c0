// pxl::addons::ModuleList: repeated sub-modules named by their index ("layers.0.weight").
#pragma once

#include "pxl/addons/module/module.hpp"

#include <cstddef>
#include <vector>

namespace pxl::addons {

/// A list of sub-modules (popxl.addons' Module.from_list). Declared as a sub-module, its
/// element i is named "<list name>.i", so its variables are "layers.0.weight", ...:
///
///     PXL_SUBMODULE(ModuleList<Linear>, layers, 3, Linear(64));
///     for (auto& layer : layers) x = layer(x);
template <typename M>
class ModuleList : public ModuleBase {
public:
  ModuleList() = default;
  explicit ModuleList(std::vector<M> modules) : modules_(std::move(modules)) { rename(); }
  /// `count` copies of `prototype`.
  ModuleList(std::size_t count, const M& prototype) : modules_(count, prototype) { rename(); }

  void set_name(std::string name) override {
    ModuleBase::set_name(std::move(name));
    rename();
  }
  void push_back(M module) {
    modules_.push_back(std::move(module));
    rename();
  }

  /// Element `i`; ValueError when out of range.
  M& operator[](std::size_t i) { return modules_.at(check(i)); }
  const M& operator[](std::size_t i) const { return modules_.at(check(i)); }
  std::size_t size() const { return modules_.size(); }
  auto begin() { return modules_.begin(); }
  auto end() { return modules_.end(); }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

private:
  std::size_t check(std::size_t i) const {
    if (i >= modules_.size())
      throw ValueError("ModuleList '" + name() + "': index " + std::to_string(i) +
                       " out of range for " + std::to_string(modules_.size()) + " modules");
    return i;
  }
  void rename() {
    for (std::size_t i = 0; i < modules_.size(); ++i)
      modules_[i].set_name(name().empty() ? std::to_string(i) : name() + "." + std::to_string(i));
  }

  std::vector<M> modules_;
};

} // namespace pxl::addons
