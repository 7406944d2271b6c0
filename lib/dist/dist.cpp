// pxl::dist's settings: explicit ones (configure) over what MPI's launcher put in the
// environment; and the traffic counters.
#include "instance_layout.hpp"
#include "instance_link.hpp"

#include "pxl/core/error.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdlib>
#include <mutex>
#include <string>

namespace pxl::dist {

namespace {

/// The first of `names` set in the environment to a non-negative integer, or `fallback`.
std::int64_t from_environment(std::initializer_list<const char*> names, std::int64_t fallback) {
  for (const char* name : names)
    if (const char* value = std::getenv(name)) {
      std::int64_t v = 0;
      const std::string_view s(value);
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec == std::errc() && end == s.data() + s.size() && v >= 0)
        return v;
    }
  return fallback;
}

/// Open MPI's, then MPICH's and PMIx's names for the world size and rank.
std::int64_t environment_instances() {
  return from_environment({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}, 1);
}
std::int64_t environment_index() {
  return from_environment({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}, 0);
}
/// ... and for the processes on this host (0: not said).
std::int64_t environment_local_instances() {
  return from_environment({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMIX_LOCAL_SIZE"}, 0);
}

struct Settings {
  std::mutex mutex;
  Options explicit_options;
};
Settings& settings() {
  static Settings s;
  return s;
}

/// `o` with the environment's values in place of the defaults.
Options resolve(Options o) {
  if (o.num_instances == 0)
    o.num_instances = std::max<std::int64_t>(1, environment_instances());
  if (o.instance_index < 0)
    o.instance_index = environment_index();
  if (o.num_total_replicas == 0)
    o.num_total_replicas = o.num_instances;
  return o;
}

struct Counters {
  std::atomic<std::int64_t> exchanges{0}, messages_sent{0}, messages_received{0}, bytes_sent{0},
      bytes_received{0};
};
Counters& counters() {
  static Counters c;
  return c;
}

} // namespace

void configure(const Options& options) {
  auto fail = [](const std::string& what) { throw ValueError("pxl::dist::configure: " + what); };
  if (options.num_instances < 0)
    fail("num_instances must be at least 1 (or 0: from the environment), got " +
         std::to_string(options.num_instances));
  if (options.num_total_replicas < 0)
    fail("num_total_replicas must be at least 1 (or 0: one per instance), got " +
         std::to_string(options.num_total_replicas));
  if (options.timeout < std::chrono::seconds(1))
    fail("timeout must be at least 1 s, got " + std::to_string(options.timeout.count()) + " s");
  const Options r = resolve(options);
  if (r.instance_index >= r.num_instances)
    fail("instance_index " + std::to_string(r.instance_index) + " is not below num_instances " +
         std::to_string(r.num_instances));
  if (r.num_total_replicas % r.num_instances != 0)
    fail("num_total_replicas = " + std::to_string(r.num_total_replicas) +
         " cannot be shared evenly by " + std::to_string(r.num_instances) +
         " instances; use a multiple of the instance count");
  std::lock_guard lock(settings().mutex);
  settings().explicit_options = options;
}

Options options() {
  std::lock_guard lock(settings().mutex);
  return resolve(settings().explicit_options);
}

bool mpi_enabled() { return detail::mpi_built(); }
std::int64_t num_instances() { return options().num_instances; }
std::int64_t instance_index() { return options().instance_index; }
std::int64_t num_total_replicas() { return options().num_total_replicas; }
std::int64_t num_local_instances() {
  const std::int64_t all = num_instances(), here = environment_local_instances();
  return here > 0 ? std::min(here, all) : all;
}
std::int64_t num_local_replicas() {
  const Options o = options();
  return o.num_total_replicas / o.num_instances;
}
std::int64_t replica_offset() {
  const Options o = options();
  return o.instance_index * (o.num_total_replicas / o.num_instances);
}

void barrier() {
  if (num_instances() > 1)
    detail::world_barrier();
}

void abort(int code) { detail::world_abort(code); }

Traffic traffic() {
  const Counters& c = counters();
  return {c.exchanges.load(), c.messages_sent.load(), c.messages_received.load(),
          c.bytes_sent.load(), c.bytes_received.load()};
}

namespace detail {
InstanceLayout current_layout() {
  return {.instances = num_instances(),
          .local_instances = num_local_instances(),
          .total_replicas = num_total_replicas(),
          .local_replicas = num_local_replicas(),
          .replica_offset = replica_offset()};
}

void count_traffic(std::int64_t messages_sent, std::int64_t messages_received,
                   std::int64_t bytes_sent, std::int64_t bytes_received) {
  Counters& c = counters();
  c.exchanges.fetch_add(1, std::memory_order_relaxed);
  c.messages_sent.fetch_add(messages_sent, std::memory_order_relaxed);
  c.messages_received.fetch_add(messages_received, std::memory_order_relaxed);
  c.bytes_sent.fetch_add(bytes_sent, std::memory_order_relaxed);
  c.bytes_received.fetch_add(bytes_received, std::memory_order_relaxed);
}
} // namespace detail

} // namespace pxl::dist
