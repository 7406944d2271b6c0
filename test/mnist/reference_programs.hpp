// The hand-written programs of PopXL's MNIST tutorial, which the main job trained and tested
// with before addons::Trainer: an oracle written without the Trainer, which test/mnist/train.cpp
// checks the Trainer against bitwise. Only the tests use it.
#pragma once

#include "model.hpp"

#include "pxl/addons/data/batch.hpp"
#include "pxl/addons/data/batch_fan_out.hpp"
#include "pxl/addons/data/dataset.hpp"
#include "pxl/addons/module/named_tensors.hpp"
#include "pxl/core/host_tensor.hpp"
#include "pxl/ir/ir.hpp"
#include "pxl/ir/stream.hpp"
#include "pxl/session.hpp"
#include "pxl/transforms/pipeline.hpp"

#include <range/v3/range/access.hpp>
#include <range/v3/range/concepts.hpp>
#include <range/v3/range/traits.hpp>

#include <concepts>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace mnist {

/// The weight update.
enum class Optimizer {
  sgd,  ///< w -= lr·g, folded into the gradient's matmul
  adam, ///< addons::optimizers::Adam (PyTorch's defaults but the learning rate)
};

struct TrainingOptions {
  /// Images per replica and micro-batch.
  std::int64_t batch_size = 8;
  double learning_rate = 0.05;
  /// Training steps per `session.run`: the step is a device loop (`ops::repeat`) fed by
  /// `steps_per_execution` host transfers per run.
  std::int64_t steps_per_execution = 1;
  /// Micro-batches whose mean gradient makes one SGD update (effective batch
  /// batch_size × gradient_accumulation); each takes its own host transfer.
  std::int64_t gradient_accumulation = 1;
  /// Data-parallel replicas: each trains on its own batch_size rows of a global batch of
  /// replicas × batch_size, and the gradients are averaged across replicas before the
  /// update, so a step equals one replica's on the global batch (to float rounding).
  std::int64_t replicas = 1;
  /// Spread the replicas over the instances of an `mpirun` (pxl::dist, which must be
  /// configured with `replicas` in all): this process runs and feeds only its own, while
  /// run() and feed_from still take global batches. Training equals one process's bitwise.
  bool distributed = false;
  Optimizer optimizer = Optimizer::sgd;
  /// Keep the optimizer's state (Adam's moments and step) in Streaming Memory, loaded and
  /// stored around each update, instead of on the IPU: training is bitwise the same.
  /// ValueError with an optimizer that has no state (SGD).
  bool offload_optimizer_state = false;
  /// Shard the optimizer's state over the replicas (each keeps 1/replicas of Adam's moments,
  /// on the IPU or in Streaming Memory): training is bitwise the same. ValueError with SGD or
  /// one replica.
  bool shard_optimizer_state = false;
  /// Seeds the weights' initialisers.
  std::uint64_t seed = 42;
  /// Emulator worker threads (0: one per core).
  unsigned workers = 0;
  /// Estimate the device time of every step (Session::profile, write_trace).
  bool profile = false;
  /// The Net's weights and activations: float32, or float16 as mixed precision (images cast
  /// to float16 on the device, the logits cast back to float32 for the loss and its
  /// gradient, which is scaled by `loss_scaling` and cast to float16 for the backward pass;
  /// the update divides the scaling out). DTypeError for anything else.
  pxl::DType dtype = pxl::float32;
  /// The float16 loss gradient's scale, against underflow in the backward pass; ignored for
  /// float32.
  double loss_scaling = 128.0;
  /// Pipeline the Net over this many IPUs (1 to Net::layers; layers in order, see Net): the
  /// `gradient_accumulation` micro-batches of each update go through the stages with the
  /// grouped schedule (transforms::pipeline), which needs at least min_pipeline_micro_batches
  /// of them. Training equals the unpipelined program's bitwise. ValueError otherwise.
  std::int64_t pipeline_stages = 1;
};

