// InstanceLink in a build without MPI: a single process runs as it always has; asking for
// several instances is a clear error rather than a silent run of one.
#include "instance_link.hpp"

#include "pxl/core/error.hpp"

#include <cstdio>
#include <cstdlib>

namespace pxl::dist::detail {

namespace {
[[noreturn]] void no_mpi(const std::string& owner) {
  throw SessionError(owner + ": this process is instance " + std::to_string(instance_index()) +
                     " of " + std::to_string(num_instances()) +
                     ", but pxl was built without MPI, so it cannot join the others; rebuild "
                     "with libopenmpi-dev installed (Meson option -Dmpi=enabled), or run one "
                     "process");
}
} // namespace

struct InstanceLink::Impl {};

InstanceLink::InstanceLink(std::string owner) : owner_(std::move(owner)) { no_mpi(owner_); }
InstanceLink::~InstanceLink() = default;
void InstanceLink::all_gather(std::byte*, std::size_t, std::string_view) { no_mpi(owner_); }
void InstanceLink::broadcast(std::byte*, std::size_t, std::int64_t, std::string_view) {
  no_mpi(owner_);
}

bool mpi_built() { return false; }

void world_barrier() { no_mpi("pxl::dist::barrier"); }

void world_abort(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::exit(code);
}

} // namespace pxl::dist::detail
