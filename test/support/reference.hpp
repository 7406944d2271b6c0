// A deliberately naive host interpreter of pxl graphs: the oracle for the emulator's results
// and for gradient checks. Clarity over speed: every op is evaluated element by element in
// double precision (then rounded to the output dtype).
#pragma once

#include "pxl/pxl.hpp"

#include <map>
#include <memory>
#include <span>
#include <vector>

namespace pxl::testing {

class ReferenceEvaluator;

/// Storage of one tensor value during evaluation; in-place ops share it with their input.
using Value = std::shared_ptr<HostTensor>;

/// Evaluates `graph` of `ir` on `inputs` (one per graph input, in order) and returns its
/// outputs. Variables and constants take their values from the Ir (variables as last updated
/// by this evaluator). By-ref inputs modified in place are written back into `inputs`.
class ReferenceEvaluator {
public:
  explicit ReferenceEvaluator(const Ir& ir);

  std::vector<HostTensor> evaluate(const Graph& graph, std::vector<HostTensor> inputs = {});

  /// Runs the main graph `num_host_transfers` times like Session::run: `h2d` arrays are shaped
  /// [num_host_transfers, *stream shape] (or just the stream shape when that count is 1);
  /// returns the d2h streams' arrays shaped the same way.
  std::map<std::string, HostTensor> run(const std::map<std::string, HostTensor>& h2d);

  /// Current value of a variable.
  const HostTensor& variable(const Tensor& v) const;

  // For reference kernels of control and host-IO ops.
  std::vector<Value> evaluate_values(const Graph& graph, std::vector<Value> inputs);
  HostTensor next_h2d(std::uint32_t stream);
  void push_d2h(std::uint32_t stream, const HostTensor& t);

private:
  const Ir& ir_;
  std::map<std::uint32_t, Value> variables_;
  std::map<std::uint32_t, HostTensor> h2d_feed_;
  std::map<std::uint32_t, std::int64_t> h2d_position_;
  std::map<std::uint32_t, std::vector<HostTensor>> d2h_out_;
};

/// A reference kernel reads `inputs` and writes `outputs`, which the evaluator allocated with
/// the output specs (for an in-place op outputs[0] is inputs[0]).
using RefKernel = void (*)(ReferenceEvaluator& ev, const Op& op,
                           std::span<const HostTensor* const> inputs,
                           std::span<HostTensor* const> outputs);

#define PXL_X(kind, name)                                                                          \
  void ref_##kind(ReferenceEvaluator& ev, const Op& op, std::span<const HostTensor* const> inputs, \
                  std::span<HostTensor* const> outputs);
PXL_OP_TABLE(PXL_X)
#undef PXL_X

} // namespace pxl::testing
