// Keeps oneDNN single-threaded inside the emulator's workers (sgemm and the primitives alike).
#pragma once

// Debian's oneDNN runs its work on an OpenMP team as large as the calling thread's
// omp_get_max_threads(), both when it plans a primitive and when it runs one; inside our workers
// that would oversubscribe the cores. The OpenMP runtime comes in with oneDNN, so these resolve
// at load time without a link dependency of our own; weak, so a oneDNN built on another
// threading runtime still links.
extern "C" {
__attribute__((weak)) int omp_get_max_threads();
__attribute__((weak)) void omp_set_num_threads(int);
}

namespace pxl::emu::detail {

/// Keeps oneDNN single-threaded on the calling thread for its lifetime.
class SingleThreadedDnnl {
public:
  SingleThreadedDnnl() {
    if (omp_get_max_threads && omp_set_num_threads) {
      previous_ = omp_get_max_threads();
      if (previous_ != 1)
        omp_set_num_threads(1);
    }
  }
  ~SingleThreadedDnnl() {
    if (previous_ > 1)
      omp_set_num_threads(previous_);
  }
  SingleThreadedDnnl(const SingleThreadedDnnl&) = delete;
  SingleThreadedDnnl& operator=(const SingleThreadedDnnl&) = delete;

private:
  int previous_ = 1;
};

} // namespace pxl::emu::detail
