#include "executor.hpp"

#include "pxl/core/error.hpp"

#include <algorithm>
#include <array>
#include <exception>
#include <numeric>
#include <utility>

namespace pxl::emu::detail {

namespace {
using Clock = std::chrono::steady_clock;

/// Work (flops plus bytes moved, as StepInfo counts them) below which a step is not cut
/// further: a chunk of a few microseconds, worth more than its claim.
constexpr std::int64_t chunk_work = 64 * 1024;

/// Cuts `g` into waves. Running a wave's phases in turn keeps the memory plan valid: the plan
/// (compile_program) gives each IPU its own arena, placed by lifetimes in program steps, and
/// every value of IPU i is touched only by IPU i's steps, or by a step that is not IPU-local
/// and so ends a wave (an IpuCopy, a call's copies). A wave keeps IPU i's steps in program
/// order, and after what came before and before what follows it: each value of IPU i sees
/// the same accesses in the same order as step by step, whatever runs on the other IPUs.
GraphWaves cut_into_waves(const GraphProgram& g) {
  const std::size_t n = g.steps.size();
  GraphWaves w;
  w.order.resize(n);
  std::iota(w.order.begin(), w.order.end(), std::size_t{0});
  w.phase.assign(n, 0);
  std::vector<std::uint32_t> steps_of(g.arena_bytes.size()); // by IPU, in the current wave
  for (std::size_t begin = 0; begin < n;) {
    if (!is_ipu_local(g.steps[begin].info)) {
      ++begin;
      continue;
    }
    std::ranges::fill(steps_of, 0);
    Wave wave{begin, begin, 0};
    for (; wave.end < n && is_ipu_local(g.steps[wave.end].info); ++wave.end) {
      const ProgramStep& step = g.steps[wave.end];
      // The placement the wave relies on (the Ir refuses an op reading another IPU's tensor).
      for (const auto* slots : {&step.inputs, &step.outputs})
        for (const Slot& slot : *slots)
          PXL_ASSERT(slot.ipu == step.info.ipu);
      PXL_ASSERT(static_cast<std::size_t>(step.info.ipu) < steps_of.size());
      std::uint32_t& k = steps_of[static_cast<std::size_t>(step.info.ipu)];
      w.phase[wave.end] = k++;
      wave.phases = std::max(wave.phases, k);
    }
    std::ranges::stable_sort(w.order.begin() + static_cast<std::ptrdiff_t>(wave.begin),
                             w.order.begin() + static_cast<std::ptrdiff_t>(wave.end), {},
                             [&w](std::size_t step) { return w.phase[step]; });
    w.waves.push_back(wave);
    begin = wave.end;
  }
  return w;
}
} // namespace

/// One worker's walk through one run (or, counting, through the program): every worker walks
/// the same deterministic sequence of phases, so each computes the same item ranges.
class Executor::Walk {
public:
  enum class Mode { count, single, shared };

  Walk(Executor& e, Mode mode, unsigned worker, std::uint64_t base)
      : e_(e), mode_(mode), worker_(worker), cursor_(base), run_end_(base + e.items_per_run_),
        holder_(worker == 0 && mode != Mode::count), start_pending_(worker == 0) {
    if (mode != Mode::count)
      open_ = e.open_[worker];
  }

  /// Worker 0's walk: starts the run, and returns once the run is complete.
  void lead(const GraphProgram& g) {
    graph(g, 0);
    if (mode_ != Mode::shared)
      return;
    flush();
    e_.pool_.wait_for(run_end_);
  }
  /// Another worker's walk: returns once it has nothing left to claim.
  void follow(const GraphProgram& g) {
    graph(g, 0);
    flush();
  }

  std::uint64_t cursor() const { return cursor_; }
  std::size_t max_depth() const { return max_depth_; }
  std::uint64_t max_items() const { return max_items_; }

private:
  void graph(const GraphProgram& g, std::size_t depth) {
    max_depth_ = std::max(max_depth_, depth);
    const GraphWaves& plan = e_.waves_[g.graph.value];
    auto next = plan.waves.begin();
    for (std::size_t i = 0; i < g.steps.size() && !stale_;) {
      if (next != plan.waves.end() && next->begin == i) {
        wave(g, plan, *next, depth);
        i = next->end;
        ++next;
      } else {
        step_alone(g, i, depth);
        ++i;
      }
    }
  }

