// Engine: construction (verify, compile, memory check), attachment and weights.
#include "engine.hpp"
#include "ir/handle_check.hpp"

#include "pxl/core/error.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <numeric>
#include <set>
#include <sstream>
#include <thread>

namespace pxl::emu::detail {

namespace {
/// "'x' [(2, 3) float32]": how messages show a tensor.
std::string out_of_memory_message(const Target& target, const MemoryReport& r) {
  std::ostringstream os;
  os << "Session: the plan does not fit target '" << target.name << "' (" << target.tiles_per_ipu
     << " tiles x " << target.bytes_per_tile << " bytes = " << target.bytes_per_ipu()
     << " bytes per IPU):";
  for (const auto& m : r.ipus) {
    if (m.total() > m.capacity)
      os << " IPU " << m.ipu << " needs " << m.total() << " bytes (always-live " << m.always_live()
         << ": variables " << m.variables << ", constants " << m.constants << ", code " << m.code()
         << "; not-always-live peak " << m.not_always_live_peak << ");";
    if (m.max_tile > m.tile_capacity)
      os << " the most loaded tile of IPU " << m.ipu << " needs " << m.max_tile << " bytes of its "
         << m.tile_capacity << " (its always-live bytes and its share of the values live at once);";
  }
  if (!r.streaming.fits())
    os << " Streaming Memory needs " << r.streaming.used << " bytes of its " << r.streaming.capacity
       << " for " << r.streaming.buffers.size()
       << " remote buffer(s) (Target::streaming_memory_bytes_per_ipu);";
  os << " largest tensors:";
  for (std::size_t i = 0; i < r.tensors.size() && i < 5; ++i)
    os << (i ? ", '" : " '") << r.tensors[i].id << "' " << r.tensors[i].bytes << " bytes";
  os << ". Use fewer or smaller tensors, a larger target, or "
        "SessionOptions{.allow_out_of_memory = true} to build anyway and read memory_report()";
  return os.str();
}
} // namespace

namespace {
/// Lists the engine options pxl does not read, each once per process whatever the sessions.
void warn_unknown_options(const std::vector<std::string>& keys) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard lock(mutex);
  std::string fresh;
  for (const std::string& k : keys)
    if (warned.insert(k).second)
      fresh += (fresh.empty() ? "" : ", ") + k;
  if (!fresh.empty())
    std::fprintf(stderr, "pxl: engine options not used by pxl (ignored): %s\n", fresh.c_str());
}
} // namespace

