// A Replica: the Program bound to one replica's device memory and streams.
#pragma once

#include "aligned_bytes.hpp"
#include "compile_context.hpp"
#include "copy_list.hpp"
#include "program.hpp"
#include "stream_state.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

namespace pxl::emu::detail {

class InstanceExchange;

/// The copies around an outlined call or loop, in one replica: arguments in, results out,
/// by-ref inputs back; for a loop also the carried values from one iteration to the next
/// (through `staging` when an output shares a buffer with another input).
struct CallCopies {
  CopyList in, out, back;
  CopyList carry, unstage;
  AlignedBytes staging;
};

/// A conditional in one replica: where its condition lives, the copies around each branch,
/// and the branch this replica takes in the current run (set by the step's first phase, read
/// by the later ones).
struct BranchCopies {
  const std::byte* condition = nullptr;
  CallCopies then_copies, else_copies;
  bool take_then = true;
};

/// A step of one replica: its kernel (or copy) bound to the replica's buffers, the copies
/// of a call or loop whose callee the Executor steps, or a conditional's.
struct BoundStep {
  StepFn run;
  /// Work for the whole instance before the step's items, set on its first replica's step
  /// only: a collective's exchange with the other instances.
  std::function<void()> before;
  std::unique_ptr<const CallCopies> call;
  std::unique_ptr<BranchCopies> branches;
};

/// One replica's memory (the static block of variables and constants, and an arena per IPU
/// for each graph program) and its bound steps. Binding allocates everything; nothing is
/// allocated while running. Not movable: steps hold addresses into it. Made by make_replicas.
class Replica {
public:
  /// Allocates the replica's memory (constants set); its steps are bound by make_replicas.
  Replica(const Program& program, const IrView& view, std::span<const StreamState> streams,
          unsigned num_workers);
  Replica(const Replica&) = delete;
  Replica& operator=(const Replica&) = delete;

  /// The device buffer of a variable or constant of the program (a remote variable's entry
  /// in Streaming Memory), or null.
  std::byte* address(TensorId t) const;
  std::span<const RemoteBlock> remote() const { return remote_blocks_; }
  /// Step `i` of graph program `g`.
  const BoundStep& step(const GraphProgram& g, std::size_t i) const {
    return graphs_[g.graph.value].steps[i];
  }
  std::span<StreamPort> ports() { return ports_; }

  /// The buffers of step `i` of `g` in this replica, written into `buffers`.
  void resolve_step(const GraphProgram& g, std::size_t i, OpBuffers& buffers) const;
  /// Binds step `i` of `g` (steps are bound in order) to this replica's `buffers`.
  void bind_step(const GraphProgram& g, std::size_t i, const IrView& view, CompileContext& ctx,
                 const OpBuffers& buffers);

private:
  struct BoundGraph {
    std::vector<AlignedBytes> arenas; ///< per IPU
    std::vector<BoundStep> steps;
  };
  std::byte* resolve(const GraphProgram& g, const Slot& s) const;
  std::unique_ptr<const CallCopies> bind_call(const GraphProgram& g, const ProgramStep& step,
                                              const IrView& view) const;
  /// The copies between `g`'s buffers and `callee`'s inputs and outputs, for a step whose
  /// input `first_input + k` is bound to the callee's input k.
  void bind_copies(CallCopies& c, const GraphProgram& g, const ProgramStep& step,
                   const GraphProgram& callee, std::size_t first_input, const IrView& view) const;

  const Program& program_;
  AlignedBytes static_;
  std::vector<AlignedBytes> remote_; ///< by remote buffer: its entries
  std::vector<RemoteBlock> remote_blocks_;
  std::vector<BoundGraph> graphs_; ///< by graph index; empty for graphs without a program
  std::vector<StreamPort> ports_;  ///< by stream index
};

/// `count` replicas of `program`, bound step by step: each step for every replica before the
/// next, so the Ir is read once however many replicas there are. With `exchange`, they are
/// this instance's of a distributed Session (global indices from exchange->offset()). With
/// `stochastic_rounding` (a seed), float16 updates round stochastically
/// (CompileContext::stochastic_rounding).
std::vector<std::unique_ptr<Replica>>
make_replicas(const Program& program, const IrView& view, std::span<StreamState> streams,
              unsigned num_workers, std::size_t count, RunErrors* errors,
              InstanceExchange* exchange = nullptr,
              std::optional<std::uint64_t> stochastic_rounding = std::nullopt);

} // namespace pxl::emu::detail
