// The arena edits behind transforms::IrRewriter, addressed by ids. Each checks the freeze;
// the rewriter validates the arguments first. Transforms reach the arena only through these.
#pragma once

#include "pxl/ir/ir.hpp"
#include "pxl/ir/view.hpp"

#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace pxl::detail::edit {

/// GraphError naming `what` while a Session freezes `ir`.
void require_mutable(const Ir& ir, std::string_view what);
/// Appends `t` to `g`'s outputs and a matching output to each of `g`'s call sites; returns
/// those, one per call site.
std::vector<TensorId> add_output(Ir& ir, GraphId g, TensorId t);
/// A copy of `op` at the end of `into`'s schedule reading `inputs`.
OpId clone_op(Ir& ir, OpId op, GraphId into, std::span<const TensorId> inputs);
/// An Identity op copying `t`, scheduled just before `before` (an op of t's graph) or at the
/// end of t's graph.
TensorId copy_tensor(Ir& ir, TensorId t, std::optional<OpId> before);
/// Uses of `from` after `to` is available, and graph outputs, now read `to`.
std::size_t replace_uses(Ir& ir, TensorId from, TensorId to);
/// Replaces Call op `call` by copies of its graph's ops; returns the tensors now holding the
/// called graph's outputs.
std::vector<TensorId> inline_call(Ir& ir, OpId call);
void mark_differentiated(Ir& ir, GraphId g);
/// Room for `more` tensor ids without rehashing.
void reserve_tensors(Ir& ir, std::size_t more);

} // namespace pxl::detail::edit
