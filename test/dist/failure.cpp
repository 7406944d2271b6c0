// One instance stops (hangs, say, in its own host code) before a collective that the other
// waits in: the waiting one must end every instance with a message naming the exchange once
// its timeout passes, not hang with it. (An instance that exits with an error is ended by
// mpirun itself, or by dist::abort.) Run by test/dist/failure.sh under `mpirun -np 2`.
#include "../emu/helpers.hpp"

#include "pxl/dist.hpp"
#include "pxl/pxl.hpp"

#include <chrono>
#include <cstdio>
#include <thread>

using namespace pxl;

int main() {
  dist::configure({.num_total_replicas = 2, .timeout = std::chrono::seconds(3)});
  test_emu::AllReduceProgram p(2, 4);
  Session session(p.ir, "ipu_model", {.workers = 1, .distributed = true});
  auto attached = session.attach();
  if (dist::instance_index() == 1) {
    std::fprintf(stderr, "instance 1: stopping before the run\n");
    std::this_thread::sleep_for(std::chrono::seconds(50));
    return 3;
  }
  session.run({{p.x, HostTensor({4}, float32)}});
  std::fprintf(stderr, "instance 0: the run returned, which it must not\n");
  return 0;
}
