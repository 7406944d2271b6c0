// The Executor: steps every replica through a Program in lockstep on the worker pool.
#pragma once

#include "program.hpp"
#include "replica.hpp"
#include "worker_pool.hpp"

#include "pxl/emu/step_observer.hpp"

#include <memory>
#include <span>
#include <vector>

namespace pxl::emu::detail {

/// Runs the main graph's program on every replica at once: each step is executed by every
/// worker on every replica (each replica's kernel splits its work over the workers) and ends
/// in one barrier, so all replicas finish step i before any starts step i+1. A step may
/// therefore read a peer replica's buffers (collectives), and streams see elements
/// step-major. Calls and loops are stepped here, their callees in lockstep too.
class Executor {
public:
  explicit Executor(WorkerPool& pool) : pool_(pool) {}

  /// One run of `program` on `replicas`; `observer` (may be null) sees every step.
  void run(const Program& program, std::span<const std::unique_ptr<Replica>> replicas,
           StepObserver* observer);

private:
  WorkerPool& pool_;
};

} // namespace pxl::emu::detail
