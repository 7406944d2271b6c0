// Engine: construction (verify, compile, memory check), attachment and weights.
#include "engine.hpp"

#include "ir/op_builder.hpp"
#include "pxl/core/error.hpp"

#include <cstring>
#include <sstream>
#include <thread>

namespace pxl::emu::detail {

using pxl::TensorKind;

namespace {
std::string out_of_memory_message(const Target& target, const MemoryReport& r) {
  std::ostringstream os;
  os << "Session: the plan does not fit target '" << target.name << "' (" << target.tiles_per_ipu
     << " tiles x " << target.bytes_per_tile << " bytes = " << target.bytes_per_ipu()
     << " bytes per IPU):";
  for (const auto& m : r.ipus)
    if (m.total() > m.capacity)
      os << " IPU " << m.ipu << " needs " << m.total() << " bytes (always-live " << m.always_live()
         << ": variables " << m.variables << ", constants " << m.constants << ", code " << m.code
         << "; not-always-live peak " << m.not_always_live_peak << ");";
  os << " largest tensors:";
  for (std::size_t i = 0; i < r.tensors.size() && i < 5; ++i)
    os << (i ? ", '" : " '") << r.tensors[i].id << "' " << r.tensors[i].bytes << " bytes";
  os << ". Use fewer or smaller tensors, a larger target, or "
        "SessionOptions{.allow_out_of_memory = true} to build anyway and read memory_report()";
  return os.str();
}
} // namespace

Engine::Engine(Ir& ir, Target target, SessionOptions options)
    : ir_(pxl::detail::HandleAccess::storage(ir)), target_(std::move(target)), options_(options) {
  verify();
  const unsigned workers =
      options_.workers ? options_.workers : std::max(1u, std::thread::hardware_concurrency());
  pool_ = std::make_unique<WorkerPool>(workers);

  streams_.resize(ir_->streams.size());
  for (std::size_t i = 0; i < streams_.size(); ++i) {
    auto& s = streams_[i];
    s.name = ir_->streams[i].name;
    s.spec = ir_->streams[i].spec;
    s.bytes = s.spec.nbytes();
    s.host_to_device = ir_->streams[i].host_to_device;
    s.position.resize(workers);
  }
  for (std::int64_t r = 0; r < ir_->replication_factor; ++r)
    replicas_.push_back(std::make_unique<Planner>(*ir_, target_, *pool_, streams_));
  for (std::size_t g = 0; g < ir_->graphs.size(); ++g) {
    if (!replicas_[0]->compiled(static_cast<std::uint32_t>(g)))
      continue;
    for (auto o : ir_->graphs[g].ops) {
      const auto& op = ir_->op(o);
      if (op.kind == OpKind::HostLoad || op.kind == OpKind::HostStore)
        streams_[std::get<StreamAttrs>(op.attrs).stream].used = true;
    }
  }

  refresh_expected();

  for (Index t = 0; t < ir_->tensors.size(); ++t) {
    const auto& node = ir_->tensors[t];
    if (node.kind == TensorKind::variable)
      host_weights_.emplace(t, node.data ? *node.data : HostTensor(node.spec));
  }

  const MemoryReport report = memory_report();
  if (!report.fits() && !options_.allow_out_of_memory)
    throw OutOfMemoryError(out_of_memory_message(target_, report));
}

Engine::~Engine() {
  // A run_async in flight uses this engine: let it finish first.
  std::shared_future<void> last;
  {
    std::lock_guard lock(mutex_);
    last = last_async_;
  }
  if (last.valid())
    last.wait();
}

void Engine::verify() const {
  if (target_.ipus < 1 || target_.tiles_per_ipu < 1 || target_.bytes_per_tile < 1)
    throw SessionError("Session: target '" + target_.name +
                       "' needs at least one IPU, one tile and one byte per tile");
  for (const auto& op : ir_->ops)
    if (op.ipu < 0 || op.ipu >= target_.ipus)
      throw SessionError("Session: op '" + op.name + "' is placed on IPU " +
                         std::to_string(op.ipu) + " but target '" + target_.name + "' has " +
                         std::to_string(target_.ipus) + " IPU(s); set Target::ipus");
  for (const auto& t : ir_->tensors)
    if (t.ipu < 0 || t.ipu >= target_.ipus)
      throw SessionError("Session: tensor '" + t.id + "' is placed on IPU " +
                         std::to_string(t.ipu) + " but target '" + target_.name + "' has " +
                         std::to_string(target_.ipus) + " IPU(s); set Target::ipus");
  for (const auto& op : ir_->ops)
    if (const auto* s = std::get_if<StreamAttrs>(&op.attrs); s && s->stream >= ir_->streams.size())
      throw SessionError("Session: op '" + op.name + "' uses a stream the Ir does not have");
}

void Engine::require_attached(std::string_view what) const {
  if (attach_depth_ == 0)
    throw SessionError(std::string(what) +
                       ": the session must be attached to the device; keep "
                       "`auto attached = session.attach();` alive around the call "
                       "(PopXL's `with session:`)");
}

void Engine::attach() {
  std::lock_guard lock(mutex_);
  if (attach_depth_++ == 0)
    weights_from_host_locked();
}

void Engine::detach() {
  std::lock_guard lock(mutex_);
  if (--attach_depth_ == 0 && options_.weights_to_host_on_exit && host_stale_)
    weights_to_host_locked();
}

bool Engine::attached() {
  std::lock_guard lock(mutex_);
  return attach_depth_ > 0;
}

void Engine::weights_to_host_locked() {
  // Replica 0's values, as PopXL returns for variables without a replica grouping.
  for (auto& [t, host] : host_weights_)
    if (std::byte* p = replicas_[0]->address(t))
      std::memcpy(host.bytes().data(), p, host.nbytes());
  host_stale_ = false;
}

void Engine::weights_from_host_locked() {
  for (const auto& replica : replicas_)
    for (const auto& [t, host] : host_weights_)
      if (std::byte* p = replica->address(t))
        std::memcpy(p, host.bytes().data(), host.nbytes());
}

void Engine::weights_to_host() {
  std::lock_guard lock(mutex_);
  require_attached("Session::weights_to_host");
  weights_to_host_locked();
}

void Engine::weights_from_host() {
  std::lock_guard lock(mutex_);
  require_attached("Session::weights_from_host");
  weights_from_host_locked();
}

void Engine::check_tensor(std::string_view what, const Tensor& t) const {
  if (!t.valid())
    throw ValueError(std::string(what) + ": the tensor is empty");
  if (pxl::detail::HandleAccess::storage(t) != ir_)
    throw ValueError(std::string(what) + ": " + pxl::detail::describe(t) +
                     " belongs to another Ir than the session's");
}

std::map<Tensor, HostTensor> Engine::get_tensors_data(const std::vector<Tensor>& ts) {
  std::lock_guard lock(mutex_);
  const char* what = "Session::get_tensor_data";
  for (const auto& t : ts) {
    check_tensor(what, t);
    const auto kind = ir_->tensors[t.index()].kind;
    if (kind != TensorKind::variable && kind != TensorKind::constant)
      throw ValueError(std::string(what) + ": " + pxl::detail::describe(t) +
                       " is neither a variable nor a constant, so the session keeps no data for "
                       "it; send it to the host with ops::host_store");
  }
  // One transfer for the lot, and only if a run has made the host copies stale.
  if (attach_depth_ > 0 && host_stale_)
    weights_to_host_locked();
  std::map<Tensor, HostTensor> r;
  for (const auto& t : ts) {
    const auto& node = ir_->tensors[t.index()];
    if (node.kind == TensorKind::variable)
      r.emplace(t, host_weights_.at(t.index()));
    else
      r.emplace(t, node.data ? *node.data : HostTensor(node.spec));
  }
  return r;
}

void Engine::write_variables_data(const std::map<Tensor, HostTensor>& data) {
  std::lock_guard lock(mutex_);
  const char* what = "Session::write_variable_data";
  for (const auto& [t, value] : data) {
    check_tensor(what, t);
    if (ir_->tensors[t.index()].kind != TensorKind::variable)
      throw ValueError(std::string(what) + ": " + pxl::detail::describe(t) +
                       " is not a variable; only variables can be written");
    if (value.dtype() != t.dtype())
      throw DTypeError(std::string(what) + ": variable " + pxl::detail::describe(t) + " needs " +
                       std::string(name(t.dtype())) + " data, got " +
                       std::string(name(value.dtype())) + "; convert it with astype");
    if (value.shape() != t.shape())
      throw ShapeError(std::string(what) + ": variable " + pxl::detail::describe(t) +
                       " needs data of shape " + to_string(t.shape()) + ", got " +
                       to_string(value.shape()));
  }
  for (const auto& [t, value] : data) {
    host_weights_.at(t.index()) = value;
    // Only these variables go to the device, so the others keep what runs did to them.
    for (const auto& replica : replicas_)
      if (std::byte* p = replica->address(t.index()); p && attach_depth_ > 0)
        std::memcpy(p, value.bytes().data(), value.nbytes());
  }
}

} // namespace pxl::emu::detail