Engine::Engine(const Ir& ir, Target target, SessionOptions options,
               std::optional<dist::detail::InstanceLayout> instances)
    : hold_(ir), view_(hold_.view()), target_(std::move(target)), options_(options),
      auto_report_(report::read_auto_report(
          report::engine_options_from_environment(options_.engine_options))) {
  warn_unknown_options(auto_report_.unknown);
  options_.profile = options_.profile || auto_report_.execution_profile;
  options_.allow_out_of_memory = options_.allow_out_of_memory || auto_report_.allow_out_of_memory;
  verify();
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  if (options_.workers > hardware && !options_.oversubscribe)
    throw SessionError("Session: workers = " + std::to_string(options_.workers) +
                       " is more than this host's " + std::to_string(hardware) +
                       " hardware threads; the extra workers would only compete with the others "
                       "for its cores. Use workers = 0 (one per hardware thread) or at most " +
                       std::to_string(hardware) +
                       ", or set SessionOptions::oversubscribe to run anyway");
  if (options_.stream_queue_depth < 1)
    throw ValueError("Session: SessionOptions::stream_queue_depth must be at least 1, got " +
                     std::to_string(options_.stream_queue_depth));
  // By default the cores, shared by the instances on this host (each of `mpirun -np 2` on two
  // cores gets one, rather than each two that compete).
  const auto sharing = static_cast<unsigned>(instances ? instances->local_instances : 1);
  const unsigned workers = options_.workers ? options_.workers : std::max(1u, hardware / sharing);
  pool_ = std::make_unique<WorkerPool>(workers);
  program_ = compile_program(view_, target_, {.stochastic_rounding = options_.stochastic_rounding});
  if (!program_.memory.fits() && !options_.allow_out_of_memory)
    throw OutOfMemoryError(out_of_memory_message(target_, program_.memory));

  auto replicas = static_cast<std::size_t>(view_.replication_factor());
  if (instances) {
    if (view_.replication_factor() != instances->total_replicas)
      throw SessionError(
          "Session: a distributed session spreads the Ir's replicas over the instances, so its "
          "replication factor must be pxl::dist::num_total_replicas() = " +
          std::to_string(instances->total_replicas) + " (over " +
          std::to_string(instances->instances) + " instances), got " +
          std::to_string(view_.replication_factor()) +
          "; set it with ir.set_replication_factor(pxl::dist::num_total_replicas()) and the "
          "total with pxl::dist::configure({.num_total_replicas = ...})");
    replicas = static_cast<std::size_t>(instances->local_replicas);
    replica_offset_ = instances->replica_offset;
    link_ = std::make_unique<dist::detail::InstanceLink>("Session");
    exchange_ =
        std::make_unique<InstanceExchange>(*link_, program_, static_cast<std::int64_t>(replicas));
  }
  streams_.resize(view_.num_streams());
  for (std::uint32_t i = 0; i < streams_.size(); ++i) {
    auto& s = streams_[i];
    const StreamId id{i};
    s.name = view_.name(id);
    s.spec = view_.spec(id);
    s.bytes = s.spec.nbytes();
    s.stride = s.bytes * replicas;
    s.host_to_device = view_.host_to_device(id);
    s.used = program_.stream_used[i];
  }
  // Kernels are compiled for the executor's chunks, which it hands out to the workers.
  replicas_ = make_replicas(
      program_, view_, streams_, max_chunks(workers), replicas, &run_errors_, exchange_.get(),
      options_.stochastic_rounding ? std::optional(options_.stochastic_rounding_seed)
                                   : std::nullopt);
  executor_ = std::make_unique<Executor>(*pool_, program_, replicas_, run_errors_);
  if (options_.profile)
    profiler_ = std::make_unique<Profiler>(view_, target_, link_ ? link_->size() : std::int64_t{1});

  refresh_expected();

  // The variables on the IPU and in Streaming Memory, in tensor order (the same on every
  // instance of a distributed run).
  for (const StaticTensor& s : program_.statics)
    if (view_.kind(s.tensor) == TensorKind::variable)
      variables_.push_back(s.tensor);
  for (const RemoteVariable& r : program_.remote_variables)
    variables_.push_back(r.tensor);
  std::ranges::sort(variables_);
  for (const TensorId t : variables_) {
    const HostTensor* data = view_.data(t);
    host_weights_.emplace(t, data ? *data : HostTensor(view_.spec(t)));
  }
  if (auto_report_.enabled())
    write_auto_report(false);
}

void Engine::write_auto_report(bool trace) {
  namespace fs = std::filesystem;
  const fs::path dir(auto_report_.directory);
  std::error_code failed;
  fs::create_directories(dir, failed);
  if (failed || !fs::is_directory(dir))
    throw IoError("Session: cannot create autoReport.directory '" + dir.string() +
                  "': " + (failed ? failed.message() : std::string("not a directory")));
  auto write = [&](std::string_view name, const std::string& text) {
    const fs::path path = dir / name;
    std::ofstream out(path);
    if (!out || !(out << text << '\n') || !out.flush())
      throw IoError("Session: autoReport cannot write '" + path.string() + "'");
  };
  if (auto_report_.graph_profile)
    write(report::memory_file, program_.memory.to_json());
  if (auto_report_.execution_profile && profiler_) {
    if (trace)
      profiler_->write_trace((dir / report::trace_file).string());
    const Profile p = profiler_->profile();
    write(report::profile_file, p.to_json());
    write(report::profile_text_file, p.summary());
  }
  if (auto_report_.graph_profile)
    report::write_html({dir.string()}, (dir / report::html_file).string());
}

Engine::~Engine() {
  // A run_async in flight uses this engine: cancel it (closed queues let a device blocked on a
  // stream go on; the run stops after that step and ends with SessionError, as do the runs
  // still pending), and let every one finish first.
  // No lock: the run in flight holds it, and only the runs' threads can use the engine now
  // (they read, but never change, streams_ and async_runs_).
  closing_.store(true);
  run_errors_.stop(); // a run between stream steps stops after its current step
  for (auto& s : streams_) {
    if (auto q = s.outfeed.lock())
      q->close();
    if (s.channel)
      s.channel->queue().close();
  }
  for (AsyncRun& r : async_runs_)
    r.thread.join();
  // autoReport: the profile of every run, and the page with it; a destructor cannot throw.
  if (auto_report_.enabled()) {
    try {
      write_auto_report(false);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "pxl: %s\n", e.what());
    }
  }
}

