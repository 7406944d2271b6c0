// pxl::transforms::IrRewriter: the one way transforms change an Ir in place.
#pragma once

#include "pxl/ir/ir.hpp"
#include "pxl/ir/view.hpp"

#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace pxl::transforms {

/// Edits an existing Ir for a transform: the operations graph transforms (autodiff,
/// pipelining, recomputation, offloading) are made of, keeping call sites, schedules and
/// ownership consistent. Users build graphs with the op builders; transforms read through
/// IrView and change through this. Every edit throws GraphError naming it while a Session
/// freezes the Ir, and GraphError/ShapeError for arguments that do not fit.
///
///     transforms::IrRewriter rw(ir);
///     auto outs = rw.inline_call(call_site.op()); // the call's graph, expanded in place
class IrRewriter {
public:
  /// Refers to `ir`, which must outlive the rewriter. Cheap: several may exist at once.
  explicit IrRewriter(Ir& ir) : ir_(&ir) {}

  IrView view() const { return IrView(*ir_); }
  /// GraphError naming `what` while a Session freezes the Ir: a transform checks this before
  /// it changes anything, so it fails whole.
  void require_mutable(std::string_view what) const;

  /// Appends `t`, a tensor of `graph` (not the main graph), to the graph's outputs, and gives
  /// every call site of it (each Call op; a Repeat keeps its outputs, as a loop carries only
  /// its first ones) a matching new output. Returns those, one per call site in creation
  /// order. Cost: the number of call sites.
  std::vector<Tensor> add_output(const Graph& graph, const Tensor& t);
  std::vector<TensorId> add_output(GraphId graph, TensorId t);

  /// A copy of `op` (kind, attributes, name, IPU) appended to `into`'s schedule, reading
  /// `inputs`: tensors of `into` with the specs of `op`'s inputs. Its outputs are new tensors
  /// with the specs and names of `op`'s. Ordering constraints (`after`) are not copied.
  Op clone_op(const Op& op, const Graph& into, std::span<const Tensor> inputs);

  /// A copy of `t` (an Identity op) scheduled just before `before`, an op of t's graph, or at
  /// the end of t's graph without one: it holds t's buffer as it is at that point, whatever
  /// in-place ops do to the buffer later (autodiff saves activations this way). It runs on
  /// the IPU of `before`, else of `t`.
  Tensor copy_tensor(const Tensor& t, const std::optional<Op>& before = std::nullopt);

  /// Makes the ops of `from`'s graph that run once `to` exists (those after `to`'s producer;
  /// every op when `to` is an input, variable or constant) read `to` instead of `from`, and
  /// replaces `from` among the graph's outputs. `to` must be a tensor of the same graph and
  /// spec. Returns the number of uses replaced.
  std::size_t replace_uses(const Tensor& from, const Tensor& to);

  /// Replaces Call op `call` by copies of its graph's ops, scheduled where the call was and
  /// working on the caller's tensors; later uses of the call's outputs read the copies
  /// instead. Returns the caller tensors now holding the called graph's outputs, in order.
  /// The result equals the call's: by-value inputs the graph modifies are copied first, and
  /// outputs that would alias another tensor are copies (Identity ops). The call op leaves
  /// its graph's schedule.
  std::vector<Tensor> inline_call(const Op& call);

  /// Records that autodiff has been applied to `graph` (IrView::is_differentiated).
  void mark_differentiated(const Graph& graph);
  /// Makes room for `more` new tensors, so that a transform that adds many (autodiff: a few
  /// per forward op) grows the Ir's tables once. A hint: nothing changes in the Ir.
  void reserve_tensors(std::size_t more);

private:
  Ir* ir_;
};

} // namespace pxl::transforms
