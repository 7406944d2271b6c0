#include "pxl/ir/ir.hpp"
#include "pxl/detail/context.hpp"
#include "pxl/detail/op_builder.hpp"

#include <atomic>

namespace pxl {

namespace {
std::atomic<std::uint64_t> next_ir_id{0};

detail::Index add_graph(detail::IrStorage& ir, std::string name) {
  const auto index = static_cast<detail::Index>(ir.graphs.size());
  detail::GraphNode node;
  node.name = std::move(name);
  ir.graphs.push_back(std::move(node));
  return index;
}
} // namespace

Ir::Ir(std::int64_t replication_factor) : storage_(std::make_unique<detail::IrStorage>()) {
  storage_->owner = this;
  storage_->unique_id = next_ir_id++;
  add_graph(*storage_, "main_graph");
  set_replication_factor(replication_factor);
}
Ir::Ir(Ir&& other) noexcept : storage_(std::move(other.storage_)) {
  if (storage_) storage_->owner = this;
}
Ir& Ir::operator=(Ir&& other) noexcept {
  storage_ = std::move(other.storage_);
  if (storage_) storage_->owner = this;
  return *this;
}
Ir::~Ir() = default;

Ir& Ir::of(detail::IrStorage* storage) {
  PXL_ASSERT(storage && storage->owner);
  return *storage->owner;
}

Graph Ir::create_empty_graph(std::string_view name) {
  return Graph(storage_.get(), add_graph(*storage_, std::string(name)));
}

namespace detail {
Graph begin_traced_graph(Ir& ir, std::string_view stem) {
  auto& stems = ir.storage()->graph_name_stems;
  std::size_t n = 0;
  for (const auto& s : stems) n += s == stem;
  stems.emplace_back(stem);
  return ir.create_empty_graph(std::string(stem) + "_subgraph(" + std::to_string(n) + ")");
}
} // namespace detail

std::vector<Graph> Ir::graphs() const {
  std::vector<Graph> gs;
  for (std::uint32_t i = 0; i < storage_->graphs.size(); ++i) gs.emplace_back(storage_.get(), i);
  return gs;
}

std::vector<HostToDeviceStream> Ir::h2d_streams() const {
  std::vector<HostToDeviceStream> r;
  for (std::uint32_t i = 0; i < storage_->streams.size(); ++i)
    if (storage_->streams[i].host_to_device) r.emplace_back(storage_.get(), i);
  return r;
}

std::vector<DeviceToHostStream> Ir::d2h_streams() const {
  std::vector<DeviceToHostStream> r;
  for (std::uint32_t i = 0; i < storage_->streams.size(); ++i)
    if (!storage_->streams[i].host_to_device) r.emplace_back(storage_.get(), i);
  return r;
}

std::int64_t Ir::num_host_transfers() const { return storage_->num_host_transfers; }
void Ir::set_num_host_transfers(std::int64_t n) {
  if (n < 1)
    throw ValueError("Ir::set_num_host_transfers: expected a count >= 1, got " + std::to_string(n));
  storage_->num_host_transfers = n;
}
std::int64_t Ir::replication_factor() const { return storage_->replication_factor; }
void Ir::set_replication_factor(std::int64_t n) {
  if (n < 1)
    throw ValueError("Ir::set_replication_factor: expected a factor >= 1, got " +
                     std::to_string(n));
  storage_->replication_factor = n;
}

namespace {
template <typename Handle>
Handle add_stream(Shape shape, DType dtype, std::string name, bool h2d) {
  const std::string_view what = h2d ? "h2d_stream" : "d2h_stream";
  auto& ir = *detail::require_graph(what).ir;
  for (auto d : shape)
    if (d < 0) throw ShapeError(std::string(what) + ": negative dimension in " + to_string(shape));
  const auto index = static_cast<std::uint32_t>(ir.streams.size());
  if (name.empty()) name = std::string(h2d ? "h2d_stream" : "d2h_stream") + std::to_string(index);
  for (const auto& s : ir.streams)
    if (s.name == name)
      throw ValueError(std::string(what) + ": a stream named '" + name + "' already exists");
  ir.streams.push_back({std::move(name), TensorSpec{std::move(shape), dtype}, h2d});
  return Handle(&ir, index);
}
} // namespace

HostToDeviceStream h2d_stream(Shape shape, DType dtype, std::string name) {
  return add_stream<HostToDeviceStream>(std::move(shape), dtype, std::move(name), true);
}
DeviceToHostStream d2h_stream(Shape shape, DType dtype, std::string name) {
  return add_stream<DeviceToHostStream>(std::move(shape), dtype, std::move(name), false);
}

const std::string& detail::StreamHandle::name() const { return ir_->streams[index_].name; }
const TensorSpec& detail::StreamHandle::spec() const { return ir_->streams[index_].spec; }

} // namespace pxl
