// A deliberately naive host interpreter of pxl graphs: the oracle for the emulator's results
// and for gradient checks. Clarity over speed: every op is evaluated element by element in
// double precision (then rounded to the output dtype).
#pragma once

#include "pxl/pxl.hpp"

#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace pxl::testing {

class ReferenceEvaluator;
class Rendezvous;

/// Storage of one tensor value during evaluation; in-place ops share it with their input.
using Value = std::shared_ptr<HostTensor>;

/// Evaluates graphs of one Ir, op by op in creation order. Variables start from their values
/// in the Ir and persist across calls (in-place ops update them); constants are fresh copies
/// for every evaluation of their graph.
///
///     ReferenceEvaluator ev(ir);
///     auto outs = ev.evaluate(subgraph, {HostTensor({1.f, 2.f})});
class ReferenceEvaluator {
public:
  explicit ReferenceEvaluator(const Ir& ir);

  /// Runs `graph` on `inputs` (one per graph input, in order; GraphError/ShapeError if they
  /// do not fit) and returns copies of its outputs.
  std::vector<HostTensor> evaluate(const Graph& graph, std::vector<HostTensor> inputs = {});

  /// Runs the main graph once, like Session::run. `h2d` maps the name of every h2d stream some
  /// host_load reads to an array shaped [num_host_transfers, *stream shape] (just the stream
  /// shape when that count is 1). Each host_load execution takes its stream's next element,
  /// wrapping around after num_host_transfers. Returns, for every d2h stream some host_store
  /// writes, an array of the same layout: store number j goes to element j % num_host_transfers
  /// (a circular buffer: more stores than num_host_transfers overwrite the oldest, elements
  /// never stored stay zero). StreamError for missing or unexpected names or a wrong array.
  std::map<std::string, HostTensor> run(const std::map<std::string, HostTensor>& h2d);

  /// Current value of a variable (GraphError for any other tensor).
  const HostTensor& variable(const Tensor& v) const;

  /// Makes this evaluator replica `replica`, meeting the other replicas' evaluators at
  /// collectives through `rendezvous` (see run_replicated). Alone, an evaluator is replica 0
  /// of one.
  void join(std::shared_ptr<Rendezvous> rendezvous, std::int64_t replica);
  std::int64_t replica() const { return replica_; }
  /// For collective kernels: the values of `value` on every member of this replica's group
  /// under the grouping (stride, group_size), in group order (just `value` when alone).
  std::vector<HostTensor> exchange(const HostTensor& value, std::int64_t stride,
                                   std::int64_t group_size);
  /// This replica's position in its group under the grouping (stride, group_size).
  std::int64_t index_in_group(std::int64_t stride, std::int64_t group_size) const;

  // For reference kernels of control and host-IO ops.

  /// Runs `graph` with `inputs` as its inputs: by-ref inputs share storage with the caller
  /// (in-place updates inside reach it), the others are copied first. Returns the outputs'
  /// storage (which may alias inputs or each other).
  std::vector<Value> evaluate_values(const Graph& graph, std::vector<Value> inputs);
  /// The value of `t` in the graph evaluation in progress (the innermost one).
  Value value(const Tensor& t) const;
  /// The next element of h2d stream `stream` (StreamError if it was not fed through `run`).
  HostTensor next_h2d(std::uint32_t stream);
  /// Appends an element to d2h stream `stream`.
  void push_d2h(std::uint32_t stream, const HostTensor& t);
  /// Entry `entry` of remote buffer `buffer` (zero until stored to; a remote variable's entry
  /// holds the variable); GraphError for an entry out of range.
  HostTensor& remote_entry(std::uint32_t buffer, std::int64_t entry);

private:
  using Env = std::unordered_map<std::uint32_t, Value>;
  Value variable_value(std::uint32_t index);

  const Ir& ir_;
  std::shared_ptr<Rendezvous> rendezvous_;
  std::int64_t replica_ = 0;
  std::map<std::uint32_t, Value> variables_;
  std::vector<const Env*> frames_; ///< environments of the graph evaluations in progress
  std::map<std::uint32_t, HostTensor> h2d_feed_; ///< [num_host_transfers, *shape] per stream
  std::map<std::uint32_t, std::int64_t> h2d_position_;
  std::map<std::uint32_t, std::vector<HostTensor>> d2h_out_;
  std::map<std::pair<std::uint32_t, std::int64_t>, Value> remote_;
};

/// A reference kernel reads `inputs` and writes `outputs`, which the evaluator allocated with
/// the output specs (for an in-place op outputs[0] is inputs[0]).
using RefKernel = void (*)(ReferenceEvaluator& ev, const Op& op,
                           std::span<const HostTensor* const> inputs,
                           std::span<HostTensor* const> outputs);

#define PXL_X(kind, ...)                                                                           \
  void ref_##kind(ReferenceEvaluator& ev, const Op& op, std::span<const HostTensor* const> inputs, \
                  std::span<HostTensor* const> outputs);
PXL_OP_TABLE(PXL_X)
#undef PXL_X

} // namespace pxl::testing
