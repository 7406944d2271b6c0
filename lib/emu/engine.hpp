// The Session's implementation: the compiled program, its replicas, workers, streams and host
// weights.
#pragma once

#include "executor.hpp"
#include "instance_exchange.hpp"
#include "profiler.hpp"
#include "program.hpp"
#include "replica.hpp"
#include "run_errors.hpp"
#include "stream_state.hpp"
#include "worker_pool.hpp"

#include "dist/instance_layout.hpp"
#include "ir/ir_hold.hpp"

#include "pxl/report.hpp"
#include "pxl/session.hpp"

#include <atomic>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

namespace pxl::emu::detail {

class Engine {
public:
  /// `instances`: the layout of the instances of a distributed session (over more than one),
  /// read from pxl::dist by the Session; the emulator reads no global of pxl::dist.
  Engine(const Ir& ir, Target target, SessionOptions options,
         std::optional<dist::detail::InstanceLayout> instances);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  ~Engine();

  void attach();
  void detach();
  bool attached();

  void run(const StreamInputs& inputs, StreamOutputs& outputs, bool outputs_from_caller,
           StepObserver* observer);
  std::future<StreamOutputs> run_async(StreamInputs inputs, StepObserver* observer);
  std::vector<HostToDeviceStream> expected_inputs();
  StreamOutputs create_host_outputs();
  void set_h2d_callback(const HostToDeviceStream& stream, H2DCallback fn, FeedOptions options);
  void set_d2h_callback(const DeviceToHostStream& stream, D2HCallback fn, OutfeedOptions options);
  std::shared_ptr<OutfeedQueue> outfeed_queue(const DeviceToHostStream& stream,
                                              OutfeedOptions options);
  void set_outfeed_mode(const DeviceToHostStream& stream, OutfeedMode mode);
  std::vector<FeedStats> feed_stats();

  std::map<Tensor, HostTensor> get_tensors_data(const std::vector<Tensor>& ts);
  void write_variables_data(const std::map<Tensor, HostTensor>& data);
  void weights_to_host();
  void weights_from_host();
  std::vector<ReplicaDrift> check_replicas_in_sync();

  /// One replica's memory: every replica has the same program on its own IPUs.
  const MemoryReport& memory_report() const { return program_.memory; }
  Profile profile();
  void write_trace(const std::string& path);
  const Target& target() const { return target_; }
  const SessionOptions& options() const { return options_; }
  unsigned num_workers() const { return pool_->size(); }
  /// The Ir, or null once it has been destroyed (the Engine keeps what it reads of it).
  Ir* ir() const { return hold_.ir(); }

private:
  void verify() const;
  /// Locks the session for a call named `what`; SessionError when the calling thread runs one
  /// of this session's stream callbacks (the call would wait for the run that waits for it).
  std::unique_lock<std::mutex> enter(std::string_view what);
  /// Throws SessionError naming `what` once destruction has begun (the run is cancelled).
  void check_not_closing(std::string_view what) const;
  /// Replaces stream `s`'s channel, first closing the OutfeedQueue of the one it replaces.
  void bind_channel(StreamState& s, std::unique_ptr<CallbackChannel> channel);
  /// A stream a call named `what` binds a channel to, and the channel's queue depth.
  struct FeedTarget {
    StreamState& stream;
    std::size_t depth;
  };
  /// Checks the arguments every binding call takes (the caller holds the lock): `stream`
  /// belongs to the session's Ir, then `depth` is valid.
  template <typename Handle>
  FeedTarget feed_target(std::string_view what, const Handle& stream, std::int64_t depth);
  /// Binds `fn` as the consumer of d2h stream `s`, after the earlier one has delivered what it
  /// still had queued, and stores every element or only the last as `mode` says.
  void bind_consumer(StreamState& s, std::size_t depth, D2HCallback fn, OutfeedMode mode);
  void require_attached(std::string_view what) const;
  void check_tensor(std::string_view what, const Tensor& t) const;
  template <typename Handle>
  std::uint32_t stream_index(std::string_view what, const Handle& s) const;
  /// The streams run() needs arrays for, kept current (construction, callbacks) so that run()
  /// does not allocate.
  void refresh_expected();
  const std::vector<HostToDeviceStream>& expected_inputs_locked() const;
  const std::vector<DeviceToHostStream>& expected_outputs_locked() const;
  void weights_to_host_locked();
  void apply_pending_detaches_locked();
  void weights_from_host_locked();
  /// Which of `t`'s host values replica `replica` (a global index) holds: its group's, or
  /// the only one.
  std::int64_t host_slot(TensorId t, std::int64_t replica) const;
  /// The replicas sharing host value `slot` of `t`, in order (for a replica-sharded variable,
  /// the k-th holds shard k of it).
  std::vector<std::int64_t> slot_replicas(TensorId t, std::int64_t slot) const;
  /// The replica whose value of `t` replica `replica` must equal: the first of its group, or
  /// for a sharded variable the one holding the same shard of the same value.
  std::int64_t reference_replica(TensorId t, std::int64_t replica) const;
  /// Writes what replica `replica` (global) holds of `t` to `dst`: its group's value from the
  /// host copy `host`, or its shard of that value.
  void value_to_device(TensorId t, std::int64_t replica, const HostTensor& host,
                       std::byte* dst) const;
  /// Bytes of one host value of `t` (the whole tensor for a replica-sharded variable).
  std::size_t value_bytes(TensorId t) const;
  /// The global index of this process's replica `r`.
  std::int64_t global(std::size_t r) const {
    return replica_offset_ + static_cast<std::int64_t>(r);
  }
  std::int64_t total_replicas() const { return view_.replication_factor(); }
  /// (replicas, *shape): every replica's value of `t` (RetrievalMode::all_replicas), from the
  /// device when attached (collective when distributed), else from the host copies.
  HostTensor all_replicas_value(TensorId t) const;
  /// Checks a run's arguments (the caller holds the lock): attachment, then the input arrays,
  /// then the output arrays unless `outputs` is null (they are then made by the run).
  /// `inputs` with each int64, uint64 or float64 array of a stream of its 32-bit dtype
  /// downcast (PopXL's `downcast_inputs`), or none when no array is 64-bit.
  std::optional<StreamInputs> downcast_inputs(std::string_view what,
                                              const StreamInputs& inputs) const;
  void validate_run(std::string_view what, const StreamInputs& inputs,
                    const StreamOutputs* outputs) const;
  /// An output array for `s`: one element per transfer, or one for OutfeedMode::last.
  Shape output_shape(const DeviceToHostStream& s) const;
  /// A bound stream's queue depth: `requested`, or the session's default for 0.
  std::size_t queue_depth(std::string_view what, std::int64_t requested) const;
  void run_locked(const StreamInputs& inputs, StreamOutputs& outputs, StepObserver* observer);
  /// Writes the autoReport files into autoReport.directory (docs/report.md): the memory
  /// report and the page, the profile, and after a captured run (`trace`) the trace. IoError
  /// when a file cannot be written.
  void write_auto_report(bool trace);

