// pxl::Session: compiles an Ir for the built-in IPU emulator and runs it with host streams.
#pragma once

#include "pxl/core/error.hpp"
#include "pxl/core/host_tensor.hpp"
#include "pxl/core/input_array.hpp"
#include "pxl/emu/memory_report.hpp"
#include "pxl/emu/profile.hpp"
#include "pxl/emu/step_observer.hpp"
#include "pxl/emu/target.hpp"
#include "pxl/ir/ir.hpp"
#include "pxl/ir/stream.hpp"
#include "pxl/ir/tensor.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace pxl {

namespace emu::detail {
class Engine;
}

/// A replica whose copy of a variable has drifted from the copy it should share.
struct ReplicaDrift {
  std::string variable; ///< the variable's id
  std::int64_t replica = 0;
  std::int64_t reference_replica = 0; ///< the first replica of its group
  double max_abs_difference = 0;
};

/// How a session runs. An aggregate: `Session s{ir, "ipu_model", {.workers = 2}}`.
struct SessionOptions {
  /// Host worker threads executing the plan; 0 means one per hardware thread (in a
  /// distributed session, the host's hardware threads shared out among the instances on it,
  /// dist::num_local_instances(), at least one each). Results are bitwise identical for any
  /// count. Workers share each step's work out in chunks, so one
  /// that another process keeps off its core delays the rest by at most its chunk. More
  /// workers than the host's hardware threads is a SessionError unless `oversubscribe` is set:
  /// the extra threads would only compete with the workers for the cores.
  unsigned workers = 0;
  /// Accept more workers than hardware threads (to test the work split, not to run fast).
  bool oversubscribe = false;
  /// Build even when the plan exceeds the target's memory (the IPU Model's behaviour), so
  /// that `memory_report()` can be read; otherwise construction throws OutOfMemoryError. The
  /// host still has to hold the plan: one it cannot allocate is an OutOfMemoryError either way.
  bool allow_out_of_memory = false;
  /// Elements buffered between a stream callback and the device (at least 1; ValueError
  /// otherwise).
  std::int64_t stream_queue_depth = 2;
  /// Copy the weights back to the host when the outermost attachment ends.
  bool weights_to_host_on_exit = true;
  /// Estimate the device time of every step the runs execute (the cost model of
  /// `emu/cost_model.hpp`) for `profile()` and `write_trace()`. Off, a run pays nothing for it.
  bool profile = false;
  /// Spread the Ir's replicas over the instances of a distributed run (`pxl/dist.hpp`, as
  /// PopXL's `Ir(replication="popdist")`): with pxl::dist::num_instances() = N > 1, the Ir's
  /// replication factor must be dist::num_total_replicas() (SessionError otherwise), and this
  /// session emulates replicas dist::replica_offset() onwards, dist::num_local_replicas() of
  /// them. See "Instances" in Session's description. Ignored in a single instance.
  bool distributed = false;
  /// Poplar's engine options, keyed as in the JSON object of the POPLAR_ENGINE_OPTIONS
  /// environment variable, with Poplar's string values ("true", "2", "./reports"). The
  /// `autoReport.*` keys make the session write its reports into a directory
  /// (docs/report.md); other keys are listed once on stderr. The session reads
  /// POPLAR_ENGINE_OPTIONS when it is built and merges these over it key by key: a key set
  /// here wins over the same key in the variable. A malformed variable or a bad value throws
  /// ValueError naming the key, what was expected and what was found.
  std::map<std::string, std::string> engine_options;
  /// Round the float16 results of in-place updates stochastically, as the IPU does with
  /// stochastic rounding on (PopART's `enableStochasticRounding`): `scaled_add`/`scaled_add_`,
  /// `add_`, `sub_`, `accumulate_` and the other `var_updates` accumulators, and
  /// `adam_var_update`. A result between two halves rounds up with the probability of its
  /// distance from the lower one, so a float16 weight given updates far below its spacing
  /// moves as float32 would, on average; rounding to nearest would lose them. Other kernels
  /// round to nearest. The random bits are a function of `stochastic_rounding_seed`, the op,
  /// how often its step has run in this Session and the element: a run is reproducible from the
  /// seed, bitwise the same for any worker count, and the same on every replica (replicas
  /// holding the same weights and gradients stay in sync). Such updates are not folded into
  /// the matmul or convolution computing their operand (docs/semantics.md, "Fusions").
  bool stochastic_rounding = false;
  /// The seed of stochastic rounding's random bits.
  std::uint64_t stochastic_rounding_seed = 0;
};

