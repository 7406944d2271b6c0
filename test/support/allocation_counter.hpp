// Counts heap allocations by replacing the global operator new: the only way to see the
// allocations made inside the library. Include it in exactly one translation unit of a
// program (it defines the replacement functions).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace pxl::testing {
/// Allocations made by every thread of the process.
inline std::atomic<long> process_allocations{0};
/// Bytes they asked for (frees not subtracted: all that was ever allocated).
inline std::atomic<long long> process_allocated_bytes{0};
/// Allocations made by the calling thread.
inline thread_local long thread_allocations = 0;
} // namespace pxl::testing

namespace pxl::testing {
/// Every replaced form allocates here, so that every form of delete can free with std::free
/// (a sanitizer checks that what operator new returned is freed by operator delete).
inline void* counted_allocation(std::size_t n, std::size_t alignment) noexcept {
  process_allocations.fetch_add(1, std::memory_order_relaxed);
  process_allocated_bytes.fetch_add(static_cast<long long>(n), std::memory_order_relaxed);
  ++thread_allocations;
  n = n == 0 ? 1 : n;
  if (alignment <= alignof(std::max_align_t))
    return std::malloc(n);
  return std::aligned_alloc(alignment, (n + alignment - 1) / alignment * alignment);
}
inline void* counted_or_throw(std::size_t n, std::size_t alignment) {
  if (void* p = counted_allocation(n, alignment))
    return p;
  throw std::bad_alloc();
}
} // namespace pxl::testing

// Every form of the replaceable allocation functions, so that none falls back to a default
// whose pointer would reach the replaced delete.
void* operator new(std::size_t n) { return pxl::testing::counted_or_throw(n, 0); }
void* operator new[](std::size_t n) { return pxl::testing::counted_or_throw(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) {
  return pxl::testing::counted_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return pxl::testing::counted_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return pxl::testing::counted_allocation(n, 0);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return pxl::testing::counted_allocation(n, 0);
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return pxl::testing::counted_allocation(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return pxl::testing::counted_allocation(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
