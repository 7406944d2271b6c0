// pxl::Session: compiles an Ir for the built-in IPU emulator and runs it with host streams.
#pragma once

#include "pxl/core/host_tensor.hpp"
#include "pxl/emu/memory_report.hpp"
#include "pxl/emu/target.hpp"
#include "pxl/ir/ir.hpp"
#include "pxl/ir/stream.hpp"
#include "pxl/ir/tensor.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string_view>
#include <vector>

namespace pxl {

namespace emu::detail {
class Engine;
}

/// How a session runs. An aggregate: `Session s{ir, "ipu_model", {.workers = 2}}`.
struct SessionOptions {
  /// Host worker threads executing the plan; 0 means one per core. Results are bitwise
  /// identical for any count.
  unsigned workers = 0;
  /// Build even when the plan exceeds the target's memory (the IPU Model's behaviour), so
  /// that `memory_report()` can be read; otherwise construction throws OutOfMemoryError.
  bool allow_out_of_memory = false;
  /// Elements buffered between a stream callback and the device (at least 1).
  std::int64_t stream_queue_depth = 2;
  /// Copy the weights back to the host when the outermost attachment ends.
  bool weights_to_host_on_exit = true;
};

/// Arrays for h2d streams, each shaped `[num_host_transfers, replication_factor, *shape]`
/// with each of the two leading dims dropped when it is 1: element k of replica r is
/// `array[k][r]`. As in PopXL, when num_host_transfers > 1 the first dim may be larger than
/// num_host_transfers; the elements past it are not used (not written, for outputs).
using StreamInputs = std::map<HostToDeviceStream, HostTensor>;
/// Arrays of d2h streams, shaped like StreamInputs.
using StreamOutputs = std::map<DeviceToHostStream, HostTensor>;
/// Fills the next element of an h2d stream: the tensor passed has the stream's shape and dtype.
using H2DCallback = std::function<void(HostTensor& element)>;
/// Receives the next element of a d2h stream.
using D2HCallback = std::function<void(const HostTensor& element)>;

/// A compiled Ir on the emulator (PopXL's `popxl.Session`).
///
///     pxl::Session session{ir, "ipu_model"};
///     auto attached = session.attach();          // `with session:`
///     auto out = session.run({{x_stream, x}});   // out.at(y_stream)
///
/// Construction verifies the Ir and compiles every graph into a plan: ops in creation order,
/// every buffer preallocated (intermediates by liveness, with reuse), a called graph compiled
/// once and called with argument copies (outlined) unless the call asks to be inlined
/// (ops::CallOptions::inline_graph: the graph's ops are expanded at the call site, working on
/// the caller's buffers), `repeat` as a loop. The Ir must not change afterwards.
///
/// Streams follow Poplar: each execution of a host_load takes its stream's next element and each
/// host_store writes the next one. Within one run a stream used more than num_host_transfers
/// times wraps around to element 0 (a load reads element k mod num_host_transfers, a store
/// overwrites it), as Poplar's circular stream buffers do.
///
/// Thread safety: distinct sessions may be used from different threads at once. Calls on one
/// session are serialised by a mutex: a concurrent `run` waits for the one in progress.
///
/// Replication: with `ir.replication_factor() == R > 1` the session holds R independent copies
/// of the program, each with its own device memory and variables (all initialised from the
/// same host values). A run executes the replicas one after the other on the worker pool
/// (deterministic: replica r's results are bitwise those of a single-replica run on its
/// slice `array[k][r]` of every stream array). `get_tensor_data` returns replica 0's value
/// (PopXL's behaviour for variables without a replica grouping); `write_variable_data` and
/// the attach-time weight transfer write every replica. `memory_report()` and the
/// out-of-memory check describe one replica: `emu::Target::ipus` counts the IPUs of one
/// replica, and every replica has the same usage. A callback-fed stream is shared by the
/// replicas: replica 0's loads (or stores) take the next elements first, then replica 1's.
class Session {
public:
  /// Keeps the session attached while alive (PopXL's `with session:`): on entry the weights
  /// go to the device, on exit of the outermost guard they come back to the host. Nested
  /// guards transfer nothing. Movable, not copyable; a moved-from guard does nothing. A guard
  /// must not outlive its session.
  class [[nodiscard]] Attachment {
  public:
    Attachment(Attachment&& other) noexcept : engine_(other.engine_) { other.engine_ = nullptr; }
    Attachment(const Attachment&) = delete;
    Attachment& operator=(const Attachment&) = delete;
    Attachment& operator=(Attachment&&) = delete;
    ~Attachment();

