#include "ir/ir_edit.hpp"
#include "ir/handle_access.hpp"
#include "ir/op_builder.hpp"

#include <algorithm>
#include <unordered_map>

namespace pxl::detail::edit {

namespace {
IrStorage& arena(Ir& ir) { return *HandleAccess::storage(ir); }

std::size_t position(const GraphNode& g, OpId o) {
  const auto it = std::find(g.ops.begin(), g.ops.end(), o);
  PXL_ASSERT(it != g.ops.end());
  return static_cast<std::size_t>(it - g.ops.begin());
}

/// A copy of op `src` at the end of graph `into`'s schedule reading `inputs`. Output ids get
/// the new op's number so they stay unique in the Ir.
OpId copy_op(IrStorage& ir, OpId src, GraphId into, std::vector<TensorId> inputs,
             std::vector<OpId> after, std::string_view what) {
  const OpNode& s = ir.op(src);
  std::vector<TensorSpec> specs;
  std::vector<std::string> names;
  for (const TensorId t : s.outputs) {
    specs.push_back(ir.tensor(t).spec);
    names.push_back(ir.tensor(t).name);
  }
  const std::vector<TensorId> src_outputs = s.outputs;
  const OpId copy = append_op(ir, into,
                              OpNode{.kind = s.kind,
                                     .name = s.name,
                                     .graph = into,
                                     .inputs = std::move(inputs),
                                     .outputs = {},
                                     .attrs = s.attrs,
                                     .ipu = s.ipu,
                                     .tile_set = s.tile_set,
                                     .after = std::move(after),
                                     .pipeline_stage = s.pipeline_stage,
                                     .exchange_group = s.exchange_group},
                              std::move(specs), names, "", what);
  for (std::size_t k = 0; k < src_outputs.size(); ++k)
    rename_tensor_id(ir, ir.op(copy).outputs[k],
                     ir.tensor(src_outputs[k]).id + "/c" + std::to_string(copy.value));
  return copy;
}

/// An Identity op at the end of `g`'s schedule copying `t` (on the IPU of `like`).
TensorId copy_tensor(IrStorage& ir, GraphId g, TensorId t, const OpNode& like,
                     std::string_view what) {
  const std::string name = "Identity." + std::to_string(ir.ops.size());
  const OpId op = append_op(ir, g,
                            OpNode{.kind = OpKind::Identity,
                                   .name = like.name + "/Identity",
                                   .graph = g,
                                   .inputs = {t},
                                   .outputs = {},
                                   .attrs = NoAttrs{},
                                   .ipu = like.ipu,
                                   .tile_set = like.tile_set,
                                   .after = {},
                                   .pipeline_stage = like.pipeline_stage},
                            {ir.tensor(t).spec}, {name}, "", what);
  return ir.op(op).outputs[0];
}

/// Ops of `g` from schedule position `first` on, and `g`'s outputs, read `to` for `from`.
std::size_t replace_from(IrStorage& ir, GraphId g, std::size_t first, TensorId from, TensorId to) {
  std::size_t n = 0;
  auto& node = ir.graph(g);
  for (std::size_t pos = first; pos < node.ops.size(); ++pos)
    for (auto& in : ir.op(node.ops[pos]).inputs)
      if (in == from) {
        in = to;
        ++n;
      }
  for (auto& out : node.outputs)
    if (out == from) {
      out = to;
      ++n;
    }
  return n;
}

} // namespace

void require_mutable(const Ir& ir, std::string_view what) {
  detail::require_mutable(*HandleAccess::storage(ir), what);
}

std::vector<TensorId> add_output(Ir& ir_, GraphId g, TensorId t) {
  IrStorage& ir = arena(ir_);
  require_mutable(ir_, "IrRewriter::add_output: adding output '" + ir.tensor(t).id +
                           "' to graph '" + ir.graph(g).name + "'");
  ir.graph(g).outputs.push_back(t);
  std::vector<TensorId> added;
  for (const OpId site : ir.graph(g).call_sites) {
    OpNode& op = ir.op(site);
    const TensorId out{static_cast<Index>(ir.tensors.size())};
    const TensorNode& src = ir.tensor(t);
    ir.tensors.push_back(TensorNode{.id = {},
                                    .name = src.name,
                                    .spec = src.spec,
                                    .kind = TensorKind::intermediate,
                                    .graph = op.graph,
                                    .producer = site,
                                    .ipu = op.ipu,
                                    .tile_set = src.tile_set,
                                    .data = std::nullopt});
    assign_tensor_id(ir, out,
                     scoped_tensor_id(ir, op.graph, "", ir.tensor(out).name) + "/c" +
                         std::to_string(site.value));
    ir.graph(op.graph).tensors.push_back(out);
    op.outputs.push_back(out);
    added.push_back(out);
  }
  return added;
}

OpId clone_op(Ir& ir_, OpId op, GraphId into, std::span<const TensorId> inputs) {
  IrStorage& ir = arena(ir_);
  return copy_op(ir, op, into, {inputs.begin(), inputs.end()}, {},
                 "IrRewriter::clone_op: copying op '" + ir.op(op).name + "' into graph '" +
                     ir.graph(into).name + "'");
}

TensorId copy_tensor(Ir& ir_, TensorId t, std::optional<OpId> before) {
  IrStorage& ir = arena(ir_);
  const GraphId g = ir.tensor(t).graph;
  const std::string what = "IrRewriter::copy_tensor: copying '" + ir.tensor(t).id + "' in graph '" +
                           ir.graph(g).name + "'";
  require_mutable(ir_, what);
  const OpNode like = before ? ir.op(*before)
                             : OpNode{.kind = OpKind::Identity,
                                      .name = ir.tensor(t).name,
                                      .graph = g,
                                      .inputs = {},
                                      .outputs = {},
                                      .attrs = NoAttrs{},
                                      .ipu = ir.tensor(t).ipu,
                                      .tile_set = ir.tensor(t).tile_set,
                                      .after = {}};
  const TensorId copy = copy_tensor(ir, g, t, like, what);
  if (before) {
    auto& sched = ir.graph(g).ops;
    const OpId op = sched.back();
    sched.pop_back();
    sched.insert(sched.begin() + static_cast<std::ptrdiff_t>(position(ir.graph(g), *before)), op);
  }
  return copy;
}

std::size_t replace_uses(Ir& ir_, TensorId from, TensorId to) {
  IrStorage& ir = arena(ir_);
  const GraphId g = ir.tensor(from).graph;
  require_mutable(ir_, "IrRewriter::replace_uses: replacing uses of '" + ir.tensor(from).id +
                           "' in graph '" + ir.graph(g).name + "'");
  const auto producer = ir.tensor(to).producer;
  const std::size_t first = producer ? position(ir.graph(g), *producer) + 1 : 0;
  return replace_from(ir, g, first, from, to);
}

std::vector<TensorId> inline_call(Ir& ir_, OpId call) {
  IrStorage& ir = arena(ir_);
  const OpNode site = ir.op(call); // a copy: the arena grows below
  const GraphId caller = site.graph;
  const GraphId callee{std::get<CallAttrs>(site.attrs).graph};
  const std::string what = "IrRewriter::inline_call: inlining " +
                           std::string(op_type_name(site.kind)) + "." + std::to_string(call.value) +
                           " of graph '" + ir.graph(callee).name + "' into graph '" +
                           ir.graph(caller).name + "'";
  require_mutable(ir_, what);

  const std::size_t first_new = ir.graph(caller).ops.size();
  std::unordered_map<std::uint32_t, TensorId> value; // callee tensor -> caller tensor
  const IrView view(ir_);
  const std::vector<TensorId> body_inputs = ir.graph(callee).inputs;
  for (std::size_t i = 0; i < body_inputs.size(); ++i) {
    // By-ref inputs alias the caller's tensor. A by-value one must not see writes: neither
    // its own nor those through another input bound to the same caller tensor.
    bool copy = false;
    for (std::size_t j = 0; j < body_inputs.size() && !ir.graph(callee).input_by_ref[i]; ++j)
      copy = copy || (view.input_is_written(callee, j) && site.inputs[j] == site.inputs[i]);
    value.emplace(body_inputs[i].value,
                  copy ? copy_tensor(ir, caller, site.inputs[i], site, what) : site.inputs[i]);
  }
  const std::vector<TensorId> body_tensors = ir.graph(callee).tensors;
  for (const TensorId t : body_tensors) {
    if (ir.tensor(t).kind != TensorKind::constant)
      continue;
    const TensorId c{static_cast<Index>(ir.tensors.size())};
    TensorNode node = ir.tensor(t);
    std::string id = std::move(node.id) + "/c" + std::to_string(call.value);
    node.id.clear();
    node.graph = caller;
    ir.tensors.push_back(std::move(node));
    assign_tensor_id(ir, c, std::move(id));
    ir.graph(caller).tensors.push_back(c);
    value.emplace(t.value, c);
  }
  std::unordered_map<std::uint32_t, OpId> op_copy;
  std::vector<bool> made_here(ir.tensors.size() + 1, false);
  const std::vector<OpId> body_ops = ir.graph(callee).ops;
  for (const OpId o : body_ops) {
    std::vector<TensorId> inputs;
    for (const TensorId t : ir.op(o).inputs)
      inputs.push_back(value.at(t.value));
    std::vector<OpId> after = site.after;
    for (const OpId a : ir.op(o).after)
      if (auto it = op_copy.find(a.value); it != op_copy.end())
        after.push_back(it->second);
    const OpId copy = copy_op(ir, o, caller, std::move(inputs), std::move(after), what);
    op_copy.emplace(o.value, copy);
    const auto& outs = ir.op(copy).outputs;
    for (std::size_t k = 0; k < outs.size(); ++k) {
      value.emplace(ir.op(o).outputs[k].value, outs[k]);
      if (!(k == 0 && is_inplace(ir.op(copy).kind))) {
        if (made_here.size() <= outs[k].value)
          made_here.resize(outs[k].value + 1, false);
        made_here[outs[k].value] = true;
      }
    }
  }
  // The call's outputs were tensors of their own: copy results that are not fresh values
  // made by the inlined ops (inputs, constants, in-place results, repeated outputs).
  std::vector<TensorId> results;
  for (const TensorId out : ir.graph(callee).outputs) {
    TensorId r = value.at(out.value);
    if (r.value >= made_here.size() || !made_here[r.value])
      r = copy_tensor(ir, caller, r, site, what);
    else
      made_here[r.value] = false;
    results.push_back(r);
  }

  // Put the new ops where the call was, and drop the call.
  auto& sched = ir.graph(caller).ops;
  const std::size_t pos = position(ir.graph(caller), call);
  const std::size_t added = sched.size() - first_new;
  std::rotate(sched.begin() + static_cast<std::ptrdiff_t>(pos),
              sched.begin() + static_cast<std::ptrdiff_t>(first_new), sched.end());
  PXL_ASSERT(sched[pos + added] == call);
  sched.erase(sched.begin() + static_cast<std::ptrdiff_t>(pos + added));
  for (std::size_t k = 0; k < site.outputs.size(); ++k)
    replace_from(ir, caller, 0, site.outputs[k], results[k]);
  // Ops ordered after the call now follow its last replacement (or what the call followed).
  for (const OpId o : sched) {
    auto& after = ir.op(o).after;
    if (std::find(after.begin(), after.end(), call) == after.end())
      continue;
    std::erase(after, call);
    if (added > 0)
      after.push_back(sched[pos + added - 1]);
    else
      after.insert(after.end(), site.after.begin(), site.after.end());
  }
  std::erase(ir.graph(callee).call_sites, call);
  auto& caller_tensors = ir.graph(caller).tensors;
  for (const TensorId t : site.outputs)
    std::erase(caller_tensors, t);
  return results;
}

void reserve_tensors(Ir& ir, std::size_t more) {
  auto& ids = arena(ir).tensor_ids;
  ids.reserve(ids.size() + more);
}

void mark_differentiated(Ir& ir_, GraphId g) {
  IrStorage& ir = arena(ir_);
  if (std::find(ir.differentiated.begin(), ir.differentiated.end(), g) == ir.differentiated.end())
    ir.differentiated.push_back(g);
}

} // namespace pxl::detail::edit
