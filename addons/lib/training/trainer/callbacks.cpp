// Keras's callbacks that the Trainer ships: ModelCheckpoint, EarlyStopping and
// LearningRateScheduler.
#include "pxl/addons/training/trainer.hpp"

#include "pxl/core/error.hpp"

#include <string>

namespace pxl::addons {

bool ModelCheckpoint::on_epoch_end(int epoch, const Logs&) {
  std::string path = path_;
  if (const auto at = path.find("{epoch}"); at != std::string::npos)
    path.replace(at, 7, std::to_string(epoch + 1));
  trainer_->save_weights(path);
  return false;
}

bool EarlyStopping::on_epoch_end(int epoch, const Logs& logs) {
  const auto it = logs.find(monitor_);
  if (it == logs.end()) {
    std::string known;
    for (const auto& [key, value] : logs)
      known += (known.empty() ? "" : ", ") + key;
    throw ValueError("EarlyStopping: monitored value '" + monitor_ +
                     "' is not among the epoch's logs (" + known + ")");
  }
  if (!seen_ || it->second < best_ - min_delta_) {
    best_ = it->second;
    seen_ = true;
    waited_ = 0;
    return false;
  }
  if (++waited_ > patience_) {
    stopped_ = epoch;
    return true;
  }
  return false;
}

bool LearningRateScheduler::on_epoch_end(int epoch, const Logs&) {
  trainer_->set_learning_rate(schedule_(epoch + 1, trainer_->learning_rate()));
  return false;
}

} // namespace pxl::addons