  pxl::detail::IrHold hold_; ///< keeps the Ir's storage alive and frozen
  IrView view_;
  Target target_;
  SessionOptions options_;
  std::mutex mutex_; ///< serialises every call on the session
  /// Set when destruction begins: stream queues close, a run in flight ends with SessionError.
  std::atomic<bool> closing_{false};
  std::unique_ptr<WorkerPool> pool_;
  std::vector<StreamState> streams_;
  Program program_; ///< compiled once, shared by the replicas
  /// A distributed session's link to the other instances, and its collectives' exchange;
  /// null in one process.
  std::unique_ptr<dist::detail::InstanceLink> link_;
  std::unique_ptr<InstanceExchange> exchange_;
  std::int64_t replica_offset_ = 0; ///< the global index of replicas_[0]
  /// The program bound to each replica's device memory, stepped together by the executor
  /// (this instance's replicas when distributed).
  std::vector<std::unique_ptr<Replica>> replicas_;
  /// Declared after the program and replicas: destroying it stops the workers first.
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<Profiler> profiler_; ///< with SessionOptions::profile
  /// What the engine options' autoReport keys ask for, and the runs it has reported.
  report::AutoReport auto_report_;
  std::int64_t reported_runs_ = 0;
  std::vector<HostToDeviceStream> expected_in_;
  std::vector<DeviceToHostStream> expected_out_;
  /// By variable: its value, or one per group for a grouped variable ((num_groups, *shape)).
  std::unordered_map<TensorId, HostTensor> host_weights_;
  /// The program's variables, on the IPU or in Streaming Memory, in tensor order.
  std::vector<TensorId> variables_;
  /// What the kernels of the current run found wrong (remote offsets out of range).
  RunErrors run_errors_;
  int attach_depth_ = 0;
  /// Detaches not yet applied because a run held the lock (see detach); ordered against
  /// running_ so that either the detaching thread or the run applies each one.
  std::atomic<int> pending_detaches_{0};
  std::atomic<bool> running_{false}; ///< run_locked is executing the program
  bool host_stale_ = false; ///< a run changed device weights since the last weights_to_host
  /// Completes when the latest run_async has finished: the next one waits for it (FIFO).
  std::shared_future<void> last_async_;
  /// A run_async's thread, the future it completes as its last act, and the promise of its
  /// outputs (destroyed once the thread is joined).
  struct AsyncRun {
    std::thread thread;
    std::shared_future<void> done;
    std::shared_ptr<std::promise<StreamOutputs>> result;
  };
  /// The threads of run_async calls not yet joined, oldest first; destruction joins them.
  std::vector<AsyncRun> async_runs_;
};

} // namespace pxl::emu::detail
