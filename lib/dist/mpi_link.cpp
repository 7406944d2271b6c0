// InstanceLink over MPI (Open MPI from Debian's libopenmpi-dev). pxl initialises MPI itself
// when the program has not (as PopXL does), asking for MPI_THREAD_MULTIPLE, and finalises it
// at exit. Every exchange is non-blocking and polled against Options::timeout.
#include "instance_link.hpp"

#include "pxl/core/error.hpp"

// The C API only: MPI's deprecated C++ bindings would come along otherwise.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace pxl::dist::detail {

namespace {

/// The process's MPI: initialised once, on first use.
struct Mpi {
  /// MPI gave less than MPI_THREAD_MULTIPLE: calls from different threads take turns.
  bool serialised = false;
  int thread_level = 0;
  std::mutex mutex;
};

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Finalize();
}

Mpi& mpi() {
  static Mpi* const m = [] {
    auto* s = new Mpi; // never destroyed: MPI may be used until the very end of the process
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (!initialised) {
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &s->thread_level);
      std::atexit(finalize_at_exit);
    } else {
      MPI_Query_thread(&s->thread_level);
    }
    s->serialised = s->thread_level < MPI_THREAD_MULTIPLE;
    return s;
  }();
  return *m;
}

/// Runs `call` (an MPI call) alone when MPI needs calls serialised.
template <typename Call>
void locked(Call&& call) {
  Mpi& m = mpi();
  if (m.serialised) {
    std::lock_guard lock(m.mutex);
    call();
  } else {
    call();
  }
}

/// Waits for `request`, ending every instance once the others have kept it waiting for
/// longer than the timeout.
void wait(MPI_Request& request, MPI_Comm comm, const std::string& owner, std::string_view what) {
  const auto timeout = options().timeout;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int done = 0;
  for (unsigned polls = 0;; ++polls) {
    locked([&] { MPI_Test(&request, &done, MPI_STATUS_IGNORE); });
    if (done)
      return;
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr,
                   "pxl: %s: instance %lld of %lld waited %lld s for the other instances (%.*s); "
                   "one of them has failed or stopped. Ending every instance.\n",
                   owner.c_str(), static_cast<long long>(instance_index()),
                   static_cast<long long>(num_instances()), static_cast<long long>(timeout.count()),
                   static_cast<int>(what.size()), what.data());
      std::fflush(stderr);
      MPI_Abort(comm, 1);
    }
    // Spin briefly (an exchange usually completes within microseconds), then let other
    // processes on an oversubscribed machine have the core.
    if (polls < 256)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

int checked_count(std::size_t bytes, const std::string& owner, std::string_view what) {
  if (bytes > static_cast<std::size_t>(INT_MAX))
    throw SessionError(owner + ": " + std::string(what) + " would send " + std::to_string(bytes) +
                       " bytes in one MPI message, more than MPI's int count allows (" +
                       std::to_string(INT_MAX) + ")");
  return static_cast<int>(bytes);
}

} // namespace

struct InstanceLink::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
};

InstanceLink::InstanceLink(std::string owner)
    : impl_(std::make_unique<Impl>()), owner_(std::move(owner)) {
  Mpi& m = mpi();
  if (m.thread_level < MPI_THREAD_SERIALIZED)
    throw SessionError(owner_ + ": MPI was initialised with thread level " +
                       std::to_string(m.thread_level) +
                       ", below MPI_THREAD_SERIALIZED, which the emulator's workers need; "
                       "initialise it with MPI_Init_thread(MPI_THREAD_MULTIPLE), or let pxl");
  int size = 1, rank = 0;
  locked([&] {
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  });
  const Options o = options();
  if (size != o.num_instances || rank != o.instance_index)
    throw SessionError(owner_ + ": pxl::dist expects " + std::to_string(o.num_instances) +
                       " instance(s), this one number " + std::to_string(o.instance_index) +
                       ", but MPI's world has " + std::to_string(size) +
                       " process(es) and this is rank " + std::to_string(rank) +
                       "; launch with `mpirun -np " + std::to_string(o.num_instances) +
                       "`, or make pxl::dist::configure agree with mpirun");
  size_ = size;
  rank_ = rank;
  // A communicator of its own: the exchanges of two sessions never match each other's.
  MPI_Request request = MPI_REQUEST_NULL;
  locked([&] { MPI_Comm_idup(MPI_COMM_WORLD, &impl_->comm, &request); });
  wait(request, MPI_COMM_WORLD, owner_, "making its communicator");
}

InstanceLink::~InstanceLink() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && impl_->comm != MPI_COMM_NULL)
    locked([&] { MPI_Comm_free(&impl_->comm); });
}

void InstanceLink::all_gather(std::byte* buffer, std::size_t block, std::string_view what) {
  const int count = checked_count(block, owner_, what);
  MPI_Request request = MPI_REQUEST_NULL;
  locked([&] {
    MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buffer, count, MPI_BYTE, impl_->comm,
                   &request);
  });
  wait(request, impl_->comm, owner_, what);
  const std::int64_t peers = size_ - 1, bytes = static_cast<std::int64_t>(block);
  count_traffic(peers, peers, peers * bytes, peers * bytes);
}

void InstanceLink::broadcast(std::byte* buffer, std::size_t bytes, std::int64_t root,
                             std::string_view what) {
  const int count = checked_count(bytes, owner_, what);
  MPI_Request request = MPI_REQUEST_NULL;
  locked(
      [&] { MPI_Ibcast(buffer, count, MPI_BYTE, static_cast<int>(root), impl_->comm, &request); });
  wait(request, impl_->comm, owner_, what);
  const auto n = static_cast<std::int64_t>(bytes);
  if (root == rank_)
    count_traffic(size_ - 1, 0, (size_ - 1) * n, 0);
  else
    count_traffic(0, 1, 0, n);
}

bool mpi_built() { return true; }

void world_barrier() {
  MPI_Request request = MPI_REQUEST_NULL;
  locked([&] { MPI_Ibarrier(MPI_COMM_WORLD, &request); });
  wait(request, MPI_COMM_WORLD, "pxl::dist::barrier", "a barrier");
  count_traffic(num_instances() - 1, num_instances() - 1, 0, 0);
}

void world_abort(int code) {
  int initialised = 0, finalized = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalized);
  std::fflush(stdout);
  std::fflush(stderr);
  if (initialised && !finalized)
    MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

} // namespace pxl::dist::detail
