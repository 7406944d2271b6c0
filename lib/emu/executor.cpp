#include "executor.hpp"

#include <chrono>

namespace pxl::emu::detail {

namespace {

/// One run, shared by the workers: what they step through and who watches.
class Run {
public:
  Run(WorkerPool& pool, const Program& program, std::span<const std::unique_ptr<Replica>> replicas,
      StepObserver* observer)
      : pool_(pool), program_(program), replicas_(replicas), observer_(observer) {}

  /// Worker `w`'s part of the run.
  void operator()(unsigned w) const { graph(program_.main(), w, pool_.size()); }

  void graph(const GraphProgram& g, unsigned w, unsigned n) const {
    for (std::size_t i = 0; i < g.steps.size(); ++i) {
      const ProgramStep& step = g.steps[i];
      const auto start = observer_ && w == 0 ? std::chrono::steady_clock::now()
                                             : std::chrono::steady_clock::time_point{};
      switch (step.info.kind) {
      case StepKind::call:
        for (const auto& r : replicas_)
          r->step(g, i).call->in.run(w, n);
        pool_.barrier();
        graph(*step.callee, w, n);
        copies_out(g, i, w, n);
        break;
      case StepKind::repeat:
        loop(g, i, w, n);
        break;
      default:
        for (const auto& r : replicas_)
          r->step(g, i).run(w, n);
      }
      pool_.barrier();
      if (observer_) {
        if (w == 0)
          observer_->on_step(step.info, {start, std::chrono::steady_clock::now()},
                             static_cast<std::int64_t>(replicas_.size()));
        pool_.barrier(); // the next step's timing starts with every worker
      }
    }
  }

private:
  void copies_out(const GraphProgram& g, std::size_t i, unsigned w, unsigned n) const {
    for (const auto& r : replicas_) {
      const CallCopies& c = *r->step(g, i).call;
      c.out.run(w, n);
      c.back.run(w, n);
    }
  }

  void loop(const GraphProgram& g, std::size_t i, unsigned w, unsigned n) const {
    const ProgramStep& step = g.steps[i];
    for (const auto& r : replicas_)
      r->step(g, i).call->in.run(w, n);
    pool_.barrier();
    const bool staged = !replicas_.front()->step(g, i).call->unstage.empty();
    for (std::int64_t k = 0; k < step.info.trips; ++k) {
      if (k > 0) {
        // Loop-carried values: iteration k-1's outputs are iteration k's first inputs.
        for (const auto& r : replicas_)
          r->step(g, i).call->carry.run(w, n);
        pool_.barrier();
        if (staged) {
          for (const auto& r : replicas_)
            r->step(g, i).call->unstage.run(w, n);
          pool_.barrier();
        }
      }
      graph(*step.callee, w, n);
    }
    copies_out(g, i, w, n);
  }

  WorkerPool& pool_;
  const Program& program_;
  std::span<const std::unique_ptr<Replica>> replicas_;
  StepObserver* observer_;
};

} // namespace

void Executor::run(const Program& program, std::span<const std::unique_ptr<Replica>> replicas,
                   StepObserver* observer) {
  const Run run(pool_, program, replicas, observer);
  // One reference: small enough for std::function to hold without allocating.
  pool_.run([&run](unsigned w) { run(w); });
}

} // namespace pxl::emu::detail
