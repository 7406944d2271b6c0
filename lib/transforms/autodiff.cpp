// Reverse-mode differentiation of one graph into a new gradient graph.
#include "pxl/transforms/autodiff.hpp"
#include "ir/op_builder.hpp"
#include "ops/grad_rule.hpp"
#include "pxl/ir/ir.hpp"
#include "pxl/ir/scope.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/reduce.hpp"
#include "pxl/ops/shape.hpp"
#include "pxl/transforms/rewrite.hpp"
#include "transforms/autodiff_hook.hpp"

#include <algorithm>
#include <map>
#include <span>
#include <unordered_map>
#include <unordered_set>

namespace pxl {

namespace detail {

void not_differentiable(const Op& op) {
  throw GraphError("autodiff: op " + op.debug_name() + " ('" + op.name() + "') in graph '" +
                   op.graph().name() +
                   "' is not differentiable, but a gradient is required through it; detach its "
                   "inputs with ops::detach or leave its inputs out of grads_required");
}

namespace {
std::vector<Tensor> no_gradient_rule(GradContext& ctx) { not_differentiable(ctx.op()); }

/// detach and detach_: no gradient flows through them, and what they make needs none.
bool blocks_gradient(OpKind k) { return k == OpKind::Detach || k == OpKind::DetachInplace; }

/// grad_<K>, named inside a generic lambda so that kinds without a rule never odr-use theirs.
template <OpKind K, typename Named>
constexpr GradRule grad_entry(Named named) {
  if constexpr (is_differentiable(K))
    return named(0);
  else
    return &no_gradient_rule;
}

/// grad_<Kind> for each differentiable OpKind, indexed by the kind; no_gradient_rule for
/// the others.
constexpr std::array<GradRule, num_op_kinds> grad_table = {
#define PXL_X(kind, ...) grad_entry<OpKind::kind>([](auto) { return &grad_##kind; }),
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

/// The buffer versions of a forward graph, for in-place updates. An in-place op gives its
/// target's buffer a new version (the tensor it makes), and so does a call, repeat or conditional
/// writing a by-ref input (a version without a handle of its own). An op reads the version current
/// when it runs, whatever handle it names: after `add_(y, x)`, `y * y` reads y + x. Autodiff
/// keys gradients and saved activations by version, so the gradient of `y * y` flows through
/// the in-place add, and an activation changed later is saved by a copy made before the change.
class Versions {
public:
  /// Keys of versions without a handle start here; the others are tensor indices.
  static constexpr std::uint32_t unnamed_base = 1u << 31;

  /// A version a call, repeat or conditional made by writing the by-ref input bound to its
  /// input `input`.
  struct Unnamed {
    Op call;
    std::size_t input;
    Tensor handle; ///< a handle of the buffer (the call's input)
  };

  explicit Versions(const Graph& fwd) {
    const IrView view(fwd.ir());
    for (const Op& op : fwd.ops()) {
      for (std::size_t i = 0; i < op.num_inputs(); ++i) {
        const Tensor t = op.input(i);
        const std::uint32_t now = current(view, t);
        if (now != t.index())
          reads_.emplace(read_key(op, i), now);
      }
      if (is_inplace(op.kind())) {
        const TensorId root = view.alias_root(IrView::id(op.input(0)));
        next_writer_.emplace(current(view, op.input(0)), op);
        current_[root.value] = op.output(0).index();
      }
      if (!is_inplace(op.kind()))
        for (std::size_t k = 0; k < op.num_inputs(); ++k) {
          if (!view.op_writes_input(IrView::id(op), k))
            continue;
          const TensorId root = view.alias_root(IrView::id(op.input(k)));
          next_writer_.emplace(current(view, op.input(k)), op);
          const auto key = unnamed_base + static_cast<std::uint32_t>(unnamed_.size());
          unnamed_.push_back({op, k, op.input(k)});
          written_by_[op.index()].push_back(key);
          current_[root.value] = key;
        }
    }
    for (const auto& t : fwd.outputs())
      final_.emplace(t.index(), current(view, t));
  }

  /// The version input `i` of `op` reads.
  std::uint32_t read(const Op& op, std::size_t i) const {
    const auto it = reads_.find(read_key(op, i));
    return it != reads_.end() ? it->second : op.input(i).index();
  }
  /// The version graph output `t` holds when the graph ends.
  std::uint32_t final_version(const Tensor& t) const { return final_.at(t.index()); }
  /// The op that next changes version `key`'s buffer; none if it lasts to the end.
  std::optional<Op> next_writer(std::uint32_t key) const {
    const auto it = next_writer_.find(key);
    return it != next_writer_.end() ? std::optional<Op>(it->second) : std::nullopt;
  }
  static bool is_unnamed(std::uint32_t key) { return key >= unnamed_base; }
  const Unnamed& unnamed(std::uint32_t key) const { return unnamed_.at(key - unnamed_base); }
  /// The versions call or repeat `op` makes by writing by-ref inputs.
  std::span<const std::uint32_t> written_by(const Op& op) const {
    const auto it = written_by_.find(op.index());
    return it != written_by_.end() ? std::span<const std::uint32_t>(it->second)
                                   : std::span<const std::uint32_t>();
  }

private:
  static std::uint64_t read_key(const Op& op, std::size_t i) {
    return std::uint64_t{op.index()} << 32 | static_cast<std::uint32_t>(i);
  }
  std::uint32_t current(const IrView& view, const Tensor& t) const {
    const TensorId root = view.alias_root(IrView::id(t));
    const auto it = current_.find(root.value);
    return it != current_.end() ? it->second : t.index();
  }

  std::unordered_map<std::uint64_t, std::uint32_t> reads_;   // (op, input) -> version
  std::unordered_map<std::uint32_t, std::uint32_t> current_; // buffer root -> version
  std::unordered_map<std::uint32_t, Op> next_writer_;
  std::unordered_map<std::uint32_t, std::uint32_t> final_;
  std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> written_by_;
  std::vector<Unnamed> unnamed_;
};

class Autodiff final : public GradContext {
public:
  Autodiff(const Graph& fwd, std::map<Graph, transforms::GradGraphInfo>& cache)
      : rewriter_(fwd.ir()), fwd_(fwd), cache_(cache), versions_(fwd) {}

  transforms::GradGraphInfo run(const std::vector<Tensor>& provided,
                                const std::vector<Tensor>& required,
                                const KeptGradients* kept = nullptr) {
    grad_ = fwd_.ir().create_empty_graph(fwd_.name() + "_grad");
    // A few gradient tensors per forward op: make room for their ids once.
    rewriter_.reserve_tensors(4 * fwd_.ops().size());
    auto in_grad = grad_.scope();
    auto unordered = in_sequence(false);
    // Every gradient lives on the IPU of the forward tensor or op it derives from.
    for (const auto& o : provided) {
      auto on = ipu(o.ipu());
      auto tiles = TileSetScope(o.tile_set());
      Tensor g = graph_input(o.spec(), "grad_" + o.name());
      expected_inputs_.push_back({o, transforms::ExpectedConnection::Kind::fwd_grad});
      accumulate(versions_.final_version(o), g);
    }
    mark_needed(required);
    const auto ops = fwd_.ops();
    for (auto it = ops.rbegin(); it != ops.rend(); ++it)
      differentiate(*it);
    std::vector<transforms::ExpectedConnection> outputs;
    std::vector<Tensor> kept_grads(kept ? kept->tensors.size() : 0);
    for (const auto& r : required) {
      auto g = grads_.find(r.index());
      auto on = ipu(r.ipu());
      auto tiles = TileSetScope(r.tile_set());
      const Tensor grad = g != grads_.end() ? g->second : ops::init(r.shape(), r.dtype());
      if (kept) {
        const auto k = std::find(kept->tensors.begin(), kept->tensors.end(), r);
        if (k != kept->tensors.end()) {
          kept_grads[static_cast<std::size_t>(k - kept->tensors.begin())] = grad;
          continue;
        }
      }
      graph_output(grad);
      outputs.push_back({r, transforms::ExpectedConnection::Kind::fwd_grad});
    }
    if (!kept)
      return transforms::GradGraphInfo(grad_, fwd_, std::move(expected_inputs_),
                                       std::move(outputs));
    auto [accumulators, counter] = kept->inside(kept_grads);
    return transforms::GradGraphInfo(grad_, fwd_, std::move(expected_inputs_), std::move(outputs),
                                     std::move(accumulators), counter);
  }

  const Op& op() const override { return op_; }

  Tensor fwd(const Tensor& t) override { return activation(t.index()); }
  Tensor fwd_input(std::size_t i) override { return activation(versions_.read(op_, i)); }

  Tensor grad_output(std::size_t i) override {
    const Tensor o = op_.output(i);
    if (auto it = grads_.find(o.index()); it != grads_.end())
      return it->second;
    return ops::init(o.shape(), o.dtype());
  }
  bool has_grad_output(std::size_t i) const override {
    return grads_.contains(op_.output(i).index());
  }
  bool needs_grad(std::size_t i) const override { return needed_.contains(versions_.read(op_, i)); }

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
    // Build it outside this gradient graph's sequences.
    const transforms::GradGraphInfo info = [&] {
      const SequencesSuspended outside;
      return Autodiff(called, cache_).run(all_out, all_in);
    }();
    rewriter_.mark_differentiated(called);
    cache_.emplace(called, info);
    return grad_call(info);
  }

private:
  void accumulate(std::uint32_t version, const Tensor& g) {
    auto [it, inserted] = grads_.emplace(version, g);
    if (!inserted) {
      auto on = ipu(g.ipu());
      auto tiles = TileSetScope(g.tile_set());
      it->second = ops::add(it->second, g);
    }
  }

  /// Version `key` of a forward tensor as an input of the gradient graph. A version that an
  /// in-place op changes later (or one without a handle) is saved by a copy made in the forward
  /// graph just before the change (at the end for a final unnamed version); a tensor the
  /// forward graph does not return becomes an extra output of it and of its call sites.
  Tensor activation(std::uint32_t key) {
    if (auto it = activations_.find(key); it != activations_.end())
      return it->second;
    const IrView view = rewriter_.view();
    const bool unnamed = Versions::is_unnamed(key);
    Tensor t = unnamed ? versions_.unnamed(key).handle : view.tensor(TensorId{key});
    Tensor in_grad;
    auto on = ipu(t.ipu());
    auto tiles = TileSetScope(t.tile_set());
    if (t.is_constant()) {
      in_grad = constant(*view.data(IrView::id(t)), t.name());
    } else {
      PXL_ASSERT(fwd_.contains(t));
      const auto writer = versions_.next_writer(key);
      if (writer || unnamed)
        t = rewriter_.copy_tensor(t, writer);
      if (visible_.empty()) {
        for (const TensorId v : view.inputs(IrView::id(fwd_)))
          visible_.insert(v.value);
        for (const TensorId v : view.outputs(IrView::id(fwd_)))
          visible_.insert(v.value);
      }
      if (visible_.insert(t.index()).second)
        rewriter_.add_output(IrView::id(fwd_), IrView::id(t));
      in_grad = graph_input(t.spec(), t.name());
      expected_inputs_.push_back({t, transforms::ExpectedConnection::Kind::fwd});
    }
    activations_.emplace(key, in_grad);
    return in_grad;
  }

  void mark_needed(const std::vector<Tensor>& required) {
    for (const auto& r : required)
      needed_.insert(r.index());
    for (const auto& op : fwd_.ops()) {
      if (blocks_gradient(op.kind()))
        continue;
      bool any = false;
      for (std::size_t i = 0; i < op.num_inputs(); ++i)
        any = any || needed_.contains(versions_.read(op, i));
      if (!any)
        continue;
      for (const auto& o : op.outputs())
        if (is_floating_point(o.dtype()))
          needed_.insert(o.index());
      for (const auto key : versions_.written_by(op))
        needed_.insert(key);
    }
  }

  void differentiate(const Op& op) {
    if (blocks_gradient(op.kind()))
      return;
    bool any_out = false, any_in = false;
    for (std::size_t i = 0; i < op.num_outputs(); ++i)
      any_out |= grads_.contains(op.output(i).index());
    for (std::size_t i = 0; i < op.num_inputs(); ++i)
      any_in |= needed_.contains(versions_.read(op, i));
    for (const auto key : versions_.written_by(op))
      if (grads_.contains(key))
        by_ref_update_on_gradient_path(versions_.unnamed(key));
    if (!any_out || !any_in)
      return;
    op_ = op;
    auto scope = name_scope("grad_" + std::string(op_type_name(op.kind())));
    auto on = ipu(op.ipu());
    auto tiles = TileSetScope(op.tile_set());
    const auto input_grads = grad_table[static_cast<std::size_t>(op.kind())](*this);
    PXL_ASSERT(input_grads.size() == op.num_inputs());
    for (std::size_t i = 0; i < op.num_inputs(); ++i)
      if (input_grads[i].valid() && needs_grad(i))
        accumulate(versions_.read(op, i), input_grads[i]);
  }

  /// A gradient reaches a buffer version a call made by writing a by-ref input: the called
  /// graph's gradient has no input for it.
  [[noreturn]] void by_ref_update_on_gradient_path(const Versions::Unnamed& u) const {
    // The graph whose by-ref input is bound there (a conditional binds its inputs after the
    // condition, the then-branch's first).
    const IrView view(fwd_.ir());
    std::string called;
    for (const Callee& c : view.callees(IrView::id(u.call)))
      if (u.input >= c.first_input && u.input - c.first_input < view.inputs(c.graph).size() &&
          view.input_is_by_ref(c.graph, u.input - c.first_input))
        called += (called.empty() ? "'" : " and '") + view.name(c.graph) + "'";
    throw GraphError("autodiff: " + u.call.debug_name() + " in graph '" + fwd_.name() +
                     "' updates " + to_string(u.handle) + " in place through its input " +
                     std::to_string(u.input) + ", by reference in graph " + called +
                     ", and a gradient flows through the updated value; a by-reference update "
                     "cannot be differentiated: return the new value from " +
                     called + " as an output instead, or detach what reads it");
  }

  transforms::IrRewriter rewriter_;
  Graph fwd_, grad_;
  std::map<Graph, transforms::GradGraphInfo>& cache_;
  Versions versions_;
  Op op_;
  std::unordered_map<std::uint32_t, Tensor> grads_;
  std::unordered_map<std::uint32_t, Tensor> activations_;
  std::unordered_set<std::uint32_t> needed_;
  /// The forward graph's inputs and outputs, which the gradient graph can read (filled on
  /// first use; activations join as they become outputs).
  std::unordered_set<std::uint32_t> visible_;
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
      throw GraphError("autodiff: " + (t.valid() ? to_string(t) : std::string("tensor")) + " in " +
                       std::string(what) + " is not " +
                       (what == "grads_provided" ? "an output" : "an input") + " of graph '" +
                       g.name() + "'");
  // Listed twice, a tensor would get two gradient inputs (or outputs) of one meaning.
  for (auto t = ts.begin(); t != ts.end(); ++t)
    if (std::find(ts.begin(), t, *t) != t)
      throw ValueError("autodiff: " + to_string(*t) + " is listed twice in " + std::string(what) +
                       "; list each tensor once");
}
} // namespace

namespace {
std::map<Graph, GradGraphInfo> autodiff_impl(const Graph& graph, AutodiffOptions options,
                                             const detail::KeptGradients* kept) {
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
      throw DTypeError("autodiff: cannot provide a gradient for " + to_string(t) +
                       ": gradients exist for float32 and float16 tensors only");
  for (const auto& t : required)
    if (!is_floating_point(t.dtype()))
      throw DTypeError("autodiff: cannot require the gradient of " + to_string(t) +
                       ": gradients exist for float32 and float16 tensors only");
  auto cache = std::move(options.called_graphs_grad_info);
  const transforms::GradGraphInfo info = [&] {
    const detail::SequencesSuspended outside;
    return detail::Autodiff(graph, cache).run(provided, required, kept);
  }();
  rewriter.mark_differentiated(graph);
  cache.insert_or_assign(graph, info);
  return cache;
}
} // namespace

std::map<Graph, GradGraphInfo> autodiff_all(const Graph& graph, AutodiffOptions options) {
  return autodiff_impl(graph, std::move(options), nullptr);
}

GradGraphInfo autodiff(const Graph& graph, AutodiffOptions options) {
  return autodiff_all(graph, std::move(options)).at(graph);
}

namespace {
/// GraphError if an op scheduled after `fwd_call` has changed, in place, the buffer of one of
/// `activations` (tensors of the call's graph): a gradient call made now would read the
/// changed value, not the one the forward call saw.
void check_activations_unchanged(const CallSiteInfo& fwd_call, const InputsDict& activations) {
  const Op call = fwd_call.op();
  const IrView view(call.graph().ir());
  std::map<TensorId, Tensor> roots;
  for (const auto& [grad_input, parent] : activations)
    roots.emplace(view.alias_root(IrView::id(parent)), parent);
  const auto sched = view.ops(IrView::id(call.graph()));
  auto it = std::find(sched.begin(), sched.end(), IrView::id(call));
  if (it == sched.end())
    return;
  for (++it; it != sched.end(); ++it) {
    const auto ins = view.inputs(*it);
    for (std::size_t k = 0; k < ins.size(); ++k) {
      const auto hit =
          view.op_writes_input(*it, k) ? roots.find(view.alias_root(ins[k])) : roots.end();
      if (hit == roots.end())
        continue;
      const Op writer = view.op(*it);
      throw GraphError("GradGraphInfo::inputs_dict: the gradient of graph '" +
                       fwd_call.called_graph().name() + "' reads " + to_string(hit->second) +
                       " as " + call.debug_name() + " left it, but " + writer.debug_name() + " ('" +
                       writer.name() +
                       "') has changed it in place since; ops run in the order they are "
                       "created, so call the gradient graph before that update (or update a "
                       "copy)");
    }
  }
}
} // namespace

InputsDict GradGraphInfo::accumulators_dict(const std::map<Tensor, Tensor>& accumulators,
                                            const Tensor& counter) const {
  if (accumulators_.empty())
    throw ValueError("GradGraphInfo::accumulators_dict: gradient graph '" + graph_.name() +
                     "' has no accumulators; make it with autodiff_with_accumulation");
  InputsDict dict;
  for (const auto& a : accumulators_) {
    const auto it = accumulators.find(a.fwd_tensor);
    if (it == accumulators.end())
      throw ValueError("GradGraphInfo::accumulators_dict: no accumulator given for " +
                       to_string(a.fwd_tensor) + ", whose gradient graph '" + graph_.name() +
                       "' accumulates into " + to_string(a.input));
    dict.emplace_back(a.input, it->second);
  }
  for (const auto& entry : accumulators) {
    const Tensor& fwd_tensor = entry.first;
    if (std::none_of(accumulators_.begin(), accumulators_.end(),
                     [&](const AccumulatorInput& a) { return a.fwd_tensor == fwd_tensor; }))
      throw ValueError("GradGraphInfo::accumulators_dict: " + to_string(fwd_tensor) +
                       " has no accumulator in gradient graph '" + graph_.name() +
                       "' (its gradient is not accumulated)");
  }
  dict.emplace_back(counter_, counter);
  return dict;
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
  check_activations_unchanged(fwd_call, dict);
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

namespace detail {
transforms::GradGraphInfo autodiff_keeping(const Graph& graph, transforms::AutodiffOptions options,
                                           const KeptGradients& kept) {
  return transforms::autodiff_impl(graph, std::move(options), &kept).at(graph);
}
} // namespace detail
} // namespace pxl