  /// Step `i` of `g`, which is not IPU-local: a phase of its own, or a call, loop or
  /// conditional.
  void step_alone(const GraphProgram& g, std::size_t i, std::size_t depth) {
    const ProgramStep& s = g.steps[i];
    // The holder is the only worker at this boundary that may time it: every other one
    // waits for the phase it has not yet published.
    if (holder_ && e_.observer_.load(std::memory_order_relaxed))
      e_.timings_[depth][0].start = Clock::now();
    switch (s.info.kind) {
    case StepKind::call: {
      copies(g, i, &CallCopies::in);
      const Enter frame(*this, g, i);
      graph(*s.callee, depth + 1);
      copies(g, i, &CallCopies::out, &CallCopies::back);
      break;
    }
    case StepKind::repeat:
      loop(g, i, depth);
      break;
    case StepKind::conditional:
      branches(g, i, depth);
      break;
    default:
      kernel(g, i);
    }
    if (stale_) // the run stopped inside the call, loop or conditional
      return;
    // Whoever completed the step's last phase reports it, before publishing that phase.
    if (holder_)
      if (StepObserver* o = e_.observer_.load(std::memory_order_relaxed)) {
        StepTiming& timing = e_.timings_[depth][0];
        timing.end = Clock::now();
        report(*o, s.info, timing);
      }
    halt(&s.info, i);
  }

  /// Wave `w` of `g` (plan.waves): phase j runs the j-th step of each IPU in it, all
  /// replicas' chunks of each. After phase j, the steps whose every predecessor in the
  /// program has run too are reported, so the observer still sees program order; every
  /// worker counts them alike, whichever reports. A step's timing is its phase's.
  void wave(const GraphProgram& g, const GraphWaves& plan, const Wave& w, std::size_t depth) {
    const std::uint64_t replicas = e_.replicas_.size();
    std::size_t first = w.begin, reported = w.begin;
    for (std::uint32_t j = 0; j < w.phases; ++j) {
      if (holder_ && e_.observer_.load(std::memory_order_relaxed))
        e_.timings_[depth][j].start = Clock::now();
      std::size_t last = first;
      std::uint64_t items = 0;
      for (; last < w.end && plan.phase[plan.order[last]] == j; ++last)
        items += replicas * chunks(g.steps[plan.order[last]].info);
      const std::span<const std::size_t> steps(plan.order.data() + first, last - first);
      // Items in the order of the phase's steps, each step's replica by replica as in kernel().
      phase(items, [&](std::uint64_t item) {
        for (const std::size_t i : steps) {
          const unsigned c = chunks(g.steps[i].info);
          if (item < replicas * c) {
            if (active(item / c))
              e_.replicas_[item / c]->step(g, i).run(static_cast<unsigned>(item % c), c);
            return;
          }
          item -= replicas * c;
        }
      });
      if (stale_)
        return;
      first = last;
      const std::size_t from = reported;
      while (reported < w.end && plan.phase[reported] <= j)
        ++reported;
      if (holder_)
        if (StepObserver* o = e_.observer_.load(std::memory_order_relaxed)) {
          const std::span<StepTiming> timings = e_.timings_[depth];
          timings[j].end = Clock::now();
          for (std::size_t i = from; i < reported; ++i)
            report(*o, g.steps[i].info, timings[plan.phase[i]]);
        }
      halt(nullptr, 0); // only an observer stops a wave: its steps cannot fail
    }
  }

  /// After a step (or a wave's phase), on the worker that completed it: ends the run there if
  /// a stop was requested in it. `step` is null for a phase of a wave. Every other worker then
  /// finds the run complete at its next phase (shared), and this one walks no further.
  void halt(const StepInfo* step, std::size_t index) {
    if (!holder_ || stale_ || !e_.errors_.stopping())
      return;
    RunErrors::Where where{.step = step, .index = index, .depth = depth_};
    for (std::size_t d = 0; d < std::min(depth_, where.frames.size()); ++d)
      where.frames[d] = {&open_[d].g->steps[open_[d].i].info, open_[d].i, open_[d].iteration};
    e_.errors_.locate(where);
    unwind();
    if (mode_ == Mode::shared) {
      e_.pool_.end_run(run_end_); // instead of publishing the phase it completed
      pending_ = 0;
    }
    stale_ = true;
  }

  /// Leaves the enclosing calls, loops and conditionals of a stopped run, innermost first,
  /// as their ends would: what their callees modified in place (the inputs passed by
  /// reference, PopXL's modified inputs: variables updated in a loop) is copied back, on every
  /// replica that runs them. So a variable holds what every step up to the stop wrote, whether
  /// or not the compiler aliased it into the callee. On this worker alone: the run is over
  /// for the others.
  void unwind() {
    for (std::size_t d = depth_; d-- > 0;) {
      const Open& o = open_[d];
      const ProgramStep& step = o.g->steps[o.i];
      for (std::size_t r = 0; r < e_.replicas_.size(); ++r) {
        const BoundStep& bound = e_.replicas_[r]->step(*o.g, o.i);
        if (step.info.kind != StepKind::conditional) {
          if (active(r, o.guards))
            bound.call->back.run(0, 1);
        } else if (active(r, o.guards + 1)) { // the branch being walked (guards_[o.guards])
          const BranchCopies& b = *bound.branches;
          (guards_[o.guards].then ? b.then_copies : b.else_copies).back.run(0, 1);
        }
      }
    }
  }

