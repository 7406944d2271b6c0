#include "ir/context.hpp"
#include "ir/handle_access.hpp"
#include "ir/op_builder.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ir/ir.hpp"
#include "pxl/ir/scope.hpp"

namespace pxl {
namespace detail {

Context& context() {
  thread_local Context ctx;
  return ctx;
}

} // namespace detail

GraphScope::GraphScope(const Graph& g) {
  auto& ctx = detail::context();
  auto* ir = &detail::HandleAccess::arena(g, "Graph::scope()");
  if (!ctx.graphs.empty() && detail::HandleAccess::storage(ctx.graphs.back()) != ir)
    throw GraphError("graph scope: cannot open graph '" + g.name() +
                     "' inside a graph of another Ir; close the outer scope first");
  ctx.graphs.push_back(g);
}
GraphScope::~GraphScope() {
  if (active_)
    detail::context().graphs.pop_back();
}

NameScope::NameScope(std::string name) {
  auto& ctx = detail::context();
  ctx.name_scope_starts.push_back(ctx.scope_prefix.size());
  ctx.scope_prefix += name;
  ctx.scope_prefix += '/';
}
NameScope::~NameScope() {
  if (active_) {
    auto& ctx = detail::context();
    ctx.scope_prefix.resize(ctx.name_scope_starts.back());
    ctx.name_scope_starts.pop_back();
  }
}

IpuScope::IpuScope(std::int64_t n) {
  if (n < 0)
    throw ValueError("ipu(" + std::to_string(n) + "): IPU index must be >= 0");
  detail::context().ipus.push_back(n);
}
IpuScope::~IpuScope() {
  if (active_)
    detail::context().ipus.pop_back();
}

PipelineStageScope::PipelineStageScope(std::int64_t k) {
  if (k < 0)
    throw ValueError("pipeline_stage(" + std::to_string(k) + "): stage index must be >= 0");
  detail::context().pipeline_stages.push_back(k);
}
PipelineStageScope::~PipelineStageScope() {
  if (active_)
    detail::context().pipeline_stages.pop_back();
}

SequenceScope::SequenceScope(bool enabled) {
  detail::context().sequences.push_back({.enabled = enabled});
}
SequenceScope::~SequenceScope() {
  if (!active_)
    return;
  auto& seqs = detail::context().sequences;
  const auto done = seqs.back();
  seqs.pop_back();
  // A finished group counts as one step of the enclosing sequence: later ops follow its last.
  if (!seqs.empty() && done.last_op && seqs.back().ir == done.ir) {
    seqs.back().last_op = done.last_op;
    seqs.back().graph = done.graph;
  } else if (!seqs.empty() && done.last_op) {
    seqs.back() = {seqs.back().enabled, done.ir, done.graph, done.last_op};
  }
}

std::int64_t current_ipu() {
  const auto& ipus = detail::context().ipus;
  return ipus.empty() ? 0 : ipus.back();
}

TileSetScope::TileSetScope(TileSet s) { detail::context().tile_sets.push_back(s); }
TileSetScope::~TileSetScope() {
  if (active_)
    detail::context().tile_sets.pop_back();
}

TileSet current_tile_set() {
  const auto& sets = detail::context().tile_sets;
  return sets.empty() ? TileSet::compute : sets.back();
}

std::optional<std::int64_t> current_pipeline_stage() {
  const auto& stages = detail::context().pipeline_stages;
  return stages.empty() ? std::nullopt : std::optional<std::int64_t>(stages.back());
}

bool has_current_graph() { return !detail::context().graphs.empty(); }

Graph current_graph() {
  auto& ctx = detail::context();
  if (ctx.graphs.empty())
    throw GraphError("no current graph: open one with `auto scope = graph.scope();` (PopXL's "
                     "`with graph:`)");
  return ctx.graphs.back();
}

Graph main_graph() {
  return detail::HandleAccess::graph(detail::require_graph("main_graph()").ir,
                                     IrView::main_graph());
}

} // namespace pxl