  private:
    friend class Session;
    explicit Attachment(emu::detail::Engine* engine) : engine_(engine) {}
    emu::detail::Engine* engine_;
  };

  /// `device` is "ipu_model" (the built-in emulator of an ipu2 system with as many IPUs as the
  /// Ir uses); "ipu_hw" throws SessionError (no hardware: use "ipu_model").
  explicit Session(Ir& ir, std::string_view device = "ipu_model", SessionOptions options = {});
  /// The emulator configured as `target`.
  Session(Ir& ir, emu::Target target, SessionOptions options = {});
  /// A moved-from session may only be destroyed or assigned to; guards follow the move.
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session();

  [[nodiscard]] Attachment attach();
  bool is_attached() const;

  /// Runs the main graph once. Every expected stream must be given exactly once (StreamError
  /// lists missing and unexpected ones), with the right shape (ShapeError) and dtype
  /// (DTypeError); nothing runs otherwise. Returns one array per d2h stream stored to.
  /// SessionError unless attached.
  StreamOutputs run(const StreamInputs& inputs = {});
  /// As run, writing into caller-owned arrays (checked like the inputs).
  void run_with_outputs(const StreamInputs& inputs, StreamOutputs& outputs);
  /// The h2d streams `run` needs: those some host_load reads, minus callback-fed ones.
  std::vector<HostToDeviceStream> expected_inputs() const;
  /// Zeroed arrays for every d2h stream `run` fills (callback-fed ones excepted).
  StreamOutputs create_host_outputs() const;

  /// Feeds `stream` from `fn` instead of an array: a producer thread calls `fn` to fill the
  /// next element ahead of the device into a queue of `stream_queue_depth` elements, blocking
  /// while it is full; a host_load blocks while it is empty. Elements fetched ahead stay queued
  /// for the next run. The stream then is no longer an expected input.
  void set_h2d_callback(const HostToDeviceStream& stream, H2DCallback fn);
  /// Delivers every element stored to `stream` to `fn`, called in order on a consumer thread
  /// through a bounded queue (a host_store blocks while it is full; nothing is dropped). `run`
  /// returns after every element has been delivered.
  void set_d2h_callback(const DeviceToHostStream& stream, D2HCallback fn);

  /// Host copy of a variable or constant (ValueError for other tensors). When attached and a
  /// run has made the host copy stale, the weights are copied back first (from replica 0).
  HostTensor get_tensor_data(const Tensor& t);
  std::map<Tensor, HostTensor> get_tensors_data(const std::vector<Tensor>& ts);
  /// Replaces a variable's value (ValueError for non-variables, DTypeError / ShapeError when
  /// `data` does not match); when attached, the device copy of every replica is updated too.
  void write_variable_data(const Tensor& t, const HostTensor& data);
  void write_variables_data(const std::map<Tensor, HostTensor>& data);
  /// Explicit weight transfers (SessionError unless attached).
  void weights_to_host();
  void weights_from_host();

  /// Device memory per IPU of one replica (always-live and peak not-always-live) and the
  /// largest tensors.
  emu::MemoryReport memory_report() const;
  const emu::Target& target() const;
  unsigned num_workers() const;
  Ir& ir() const;

private:
  std::unique_ptr<emu::detail::Engine> engine_;
};

} // namespace pxl