  /// Enters the call, loop or conditional step `i` of `g` for the life of the object: where a
  /// stop inside it is located, and what it unwinds.
  class Enter {
  public:
    Enter(Walk& w, const GraphProgram& g, std::size_t i) : w_(w) {
      if (w_.mode_ != Mode::count)
        w_.open_[w_.depth_] = {&g, i, -1, w_.guards_.size()};
      ++w_.depth_;
    }
    Enter(const Enter&) = delete;
    Enter& operator=(const Enter&) = delete;
    ~Enter() { --w_.depth_; }
    /// A loop's iteration `k`.
    void iteration(std::int64_t k) {
      if (w_.mode_ != Mode::count)
        w_.open_[w_.depth_ - 1].iteration = k;
    }

  private:
    Walk& w_;
  };

  /// Calls the observer; an exception it throws (on whichever worker reports) is kept for
  /// Executor::run to rethrow once the run is over, and the observer is not called again.
  void report(StepObserver& o, const StepInfo& info, const StepTiming& timing) {
    std::int64_t replicas = 0;
    for (std::size_t r = 0; r < e_.replicas_.size(); ++r)
      replicas += active(r) ? 1 : 0;
    if (replicas == 0)
      return;
    try {
      o.on_step(info, timing, replicas);
    } catch (...) {
      e_.observer_error_ = std::current_exception();
      e_.observer_.store(nullptr, std::memory_order_relaxed);
      e_.errors_.stop();
    }
  }

  void loop(const GraphProgram& g, std::size_t i, std::size_t depth) {
    const ProgramStep& step = g.steps[i];
    copies(g, i, &CallCopies::in);
    const bool staged = !e_.replicas_.front()->step(g, i).call->unstage.empty();
    Enter frame(*this, g, i);
    for (std::int64_t k = 0; k < step.info.trips && !stale_; ++k) {
      frame.iteration(k);
      if (k > 0) {
        // Loop-carried values: iteration k-1's outputs are iteration k's first inputs.
        copies(g, i, &CallCopies::carry);
        if (staged)
          copies(g, i, &CallCopies::unstage);
      }
      graph(*step.callee, depth + 1);
    }
    copies(g, i, &CallCopies::out, &CallCopies::back);
  }

  /// A conditional: each replica reads its own condition (one item per replica), then both
  /// branches are stepped, each replica running the items of the branch it chose only. Every
  /// worker walks the same phases whatever the conditions, so the walk stays deterministic.
  void branches(const GraphProgram& g, std::size_t i, std::size_t depth) {
    const ProgramStep& step = g.steps[i];
    phase(e_.replicas_.size(), [&](std::uint64_t r) {
      if (!active(r))
        return;
      BranchCopies& b = *e_.replicas_[r]->step(g, i).branches;
      b.take_then = std::to_integer<unsigned>(*b.condition) != 0;
    });
    const Enter frame(*this, g, i);
    for (const bool then : {true, false}) {
      guards_.push_back({&g, i, then});
      const auto side = then ? &BranchCopies::then_copies : &BranchCopies::else_copies;
      branch_copies(g, i, side, &CallCopies::in);
      graph(then ? *step.callee : *step.else_callee, depth + 1);
      branch_copies(g, i, side, &CallCopies::out, &CallCopies::back);
      guards_.pop_back();
    }
  }

  /// Whether replica `r` runs the steps being walked: it chose every enclosing branch (the
  /// outermost `n` of them, when given).
  bool active(std::uint64_t r, std::size_t n = std::size_t(-1)) const {
    for (std::size_t k = 0; k < std::min(n, guards_.size()); ++k)
      if (e_.replicas_[r]->step(*guards_[k].g, guards_[k].i).branches->take_then != guards_[k].then)
        return false;
    return true;
  }