/// A range whose elements are Batches held by the range (a container, a BatchView, a range-v3
/// pipeline over one): what TrainingProgram::feed_from takes.
template <typename R>
concept BatchRange =
    ranges::input_range<R> && std::is_lvalue_reference_v<ranges::range_reference_t<R>> &&
    std::convertible_to < ranges::range_reference_t<R>,
const pxl::addons::data::Batch& > ;

/// Receives micro-batch `index`'s loss (counted from 0 since feed_from) on the session's
/// consumer thread as the device stores it, while the run goes on.
using LossCallback = std::function<void(std::int64_t index, float loss)>;

/// The training Ir of PopXL's MNIST tutorial, written by hand with pxl's and addons' lower-level
/// pieces (the reference for addons::Trainer): images and labels come in on h2d streams, the
/// Net's gradient graph comes from autodiff, the loss gradient from cross_entropy_with_grad,
/// and every variable is updated in place with `scaled_add_(w, grad, {.b = -lr})`; the loss goes
/// back on a d2h stream. One run performs `steps_per_execution` steps. With several replicas
/// the Ir is replicated and the gradients (and the loss) are mean-all-reduced before the update
/// (addons::average_across_replicas); replica r takes rows r·batch … r·batch+batch−1 of each
/// global batch.
///
/// It is fed either with host arrays per run (`run(images, labels)`), or, as PopXL and TF
/// users feed a device loop, from an infeed (`feed_from(batches, on_loss)`, then `run()`):
/// producer threads prepare the next batches while the device trains on earlier ones, and
/// each loss goes to a callback as soon as its step has run.
class TrainingProgram {
public:
  explicit TrainingProgram(const TrainingOptions& options);

  /// Runs `steps_per_execution` steps of `gradient_accumulation` micro-batches each. `images`
  /// is [micro_batches_per_run(), global_batch_size(), 784] float32 and `labels`
  /// [micro_batches_per_run(), global_batch_size()] int32 (leading dim dropped when 1): with
  /// replicas, replica r takes rows r·batch … r·batch+batch−1 of each (arrays already in the
  /// streams' [micro-batches, replicas, batch, ...] layout are taken as they are). Returns each
  /// micro-batch's loss over its global batch (the replicas' mean, all-reduced on the device).
  /// After feed_from the streams are fed from the batches instead: StreamError.
  std::vector<float> run(const pxl::HostTensor& images, const pxl::HostTensor& labels);

  /// Feeds both the images and the labels stream from one pass over `batches` (one epoch of
  /// `data::batches(...)` with `.batch_size = global_batch_size()`, `.flatten = true` and
  /// `.drop_remainder = true`, say): each run takes the next micro_batches_per_run() of them,
  /// and replica r trains on rows r·batch … r·batch+batch−1 of each. Two producer threads (one per
  /// stream) share the pipeline through a fan-out, so it runs once, and prepare up to eight batches
  /// ahead of the device; batches prepared ahead stay queued for the next run. Every loss goes
  /// to `on_loss` (ValueError when it is empty), from index 0: with replicas, the global
  /// batch's (the replicas' mean, all-reduced on the device).
  ///
  /// Replaces an earlier feed, dropping what it had prepared ahead: with one feed per epoch
  /// and ⌊batches / micro_batches_per_run()⌋ runs on each, those are the batches of the
  /// epoch's last, partial run, which the arrays path leaves out too. The range, and what it
  /// refers to (the Dataset of a BatchView), must stay valid until the next feed_from or the
  /// program's end: its producers iterate it ahead of the device.
  ///
  /// A run that needs more batches than are left fails with StreamError ("the batches ended
  /// after N"), and so does one that meets a batch whose images or labels do not fit the
  /// streams; both are raised by `run()`, after the run (whose steps past the missing batch
  /// trained on zeros).
  template <BatchRange Batches>
  void feed_from(Batches&& batches, LossCallback on_loss) {
    using Stored = std::remove_cvref_t<Batches>;
    // Where the pipeline stands; iterated under the fan-out's lock only.
    struct Pipeline {
      Stored range;
      std::optional<ranges::iterator_t<Stored>> it;
    };
    auto pipeline =
        std::make_shared<Pipeline>(Pipeline{std::forward<Batches>(batches), std::nullopt});
    bind_feed(
        [pipeline]() -> const pxl::addons::data::Batch* {
          auto& p = *pipeline;
          if (p.it)
            ++*p.it;
          else
            p.it.emplace(ranges::begin(p.range));
          if (*p.it == ranges::end(p.range))
            return nullptr;
          return &static_cast<const pxl::addons::data::Batch&>(**p.it);
        },
        std::move(on_loss));
  }

