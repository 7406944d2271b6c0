#include "pxl/ir/ir.hpp"
#include "ir/context.hpp"
#include "ir/handle_access.hpp"
#include "ir/op_builder.hpp"

#include <atomic>
#include <deque>
#include <mutex>
#include <vector>

namespace pxl {

namespace {
std::atomic<std::uint64_t> next_ir_id{0};

/// Every IrSlot made, and those free for a new storage. Never destroyed: a handle may outlive
/// static destruction (a global Tensor) and must still read its slot.
struct IrSlotPool {
  std::mutex mutex;
  std::deque<detail::IrSlot> slots; ///< a deque: slots never move
  std::vector<detail::IrSlot*> free;
};
IrSlotPool& ir_slot_pool() {
  static auto* const pool = new IrSlotPool;
  return *pool;
}
detail::IrSlot* take_ir_slot() {
  auto& pool = ir_slot_pool();
  const std::lock_guard lock(pool.mutex);
  if (pool.free.empty())
    return &pool.slots.emplace_back();
  detail::IrSlot* slot = pool.free.back();
  pool.free.pop_back();
  return slot;
}

std::string_view handle_kind_name(detail::HandleKind kind) {
  switch (kind) {
  case detail::HandleKind::tensor:
    return "Tensor";
  case detail::HandleKind::graph:
    return "Graph";
  case detail::HandleKind::op:
    return "Op";
  case detail::HandleKind::h2d_stream:
    return "HostToDeviceStream";
  case detail::HandleKind::d2h_stream:
    return "DeviceToHostStream";
  case detail::HandleKind::remote_buffer:
    return "RemoteBuffer";
  }
  return "handle";
}
/// The calls that make a handle of `kind`, which leave it empty when they throw.
std::string_view handle_kind_makers(detail::HandleKind kind) {
  switch (kind) {
  case detail::HandleKind::tensor:
    return "op, variable, constant or graph_input";
  case detail::HandleKind::graph:
    return "create_graph or create_empty_graph";
  case detail::HandleKind::op:
    return "op-building";
  case detail::HandleKind::h2d_stream:
    return "h2d_stream";
  case detail::HandleKind::d2h_stream:
    return "d2h_stream";
  case detail::HandleKind::remote_buffer:
    return "remote_buffer";
  }
  return "";
}

GraphId add_graph(detail::IrStorage& ir, std::string name, std::string_view what) {
  detail::require_mutable(ir, what);
  const GraphId g{static_cast<detail::Index>(ir.graphs.size())};
  detail::GraphNode node;
  node.name = std::move(name);
  ir.graphs.push_back(std::move(node));
  return g;
}

/// Detaches `storage` from its Ir: an IrHold may keep it alive, but nothing reaches the Ir
/// through it any more.
void orphan(const std::shared_ptr<detail::IrStorage>& storage) {
  if (storage)
    storage->owner = nullptr;
}
} // namespace

namespace detail {
IrStorage::IrStorage() : slot(take_ir_slot()), generation(slot->generation.load()) {
  slot->storage.store(this, std::memory_order_relaxed);
}

IrStorage::~IrStorage() {
  // The generation moves on first: from here, handles made for this storage find it gone.
  slot->generation.fetch_add(1, std::memory_order_release);
  slot->storage.store(nullptr, std::memory_order_relaxed);
  auto& pool = ir_slot_pool();
  const std::lock_guard lock(pool.mutex);
  pool.free.push_back(slot);
}

void throw_unusable_handle(HandleKind kind, bool empty, std::string_view call) {
  const std::string name(handle_kind_name(kind));
  if (empty)
    throw GraphError(
        std::string(call) + ": the " + name + " handle is empty (default-constructed, or the " +
        std::string(handle_kind_makers(kind)) + " call that would have made it threw)");
  throw GraphError(std::string(call) + ": the " + name +
                   " handle's Ir has been destroyed, and no Session keeps it; a handle can be "
                   "used only while its Ir, or a Session made from it, lives");
}

void require_usable(const Tensor& t, std::string_view call) { HandleAccess::arena(t, call); }
void require_usable(const Graph& g, std::string_view call) { HandleAccess::arena(g, call); }
void require_usable(const Op& o, std::string_view call) { HandleAccess::arena(o, call); }
void require_usable(const HostToDeviceStream& s, std::string_view call) {
  HandleAccess::arena(s, call);
}
void require_usable(const DeviceToHostStream& s, std::string_view call) {
  HandleAccess::arena(s, call);
}
void require_usable(const RemoteBuffer& b, std::string_view call) { HandleAccess::arena(b, call); }

void assign_tensor_id(IrStorage& ir, TensorId t, std::string wanted) {
  std::string& id = ir.tensor(t).id;
  PXL_ASSERT(id.empty());
  // A name seen taken before is usually taken still (only rename_tensor_id frees one, and it
  // says so): it goes straight to the suffixes, one lookup here and one per candidate, each
  // inserting the node's own string (the set views it) and retried only if taken.
  auto seen = ir.id_suffixes.find(wanted);
  if (seen == ir.id_suffixes.end() || seen->second.base_freed) {
    id = std::move(wanted);
    if (ir.tensor_ids.insert(id).second) {
      if (seen != ir.id_suffixes.end())
        seen->second.base_freed = false;
      return;
    }
    if (seen == ir.id_suffixes.end())
      seen = ir.id_suffixes.emplace(id, IdSuffixes{}).first;
    seen->second.base_freed = false;
  }
  const std::string& base = seen->first;
  do
    id = base + "__t" + std::to_string(++seen->second.last);
  while (!ir.tensor_ids.insert(id).second);
}

std::string scoped_tensor_id(const IrStorage& ir, GraphId g, std::string_view scope,
                             std::string_view name) {
  const bool main = g == IrView::main_graph();
  const std::string_view graph = main ? std::string_view() : std::string_view(ir.graph(g).name);
  std::string id;
  id.reserve(graph.size() + 1 + scope.size() + name.size());
  if (!main)
    id.append(graph).append(1, '/');
  id.append(scope).append(name);
  return id;
}

void rename_tensor_id(IrStorage& ir, TensorId t, std::string wanted) {
  std::string& old = ir.tensor(t).id;
  ir.tensor_ids.erase(old);
  if (const auto it = ir.id_suffixes.find(old); it != ir.id_suffixes.end())
    it->second.base_freed = true;
  old.clear();
  assign_tensor_id(ir, t, std::move(wanted));
}

void require_mutable(const IrStorage& ir, std::string_view what) {
  if (ir.holds.load(std::memory_order_relaxed) > 0)
    throw GraphError(std::string(what) +
                     ": the Ir is already prepared for a Session, which keeps it frozen; make "
                     "every change to the Ir before creating its Session (or destroy the "
                     "Session first)");
}

Ir& HandleAccess::ir(const IrStorage& ir, std::string_view what) {
  if (ir.owner == nullptr)
    throw GraphError(std::string(what) + ": the Ir (id " + std::to_string(ir.unique_id) +
                     ") has been destroyed; its graphs can still be read, but not reach it");
  return *ir.owner;
}
} // namespace detail

Ir::Ir(std::int64_t replication_factor) : storage_(std::make_shared<detail::IrStorage>()) {
  storage_->owner = this;
  storage_->unique_id = next_ir_id++;
  add_graph(*storage_, "main_graph", "Ir");
  set_replication_factor(replication_factor);
}
Ir::Ir(Ir&& other) noexcept : storage_(std::move(other.storage_)) {
  if (storage_)
    storage_->owner = this;
}
Ir& Ir::operator=(Ir&& other) noexcept {
  if (this == &other)
    return *this;
  orphan(storage_);
  storage_ = std::move(other.storage_);
  if (storage_)
    storage_->owner = this;
  return *this;
}
Ir::~Ir() { orphan(storage_); }

Graph Ir::main_graph() const { return detail::HandleAccess::graph(storage_.get(), GraphId{0}); }
std::uint64_t Ir::id() const { return storage_->unique_id; }

Graph Ir::create_empty_graph(std::string_view name) {
  return detail::HandleAccess::graph(
      storage_.get(), add_graph(*storage_, std::string(name),
                                "Ir::create_empty_graph('" + std::string(name) + "')"));
}

Graph Ir::begin_traced_graph(std::string_view stem) {
  auto& storage = *storage_;
  require_mutable(storage, "Ir::create_graph('" + std::string(stem) + "')");
  auto& stems = storage.graph_name_stems;
  std::size_t n = 0;
  for (const auto& s : stems)
    n += s == stem;
  stems.emplace_back(stem);
  return create_empty_graph(std::string(stem) + "_subgraph(" + std::to_string(n) + ")");
}

std::vector<Graph> Ir::graphs() const {
  std::vector<Graph> gs;
  for (std::uint32_t i = 0; i < storage_->graphs.size(); ++i)
    gs.push_back(detail::HandleAccess::graph(storage_.get(), GraphId{i}));
  return gs;
}

std::vector<HostToDeviceStream> Ir::h2d_streams() const {
  std::vector<HostToDeviceStream> r;
  for (std::uint32_t i = 0; i < storage_->streams.size(); ++i)
    if (storage_->streams[i].host_to_device)
      r.push_back(detail::HandleAccess::h2d_stream(storage_.get(), StreamId{i}));
  return r;
}

std::vector<DeviceToHostStream> Ir::d2h_streams() const {
  std::vector<DeviceToHostStream> r;
  for (std::uint32_t i = 0; i < storage_->streams.size(); ++i)
    if (!storage_->streams[i].host_to_device)
      r.push_back(detail::HandleAccess::d2h_stream(storage_.get(), StreamId{i}));
  return r;
}

std::int64_t Ir::num_host_transfers() const { return storage_->num_host_transfers; }
void Ir::set_num_host_transfers(std::int64_t n) {
  if (n < 1)
    throw ValueError("Ir::set_num_host_transfers: expected a count >= 1, got " + std::to_string(n));
  detail::require_mutable(*storage_, "Ir::set_num_host_transfers(" + std::to_string(n) + ")");
  storage_->num_host_transfers = n;
}
const MatMulAttrs& Ir::matmul_defaults() const { return storage_->matmul_defaults; }
void Ir::set_matmul_defaults(const MatMulAttrs& defaults) {
  if (defaults.partials_type != float32 && defaults.partials_type != float16)
    throw DTypeError("Ir::set_matmul_defaults: expected partials_type float32 or float16, got " +
                     std::string(name(defaults.partials_type)));
  if (!(defaults.available_memory_proportion > 0.0 && defaults.available_memory_proportion <= 1.0))
    throw ValueError(
        "Ir::set_matmul_defaults: expected available_memory_proportion in (0, 1], got " +
        std::to_string(defaults.available_memory_proportion));
  storage_->matmul_defaults = defaults;
}
std::int64_t Ir::replication_factor() const { return storage_->replication_factor; }
void Ir::set_replication_factor(std::int64_t n) {
  if (n < 1)
    throw ValueError("Ir::set_replication_factor: expected a factor >= 1, got " +
                     std::to_string(n));
  detail::require_mutable(*storage_, "Ir::set_replication_factor(" + std::to_string(n) + ")");
  storage_->replication_factor = n;
}

namespace {
template <typename Handle>
Handle add_stream(Shape shape, DType dtype, std::string name, bool h2d) {
  const std::string_view what = h2d ? "h2d_stream" : "d2h_stream";
  auto& ir = *detail::require_graph(what).ir;
  const StreamId index{static_cast<std::uint32_t>(ir.streams.size())};
  if (name.empty())
    name = std::string(what) + std::to_string(index.value);
  nbytes(shape, dtype, std::string(what) + " '" + name + "'");
  detail::check_device_dtype(what, name, dtype, shape);
  detail::require_mutable(ir, std::string(what) + ": adding stream '" + name + "'");
  for (const auto& s : ir.streams)
    if (s.name == name)
      throw ValueError(std::string(what) + ": a stream named '" + name + "' already exists");
  ir.streams.push_back({std::move(name), TensorSpec{std::move(shape), dtype}, h2d});
  if constexpr (std::is_same_v<Handle, HostToDeviceStream>)
    return detail::HandleAccess::h2d_stream(&ir, index);
  else
    return detail::HandleAccess::d2h_stream(&ir, index);
}
} // namespace

HostToDeviceStream h2d_stream(Shape shape, DType dtype, std::string name) {
  return add_stream<HostToDeviceStream>(std::move(shape), dtype, std::move(name), true);
}
DeviceToHostStream d2h_stream(Shape shape, DType dtype, std::string name) {
  return add_stream<DeviceToHostStream>(std::move(shape), dtype, std::move(name), false);
}

namespace {
/// The node behind `s`, after the check every stream accessor makes (`member` names it).
const detail::StreamNode& stream_node(const StreamHandle& s, std::string_view member) {
  if (const detail::IrStorage* ir = detail::HandleAccess::storage(s)) [[likely]]
    return ir->streams[s.index()];
  const bool h2d = detail::HandleAccess::kind(s) == detail::HandleKind::h2d_stream;
  detail::HandleAccess::throw_unusable(
      s, std::string(h2d ? "HostToDeviceStream::" : "DeviceToHostStream::") + std::string(member));
}
} // namespace

bool StreamHandle::valid() const { return detail::HandleAccess::storage(*this) != nullptr; }
const std::string& StreamHandle::name() const { return stream_node(*this, "name()").name; }
const TensorSpec& StreamHandle::spec() const { return stream_node(*this, "spec()").spec; }
const Shape& StreamHandle::shape() const { return stream_node(*this, "shape()").spec.shape; }
DType StreamHandle::dtype() const { return stream_node(*this, "dtype()").spec.dtype; }

} // namespace pxl