  void kernel(const GraphProgram& g, std::size_t i) {
    const StepInfo& info = g.steps[i].info;
    // A collective of a distributed Session first exchanges its inputs with the other
    // instances: one item, before any replica's share of the step.
    if (const auto& before = e_.replicas_.front()->step(g, i).before)
      phase(1, [&](std::uint64_t) { before(); });
    if (host_io(info)) {
      // Item c is chunk c of every replica, in replica order: a callback-fed stream's chunk 0
      // takes the replicas' elements from one queue, step-major and then replica by replica.
      const unsigned c = e_.max_chunks_;
      phase(c, [&](std::uint64_t item) {
        for (const auto& r : e_.replicas_)
          r->step(g, i).run(static_cast<unsigned>(item), c);
      });
      return;
    }
    const unsigned c = chunks(info);
    phase(e_.replicas_.size() * c, [&](std::uint64_t item) {
      if (active(item / c))
        e_.replicas_[item / c]->step(g, i).run(static_cast<unsigned>(item % c), c);
    });
  }

  /// One phase of the call copies `lists` of step `i` in every replica; none when they are
  /// empty.
  template <typename... Lists>
  void copies(const GraphProgram& g, std::size_t i, Lists... lists) {
    copies_of(
        g, i, [](const BoundStep& s) -> const CallCopies& { return *s.call; }, lists...);
  }

  /// As `copies`, for the copies around one branch (`side`) of conditional step `i`.
  template <typename... Lists>
  void branch_copies(const GraphProgram& g, std::size_t i, CallCopies BranchCopies::*side,
                     Lists... lists) {
    copies_of(
        g, i, [side](const BoundStep& s) -> const CallCopies& { return s.branches.get()->*side; },
        lists...);
  }

  /// One phase of the copies `lists` of the CallCopies `select` picks from step `i`, in every
  /// replica that runs it; none when they are empty.
  template <typename Select, typename... Lists>
  void copies_of(const GraphProgram& g, std::size_t i, Select select, Lists... lists) {
    std::size_t bytes = 0;
    for (const auto& r : e_.replicas_) {
      const CallCopies& c = select(r->step(g, i));
      bytes = std::max(bytes, ((c.*lists).bytes() + ...));
    }
    if (bytes == 0)
      return;
    const unsigned c = chunks_for(2 * static_cast<std::int64_t>(bytes));
    phase(e_.replicas_.size() * c, [&](std::uint64_t item) {
      if (!active(item / c))
        return;
      const CallCopies& copies = select(e_.replicas_[item / c]->step(g, i));
      const auto chunk = static_cast<unsigned>(item % c);
      ((copies.*lists).run(chunk, c), ...);
    });
  }

  /// A host_load or host_store: every chunk counts the stream's position, so every step on a
  /// stream must use the same chunks (all of them).
  static bool host_io(const StepInfo& info) {
    return info.op && (info.op_kind == OpKind::HostLoad || info.op_kind == OpKind::HostStore);
  }
  /// The chunks a kernel or copy step is cut into.
  unsigned chunks(const StepInfo& info) const {
    return chunks_for(info.flops + info.bytes_read + info.bytes_written);
  }
  /// A multiple of the workers when more than one, so that each worker's share (pick) is the
  /// same part of every step's data.
  unsigned chunks_for(std::int64_t work) const {
    const std::int64_t c = std::clamp<std::int64_t>(work / chunk_work, 1, e_.max_chunks_);
    const std::int64_t n = e_.pool_.size();
    return static_cast<unsigned>(
        c == 1 ? 1 : std::min<std::int64_t>((c + n - 1) / n * n, e_.max_chunks_));
  }

  /// Runs `count` items, `body(k)` for k in [0, count): this worker's claims of them.
  template <typename Body>
  void phase(std::uint64_t count, Body&& body) {
    const std::uint64_t begin = cursor_, end = cursor_ + count;
    cursor_ = end;
    switch (mode_) {
    case Mode::count:
      max_items_ = std::max(max_items_, count);
      return;
    case Mode::single:
      if (stale_)
        return;
      for (std::uint64_t k = 0; k < count; ++k)
        body(k);
      return;
    case Mode::shared:
      break;
    }
    if (stale_)
      return;
    WorkerPool& pool = e_.pool_;
    std::uint64_t item = 0;
    // A worker holding the previous phase's completion (or the run's start) takes the first
    // item before it lets the others in: a run of one-chunk steps stays on one core, as it
    // would on one worker, instead of moving its data between cores at every step.
    const bool first = (pending_ || start_pending_) && pool.claim(end, item);
    flush();
    holder_ = false;
    if (!first) {
      pool.wait_for(begin);
      if (pool.completed(run_end_)) { // a worker woken late: the run is over
        stale_ = true;
        return;
      }
      if (!pool.claim(end, item))
        return;
    }
    do {
      body(pick(count, end));
      if (pool.finish(end)) {
        holder_ = true;
        pending_ = end;
      }
    } while (pool.claim(end, item));
  }