std::unique_lock<std::mutex> Engine::enter(std::string_view what) {
  if (CallbackChannel::current_owner() == this)
    throw SessionError(std::string(what) +
                       ": called from a stream callback of the same session, which would wait "
                       "for the run that waits for the callback; call it after the run, or "
                       "from another thread");
  return std::unique_lock(mutex_);
}

void Engine::check_not_closing(std::string_view what) const {
  if (closing_.load())
    throw SessionError(std::string(what) +
                       ": the session was destroyed while the run was pending or in flight; "
                       "the run was cancelled and its stream elements went nowhere");
}

void Engine::verify() const { check_placement(view_, target_, "Session"); }

void Engine::require_attached(std::string_view what) const {
  if (attach_depth_ == 0)
    throw SessionError(std::string(what) +
                       ": the session must be attached to the device; keep "
                       "`auto attached = session.attach();` alive around the call "
                       "(PopXL's `with session:`)");
}

void Engine::attach() {
  auto lock = enter("Session::attach");
  if (attach_depth_++ == 0)
    weights_from_host_locked();
}

void Engine::detach() {
  // Called by an Attachment's destructor, which must not wait for a run in flight: that run
  // may be blocked on a queue nobody drains until this scope has ended (and the session with
  // it). Such a run applies the detach when it ends; otherwise it is applied here.
  pending_detaches_.fetch_add(1);
  std::unique_lock lock(mutex_, std::defer_lock);
  while (!lock.try_lock()) {
    if (running_.load())
      return;
    std::this_thread::yield(); // a short call, or a run about to set running_
  }
  apply_pending_detaches_locked();
}

void Engine::apply_pending_detaches_locked() {
  for (int n = pending_detaches_.exchange(0); n > 0; --n)
    if (--attach_depth_ == 0 && options_.weights_to_host_on_exit && host_stale_)
      weights_to_host_locked();
}

bool Engine::attached() {
  auto lock = enter("Session::is_attached");
  return attach_depth_ > 0;
}

std::int64_t Engine::host_slot(TensorId t, std::int64_t replica) const {
  // A grouped variable's host copy holds one value per group; every other, one value.
  const VariableGrouping* g = view_.grouping(t);
  if (g == nullptr || g->grouping.num_groups() == 1)
    return 0;
  return g->grouping.group_of(replica);
}

std::vector<std::int64_t> Engine::slot_replicas(TensorId t, std::int64_t slot) const {
  if (const VariableGrouping* g = view_.grouping(t))
    return g->grouping.replicas(slot);
  std::vector<std::int64_t> all(static_cast<std::size_t>(total_replicas()));
  std::iota(all.begin(), all.end(), std::int64_t{0});
  return all;
}

std::int64_t Engine::reference_replica(TensorId t, std::int64_t replica) const {
  const ReplicaSharding* s = view_.sharding(t);
  const std::int64_t k = s ? s->group.index_in_group(replica) : 0;
  return slot_replicas(t, host_slot(t, replica))[static_cast<std::size_t>(k)];
}

std::size_t Engine::value_bytes(TensorId t) const {
  const ReplicaSharding* s = view_.sharding(t);
  return s ? static_cast<std::size_t>(nelms(s->meta_shape)) * size_of(view_.spec(t).dtype)
           : view_.spec(t).nbytes();
}

void Engine::value_to_device(TensorId t, std::int64_t replica, const HostTensor& host,
                             std::byte* dst) const {
  const std::size_t bytes = view_.spec(t).nbytes(), whole = value_bytes(t);
  const std::byte* value =
      host.bytes().data() + static_cast<std::size_t>(host_slot(t, replica)) * whole;
  // Shard k of a sharded value is bytes [k·bytes, (k+1)·bytes) of it, zero past its end.
  const ReplicaSharding* s = view_.sharding(t);
  const std::size_t at =
      s ? static_cast<std::size_t>(s->group.index_in_group(replica)) * bytes : std::size_t{0};
  const std::size_t n = at < whole ? std::min(bytes, whole - at) : 0;
  std::memcpy(dst, value + at, n);
  std::memset(dst + n, 0, bytes - n);
}

