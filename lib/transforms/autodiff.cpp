// Reverse-mode differentiation of one graph into a new gradient graph.
#include "pxl/transforms/autodiff.hpp"
#include "ir/context.hpp"
#include "ir/op_builder.hpp"
#include "ops/grad_rule.hpp"
#include "pxl/ir/ir.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/reduce.hpp"
#include "pxl/ops/shape.hpp"
#include "pxl/transforms/rewrite.hpp"

#include <algorithm>
#include <set>

namespace pxl {

namespace detail {

void not_differentiable(const Op& op) {
  throw GraphError("autodiff: op " + op.debug_name() + " ('" + op.name() + "') in graph '" +
                   op.graph().name() +
                   "' is not differentiable, but a gradient is required through it; detach its "
                   "inputs with ops::detach or leave its inputs out of grads_required");
}

namespace {
constexpr std::array<GradRule, num_op_kinds> grad_table = {
#define PXL_X(kind, name) &grad_##kind,
    PXL_OP_TABLE(PXL_X)
#undef PXL_X
};

/// What a gradient rule needs of a GradGraphInfo to call the gradient graph.
GradCall grad_call(const transforms::GradGraphInfo& info) {
  GradCall c{
      .graph = info.graph(), .forward_graph = info.forward_graph(), .inputs = {}, .outputs = {}};
  for (const auto& e : info.expected_inputs())
    c.inputs.push_back({e.fwd_tensor, e.kind == transforms::ExpectedConnection::Kind::fwd_grad});
  for (const auto& e : info.expected_outputs())
    c.outputs.push_back(e.fwd_tensor);
  return c;
}

class Autodiff final : public GradContext {
public:
  Autodiff(const Graph& fwd, std::map<Graph, transforms::GradGraphInfo>& cache)
      : rewriter_(fwd.ir()), fwd_(fwd), cache_(cache) {}

  transforms::GradGraphInfo run(const std::vector<Tensor>& provided,
                                const std::vector<Tensor>& required) {
    grad_ = fwd_.ir().create_empty_graph(fwd_.name() + "_grad");
    auto in_grad = grad_.scope();
    auto unordered = in_sequence(false);
    for (const auto& o : provided) {
      Tensor g = graph_input(o.spec(), "grad_" + o.name());
      expected_inputs_.push_back({o, transforms::ExpectedConnection::Kind::fwd_grad});
      accumulate(o, g);
    }
    mark_needed(required);
    const auto ops = fwd_.ops();
    for (auto it = ops.rbegin(); it != ops.rend(); ++it)
      differentiate(*it);
    std::vector<transforms::ExpectedConnection> outputs;
    for (const auto& r : required) {
      auto g = grads_.find(r.index());
      graph_output(g != grads_.end() ? g->second : ops::init(r.shape(), r.dtype()));
      outputs.push_back({r, transforms::ExpectedConnection::Kind::fwd_grad});
    }
    return transforms::GradGraphInfo(grad_, fwd_, std::move(expected_inputs_), std::move(outputs));
  }

  const Op& op() const override { return op_; }

  Tensor fwd(const Tensor& t) override {
    if (auto it = activations_.find(t.index()); it != activations_.end())
      return it->second;
    Tensor in_grad;
    const IrView view = rewriter_.view();
    const TensorId id = IrView::id(t);
    if (t.is_constant()) {
      in_grad = constant(*view.data(id), t.name());
    } else {
      PXL_ASSERT(fwd_.contains(t));
      const auto ins = view.inputs(IrView::id(fwd_));
      const auto outs = view.outputs(IrView::id(fwd_));
      const bool visible = std::find(ins.begin(), ins.end(), id) != ins.end() ||
                           std::find(outs.begin(), outs.end(), id) != outs.end();
      // An activation the gradient graph reads leaves the forward graph (and every call site
      // of it) as an extra output.
      if (!visible)
        rewriter_.add_output(IrView::id(fwd_), id);
      in_grad = graph_input(t.spec(), t.name());
      expected_inputs_.push_back({t, transforms::ExpectedConnection::Kind::fwd});
    }
    activations_.emplace(t.index(), in_grad);
    return in_grad;
  }

