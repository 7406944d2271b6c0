// Engine: running the plan, with the host arrays and callbacks of its streams.
#include "engine.hpp"
#include "ir/handle_check.hpp"
#include "ir/op_builder.hpp"

#include "pxl/core/error.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <set>
#include <utility>

namespace pxl::emu::detail {

namespace {
/// [num_host_transfers, replicas, *shape] with each leading dim dropped when it is 1.
Shape host_array_shape(const TensorSpec& spec, std::int64_t transfers, std::int64_t replicas) {
  Shape s;
  if (transfers != 1)
    s.push_back(transfers);
  if (replicas != 1)
    s.push_back(replicas);
  s.insert(s.end(), spec.shape.begin(), spec.shape.end());
  return s;
}

/// Whether `shape` fits host_array_shape(spec, transfers, replicas), where PopXL also accepts
/// a leading dim larger than num_host_transfers (the extra elements are not used). Compares
/// in place: run() must not allocate.
bool acceptable_shape(const Shape& shape, const TensorSpec& spec, std::int64_t transfers,
                      std::int64_t replicas) {
  const std::size_t lead = (transfers != 1 ? 1 : 0) + (replicas != 1 ? 1 : 0);
  if (shape.size() != lead + spec.shape.size())
    return false;
  std::size_t d = 0;
  if (transfers != 1 && shape[d++] < transfers)
    return false;
  if (replicas != 1 && shape[d++] != replicas)
    return false;
  return std::equal(spec.shape.begin(), spec.shape.end(),
                    shape.begin() + static_cast<std::ptrdiff_t>(d));
}

/// "RemoteLoad.7 (step 3 of graph 'body', iteration 2 of 4 of Loop.5 at step 1 of
/// the main graph)": the step a run stopped after, for its error.
std::string stopped_step(const IrView& view, const RunErrors::Where& where) {
  auto op = [&](const StepInfo& info) {
    // "MatMul.101", as print_schedule shows the op.
    return info.op ? std::string(op_type_name(view.kind(*info.op))) + "." +
                         std::to_string(info.op->value)
                   : std::string("a copy");
  };
  auto at = [&](const StepInfo& info, std::size_t index) {
    return "step " + std::to_string(index) + " of " +
           (info.graph == IrView::main_graph() ? std::string("the main graph")
                                               : "graph '" + view.name(info.graph) + "'");
  };
  std::string r =
      where.step ? op(*where.step) + " (" + at(*where.step, where.index) : std::string("a step (");
  if (where.depth > where.frames.size())
    r += ", inside " + std::to_string(where.depth - where.frames.size()) + " more calls";
  for (std::size_t k = std::min(where.depth, where.frames.size()); k-- > 0;) {
    const RunErrors::Frame& f = where.frames[k];
    r += f.iteration >= 0 ? ", iteration " + std::to_string(f.iteration) + " of " +
                                std::to_string(f.step->trips) + " of "
                          : std::string(", called by ");
    r += op(*f.step) + " at " + at(*f.step, f.index);
  }
  return r + ")";
}

std::string quoted_list(const std::set<std::string>& names) {
  std::string r = "[";
  for (const auto& n : names)
    r += (r.size() > 1 ? ", '" : "'") + n + "'";
  return r + "]";
}

/// StreamError listing both the missing and the unexpected streams, then per-array shape
/// (ShapeError) and dtype (DTypeError) checks. `role` is "input" or "output"; `last(s)` says
/// whether an output stream keeps only its last element (OutfeedMode::last). `replicas` are
/// the session's own (this instance's, when distributed).
template <typename Handle, typename Array, typename Last>
void validate_arrays(const IrView& ir, std::int64_t replicas, const std::map<Handle, Array>& arrays,
                     const std::vector<Handle>& expected, std::string_view what,
                     std::string_view role, Last last) {
  const std::string_view replicas_name =
      replicas == ir.replication_factor() ? "replication_factor" : "local replicas";
  // The handles given are checked here, once per call: the run loop reads none.
  for (const auto& [s, array] : arrays)
    pxl::detail::require_usable(s, what);
  std::set<std::string> missing, unexpected;
  for (const auto& s : expected)
    if (!arrays.contains(s))
      missing.insert(s.name());
  for (const auto& [s, array] : arrays) {
    if (!ir.owns(s))
      unexpected.insert(s.name() + " (of another Ir)");
    else if (std::find(expected.begin(), expected.end(), s) == expected.end())
      unexpected.insert(s.name());
  }
  if (!missing.empty() || !unexpected.empty())
    throw StreamError(std::string(what) + ": the " + std::string(role) +
                      " arrays do not match the streams the session expects; missing: " +
                      quoted_list(missing) + "; unexpected: " + quoted_list(unexpected) +
                      " (see Session::expected_inputs / create_host_outputs)");
  for (const auto& [s, array] : arrays) {
    const bool only_last = last(s);
    const std::int64_t transfers = only_last ? 1 : ir.num_host_transfers();
    if (!acceptable_shape(array.shape(), s.spec(), transfers, replicas)) {
      const Shape shape = host_array_shape(s.spec(), transfers, replicas);
      throw ShapeError(
          std::string(what) + ": " + std::string(role) + " stream '" + s.name() + "' " +
          to_string(s.spec()) + " needs an array of shape " + to_string(shape) +
          (only_last ? " (OutfeedMode::last: ["
                     : " ([num_host_transfers=" + std::to_string(ir.num_host_transfers()) + ", ") +
          std::string(replicas_name) + "=" + std::to_string(replicas) +
          ", *stream shape] with dims of 1 dropped" +
          (ir.num_host_transfers() > 1 && !only_last
               ? "; dim 0 may also be larger than num_host_transfers"
               : "") +
          "), got " + to_string(array.shape()));
    }
    if (array.dtype() != s.dtype())
      throw DTypeError(std::string(what) + ": " + std::string(role) + " stream '" + s.name() +
                       "' needs " + std::string(name(s.dtype())) + " data, got " +
                       std::string(name(array.dtype())) + "; convert it with astype");
  }
}
} // namespace

void Engine::refresh_expected() {
  expected_in_.clear();
  expected_out_.clear();
  for (std::uint32_t i = 0; i < streams_.size(); ++i) {
    if (!streams_[i].used || streams_[i].channel)
      continue;
    if (streams_[i].host_to_device)
      expected_in_.push_back(view_.h2d_stream(StreamId{i}));
    else
      expected_out_.push_back(view_.d2h_stream(StreamId{i}));
  }
}

const std::vector<HostToDeviceStream>& Engine::expected_inputs_locked() const {
  return expected_in_;
}

const std::vector<DeviceToHostStream>& Engine::expected_outputs_locked() const {
  return expected_out_;
}

std::vector<HostToDeviceStream> Engine::expected_inputs() {
  auto lock = enter("Session::expected_inputs");
  return expected_inputs_locked();
}

Shape Engine::output_shape(const DeviceToHostStream& s) const {
  return host_array_shape(s.spec(), streams_[s.index()].last ? 1 : view_.num_host_transfers(),
                          static_cast<std::int64_t>(replicas_.size()));
}

StreamOutputs Engine::create_host_outputs() {
  auto lock = enter("Session::create_host_outputs");
  StreamOutputs r;
  for (const auto& s : expected_outputs_locked())
    r.emplace(s, HostTensor(output_shape(s), s.dtype()));
  return r;
}

template <typename Handle>
std::uint32_t Engine::stream_index(std::string_view what, const Handle& s) const {
  pxl::detail::require_usable(s, what);
  if (!view_.owns(s))
    throw StreamError(std::string(what) + ": stream '" + s.name() +
                      "' belongs to another Ir than the session's");
  return s.index();
}

std::size_t Engine::queue_depth(std::string_view what, std::int64_t requested) const {
  if (requested < 0)
    throw ValueError(std::string(what) +
                     ": options.depth must be at least 1 (or 0 for "
                     "SessionOptions::stream_queue_depth), got " +
                     std::to_string(requested));
  return static_cast<std::size_t>(requested > 0 ? requested : options_.stream_queue_depth);
}

void Engine::bind_channel(StreamState& s, std::unique_ptr<CallbackChannel> channel) {
  // An earlier producer stops first; an earlier consumer delivers what it still had queued
  // (to an OutfeedQueue only if its user still pops, so the queue is closed first).
  if (auto q = std::exchange(s.outfeed, {}).lock())
    q->close();
  s.channel = std::move(channel);
  refresh_expected();
}

template <typename Handle>
Engine::FeedTarget Engine::feed_target(std::string_view what, const Handle& stream,
                                       std::int64_t depth) {
  StreamState& s = streams_[stream_index(what, stream)];
  return {s, queue_depth(what, depth)};
}

void Engine::bind_consumer(StreamState& s, std::size_t depth, D2HCallback fn, OutfeedMode mode) {
  bind_channel(s, nullptr);
  bind_channel(s, std::make_unique<CallbackChannel>(this, s.spec, depth, std::move(fn)));
  s.last = mode == OutfeedMode::last;
}

void Engine::set_h2d_callback(const HostToDeviceStream& stream, H2DCallback fn,
                              FeedOptions options) {
  const char* what = "Session::set_h2d_callback";
  auto lock = enter(what);
  const auto [s, depth] = feed_target(what, stream, options.depth);
  s.channel.reset(); // the earlier producer stops before the new one starts
  bind_channel(s, std::make_unique<CallbackChannel>(this, s.spec, depth, std::move(fn)));
}

void Engine::set_d2h_callback(const DeviceToHostStream& stream, D2HCallback fn,
                              OutfeedOptions options) {
  const char* what = "Session::set_d2h_callback";
  auto lock = enter(what);
  const auto [s, depth] = feed_target(what, stream, options.depth);
  bind_consumer(s, depth, std::move(fn), options.mode);
}

std::shared_ptr<OutfeedQueue> Engine::outfeed_queue(const DeviceToHostStream& stream,
                                                    OutfeedOptions options) {
  const char* what = "Session::outfeed_queue";
  auto lock = enter(what);
  const auto [s, depth] = feed_target(what, stream, options.depth);
  auto queue = std::make_shared<OutfeedQueue>(depth);
  bind_consumer(
      s, depth, [queue](const HostTensor& element) { queue->push(element); }, options.mode);
  s.outfeed = queue;
  return queue;
}

void Engine::set_outfeed_mode(const DeviceToHostStream& stream, OutfeedMode mode) {
  auto lock = enter("Session::set_outfeed_mode");
  auto& s = streams_[stream_index("Session::set_outfeed_mode", stream)];
  s.last = mode == OutfeedMode::last;
}

std::vector<FeedStats> Engine::feed_stats() {
  auto lock = enter("Session::feed_stats");
  std::vector<FeedStats> r;
  for (auto& s : streams_) {
    if (!s.channel)
      continue;
    const SlotQueueStats q = s.channel->queue().stats();
    // The device is the consumer of an h2d queue and the producer of a d2h one.
    r.push_back({.stream = s.name,
                 .host_to_device = s.host_to_device,
                 .elements = s.host_to_device ? q.popped : q.pushed,
                 .device_wait = s.host_to_device ? q.pop_wait : q.push_wait,
                 .max_occupancy = q.max_occupancy,
                 .depth = q.depth});
  }
  return r;
}

void Engine::validate_run(std::string_view what, const StreamInputs& inputs,
                          const StreamOutputs* outputs) const {
  require_attached(what);
  validate_arrays(view_, static_cast<std::int64_t>(replicas_.size()), inputs,
                  expected_inputs_locked(), what, "input",
                  [](const HostToDeviceStream&) { return false; });
  if (outputs)
    validate_arrays(view_, static_cast<std::int64_t>(replicas_.size()), *outputs,
                    expected_outputs_locked(), what, "output",
                    [this](const DeviceToHostStream& s) { return streams_[s.index()].last; });
}

std::optional<StreamInputs> Engine::downcast_inputs(std::string_view what,
                                                    const StreamInputs& inputs) const {
  std::optional<StreamInputs> converted;
  for (const auto& [s, array] : inputs) {
    const DType d = array.dtype();
    if (is_device_dtype(d) || !s.valid() || !view_.owns(s) || downcast_dtype(d) != s.dtype())
      continue; // validate_run reports any mismatch
    if (!converted)
      converted = inputs;
    (*converted).at(s) = InputArray(pxl::detail::downcast_for_device(
        std::string(what) + ": the array of input stream", s.name(), array.get(), true));
  }
  return converted;
}

void Engine::run(const StreamInputs& given, StreamOutputs& outputs, bool outputs_from_caller,
                 StepObserver* observer) {
  const char* what = outputs_from_caller ? "Session::run_with_outputs" : "Session::run";
  auto lock = enter(what);
  // PopXL's downcast_inputs: a copy of the map only when an array is 64-bit.
  const auto converted = downcast_inputs(what, given);
  const StreamInputs& inputs = converted ? *converted : given;
  validate_run(what, inputs, outputs_from_caller ? &outputs : nullptr);
  if (!outputs_from_caller)
    for (const auto& s : expected_outputs_locked())
      outputs.emplace(s, HostTensor(output_shape(s), s.dtype()));
  run_locked(inputs, outputs, observer);
}

std::future<StreamOutputs> Engine::run_async(StreamInputs inputs, StepObserver* observer) {
  auto lock = enter("Session::run_async");
  if (auto converted = downcast_inputs("Session::run_async", inputs))
    inputs = std::move(*converted);
  validate_run("Session::run_async", inputs, nullptr);
  for (auto& [stream, array] : inputs)
    array = array.owned(); // the caller's arrays may be gone before the run starts
  // Runs that have ended leave their threads to be joined here (or at destruction).
  std::erase_if(async_runs_, [](AsyncRun& r) {
    if (r.done.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
      return false;
    r.thread.join(); // it has set `done`, its last act
    return true;
  });
  async_runs_.reserve(async_runs_.size() + 1); // no allocation once the thread runs
  auto done = std::make_shared<std::promise<void>>();
  auto result = std::make_shared<std::promise<StreamOutputs>>();
  std::future<StreamOutputs> future = result->get_future();
  std::shared_future<void> finished = done->get_future().share();
  // A thread of the session's own rather than std::async, whose future would wait for the
  // run when dropped: a caller that drops it (or unwinds past it before the session) while
  // the run waits on a stream nobody serves would hang there. Destruction joins it instead.
  // The promise stays with the Engine, which destroys it after joining the thread: the
  // result (an exception the caller has read) is then freed on a thread that synchronised
  // with the reader, not by the run's thread racing with it.
  std::thread thread([this, done, result = result.get(), previous = last_async_, observer,
                      inputs = std::move(inputs)] {
    // Signals the next run_async (and the destructor) however this run ends.
    struct Finish {
      std::promise<void>& p;
      ~Finish() { p.set_value(); }
    } finish{*done};
    if (previous.valid())
      previous.wait();
    try {
      StreamOutputs outputs;
      std::lock_guard run_lock(mutex_);
      check_not_closing("Session::run_async");
      // Checked again: a call between run_async and now may have changed what the run
      // expects.
      validate_run("Session::run_async", inputs, nullptr);
      for (const auto& s : expected_outputs_locked())
        outputs.emplace(s, HostTensor(output_shape(s), s.dtype()));
      run_locked(inputs, outputs, observer);
      result->set_value(std::move(outputs));
    } catch (...) {
      result->set_exception(std::current_exception());
    }
  });
  last_async_ = finished;
  async_runs_.push_back({std::move(thread), std::move(finished), std::move(result)});
  return future;
}

void Engine::run_locked(const StreamInputs& inputs, StreamOutputs& outputs,
                        StepObserver* observer) {
  // While it runs, a detach is left to the run (see detach), applied however the run ends.
  running_.store(true);
  struct Ended {
    Engine& e;
    ~Ended() {
      e.running_.store(false);
      e.apply_pending_detaches_locked();
    }
  } ended{*this};
  // Each replica works on its own slice of every array: element k of replica r is row
  // k * replicas + r of the [transfers, replicas, *shape] array.
  for (auto& s : streams_)
    s.transfers = !s.host_to_device && s.last ? 1 : view_.num_host_transfers();
  for (std::size_t r = 0; r < replicas_.size(); ++r) {
    const std::span<StreamPort> ports = replicas_[r]->ports();
    for (const auto& [h, array] : inputs)
      ports[h.index()].in_array = array.bytes().data() + r * streams_[h.index()].bytes;
    for (auto& [h, array] : outputs)
      ports[h.index()].out_array = array.bytes().data() + r * streams_[h.index()].bytes;
    for (auto& port : ports)
      port.reset_positions();
  }
  // An exception the observer threw ends the run only once its streams are settled.
  std::exception_ptr observer_error;
  try {
    if (profiler_) {
      ProfilingObserver profiling(*profiler_, observer);
      profiler_->begin_run();
      struct RunEnd {
        Profiler& p;
        ~RunEnd() { p.end_run(); }
      } run_end{*profiler_};
      executor_->run(&profiling);
    } else {
      executor_->run(observer);
    }
  } catch (...) {
    observer_error = std::current_exception();
  }
  host_stale_ = true;
  // OutfeedMode::last: each replica's last stored element goes out now that the run has
  // ended, in replica order.
  for (std::size_t i = 0; i < streams_.size(); ++i) {
    StreamState& s = streams_[i];
    if (!s.channel || s.host_to_device)
      continue;
    for (const auto& replica : replicas_) {
      StreamPort& port = replica->ports()[i];
      if (!port.has_last)
        continue;
      port.has_last = false;
      SlotQueue& q = s.channel->queue();
      if (HostTensor* slot = q.begin_push()) {
        std::memcpy(slot->bytes().data(), port.last_element.bytes().data(), s.bytes);
        q.end_push();
      }
    }
  }
  for (auto& r : replicas_)
    for (auto& port : r->ports()) {
      port.in_array = nullptr;
      port.out_array = nullptr;
    }
  // run returns once every stored element has reached its callback.
  for (auto& s : streams_)
    if (s.channel && !s.host_to_device)
      s.channel->queue().wait_drained();
  // Where the run stopped, if it did (taken first: the next run starts afresh).
  const std::optional<RunErrors::Failure> failure = run_errors_.take();
  // Destruction closed the stream queues during the run, whose elements then went nowhere.
  check_not_closing("Session::run_async");
  for (auto& s : streams_)
    if (s.channel)
      if (auto e = s.channel->queue().take_error())
        std::rethrow_exception(e);
  if (observer_error)
    std::rethrow_exception(observer_error);
  if (failure)
    throw ValueError("Session::run: " + stopped_step(view_, failure->where) + ": " +
                     failure->message.value_or("the run was stopped") +
                     ". The run stopped after this step: no later step ran, on any replica; the "
                     "variables hold what the steps before it (and this one, where it did not "
                     "fail) wrote");
  // autoReport: the trace of the first executionProfileProgramRunCount runs, with the profile
  // and the page as they stand after each of them.
  if (auto_report_.execution_profile && ++reported_runs_ <= auto_report_.program_run_count)
    write_auto_report(true);
}

} // namespace pxl::emu::detail
