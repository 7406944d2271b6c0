// What a Trainer compiles, private to its implementation: the programs (training, evaluation,
// prediction), how each is built, and how the training program is fed and reports back.
#pragma once

#include "pxl/addons/data/batch_fan_out.hpp"
#include "pxl/addons/training/progress.hpp"
#include "pxl/addons/training/trainer.hpp"

#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pxl::addons::trainer_detail {

inline constexpr std::string_view accuracy_metric = "accuracy";

/// Traces the model for a batch's spec (what Trainer keeps of its Module).
using TraceModel =
    std::function<std::pair<NamedVariableFactories, GraphWithNamedArgs>(const TensorSpec&)>;

/// Where the training program's outfeed goes during a fit: the consumer thread calls the
/// batch-end callbacks as each micro-batch's loss (and accuracy) arrives, while the device
/// goes on (Keras with IPUs' asynchronous callbacks), and sums the epoch's values. The
/// calling thread reads the sums once a run has returned, by which time every element has
/// been delivered.
struct BatchLog {
  std::vector<std::shared_ptr<Callback>> callbacks;
  bool with_accuracy = false;
  std::int64_t replicas = 1;
  std::int64_t element = 0;  ///< elements received: one per micro-batch and replica
  std::int64_t batch = 0;    ///< micro-batches since the fit began
  std::int64_t in_epoch = 0; ///< micro-batches since the epoch began
  double loss_sum = 0, accuracy_sum = 0;
  std::optional<Progress> progress; ///< FitOptions::progress
  std::exception_ptr error;         ///< what a callback threw; rethrown after the run

  /// Receives the outfeed's next element: one per micro-batch and replica.
  void operator()(const HostTensor& values);
  /// One micro-batch's loss (and accuracy).
  void record(std::span<const float> values);
};

/// One compiled program: its Ir, Session and the streams and tensors it is driven by.
struct Program {
  Ir ir;
  std::optional<Session> session;
  std::optional<Session::Attachment> attached;
  HostToDeviceStream x, y;
  DeviceToHostStream out, loss, accuracy;
  NamedTensors variables;
  std::optional<Tensor> lr; ///< the learning rate's variable (training, unless constant)
  std::optional<transforms::PipelinedGraph> pipeline; ///< what pipelining made (training)
  TensorSpec x_spec;
  std::shared_ptr<BatchLog> log = std::make_shared<BatchLog>(); ///< training only
};

/// ValueError (DTypeError for a dtype) for options Trainer::compile refuses: counts below 1,
/// an unknown metric, a dtype other than float32 or float16, and settings that need another
/// one (stochastic rounding float16, recompute a pipeline, offloading or sharding an
/// optimizer with state, sharding 2 replicas, pipelining 2 micro-batches, whole optimizer
/// steps per run).
void check_compile_options(const CompileOptions& o);

/// The engine options of the session of `program` ("train", "test" or "predict"): every
/// autoReport into its folder of CompileOptions::report_directory, if set.
std::map<std::string, std::string> report_options(const CompileOptions& o,
                                                  std::string_view program);

/// The replicas this process runs and feeds: all of them, or its own under mpirun.
data::LocalReplicas local_replicas(const CompileOptions& o);

/// Builds the training program for micro-batches of `x` and `y` (global, over the replicas)
/// into `p` and, with `open_session`, opens its Session: a device loop of steps_per_execution
/// optimizer steps of gradient_accumulation micro-batches, each micro-batch's loss (and
/// accuracy) stored back. The learning rate's variable, if any, starts at `lr`.
void build_training_program(Program& p, const CompileOptions& o, const TraceModel& trace,
                            const TensorSpec& x, const TensorSpec& y, double lr,
                            bool open_session = true);

/// Builds a forward-only program for inputs `x` into `p` and opens its Session: with `y`, the
/// evaluation program (the batch's loss and accuracy), else the prediction program (the
/// outputs).
void build_forward_program(Program& p, const CompileOptions& o, const TraceModel& trace,
                           const TensorSpec& x, const std::optional<TensorSpec>& y);

/// Where a fit stands in its dataset: the batches of each epoch of the fit, in order. The
/// dataset's passes (`TensorDataset::epoch(pass)`, each shuffled afresh) are read one after
/// the other. With `passes_per_epoch` > 0, epoch k of the fit reads passes k·passes_per_epoch
/// onwards and takes the first `per_epoch` of their batches (the rest fill no run); with 0
/// (Keras's steps_per_epoch), the epochs take `per_epoch` batches each from one stream over
/// every pass, as a repeated tf.data iterator goes on across epochs.
class BatchCursor {
public:
  BatchCursor(data::TensorDataset dataset, std::int64_t per_epoch, std::int64_t passes_per_epoch);
  /// The next batch; valid until the next call.
  const data::LabelledBatch& next();

private:
  data::TensorDataset dataset_;
  std::int64_t per_pass_, per_epoch_, passes_per_epoch_;
  std::uint64_t epoch_ = 0, pass_ = 0;
  std::int64_t in_epoch_ = 0, in_pass_ = 0;
  std::optional<data::TensorDatasetView> view_;
  std::optional<ranges::iterator_t<data::TensorDatasetView>> at_;
};

/// Feeds `p`'s x and y streams through their infeeds from `cursor`, `batches_per_run` per run,
/// each batch cut into the replicas' rows (data::BatchFanOut). The producers run up to
/// `prefetch` batches ahead of the device (8 when 0), across runs and epochs; binding again
/// drops what they prepared.
void bind_infeed(Program& p, std::shared_ptr<BatchCursor> cursor,
                 const data::LabelledBatchSpec& spec, std::int64_t prefetch,
                 std::int64_t batches_per_run, data::LocalReplicas replicas);

/// Runs one training step on `batch` (global): the local replicas' rows go in as stream
/// arrays ([replicas, b, ...] with several), and replica 0's logs go to the program's BatchLog;
/// `observer`, if any, sees the run's steps.
void run_one_step(Program& p, const data::LabelledBatch& batch, data::LocalReplicas replicas,
                  emu::StepObserver* observer);

/// Rows [first, first + count) of `t` (its first axis) as [count, ...].
HostTensor row_range(const HostTensor& t, std::int64_t first, std::int64_t count);

} // namespace pxl::addons::trainer_detail

namespace pxl::addons {

/// The Sessions a Trainer builds, and the weights they share by name.
class Trainer::Programs {
public:
  using Program = trainer_detail::Program;

  CompileOptions options;
  std::optional<Program> train;
  /// Forward programs by the spec of their input batch: evaluation (with labels) and
  /// prediction, each for the full batches and for a last, shorter one.
  std::map<std::pair<bool, Shape>, Program> forward;
  /// The weights as the last program that changed them left them (by name), once one has.
  std::optional<std::map<std::string, HostTensor>> weights;
  double lr = 0;

  explicit Programs(CompileOptions o);

  /// The evaluation (with `labels`) or prediction programs for input batches of each of `xs`
  /// (the batch size's, and a last, shorter batch's), built on first use, the shared weights
  /// written in. Programs of the same kind for other batches are dropped.
  std::vector<Program*> forward_programs(const trainer_detail::TraceModel& trace,
                                         const std::vector<TensorSpec>& xs,
                                         const std::optional<TensorSpec>& labels);
  /// Writes the shared weights into `p`'s session (a freshly built program starts from the
  /// seeded initialisers, the same in every program).
  void load_weights(Program& p);
  /// Reads `p`'s weights as the shared ones.
  void save_weights(Program& p);
  /// The training program's weights as the shared ones, when there is one.
  void sync_from_training();
};

} // namespace pxl::addons