  Tensor grad_output(std::size_t i) override {
    const Tensor o = op_.output(i);
    if (auto it = grads_.find(o.index()); it != grads_.end())
      return it->second;
    return ops::init(o.shape(), o.dtype());
  }
  bool has_grad_output(std::size_t i) const override {
    return grads_.contains(op_.output(i).index());
  }
  bool needs_grad(std::size_t i) const override { return needed_.contains(op_.input(i).index()); }

  GradCall called_grad(const Graph& called, std::vector<Tensor> provided,
                       std::vector<Tensor> required) override {
    if (auto it = cache_.find(called); it != cache_.end())
      return grad_call(it->second);
    // Differentiate the whole called graph once (every float output provided, every float
    // input required) so every call site can share it, whatever it needs.
    (void)provided;
    (void)required;
    std::vector<Tensor> all_out, all_in;
    for (const auto& o : called.outputs())
      if (is_floating_point(o.dtype()))
        all_out.push_back(o);
    for (const auto& i : called.inputs())
      if (is_floating_point(i.dtype()))
        all_in.push_back(i);
    auto& ctx = context();
    // Build it outside this gradient graph's scopes.
    auto saved_sequences = std::move(ctx.sequences);
    ctx.sequences.clear();
    auto info = Autodiff(called, cache_).run(all_out, all_in);
    ctx.sequences = std::move(saved_sequences);
    rewriter_.mark_differentiated(called);
    cache_.emplace(called, info);
    return grad_call(info);
  }

private:
  void accumulate(const Tensor& fwd_tensor, const Tensor& g) {
    auto [it, inserted] = grads_.emplace(fwd_tensor.index(), g);
    if (!inserted)
      it->second = ops::add(it->second, g);
  }

  void mark_needed(const std::vector<Tensor>& required) {
    for (const auto& r : required)
      needed_.insert(r.index());
    for (const auto& op : fwd_.ops()) {
      if (op.kind() == OpKind::Detach)
        continue;
      const auto ins = op.inputs();
      if (std::none_of(ins.begin(), ins.end(),
                       [&](const Tensor& t) { return needed_.contains(t.index()); }))
        continue;
      for (const auto& o : op.outputs())
        if (is_floating_point(o.dtype()))
          needed_.insert(o.index());
    }
  }

  void differentiate(const Op& op) {
    if (op.kind() == OpKind::Detach)
      return;
    bool any_out = false, any_in = false;
    for (std::size_t i = 0; i < op.num_outputs(); ++i)
      any_out |= grads_.contains(op.output(i).index());
    for (std::size_t i = 0; i < op.num_inputs(); ++i)
      any_in |= needed_.contains(op.input(i).index());
    if (!any_out || !any_in)
      return;
    op_ = op;
    auto scope = name_scope("grad_" + std::string(op_type_name(op.kind())));
    const auto input_grads = grad_table[static_cast<std::size_t>(op.kind())](*this);
    PXL_ASSERT(input_grads.size() == op.num_inputs());
    for (std::size_t i = 0; i < op.num_inputs(); ++i)
      if (input_grads[i].valid() && needs_grad(i))
        accumulate(op.input(i), input_grads[i]);
  }

  transforms::IrRewriter rewriter_;
  Graph fwd_, grad_;
  std::map<Graph, transforms::GradGraphInfo>& cache_;
  Op op_;
  std::map<std::uint32_t, Tensor> grads_;
  std::map<std::uint32_t, Tensor> activations_;
  std::set<std::uint32_t> needed_;
  std::vector<transforms::ExpectedConnection> expected_inputs_;
};
} // namespace

Tensor unbroadcast(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape)
    return g;
  const auto extra = g.rank() - static_cast<std::int64_t>(shape.size());
  std::vector<std::int64_t> axes;
  for (std::int64_t a = 0; a < g.rank(); ++a)
    if (a < extra || (shape[static_cast<std::size_t>(a - extra)] == 1 &&
                      g.shape()[static_cast<std::size_t>(a)] != 1))
      axes.push_back(a);
  Tensor r = axes.empty() ? g : ops::sum(g, axes, /*keepdims=*/true);
  return ops::reshape(r, shape);
}

Tensor expand(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape)
    return g;
  return ops::add(ops::init(shape, g.dtype()), g);
}

} // namespace detail