/// Arrays for h2d streams, each shaped `[num_host_transfers, replication_factor, *shape]`
/// with each of the two leading dims dropped when it is 1: element k of replica r is
/// `array[k][r]`. As in PopXL, when num_host_transfers > 1 the first dim may be larger than
/// num_host_transfers; the elements past it are not used (not written, for outputs). Arrays
/// given as lvalues are borrowed for the run, temporaries are moved in (see InputArray).
using StreamInputs = std::map<HostToDeviceStream, InputArray>;
/// Arrays of d2h streams, shaped like StreamInputs.
using StreamOutputs = std::map<DeviceToHostStream, HostTensor>;
/// Fills the next element of an h2d stream: the tensor passed has the stream's shape and dtype.
using H2DCallback = std::function<void(HostTensor& element)>;
/// Receives the next element of a d2h stream.
using D2HCallback = std::function<void(const HostTensor& element)>;

/// How an h2d stream bound to a producer is fed (Poplar's buffering depth).
struct FeedOptions {
  /// Elements the producer may prepare ahead of the device; 0 means
  /// SessionOptions::stream_queue_depth (negative: ValueError).
  std::int64_t depth = 0;
};

/// Which elements of a d2h stream reach the host (TensorFlow's outfeed modes).
enum class OutfeedMode {
  all,  ///< every element, in order
  last, ///< only the last element each replica stores in a run
};

/// How a d2h stream bound to a consumer is drained.
struct OutfeedOptions {
  /// Elements the device may store ahead of the consumer; 0 means
  /// SessionOptions::stream_queue_depth (negative: ValueError).
  std::int64_t depth = 0;
  OutfeedMode mode = OutfeedMode::all;
};

/// What a producer- or consumer-bound stream has done since it was bound (Session::feed_stats).
struct FeedStats {
  std::string stream; ///< the stream's name
  bool host_to_device = true;
  /// Elements the device took from (h2d) or handed to (d2h) the queue.
  std::int64_t elements = 0;
  /// Total time the device waited: for an empty queue (h2d: the producer is behind) or a full
  /// one (d2h: the consumer is behind). Zero means the host kept up.
  std::chrono::nanoseconds device_wait{0};
  /// Most elements queued at once (at most `depth`): a full queue on an h2d stream means the
  /// producer is ahead of the device.
  std::size_t max_occupancy = 0;
  std::size_t depth = 0;
};

/// A d2h stream's elements waiting to be polled (Session::outfeed_queue): bounded, in order,
/// nothing dropped. The session's consumer thread pushes each element as the device stores it
/// and blocks while the queue is full, which in turn holds the device back once the stream's
/// own queue is full too: pop from another thread while the run goes on (run_async), or make
/// the capacity at least the elements one run stores. Safe to use from any thread. When the
/// session is destroyed or the stream is bound to another consumer, the queue is closed: what
/// it holds can still be popped, nothing more arrives, and `pop` on an empty closed queue
/// throws SessionError instead of waiting forever.
class OutfeedQueue {
public:
  explicit OutfeedQueue(std::size_t capacity) : capacity_(std::max<std::size_t>(1, capacity)) {}
  OutfeedQueue(const OutfeedQueue&) = delete;
  OutfeedQueue& operator=(const OutfeedQueue&) = delete;

  /// The oldest element, or nothing when none is queued.
  std::optional<HostTensor> try_pop();
  /// The oldest element, waiting for one (SessionError once the queue is closed and empty).
  HostTensor pop();
  std::size_t size() const;
  std::size_t capacity() const { return capacity_; }
  /// Whether the session has stopped delivering to this queue.
  bool closed() const;

private:
  friend class emu::detail::Engine;
  /// Waits while the queue is full; drops `element` once the queue is closed.
  void push(const HostTensor& element);
  void close();

  std::size_t capacity_;
  bool closed_ = false;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<HostTensor> elements_;
};

