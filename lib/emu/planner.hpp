// The planner: compiles every graph reachable from the main graph into GraphPlans.
#pragma once

#include "compile_context.hpp"
#include "graph_plan.hpp"

#include "ir/ir_storage.hpp"
#include "pxl/emu/memory_report.hpp"
#include "pxl/emu/target.hpp"

#include <memory>
#include <vector>

namespace pxl::emu::detail {

using pxl::detail::Index;
using pxl::detail::IrStorage;

/// Owns the device memory of one replica: variables and constants (always live) and one plan
/// for the main graph and for each graph called outlined (graphs only ever inlined are part
/// of their callers' plans). Construction compiles everything; nothing is allocated
/// afterwards.
class Planner {
public:
  Planner(IrStorage& ir, const Target& target, WorkerPool& pool, std::vector<StreamState>& streams);
  Planner(const Planner&) = delete;
  Planner& operator=(const Planner&) = delete;

  const GraphPlan& main_plan() const { return *plans_[0]; }
  /// Whether `graph` runs: it is reachable from the main graph (and so compiled, either as
  /// its own plan or inlined into its callers).
  bool compiled(std::uint32_t graph) const { return reachable_[graph]; }
  /// The device buffer of a variable or constant.
  std::byte* address(Index tensor) const { return address_[tensor]; }
  /// Variables and constants of the compiled graphs, in tensor order.
  const std::vector<Index>& static_tensors() const { return static_tensors_; }
  MemoryReport memory_report() const;

private:
  const GraphPlan& plan_of(std::uint32_t graph);
  void allocate_static(const std::vector<bool>& reachable);
  void bind_static_inputs();
  void compile(std::uint32_t graph, GraphPlan& plan);

  IrStorage& ir_;
  Target target_;
  CompileContext ctx_;
  std::vector<bool> reachable_;                   ///< by graph
  std::vector<std::unique_ptr<GraphPlan>> plans_; ///< by graph; null unless outlined or main
  std::vector<std::byte*> address_;               ///< by tensor
  AlignedBytes static_;
  std::vector<Index> static_tensors_;
  /// By graph and input: the variable or constant that every outlined call site passes by
  /// reference there (the graph then works on it directly, with no copies in or back), or
  /// no_binding.
  std::vector<std::vector<Index>> static_binding_;
  std::vector<TensorMemory> tensors_; ///< for the memory report
};

} // namespace pxl::emu::detail