namespace transforms {

namespace {
void check_members(std::string_view what, const std::vector<Tensor>& ts,
                   const std::vector<Tensor>& allowed, const Graph& g) {
  for (const auto& t : ts)
    if (std::find(allowed.begin(), allowed.end(), t) == allowed.end())
      throw GraphError("autodiff: " + (t.valid() ? detail::describe(t) : std::string("tensor")) +
                       " in " + std::string(what) + " is not " +
                       (what == "grads_provided" ? "an output" : "an input") + " of graph '" +
                       g.name() + "'");
}
} // namespace

std::map<Graph, GradGraphInfo> autodiff_all(const Graph& graph, AutodiffOptions options) {
  IrRewriter rewriter(graph.ir());
  rewriter.require_mutable("autodiff: differentiating graph '" + graph.name() + "'");
  if (graph.is_main())
    throw GraphError("autodiff: the main graph cannot be differentiated; differentiate a "
                     "subgraph (create it with Ir::create_graph) and call it");
  if (!options.force && rewriter.view().is_differentiated(IrView::id(graph)))
    throw GraphError("autodiff: graph '" + graph.name() +
                     "' was already differentiated (it gained activation outputs then); reuse "
                     "its GradGraphInfo, or pass AutodiffOptions{.force = true}");
  const auto provided = options.grads_provided.value_or(graph.outputs());
  std::vector<Tensor> float_inputs;
  for (const auto& t : graph.inputs())
    if (is_floating_point(t.dtype()))
      float_inputs.push_back(t);
  const auto required = options.grads_required.value_or(float_inputs);
  check_members("grads_provided", provided, graph.outputs(), graph);
  check_members("grads_required", required, graph.inputs(), graph);
  for (const auto& t : provided)
    if (!is_floating_point(t.dtype()))
      throw DTypeError("autodiff: cannot provide a gradient for " + detail::describe(t) +
                       ": gradients exist for float32 and float16 tensors only");
  for (const auto& t : required)
    if (!is_floating_point(t.dtype()))
      throw DTypeError("autodiff: cannot require the gradient of " + detail::describe(t) +
                       ": gradients exist for float32 and float16 tensors only");
  auto cache = std::move(options.called_graphs_grad_info);
  auto& ctx = detail::context();
  auto saved_sequences = std::move(ctx.sequences);
  ctx.sequences.clear();
  auto info = detail::Autodiff(graph, cache).run(provided, required);
  ctx.sequences = std::move(saved_sequences);
  rewriter.mark_differentiated(graph);
  cache.insert_or_assign(graph, info);
  return cache;
}

GradGraphInfo autodiff(const Graph& graph, AutodiffOptions options) {
  return autodiff_all(graph, std::move(options)).at(graph);
}

InputsDict GradGraphInfo::inputs_dict(const CallSiteInfo& fwd_call) const {
  if (fwd_call.called_graph() != forward_graph_)
    throw GraphError("GradGraphInfo::inputs_dict: the call site calls '" +
                     fwd_call.called_graph().name() + "', not the forward graph '" +
                     forward_graph_.name() + "'");
  InputsDict dict;
  const auto grad_inputs = graph_.inputs();
  for (std::size_t i = 0; i < expected_inputs_.size(); ++i)
    if (expected_inputs_[i].kind == ExpectedConnection::Kind::fwd)
      dict.emplace_back(grad_inputs[i], fwd_call.graph_to_parent(expected_inputs_[i].fwd_tensor));
  return dict;
}

std::map<Tensor, Tensor>
GradGraphInfo::fwd_graph_ins_to_grad_parent_outs(const CallSiteInfo& grad_call) const {
  if (grad_call.called_graph() != graph_)
    throw GraphError("GradGraphInfo::fwd_graph_ins_to_grad_parent_outs: the call site calls '" +
                     grad_call.called_graph().name() + "', not the gradient graph '" +
                     graph_.name() + "'");
  std::map<Tensor, Tensor> m;
  for (std::size_t i = 0; i < expected_outputs_.size(); ++i)
    m.emplace(expected_outputs_[i].fwd_tensor, grad_call.parent_output(i));
  return m;
}

std::map<Tensor, Tensor>
GradGraphInfo::fwd_parent_ins_to_grad_parent_outs(const CallSiteInfo& fwd_call,
                                                  const CallSiteInfo& grad_call) const {
  std::map<Tensor, Tensor> m;
  for (const auto& [fwd_in, grad_out] : fwd_graph_ins_to_grad_parent_outs(grad_call))
    m.emplace(fwd_call.graph_to_parent(fwd_in), grad_out);
  return m;
}

} // namespace transforms
} // namespace pxl
