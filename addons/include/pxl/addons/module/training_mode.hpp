// pxl::addons::TrainingMode: whether the modules traced now build their training or their
// inference form.
#pragma once

#include <optional>

namespace pxl::addons {

/// While alive, modules traced on this thread build their training form (`training` true) or
/// their inference form (false): Keras's `training` argument, PyTorch's `train()` / `eval()`.
/// Scopes nest; the innermost wins. Trainer traces its training program in TrainingMode(true)
/// and its evaluation and prediction programs in TrainingMode(false).
///
///     {
///       addons::TrainingMode training;            // batch norm: batch statistics, updated
///       auto [facts, fwd] = model.create_graph(x);  // running ones
///     }
///
/// What a layer does outside any scope is its own: Dropout follows its `training` argument;
/// BatchNorm2D asks for a mode (its `training` argument or a scope) rather than guess.
class [[nodiscard]] TrainingMode {
public:
  explicit TrainingMode(bool training = true);
  TrainingMode(const TrainingMode&) = delete;
  TrainingMode& operator=(const TrainingMode&) = delete;
  ~TrainingMode();

private:
  std::optional<bool> saved_;
};

/// The innermost TrainingMode's setting on this thread, nullopt outside any.
std::optional<bool> training_mode();

} // namespace pxl::addons
