#include "pxl/emu/memory_report.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <vector>

namespace pxl::emu {

namespace {
std::string human(std::int64_t bytes) {
  char buf[32];
  if (bytes >= 1 << 20)
    std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
  else if (bytes >= 1 << 10)
    std::snprintf(buf, sizeof buf, "%.2f KiB", static_cast<double>(bytes) / (1 << 10));
  else
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  return buf;
}
} // namespace

bool MemoryReport::fits() const {
  for (const auto& m : ipus)
    if (!m.fits())
      return false;
  return streaming.fits();
}

std::string MemoryReport::summary() const {
  std::ostringstream os;
  for (const auto& m : ipus) {
    os << "IPU " << m.ipu << ": " << human(m.total()) << " of " << human(m.capacity)
       << (m.total() > m.capacity ? " (OUT OF MEMORY)" : "") << "; most loaded tile "
       << human(m.max_tile) << " of " << human(m.tile_capacity)
       << (m.max_tile > m.tile_capacity ? " (OUT OF MEMORY)" : "") << "\n"
       << "  always-live " << human(m.always_live()) << " (variables " << human(m.variables)
       << ", constants " << human(m.constants) << ", vertex code " << human(m.vertex_code)
       << ", vertex state " << human(m.vertex_state) << ", control code " << human(m.control_code)
       << ", exchange code " << human(m.exchange_code) << "; " << m.steps << " steps)\n"
       << "  not-always-live peak " << human(m.not_always_live_peak) << " at step " << m.peak_step
       << " (" << m.peak_step_op << ")\n"
       << "  tiles at the peak: mean " << human(m.tile_mean) << ", by tenth of capacity [";
    for (std::size_t b = 0; b < m.tile_histogram.size(); ++b)
      os << (b ? " " : "") << m.tile_histogram[b];
    os << "]\n";
  }
  if (!streaming.buffers.empty()) {
    os << "Streaming Memory: " << human(streaming.used) << " of " << human(streaming.capacity)
       << (streaming.fits() ? "" : " (OUT OF MEMORY)") << " in " << streaming.buffers.size()
       << " remote buffer(s):";
    // The largest five, as for the tensors: a model with its optimizer state offloaded has
    // a buffer per variable.
    std::vector<const RemoteBufferMemory*> largest;
    for (const auto& b : streaming.buffers)
      largest.push_back(&b);
    std::ranges::stable_sort(largest,
                             [](const auto* x, const auto* y) { return x->bytes > y->bytes; });
    for (std::size_t i = 0; i < largest.size() && i < 5; ++i)
      os << " '" << largest[i]->name << "' " << largest[i]->entries << " x "
         << human(largest[i]->entry_bytes) << ";";
    if (largest.size() > 5)
      os << " and " << largest.size() - 5 << " smaller";
    os << "\n";
  }
  os << "largest tensors:\n";
  for (std::size_t i = 0; i < tensors.size() && i < 5; ++i)
    os << "  '" << tensors[i].id << "' (" << tensors[i].graph << ", IPU " << tensors[i].ipu << ") "
       << human(tensors[i].bytes) << (tensors[i].always_live ? " always-live" : "") << "\n";
  return os.str();
}

std::string MemoryReport::to_json() const {
  nlohmann::json ipus_json = nlohmann::json::array(), tensors_json = nlohmann::json::array();
  for (const IpuMemory& m : ipus)
    ipus_json.push_back({{"ipu", m.ipu},
                         {"capacity", m.capacity},
                         {"variables", m.variables},
                         {"constants", m.constants},
                         {"vertex_code", m.vertex_code},
                         {"vertex_state", m.vertex_state},
                         {"control_code", m.control_code},
                         {"exchange_code", m.exchange_code},
                         {"code", m.code()},
                         {"steps", m.steps},
                         {"always_live", m.always_live()},
                         {"not_always_live_peak", m.not_always_live_peak},
                         {"total", m.total()},
                         {"tile_capacity", m.tile_capacity},
                         {"max_tile", m.max_tile},
                         {"tile_mean", m.tile_mean},
                         {"tile_histogram", m.tile_histogram},
                         {"tiles", m.tiles},
                         {"peak_step", m.peak_step},
                         {"peak_step_op", m.peak_step_op},
                         {"liveness", m.liveness}});
  for (const TensorMemory& t : tensors)
    tensors_json.push_back({{"id", t.id},
                            {"graph", t.graph},
                            {"ipu", t.ipu},
                            {"bytes", t.bytes},
                            {"always_live", t.always_live},
                            {"first_step", t.first_step},
                            {"last_step", t.last_step}});
  nlohmann::json buffers_json = nlohmann::json::array();
  for (const RemoteBufferMemory& b : streaming.buffers)
    buffers_json.push_back({{"name", b.name},
                            {"entries", b.entries},
                            {"entry_bytes", b.entry_bytes},
                            {"bytes", b.bytes}});
  return nlohmann::json{{"ipus", std::move(ipus_json)},
                        {"streaming_memory",
                         {{"capacity", streaming.capacity},
                          {"used", streaming.used},
                          {"buffers", std::move(buffers_json)}}},
                        {"tensors", std::move(tensors_json)}}
      .dump(1);
}

} // namespace pxl::emu