void Engine::weights_to_host_locked() {
  // Each group's value from its first replica (replica 0 for ungrouped variables, as PopXL
  // returns them), a sharded value from the replicas holding its shards. Distributed, the
  // instance holding a replica sends its part to the others: in the program's tensor order,
  // the same on every instance.
  std::vector<std::byte> shard;
  for (const TensorId t : variables_) {
    HostTensor& host = host_weights_.at(t);
    const std::size_t bytes = view_.spec(t).nbytes(), whole = value_bytes(t);
    const ReplicaSharding* s = view_.sharding(t);
    const std::int64_t parts = s ? s->shards() : 1;
    const auto slots = static_cast<std::int64_t>(host.nbytes() / std::max<std::size_t>(whole, 1));
    for (std::int64_t slot = 0; slot < slots; ++slot) {
      const std::vector<std::int64_t> holders = slot_replicas(t, slot);
      std::byte* value = host.bytes().data() + static_cast<std::size_t>(slot) * whole;
      for (std::int64_t k = 0; k < parts; ++k) {
        const std::int64_t holder = holders[static_cast<std::size_t>(k)];
        // A whole value goes straight into the host copy, a shard through `shard` (its
        // padding does not fit there).
        shard.resize(s ? bytes : 0);
        std::byte* part = s ? shard.data() : value;
        const std::int64_t local = holder - replica_offset_;
        if (local >= 0 && local < static_cast<std::int64_t>(replicas_.size()))
          std::memcpy(part, replicas_[static_cast<std::size_t>(local)]->address(t), bytes);
        if (link_)
          link_->broadcast(part, bytes, holder / static_cast<std::int64_t>(replicas_.size()),
                           "weights_to_host of '" + view_.id(t) + "'");
        if (s) {
          const std::size_t at = static_cast<std::size_t>(k) * bytes;
          if (at < whole)
            std::memcpy(value + at, part, std::min(bytes, whole - at));
        }
      }
    }
  }
  host_stale_ = false;
}

void Engine::weights_from_host_locked() {
  for (std::size_t r = 0; r < replicas_.size(); ++r)
    for (const auto& [t, host] : host_weights_)
      value_to_device(t, global(r), host, replicas_[r]->address(t));
}

Profile Engine::profile() {
  auto lock = enter("Session::profile");
  if (!profiler_)
    throw SessionError("Session::profile: this session does not profile; make it with "
                       "SessionOptions{.profile = true}");
  return profiler_->profile();
}

void Engine::write_trace(const std::string& path) {
  auto lock = enter("Session::write_trace");
  if (!profiler_)
    throw SessionError("Session::write_trace: this session does not profile; make it with "
                       "SessionOptions{.profile = true}");
  profiler_->write_trace(path);
}

void Engine::weights_to_host() {
  auto lock = enter("Session::weights_to_host");
  require_attached("Session::weights_to_host");
  weights_to_host_locked();
}

void Engine::weights_from_host() {
  auto lock = enter("Session::weights_from_host");
  require_attached("Session::weights_from_host");
  weights_from_host_locked();
}

void Engine::check_tensor(std::string_view what, const Tensor& t) const {
  pxl::detail::require_usable(t, what);
  if (!view_.owns(t))
    throw ValueError(std::string(what) + ": " + to_string(t) +
                     " belongs to another Ir than the session's");
}

std::map<Tensor, HostTensor> Engine::get_tensors_data(const std::vector<Tensor>& ts) {
  auto lock = enter("Session::get_tensor_data");
  const char* what = "Session::get_tensor_data";
  for (const auto& t : ts) {
    check_tensor(what, t);
    const auto kind = view_.kind(IrView::id(t));
    if (kind != TensorKind::variable && kind != TensorKind::constant)
      throw ValueError(std::string(what) + ": " + to_string(t) +
                       " is neither a variable nor a constant, so the session keeps no data for "
                       "it; send it to the host with ops::host_store");
  }
  // One transfer for the lot, and only if a run has made the host copies stale.
  if (attach_depth_ > 0 && host_stale_)
    weights_to_host_locked();
  std::map<Tensor, HostTensor> r;
  for (const auto& t : ts) {
    const TensorId id = IrView::id(t);
    const VariableGrouping* g = view_.grouping(id);
    if (g && g->retrieval_mode == RetrievalMode::all_replicas)
      r.emplace(t, all_replicas_value(id));
    else if (view_.kind(id) == TensorKind::variable)
      r.emplace(t, host_weights_.at(id));
    else
      r.emplace(t, view_.data(id) ? *view_.data(id) : HostTensor(view_.spec(id)));
  }
  return r;
}

