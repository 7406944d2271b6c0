// The Fashion-MNIST sample's two programs: a training Ir (SGD on the emulator, fed by host
// streams) and a test Ir (predictions), each with its own Session.
#pragma once

#include "pxl/addons/data/dataset.hpp"
#include "pxl/addons/named_tensors.hpp"
#include "pxl/core/host_tensor.hpp"
#include "pxl/ir/ir.hpp"
#include "pxl/ir/stream.hpp"
#include "pxl/session.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace mnist {

inline constexpr std::int64_t image_size = 28 * 28;

struct TrainingOptions {
  std::int64_t batch_size = 8;
  double learning_rate = 0.05;
  /// Training steps per `session.run`: the step is a device loop (`ops::repeat`) fed by
  /// `steps_per_execution` host transfers per run.
  std::int64_t steps_per_execution = 1;
  /// Micro-batches whose mean gradient makes one SGD update (effective batch
  /// batch_size × gradient_accumulation); each takes its own host transfer.
  std::int64_t gradient_accumulation = 1;
  /// Seeds the weights' initialisers.
  std::uint64_t seed = 42;
  /// Emulator worker threads (0: one per core).
  unsigned workers = 0;
};

/// The training Ir of PopXL's MNIST tutorial: images and labels come in on h2d streams, the
/// Net's gradient graph comes from autodiff, the loss gradient from cross_entropy_with_grad,
/// and every variable is updated in place with `scaled_add_(w, grad, 1, -lr)`; the loss goes
/// back on a d2h stream. One run performs `steps_per_execution` steps.
class TrainingProgram {
public:
  explicit TrainingProgram(const TrainingOptions& options);

  /// Runs `steps_per_execution` steps of `gradient_accumulation` micro-batches each. `images`
  /// is [micro_batches_per_run(), batch, 784] float32 and `labels` [micro_batches_per_run(),
  /// batch] int32 (leading dim dropped when 1). Returns each micro-batch's loss.
  std::vector<float> run(const pxl::HostTensor& images, const pxl::HostTensor& labels);

  std::int64_t micro_batches_per_run() const {
    return options_.steps_per_execution * options_.gradient_accumulation;
  }
  /// The variables (fc1.weight … fc4.bias) of the training Ir.
  const pxl::addons::NamedTensors& variables() const { return variables_; }
  /// Current weights by name (copied from the device).
  pxl::addons::NamedTensorData weights();
  /// Replaces the weights; ValueError when names or shapes do not match the Net's.
  void load_weights(const pxl::addons::NamedTensorData& weights);

  pxl::Session& session() { return *session_; }
  const TrainingOptions& options() const { return options_; }

private:
  TrainingOptions options_;
  pxl::Ir ir_;
  pxl::addons::NamedTensors variables_;
  std::optional<pxl::HostToDeviceStream> images_;
  std::optional<pxl::HostToDeviceStream> labels_;
  std::optional<pxl::DeviceToHostStream> loss_;
  std::optional<pxl::Session> session_;
  std::optional<pxl::Session::Attachment> attachment_;
};

/// The test Ir: the same Net forward, returning each image's predicted class.
class TestProgram {
public:
  TestProgram(std::int64_t batch_size, unsigned workers = 0);

  /// Copies the training session's weights into this session by name (the tutorial's
  /// `to_mapping` + `write_variables_data`).
  void copy_weights_from(TrainingProgram& training);
  /// Fraction of `data`'s images classified correctly, in whole batches (the last partial
  /// batch is evaluated too, padded).
  double accuracy(const pxl::addons::data::Dataset& data);

  const pxl::addons::NamedTensors& variables() const { return variables_; }

private:
  std::int64_t batch_size_;
  pxl::Ir ir_;
  pxl::addons::NamedTensors variables_;
  std::optional<pxl::HostToDeviceStream> images_;
  std::optional<pxl::DeviceToHostStream> predictions_;
  std::optional<pxl::Session> session_;
  std::optional<pxl::Session::Attachment> attachment_;
};

} // namespace mnist