/// A compiled Ir on the emulator (PopXL's `popxl.Session`).
///
///     pxl::Session session{ir, "ipu_model"};
///     auto attached = session.attach();          // `with session:`
///     auto out = session.run({{x_stream, x}});   // out.at(y_stream)
///
/// Construction verifies the Ir and compiles it once into a program: per graph its ops in
/// creation order as steps that each describe themselves (emu::StepInfo), every buffer
/// preallocated (intermediates by liveness, with reuse), a called graph compiled once and
/// called with argument copies (outlined) unless the call asks to be inlined
/// (ops::CallOptions::inline_graph: the graph's ops are expanded at the call site, working on
/// the caller's buffers), `repeat` as a loop. Each replica then binds the program to its own
/// memory.
///
/// The Ir is frozen while a Session holds it: changing it (replication factor,
/// num_host_transfers, new ops, graphs, streams, tensors, autodiff) throws GraphError, as
/// PopXL's prepared Ir does. The Session shares ownership of what it reads of the Ir, so it
/// stays usable when the Ir object is destroyed first (`ir()` then throws SessionError).
///
/// Streams follow Poplar: each execution of a host_load takes its stream's next element and each
/// host_store writes the next one. Within one run a stream used more than num_host_transfers
/// times wraps around to element 0 (a load reads element k mod num_host_transfers, a store
/// overwrites it), as Poplar's circular stream buffers do.
///
/// Thread safety: distinct sessions may be used from different threads at once. Calls on one
/// session are serialised by a mutex: a concurrent `run` waits for the one in progress, and
/// runs started with `run_async` execute one at a time in the order they were started.
///
/// Infeeds and outfeeds: an h2d stream may be bound to a producer (`set_h2d_callback`, or
/// `set_h2d_source` for a range) that a background thread runs ahead of the device into a
/// bounded queue; a d2h stream may be bound to a consumer (`set_d2h_callback`) called on a
/// background thread as each element arrives: these are the per-step callbacks, firing while
/// the device loop still runs. Queues apply back-pressure: nothing is dropped or overwritten.
/// `feed_stats` tells how long the device waited for them.
///
/// Replication: with `ir.replication_factor() == R > 1` the session binds the program to R
/// replicas, each with its own device memory and variables (all initialised from the same
/// host values). A run steps the replicas in lockstep on the worker pool: every replica
/// finishes a step before any starts the next (deterministic: replica r's results are bitwise
/// those of a single-replica run on its slice `array[k][r]` of every stream array).
/// `get_tensor_data` returns replica 0's value (PopXL's behaviour for variables without a
/// replica grouping); `write_variable_data` and the attach-time weight transfer write every
/// replica. `memory_report()` and the out-of-memory check describe one replica:
/// `emu::Target::ipus` counts the IPUs of one replica, and every replica has the same usage.
/// A callback-fed stream is shared by the replicas and its elements go step-major, as
/// TensorFlow's `[steps, replicas]` outfeeds: step 0's load (or store) of replica 0, of
/// replica 1, ..., then step 1's of every replica, and so on.
///
/// Instances (SessionOptions::distributed, under `mpirun -np N`): every instance builds the
/// same Ir and session and makes the same calls in the same order; each emulates its L = R / N
/// local replicas (global indices dist::replica_offset() onwards). Collectives span the
/// replicas of every instance: the inputs are exchanged over MPI and reduced in replica
/// order, so results are bitwise those of one process running all R replicas. Stream arrays
/// and callback-fed streams carry the local replicas only (`[num_host_transfers, L, *shape]`).
/// `get_tensor_data`, `weights_to_host` and the detach-time transfer are collective: each
/// value comes from the instance holding the replica it is read from and reaches every
/// instance (as PopXL gathers weights over MPI); `check_replicas_in_sync` compares every
/// replica of every instance. `memory_report` and `profile` describe this instance.
///
/// Observing: `run`, `run_with_outputs` and `run_async` take an optional emu::StepObserver
/// that sees every executed step with its StepInfo and host timing; without one the run pays
/// nothing for it.
class Session {
public:
  /// Keeps the session attached while alive (PopXL's `with session:`): on entry the weights
  /// go to the device, on exit of the outermost guard they come back to the host. Nested
  /// guards transfer nothing. Movable, not copyable; a moved-from guard does nothing. A guard
  /// may outlive its session: it then does nothing.
  class [[nodiscard]] Attachment {
  public:
    Attachment(Attachment&& other) noexcept = default;
    Attachment(const Attachment&) = delete;
    Attachment& operator=(const Attachment&) = delete;
    Attachment& operator=(Attachment&&) = delete;
    ~Attachment();

  private:
    friend class Session;
    explicit Attachment(std::weak_ptr<emu::detail::Engine> engine) : engine_(std::move(engine)) {}
    std::weak_ptr<emu::detail::Engine> engine_;
  };

  /// `device` is "ipu_model" (the built-in emulator of an ipu2 system with as many IPUs as the
  /// Ir uses); "ipu_hw" throws SessionError (no hardware: use "ipu_model").
  explicit Session(Ir& ir, std::string_view device = "ipu_model", SessionOptions options = {});
  /// The emulator configured as `target`.
  Session(Ir& ir, emu::Target target, SessionOptions options = {});
  /// A moved-from session throws SessionError on every use but destruction and assignment;
  /// guards follow the move.
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session();