  /// Which of the current phase's `count` items (ending at `end`) this worker runs for an item
  /// it claimed: the first not yet picked of its own share, items [w·count/n, (w+1)·count/n),
  /// else of the shares after it. Items are chunks in data order, so a worker's share is about
  /// the same part of each step's data as in the steps before and stays in its core's caches;
  /// moving it between cores costs more than the work on it on some machines (about 5 GB/s
  /// between the cores of a virtual machine). A worker kept off its core still loses its
  /// share to the others, which pick it after their own.
  std::uint64_t pick(std::uint64_t count, std::uint64_t end) {
    const std::uint64_t from = worker_ * count / e_.pool_.size();
    for (std::uint64_t j = 0; j < count; ++j) {
      const std::uint64_t k = from + j < count ? from + j : from + j - count;
      std::atomic<std::uint64_t>& slot = e_.picked_[k];
      // Holds the end of the phase that last picked the item: an earlier phase's is smaller.
      std::uint64_t seen = slot.load(std::memory_order_relaxed);
      if (seen != end && slot.compare_exchange_strong(seen, end, std::memory_order_relaxed))
        return k;
    }
    // As many items are claimed as the phase has, each picking one: one is always left.
    PXL_ASSERT(false);
    return 0;
  }

  /// Publishes what this worker holds: the run's start (worker 0) or the completion of the
  /// last phase it finished.
  void flush() {
    if (start_pending_) {
      start_pending_ = false;
      e_.pool_.start(run_end_ - e_.items_per_run_);
    }
    if (pending_) {
      e_.pool_.publish(pending_);
      pending_ = 0;
    }
  }

  /// A branch being walked: the conditional's step and which of its branches.
  struct Guard {
    const GraphProgram* g;
    std::size_t i;
    bool then;
  };

  Executor& e_;
  const Mode mode_;
  const unsigned worker_;
  std::vector<Guard> guards_; ///< the enclosing branches, outermost first
  /// The enclosing calls, loops and conditionals, outermost first: the first depth_ of this
  /// worker's Executor::open_ (not kept when counting).
  std::span<Open> open_;
  std::size_t depth_ = 0;
  std::uint64_t cursor_;        ///< the next phase's first item
  const std::uint64_t run_end_; ///< one past the run's last item
  /// This worker started the run or completed the latest phase: it alone may report the
  /// steps ending, and time the steps starting, at the current boundary.
  bool holder_;
  bool start_pending_;
  bool stale_ = false;
  std::uint64_t pending_ = 0; ///< the end of a completed phase not yet published, or 0
  std::size_t max_depth_ = 0;
  std::uint64_t max_items_ = 1; ///< counting: the most items of a phase
};

Executor::Executor(WorkerPool& pool, const Program& program,
                   std::span<const std::unique_ptr<Replica>> replicas, RunErrors& errors)
    : pool_(pool), program_(program), replicas_(replicas), errors_(errors),
      max_chunks_(max_chunks(pool.size())) {
  waves_.resize(program_.graphs.size());
  std::uint32_t phases = 1;
  for (std::size_t g = 0; g < program_.graphs.size(); ++g)
    if (program_.graphs[g]) {
      waves_[g] = cut_into_waves(*program_.graphs[g]);
      for (const Wave& w : waves_[g].waves)
        phases = std::max(phases, w.phases);
    }
  Walk count(*this, Walk::Mode::count, 0, 0);
  count.lead(program_.main());
  open_.assign(pool_.size(), std::vector<Open>(count.max_depth() + 1));
  items_per_run_ = count.cursor();
  picked_ = std::make_unique<std::atomic<std::uint64_t>[]>(count.max_items());
  for (std::size_t depth = 0; depth <= count.max_depth(); ++depth)
    timings_.emplace_back(phases, StepTiming{.depth = depth});
  pool_.set_job([this](unsigned worker, std::uint64_t base) {
    Walk(*this, Walk::Mode::shared, worker, base).follow(program_.main());
  });
}

void Executor::run(StepObserver* observer) {
  observer_.store(observer, std::memory_order_relaxed); // published by the run's start
  observer_error_ = nullptr;
  if (pool_.size() == 1)
    Walk(*this, Walk::Mode::single, 0, 0).lead(program_.main());
  else
    Walk(*this, Walk::Mode::shared, 0, pool_.next_base()).lead(program_.main());
  // Written by a reporting worker before it published a phase, which the run's end follows.
  if (observer_error_)
    std::rethrow_exception(std::exchange(observer_error_, nullptr));
}

} // namespace pxl::emu::detail
