// pxl::addons::Layer: any one-input module held by value behind one type (Sequential's element).
#pragma once

#include "pxl/addons/module/module.hpp"
#include "pxl/core/error.hpp"

#include <concepts>
#include <memory>
#include <optional>
#include <string>
#include <typeinfo>
#include <utility>

namespace pxl::addons {

/// A module whose `build(x)` maps one tensor to one (Dense, Flatten, Linear, LayerNorm,
/// Embedding, Sequential).
template <typename M>
concept UnaryLayer = requires(M& m, const Tensor& x) {
  { m.build(x) } -> std::same_as<Tensor>;
};

/// A module whose `build(x, seed)` also takes a uint32[2] random seed (Dropout).
template <typename M>
concept SeededLayer = requires(M& m, const Tensor& x, const Tensor& seed) {
  { m.build(x, seed) } -> std::same_as<Tensor>;
};

/// A module whose build a Layer can call: a UnaryLayer or a SeededLayer.
template <typename M>
concept BuildsLayer = UnaryLayer<M> || SeededLayer<M>;

/// What a Layer can hold: a Module of either kind. (`derived_from` comes first so that the
/// check stops there for types that are not modules, Layer itself included.)
template <typename M>
concept LayerModule = std::derived_from<M, ModuleBase> && BuildsLayer<M>;

/// One layer of a Sequential: a copy of any LayerModule, called as a sub-module under its name.
/// Converts implicitly from the module, so a list of different layer types reads naturally:
///
///     std::vector<Layer> layers{Flatten{}, Dense(128, Activation::relu), Dropout(0.2)};
///
/// Copies are deep (each holds its own module); a moved-from Layer may only be assigned to or
/// destroyed.
class Layer {
public:
  template <LayerModule M>
  Layer(M module) : held_(std::make_unique<Held<M>>(std::move(module))) {}
  Layer(const Layer& other) : held_(other.held_->clone()) {}
  Layer& operator=(const Layer& other) {
    if (this != &other)
      held_ = other.held_->clone();
    return *this;
  }
  Layer(Layer&&) noexcept = default;
  Layer& operator=(Layer&&) noexcept = default;
  ~Layer() = default;

  /// The held module's name: where its variables go ("layers.1" → "layers.1.weight").
  const std::string& name() const { return held_->module().name(); }
  void set_name(std::string name) { held_->module().set_name(std::move(name)); }
  /// The held module's class name ("Dense"), for messages.
  std::string type_name() const { return held_->type_name(); }
  /// Whether calling it takes a seed: a SeededLayer that is not also a UnaryLayer, or a module
  /// that says so through its own `needs_seed()` (Sequential).
  bool needs_seed() const { return held_->needs_seed(); }

  /// Inlines the module's build on `x` in the current graph under its name, passing `seed`
  /// when it needs one. ValueError naming the layer when it needs a seed and none is given.
  Tensor operator()(const Tensor& x, const std::optional<Tensor>& seed = std::nullopt) {
    if (needs_seed() && !seed)
      throw ValueError("Layer '" + name() + "' (" + type_name() +
                       ") needs a random seed, uint32 of shape (2,), and none was given (build "
                       "its Sequential as build(x, seed))");
    return held_->call(x, seed);
  }

  /// The held module when it is an `M`, else nullptr.
  template <typename M>
  M* get() {
    return dynamic_cast<M*>(&held_->module());
  }
  template <typename M>
  const M* get() const {
    return dynamic_cast<const M*>(&held_->module());
  }

private:
  class Interface {
  public:
    virtual ~Interface() = default;
    virtual std::unique_ptr<Interface> clone() const = 0;
    virtual ModuleBase& module() = 0;
    virtual std::string type_name() const = 0;
    virtual bool needs_seed() const = 0;
    /// `seed` is present whenever needs_seed().
    virtual Tensor call(const Tensor& x, const std::optional<Tensor>& seed) = 0;
  };

  template <typename M>
  class Held final : public Interface {
  public:
    explicit Held(M m) : module_(std::move(m)) {}
    std::unique_ptr<Interface> clone() const override { return std::make_unique<Held>(module_); }
    ModuleBase& module() override { return module_; }
    std::string type_name() const override { return impl::short_type_name(typeid(M)); }
    bool needs_seed() const override {
      if constexpr (requires(const M& m) {
                      { m.needs_seed() } -> std::convertible_to<bool>;
                    })
        return module_.needs_seed();
      else
        return !UnaryLayer<M>;
    }
    Tensor call(const Tensor& x, const std::optional<Tensor>& seed) override {
      if constexpr (SeededLayer<M>) {
        if (needs_seed())
          return module_(x, *seed);
      }
      if constexpr (UnaryLayer<M>)
        return module_(x);
      else
        return module_(x, *seed); // unreachable: a seed-only layer always needs_seed()
    }

  private:
    M module_;
  };

  std::unique_ptr<Interface> held_;
};

} // namespace pxl::addons