  [[nodiscard]] Attachment attach();
  bool is_attached() const;

  /// Runs the main graph once. Every expected stream must be given exactly once (StreamError
  /// lists missing and unexpected ones), with the right shape (ShapeError) and dtype
  /// (DTypeError); nothing runs otherwise. An int64, uint64 or float64 array of a stream of
  /// int32, uint32 or float32 is downcast first, as PopXL's `run(downcast_inputs=True)`, its
  /// default (pxl has no `false`: the device never takes 64-bit data); an integer outside the
  /// 32-bit range is a ValueError naming the stream, the value and its index. Returns one array
  /// per d2h stream stored to.
  /// SessionError unless attached. A run that fails at a step (a remote offset out of range,
  /// a callback or observer that throws) stops after that step on every replica and throws;
  /// the variables keep what the steps up to it wrote (no rollback) and the session stays
  /// usable (docs/semantics.md, "Failed runs").
  StreamOutputs run(const StreamInputs& inputs = {}, emu::StepObserver* observer = nullptr);
  /// As run, writing into caller-owned arrays (checked like the inputs).
  void run_with_outputs(const StreamInputs& inputs, StreamOutputs& outputs,
                        emu::StepObserver* observer = nullptr);
  /// As run, in the background, so that the host can feed and drain bound streams while the
  /// device works. The inputs are kept until the run ends: owned arrays are moved in, borrowed
  /// ones copied (so the caller may reuse them at once; feed a long loop through
  /// set_h2d_source or set_h2d_callback to avoid the copy). The arguments are
  /// checked before this returns (the same errors as run, thrown here); errors of the run
  /// itself (a failing producer, say) come out of the future's get(). Runs on one session stay
  /// serialised: one started while another is in flight executes after it. Destroying the
  /// session cancels the run (it stops after its current step; get() throws SessionError)
  /// and waits for it; ending the attachment does not wait, the run then goes on and the
  /// detach happens when it ends. The future does not wait for the run when dropped.
  /// An observer must outlive the run.
  std::future<StreamOutputs> run_async(StreamInputs inputs = {},
                                       emu::StepObserver* observer = nullptr);
  /// The h2d streams `run` needs: those some host_load reads, minus callback-fed ones.
  std::vector<HostToDeviceStream> expected_inputs() const;
  /// Zeroed arrays for every d2h stream `run` fills (callback-fed ones excepted).
  StreamOutputs create_host_outputs() const;

  /// Feeds `stream` from `fn` instead of an array: a producer thread calls `fn` to fill the
  /// next element ahead of the device into a queue of `options.depth` elements, blocking
  /// while it is full; a host_load blocks while it is empty. Elements fetched ahead stay queued
  /// for the next run, so `fn` may be called between and after runs, until the session is
  /// destroyed or the callback replaced: what it captures must live that long. The stream
  /// then is no longer an expected input. When `fn` throws, the run that takes the element it
  /// failed to make stops after that host_load (the device never hangs) and rethrows the
  /// error; the next run gets the elements `fn` makes afterwards.
  void set_h2d_callback(const HostToDeviceStream& stream, H2DCallback fn, FeedOptions options = {});
  /// Feeds `stream` from the elements of `range`, in order, as set_h2d_callback does. Any
  /// input range (a container, a range-v3 pipeline) whose elements convert to HostTensor and
  /// have the stream's shape and dtype; it is moved (or copied) into the session, and iterated
  /// on the producer thread only. When it ends while the device still needs elements, the run
  /// fails with StreamError ("... ended after N elements"); elements fetched ahead but never
  /// needed raise nothing.
  template <typename Range>
  void set_h2d_source(const HostToDeviceStream& stream, Range&& range, FeedOptions options = {});
  /// Delivers the elements stored to `stream` to `fn`, called in order on a consumer thread
  /// through a bounded queue of `options.depth` elements (a host_store blocks while it is full;
  /// nothing is dropped) as they are stored, while the run goes on. With OutfeedMode::last only
  /// the last element each replica stores in a run is delivered, when the replica ends. `run`
  /// returns after every element has been delivered.
  void set_d2h_callback(const DeviceToHostStream& stream, D2HCallback fn,
                        OutfeedOptions options = {});
  /// Binds `stream` to a new OutfeedQueue of `options.depth` elements (0: stream_queue_depth)
  /// that another thread polls, as set_d2h_callback does with a callback (which it replaces;
  /// `options.mode` applies the same way). The queue stays valid after the session is gone.
  std::shared_ptr<OutfeedQueue> outfeed_queue(const DeviceToHostStream& stream,
                                              OutfeedOptions options = {});
  /// For a d2h stream filling an array: with OutfeedMode::last, `run` returns (and
  /// run_with_outputs expects) just the last element stored, shaped
  /// `[replication_factor, *shape]` with a replication factor of 1 dropped, instead of one
  /// element per host transfer. For a callback-bound stream this sets its mode.
  void set_outfeed_mode(const DeviceToHostStream& stream, OutfeedMode mode);
  /// Counters of every stream bound to a producer or consumer, in stream creation order,
  /// accumulated since it was bound. Like every call on the session, it waits for a run in
  /// progress.
  std::vector<FeedStats> feed_stats() const;