  /// Runs micro_batches_per_run() micro-batches from the feed; their losses go to the
  /// feed's callback, all delivered when this returns. StreamError without a feed.
  void run();

  std::int64_t micro_batches_per_run() const {
    return options_.steps_per_execution * options_.gradient_accumulation;
  }
  /// Images per micro-batch over all replicas: replicas × batch_size.
  std::int64_t global_batch_size() const { return options_.replicas * options_.batch_size; }
  /// The replicas this process runs: all of them, or its own when distributed.
  pxl::addons::data::LocalReplicas local_replicas() const;
  /// The variables (fc1.weight … fc4.bias) of the training Ir (identical on every replica).
  const pxl::addons::NamedTensors& variables() const { return variables_; }
  /// The optimizer's state under "<weight>.<state>" (empty for SGD): main-graph variables,
  /// or remote variables when offloaded.
  const pxl::addons::NamedTensors& optimizer_state() const { return optimizer_state_; }
  /// Current weights by name (copied from the device; replica 0's).
  pxl::addons::NamedTensorData weights();

  pxl::Session& session() { return *session_; }
  const TrainingOptions& options() const { return options_; }
  /// What pipelining made, with pipeline_stages > 1.
  const std::optional<pxl::transforms::PipelinedGraph>& pipeline() const { return pipeline_; }

private:
  /// A [micro-batches, global batch, ...] array as the stream's [micro-batches, replicas,
  /// batch, ...] (dims of 1 dropped); nullopt when the array is to be passed as it is (one
  /// replica, or another shape, for the session to check).
  std::optional<pxl::HostTensor> per_replica(const pxl::HostTensor& array,
                                             const pxl::HostToDeviceStream& stream) const;
  void bind_feed(std::function<const pxl::addons::data::Batch*()> next, LossCallback on_loss);

  TrainingOptions options_;
  bool fed_ = false;
  pxl::Ir ir_;
  pxl::addons::NamedTensors variables_;
  pxl::addons::NamedTensors optimizer_state_;
  std::optional<pxl::HostToDeviceStream> images_;
  std::optional<pxl::HostToDeviceStream> labels_;
  std::optional<pxl::DeviceToHostStream> loss_;
  std::optional<pxl::transforms::PipelinedGraph> pipeline_;
  std::optional<pxl::Session> session_;
  std::optional<pxl::Session::Attachment> attachment_;
};

/// The test Ir: the same Net forward (in float32 or float16), returning each image's predicted
/// class.
class TestProgram {
public:
  /// `dtype` must be the training program's: the weights are copied as they are.
  TestProgram(std::int64_t batch_size, unsigned workers = 0, pxl::DType dtype = pxl::float32);

  /// Copies the training session's weights into this session by name (the tutorial's
  /// `to_mapping` + `write_variables_data`); from replica 0 when training is replicated.
  void copy_weights_from(TrainingProgram& training);
  /// Writes weights given by name (addons::Trainer::weights()) into this session.
  void copy_weights(const std::map<std::string, pxl::HostTensor>& weights);
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