void Engine::write_variables_data(const std::map<Tensor, HostTensor>& data) {
  auto lock = enter("Session::write_variable_data");
  const char* what = "Session::write_variable_data";
  for (const auto& [t, value] : data) {
    check_tensor(what, t);
    if (view_.kind(IrView::id(t)) != TensorKind::variable)
      throw ValueError(std::string(what) + ": " + to_string(t) +
                       " is not a variable; only variables can be written");
    if (value.dtype() != t.dtype())
      throw DTypeError(std::string(what) + ": variable " + to_string(t) + " needs " +
                       std::string(name(t.dtype())) + " data, got " +
                       std::string(name(value.dtype())) + "; convert it with astype");
    const TensorId id = IrView::id(t);
    const Shape& host_shape = host_weights_.at(id).shape();
    const VariableGrouping* g = view_.grouping(id);
    if (value.shape() != host_shape)
      throw ShapeError(std::string(what) + ": variable " + to_string(t) + " needs data of shape " +
                       to_string(host_shape) +
                       (g && g->grouping.num_groups() > 1 ? " (one value per replica group)"
                        : view_.sharding(id)              ? " (the whole replica-sharded value)"
                                                          : "") +
                       ", got " + to_string(value.shape()));
  }
  for (const auto& [t, value] : data) {
    // Variables live in the main graph, which always runs: the device holds every one.
    const TensorId id = IrView::id(t);
    host_weights_.at(id) = value;
    // Only these variables go to the device, so the others keep what runs did to them.
    if (attach_depth_ > 0)
      for (std::size_t r = 0; r < replicas_.size(); ++r)
        value_to_device(id, global(r), value, replicas_[r]->address(id));
  }
}

HostTensor Engine::all_replicas_value(TensorId t) const {
  // Read from the device while attached (replicas of a group may differ), else each replica's
  // group value from the host copy.
  const std::size_t bytes = view_.spec(t).nbytes();
  Shape shape = view_.spec(t).shape;
  shape.insert(shape.begin(), total_replicas());
  HostTensor all(shape, view_.spec(t).dtype);
  const HostTensor& host = host_weights_.at(t);
  if (attach_depth_ == 0) {
    for (std::int64_t r = 0; r < total_replicas(); ++r)
      value_to_device(t, r, host, all.bytes().data() + static_cast<std::size_t>(r) * bytes);
    return all;
  }
  for (std::size_t r = 0; r < replicas_.size(); ++r)
    std::memcpy(all.bytes().data() + static_cast<std::size_t>(global(r)) * bytes,
                replicas_[r]->address(t), bytes);
  if (link_)
    link_->all_gather(all.bytes().data(), bytes * replicas_.size(),
                      "the replicas' values of '" + view_.id(t) + "'");
  return all;
}

std::vector<ReplicaDrift> Engine::check_replicas_in_sync() {
  auto lock = enter("Session::check_replicas_in_sync");
  require_attached("Session::check_replicas_in_sync");
  std::vector<ReplicaDrift> drift;
  // In the program's tensor order: distributed, every instance gathers the same values.
  for (const TensorId t : variables_) {
    const TensorSpec& spec = view_.spec(t);
    const HostTensor all = all_replicas_value(t);
    auto value = [&](std::int64_t r) {
      HostTensor v(spec);
      std::memcpy(v.bytes().data(),
                  all.bytes().data() + static_cast<std::size_t>(r) * spec.nbytes(), spec.nbytes());
      return v;
    };
    for (std::int64_t r = 0; r < total_replicas(); ++r) {
      // Every replica must equal the first replica of its group (replica 0 when ungrouped),
      // or the first holding the same shard of its value.
      const std::int64_t first = reference_replica(t, r);
      if (first == r)
        continue;
      const HostTensor a = value(r), b = value(first);
      if (a == b)
        continue;
      double worst = 0;
      for (std::int64_t i = 0; i < a.nelms(); ++i)
        worst = std::max(worst, std::abs(a.item(i) - b.item(i)));
      drift.push_back({view_.id(t), r, first, worst});
    }
  }
  std::ranges::sort(drift, {},
                    [](const ReplicaDrift& d) { return std::pair(d.variable, d.replica); });
  return drift;
}

} // namespace pxl::emu::detail