  /// Host copy of a variable or constant (ValueError for other tensors). When attached and a
  /// run has made the host copy stale, the weights are copied back first (from replica 0, or
  /// from each group's first replica). A variable with a replica grouping of several groups
  /// returns (num_groups, *shape); with RetrievalMode::all_replicas, (replicas, *shape), read
  /// from every replica.
  HostTensor get_tensor_data(const Tensor& t);
  std::map<Tensor, HostTensor> get_tensors_data(const std::vector<Tensor>& ts);
  /// Replaces a variable's value (ValueError for non-variables, DTypeError / ShapeError when
  /// `data` does not match); when attached, the device copy of every replica is updated too.
  /// A grouped variable takes one value per group, (num_groups, *shape), whatever its
  /// retrieval mode.
  void write_variable_data(const Tensor& t, const HostTensor& data);
  void write_variables_data(const std::map<Tensor, HostTensor>& data);
  /// Explicit weight transfers (SessionError unless attached).
  void weights_to_host();
  void weights_from_host();
  /// Replicas whose copy of a variable differs from the one its replica group should share
  /// (every replica for an ungrouped variable, the group's for a grouped one): data-parallel
  /// training that forgot to all-reduce its gradients drifts. Empty when in sync; compares
  /// bitwise. SessionError unless attached.
  std::vector<ReplicaDrift> check_replicas_in_sync();

  /// Device memory per IPU of one replica (always-live and peak not-always-live) and the
  /// largest tensors.
  emu::MemoryReport memory_report() const;
  /// memory_report() as JSON; IoError when the file cannot be written.
  void write_memory_report(const std::string& path) const;
  /// The estimated device time of the runs so far, per IPU, graph, op kind and op
  /// (SessionError unless the session was made with SessionOptions::profile).
  emu::Profile profile() const;
  /// Chrome/Perfetto trace-event JSON of the runs so far (their first
  /// Profiler::event_limit steps): a track per IPU with each step's estimated duration, calls,
  /// loops and branches as enclosing slices, host round trips, and a host track of the runs'
  /// wall-clock times. Opens in ui.perfetto.dev and chrome://tracing. SessionError unless
  /// profiling, IoError when the file cannot be written.
  void write_trace(const std::string& path) const;
  const emu::Target& target() const;
  unsigned num_workers() const;
  /// The Ir the session was built from; SessionError once it has been destroyed.
  Ir& ir() const;

private:
  emu::detail::Engine& engine() const;

  /// Shared with the guards, which hold it weakly.
  std::shared_ptr<emu::detail::Engine> engine_;
};

template <typename Range>
void Session::set_h2d_source(const HostToDeviceStream& stream, Range&& range, FeedOptions options) {
  using Stored = std::remove_cvref_t<Range>;
  // Lives in the callback (which is copyable, hence shared): the range and where it stands.
  struct Source {
    Stored range;
    std::optional<decltype(std::begin(std::declval<Stored&>()))> it;
    std::int64_t taken = 0;
  };
  auto source = std::make_shared<Source>(Source{std::forward<Range>(range), std::nullopt, 0});
  const std::string name = stream.name();
  set_h2d_callback(
      stream,
      [source, name](HostTensor& element) {
        if (!source->it)
          source->it.emplace(std::begin(source->range));
        if (*source->it == std::end(source->range))
          throw StreamError("Session::set_h2d_source: the range feeding stream '" + name +
                            "' ended after " + std::to_string(source->taken) +
                            " elements, but the device needs more");
        const HostTensor next = **source->it;
        if (next.spec() != element.spec())
          throw StreamError("Session::set_h2d_source: element " + std::to_string(source->taken) +
                            " of the range feeding stream '" + name + "' is " +
                            to_string(next.spec()) + ", the stream needs " +
                            to_string(element.spec()));
        std::copy(next.bytes().begin(), next.bytes().end(), element.bytes().begin());
        ++*source->it;
        ++source->taken;
      },
      options);
}

} // namespace pxl
