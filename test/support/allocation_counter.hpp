// Counts heap allocations by replacing the global operator new: the only way to see the
// allocations made inside the library. Include it in exactly one translation unit of a
// program (it defines the replacement functions).
#pragma once

#include <atomic>
#include <cstdlib>
#include <new>

namespace pxl::testing {
/// Allocations made by every thread of the process.
inline std::atomic<long> process_allocations{0};
/// Allocations made by the calling thread.
inline thread_local long thread_allocations = 0;
} // namespace pxl::testing

void* operator new(std::size_t n) {
  pxl::testing::process_allocations.fetch_add(1, std::memory_order_relaxed);
  ++pxl::testing::thread_allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n))
    return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
