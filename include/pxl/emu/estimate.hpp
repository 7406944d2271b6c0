// pxl::emu::estimate of an Ir: its memory report and the estimated cycles of its programs on a
// Target, compiled as a Session would compile them, without device memory and without a run.
#pragma once

#include "pxl/emu/cost_model.hpp"
#include "pxl/emu/memory_report.hpp"
#include "pxl/emu/profile.hpp"
#include "pxl/emu/target.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace pxl {
class Ir;
}

namespace pxl::emu {

/// The estimated cycles of one execution of a graph's program on one replica: its own steps,
/// a called graph's at each call, a loop body's times the loop's trip count, a conditional's
/// costlier branch. The work of every IPU of the replica summed (as Profile::total), with
/// no overlap of the IPUs of a pipeline.
struct GraphEstimate {
  std::string name;
  StepCost cycles;
};

/// What `estimate(ir, target)` returns.
struct IrEstimate {
  std::string target;
  double clock_hz = 1;
  std::int64_t replicas = 1;
  /// One replica's memory, as Session::memory_report() would give it; `memory.fits()` says
  /// whether a Session would build.
  MemoryReport memory;
  /// One Session::run of the main program: its graph's cycles and the host round trip, the
  /// work of every IPU of the replica summed (as Profile::total).
  StepCost run;
  /// The device time of that run: `run` less the overlap of the replica's IPUs, whose
  /// IPU-local steps run at the same time (a pipeline's stages), as Profile::elapsed_cycles
  /// counts it. run.total() on one IPU.
  std::int64_t elapsed_cycles = 0;
  /// Every graph the main graph reaches, the main graph first.
  std::vector<GraphEstimate> graphs;
  /// One run's cycles by op kind ("copy" for the compiler's copies), each step counted as
  /// often as the run executes it, largest first: Profile::op_kinds of one run, offline.
  std::vector<ProfileLine> op_kinds;

  /// The estimated device time of one run, in seconds (elapsed_cycles).
  double seconds() const { return static_cast<double>(elapsed_cycles) / clock_hz; }
};

/// Compiles the programs of `ir` for `target` as a Session would, and estimates their memory
/// (per IPU and tile) and cycles with the cost model (cost_model.hpp). Allocates no device
/// memory, runs nothing, and refuses nothing for not fitting: models far larger than the
/// host's memory (tensors made by ops::init, say) are estimated in the time their compilation
/// takes. SessionError for what a Session refuses before compiling (a tensor or op placed on
/// an IPU the target lacks); OutOfMemoryError for plans beyond 2^62 bytes.
IrEstimate estimate(const Ir& ir, const Target& target);

} // namespace pxl::emu
