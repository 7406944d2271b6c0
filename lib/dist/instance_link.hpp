// InstanceLink: the MPI side of a distributed Session, one communicator of its own over every
// instance. Built from mpi_link.cpp with MPI, from no_mpi_link.cpp without (where making one
// for several instances is a SessionError).
#pragma once

#include "pxl/dist.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace pxl::dist::detail {

/// Every exchange is collective: each instance makes the same calls in the same order (they
/// run the same program). Each waits at most Options::timeout for the others, then ends every
/// instance with a message naming the exchange (MPI_Abort), instead of hanging. Calls from
/// several threads are serialised when MPI does not support concurrent ones.
class InstanceLink {
public:
  /// `owner` words the errors ("Session"). Collective: every instance makes its link at the
  /// same point. SessionError when MPI's world does not match num_instances(), or in a build
  /// without MPI.
  explicit InstanceLink(std::string owner);
  InstanceLink(const InstanceLink&) = delete;
  InstanceLink& operator=(const InstanceLink&) = delete;
  ~InstanceLink();

  std::int64_t size() const { return size_; }
  std::int64_t rank() const { return rank_; }

  /// In place: instance k's `block` bytes at buffer + k·block reach every instance.
  void all_gather(std::byte* buffer, std::size_t block, std::string_view what);
  /// `bytes` at `buffer` from instance `root` to every instance.
  void broadcast(std::byte* buffer, std::size_t bytes, std::int64_t root, std::string_view what);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string owner_;
  std::int64_t size_ = 1, rank_ = 0;
};

/// Counts an exchange in dist::traffic().
void count_traffic(std::int64_t messages_sent, std::int64_t messages_received,
                   std::int64_t bytes_sent, std::int64_t bytes_received);

/// What the MPI build provides (mpi_link.cpp) or its stand-in reports (no_mpi_link.cpp).
bool mpi_built();
/// A barrier over every instance (MPI_COMM_WORLD), with the timeout of every exchange.
void world_barrier();
[[noreturn]] void world_abort(int code);

} // namespace pxl::dist::detail
