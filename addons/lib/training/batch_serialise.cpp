// Batch serialisation: a graph's micro-batches run in a device loop, and a forward/gradient
// pair whose activations wait in Streaming Memory between the two loops.
#include "pxl/addons/training/batch_serialise.hpp"

#include "pxl/core/error.hpp"
#include "pxl/ir/ir.hpp"
#include "pxl/ops/call.hpp"
#include "pxl/ops/remote.hpp"
#include "pxl/ops/shape.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace pxl::addons {

namespace {

using Connection = transforms::ExpectedConnection;

std::string id_and_spec(const Tensor& t) { return "'" + t.id() + "' " + to_string(t.spec()); }

void check_steps(std::string_view fn, std::int64_t steps) {
  if (steps < 1)
    throw ValueError(std::string(fn) + ": steps (micro-batches per batch) must be >= 1, got " +
                     std::to_string(steps));
}

Shape batched(Shape shape, std::int64_t steps) {
  shape[0] *= steps;
  return shape;
}

std::size_t input_index(const Graph& g, const Tensor& input) {
  const auto ins = g.inputs();
  const auto it = std::find(ins.begin(), ins.end(), input);
  PXL_ASSERT(it != ins.end());
  return static_cast<std::size_t>(it - ins.begin());
}

std::size_t output_index(const std::vector<Tensor>& outputs, const Tensor& output) {
  const auto it = std::find(outputs.begin(), outputs.end(), output);
  PXL_ASSERT(it != outputs.end());
  return static_cast<std::size_t>(it - outputs.begin());
}

/// The inputs of `g` that are named args.
std::set<Tensor> named_inputs(const GraphWithNamedArgs& g) {
  const auto args = g.args().values_flat();
  return {args.begin(), args.end()};
}

/// The micro-batch rows: dim 0 of every positional input of `g`, which must agree.
std::int64_t micro_batch_rows(std::string_view fn, const GraphWithNamedArgs& g) {
  const Graph graph = g.graph();
  const auto positional = g.positional_inputs();
  if (positional.empty())
    throw ValueError(std::string(fn) + ": graph '" + graph.name() +
                     "' has no positional inputs to split into micro-batches (named args pass "
                     "through whole); expected at least one");
  std::int64_t rows = -1;
  for (const auto& t : positional) {
    if (graph.input_is_by_ref(input_index(graph, t)))
      throw ValueError(std::string(fn) + ": positional input " + id_and_spec(t) + " of graph '" +
                       graph.name() +
                       "' is passed by reference, but each step receives a slice of it, so "
                       "its in-place changes could not reach the caller; expected inputs "
                       "passed by value (or make it a named arg)");
    if (t.rank() == 0)
      throw ShapeError(std::string(fn) + ": positional input " + id_and_spec(t) + " of graph '" +
                       graph.name() +
                       "' is a scalar; expected a micro-batch with rows along axis 0 (make it a "
                       "named arg to pass it whole)");
    if (rows < 0)
      rows = t.shape()[0];
    else if (t.shape()[0] != rows)
      throw ShapeError(std::string(fn) + ": positional input " + id_and_spec(t) + " of graph '" +
                       graph.name() + "' has " + std::to_string(t.shape()[0]) +
                       " rows along axis 0; expected " + std::to_string(rows) +
                       ", the micro-batch rows of " + id_and_spec(positional.front()));
  }
  return rows;
}

/// ShapeError unless every one of `outputs` holds the micro-batch's rows along axis 0.
void check_outputs(std::string_view fn, const Graph& graph, const std::vector<Tensor>& outputs,
                   std::int64_t rows) {
  for (const auto& y : outputs)
    if (y.rank() == 0 || y.shape()[0] != rows)
      throw ShapeError(std::string(fn) + ": output " + id_and_spec(y) + " of graph '" +
                       graph.name() +
                       "' must hold one row per sample: expected dim 0 = " + std::to_string(rows) +
                       " (the micro-batch rows), found shape " + to_string(y.shape()) +
                       "; a result of the whole batch (a loss) cannot be assembled from "
                       "micro-batches, compute it from the serialised outputs");
}

/// `grad`'s GradGraphInfo after checking that `grad` is the gradient graph of `fwd`.
const transforms::GradGraphInfo& gradient_info(std::string_view fn, const GraphWithNamedArgs& fwd,
                                               const GraphWithNamedArgs& grad) {
  const Graph f = fwd.graph(), g = grad.graph();
  if (&f.ir() != &g.ir())
    throw GraphError(std::string(fn) + ": the gradient graph '" + g.name() +
                     "' belongs to another Ir than the forward graph '" + f.name() +
                     "'; expected the autodiff of the forward graph (fwd.autodiff())");
  if (!grad.is_grad_graph())
    throw GraphError(std::string(fn) + ": graph '" + g.name() +
                     "' is not a gradient graph; expected the autodiff of the forward graph '" +
                     f.name() + "' (fwd.autodiff())");
  const auto& info = grad.grad_graph_info();
  if (info.forward_graph() != f)
    throw GraphError(std::string(fn) + ": '" + g.name() + "' is the gradient graph of '" +
                     info.forward_graph().name() + "'; expected the gradient graph of '" +
                     f.name() + "'");
  return info;
}

/// `fwd`'s outputs without the activations autodiff appended to them: the trailing outputs
/// the gradient graph reads as activations and takes no gradient for.
std::vector<Tensor> outputs_before_autodiff(const Graph& fwd,
                                            const transforms::GradGraphInfo& info) {
  std::set<Tensor> activations, provided;
  for (const auto& e : info.expected_inputs())
    (e.kind == Connection::Kind::fwd ? activations : provided).insert(e.fwd_tensor);
  auto outputs = fwd.outputs();
  while (!outputs.empty() && activations.contains(outputs.back()) &&
         !provided.contains(outputs.back()))
    outputs.pop_back();
  return outputs;
}

/// micro_batch_spec of `full`, described as `what` in messages.
TensorSpec micro_batch_of(const std::string& what, TensorSpec full, std::int64_t steps) {
  constexpr std::string_view fn = "micro_batch_spec";
  check_steps(fn, steps);
  if (full.rank() == 0)
    throw ShapeError(std::string(fn) + ": " + what +
                     " is a scalar; expected a batch with rows along axis 0");
  if (full.shape[0] % steps != 0)
    throw ShapeError(std::string(fn) + ": " + what + " has " + std::to_string(full.shape[0]) +
                     " rows along axis 0, which " + std::to_string(steps) +
                     " micro-batches cannot share equally; expected a multiple of " +
                     std::to_string(steps) + " rows");
  full.shape[0] /= steps;
  return full;
}

/// An input of the serialised graph (and of its loop body).
struct LoopInput {
  TensorSpec spec;
  std::string name;
  bool by_ref = false;
};

/// How each step feeds one input of the inner graph.
struct Feed {
  enum class Kind : std::uint8_t {
    rows,   ///< the step's rows of loop input `input`
    whole,  ///< loop input `input` as it is
    stored, ///< the step's entry of `buffer`
  };
  Kind kind = Kind::whole;
  std::size_t input = 0;
  RemoteBuffer buffer;
};

/// How the loop gathers one output of the inner graph into an output of the serialised graph.
struct Gather {
  Tensor output;
  /// true: each step's rows of the full-batch result; false: the sum over the steps.
  bool rows = true;
};

/// What a serialised graph is made of: the loop's inputs, and per step how the inner graph's
/// inputs are fed, which of its outputs are gathered and which of its tensors are stored.
struct Loop {
  Graph inner;
  std::int64_t steps = 1;
  std::int64_t rows = 0;
  std::vector<LoopInput> inputs;
  std::vector<Feed> feeds; ///< one per input of `inner`, in order
  std::vector<Gather> gathers;
  /// Inputs or outputs of `inner` each step stores, in a buffer of `steps` entries.
  std::vector<Tensor> stores;
};

/// What serialise made: the graph and the buffers it stores into.
struct Serialised {
  Graph graph;
  std::map<Tensor, RemoteBuffer> buffers; ///< one per Loop::stores
};

/// The spec of the serialised graph's output gathered by `g`.
TensorSpec gathered_spec(const Loop& loop, const Gather& g) {
  const Tensor& y = g.output;
  return g.rows ? TensorSpec{batched(y.shape(), loop.steps), y.dtype()} : y.spec();
}

/// The loop body: inputs are the step number, the gathered results so far, then the loop
/// inputs; outputs the next step number and the results (carried into the first inputs).
std::vector<Tensor> micro_step(const Loop& loop, const std::map<Tensor, RemoteBuffer>& buffers) {
  const Tensor step = graph_input(Shape{}, int32, "step");
  std::vector<Tensor> totals;
  for (const auto& g : loop.gathers)
    totals.push_back(graph_input(gathered_spec(loop, g), g.output.name()));
  std::vector<Tensor> ins;
  for (const auto& in : loop.inputs)
    ins.push_back(graph_input(in.spec, in.name, in.by_ref));

  const Tensor first_row = pxl::ops::reshape(step * static_cast<double>(loop.rows), {1});
  InputsDict dict;
  const auto inner_ins = loop.inner.inputs();
  for (std::size_t i = 0; i < inner_ins.size(); ++i) {
    const Feed& f = loop.feeds[i];
    switch (f.kind) {
    case Feed::Kind::rows:
      dict.emplace_back(inner_ins[i],
                        pxl::ops::dynamic_slice(ins[f.input], first_row, {0}, {loop.rows}));
      break;
    case Feed::Kind::whole:
      dict.emplace_back(inner_ins[i], ins[f.input]);
      break;
    case Feed::Kind::stored:
      dict.emplace_back(inner_ins[i], pxl::ops::remote_load(f.buffer, step));
      break;
    }
  }
  const CallSiteInfo call = pxl::ops::call_with_info(loop.inner, {}, dict);
  for (const auto& t : loop.stores)
    pxl::ops::remote_store(buffers.at(t), step, call.graph_to_parent(t));

  std::vector<Tensor> outs{step + 1.0};
  for (std::size_t k = 0; k < loop.gathers.size(); ++k) {
    const Tensor y = call.graph_to_parent(loop.gathers[k].output);
    outs.push_back(loop.gathers[k].rows ? pxl::ops::dynamic_update(totals[k], first_row, y, {0})
                                        : totals[k] + y);
  }
  return outs;
}

/// The graph running `loop`: its inputs are `loop.inputs`, its outputs the gathered results.
/// The buffers are created here, named after the graph ("batch_serialise_subgraph(0)/<id>"),
/// so that serialising one graph twice gives distinct names.
Serialised serialise(const Loop& loop) {
  Ir& ir = loop.inner.ir();
  Serialised r;
  r.graph = ir.create_graph("batch_serialise", [&] {
    std::vector<Tensor> loop_inputs{pxl::ops::init(Shape{}, int32, "step")};
    for (const auto& g : loop.gathers) {
      const TensorSpec spec = gathered_spec(loop, g);
      loop_inputs.push_back(pxl::ops::init(spec.shape, spec.dtype, g.output.name()));
    }
    for (const auto& in : loop.inputs)
      loop_inputs.push_back(graph_input(in.spec, in.name, in.by_ref));
    const std::string prefix = current_graph().name() + "/";
    for (const auto& t : loop.stores)
      r.buffers.emplace(t, remote_buffer(t.shape(), t.dtype(), loop.steps, prefix + t.id()));
    const Graph body =
        ir.create_graph("batch_serialise_step", [&] { return micro_step(loop, r.buffers); });
    const auto outs = pxl::ops::repeat(body, loop.steps, loop_inputs);
    return std::vector<Tensor>(outs.begin() + 1, outs.end());
  });
  return r;
}

/// The forward loop of `graph`: its inputs in order (positional ones batched), `outputs`
/// gathered by rows, `stores` stored.
Loop forward_loop(const GraphWithNamedArgs& graph, std::int64_t steps, std::int64_t rows,
                  const std::vector<Tensor>& outputs, std::vector<Tensor> stores = {}) {
  const Graph g = graph.graph();
  const std::set<Tensor> named = named_inputs(graph);
  Loop loop{.inner = g, .steps = steps, .rows = rows, .stores = std::move(stores)};
  const auto ins = g.inputs();
  for (std::size_t i = 0; i < ins.size(); ++i) {
    const bool whole = named.contains(ins[i]);
    loop.inputs.push_back(
        {whole ? ins[i].spec() : TensorSpec{batched(ins[i].shape(), steps), ins[i].dtype()},
         ins[i].name(), g.input_is_by_ref(i)});
    loop.feeds.push_back({whole ? Feed::Kind::whole : Feed::Kind::rows, i, {}});
  }
  for (const auto& y : outputs)
    loop.gathers.push_back({y, true});
  return loop;
}

/// `graph`'s named args as the inputs at the same positions of `serial`.
NamedTensors args_at_same_positions(const GraphWithNamedArgs& graph, const Graph& serial) {
  const auto serial_ins = serial.inputs();
  return graph.args().map(
      [&](const Tensor& t) { return serial_ins[input_index(graph.graph(), t)]; });
}

} // namespace

TensorSpec micro_batch_spec(const Tensor& full_batch, std::int64_t steps) {
  return micro_batch_of(id_and_spec(full_batch), full_batch.spec(), steps);
}

TensorSpec micro_batch_spec(const TensorSpec& full_batch, std::int64_t steps) {
  return micro_batch_of("the batch " + to_string(full_batch), full_batch, steps);
}

GraphWithNamedArgs batch_serialise(const GraphWithNamedArgs& graph, std::int64_t steps) {
  constexpr std::string_view fn = "batch_serialise";
  check_steps(fn, steps);
  const std::int64_t rows = micro_batch_rows(fn, graph);
  const auto outputs = graph.graph().outputs();
  check_outputs(fn, graph.graph(), outputs, rows);
  if (steps == 1)
    return graph;
  const Graph serial = serialise(forward_loop(graph, steps, rows, outputs)).graph;
  return GraphWithNamedArgs(serial, args_at_same_positions(graph, serial));
}

BatchSerialisedGraphs batch_serialise_fwd_and_grad(const GraphWithNamedArgs& fwd,
                                                   const GraphWithNamedArgs& grad,
                                                   std::int64_t steps) {
  constexpr std::string_view fn = "batch_serialise_fwd_and_grad";
  check_steps(fn, steps);
  const transforms::GradGraphInfo& info = gradient_info(fn, fwd, grad);
  const std::int64_t rows = micro_batch_rows(fn, fwd);
  const Graph f = fwd.graph();
  const auto outputs = outputs_before_autodiff(f, info);
  check_outputs(fn, f, outputs, rows);

  const std::set<Tensor> named = named_inputs(fwd);
  // Named args reach the gradient loop as its own inputs; every other activation waits in
  // Streaming Memory, one entry per step.
  std::vector<Tensor> stored;
  for (const auto& e : info.expected_inputs())
    if (e.kind == Connection::Kind::fwd && !named.contains(e.fwd_tensor))
      stored.push_back(e.fwd_tensor);

  BatchSerialisedGraphs r;
  Serialised forward = serialise(forward_loop(fwd, steps, rows, outputs, stored));
  r.activations = forward.buffers;
  r.forward = GraphWithNamedArgs(forward.graph, args_at_same_positions(fwd, forward.graph));
  const auto serial_fwd_ins = forward.graph.inputs();
  const auto serial_fwd_outs = forward.graph.outputs();
  auto serial_fwd_input = [&](const Tensor& t) { return serial_fwd_ins[input_index(f, t)]; };

  // The gradient loop. Its GradGraphInfo states the same connections in terms of the forward
  // loop, so call sites connect the serialised pair as they would the original one.
  const Graph g = grad.graph();
  Loop loop{.inner = g, .steps = steps, .rows = rows};
  std::vector<Connection> expected_inputs, expected_outputs;
  std::map<Tensor, std::size_t> loop_input_of; // grad input → loop input
  const auto grad_ins = g.inputs();
  for (std::size_t i = 0; i < grad_ins.size(); ++i) {
    const Connection& e = info.expected_inputs()[i];
    const Tensor& in = grad_ins[i];
    if (e.kind == Connection::Kind::fwd && !named.contains(e.fwd_tensor)) {
      loop.feeds.push_back({Feed::Kind::stored, 0, forward.buffers.at(e.fwd_tensor)});
      continue;
    }
    const bool output_grad = e.kind == Connection::Kind::fwd_grad;
    loop_input_of.emplace(in, loop.inputs.size());
    loop.feeds.push_back(
        {output_grad ? Feed::Kind::rows : Feed::Kind::whole, loop.inputs.size(), {}});
    if (output_grad) {
      loop.inputs.push_back({{batched(in.shape(), steps), in.dtype()}, in.name(), false});
      expected_inputs.push_back(
          {serial_fwd_outs[output_index(outputs, e.fwd_tensor)], Connection::Kind::fwd_grad});
    } else {
      loop.inputs.push_back({in.spec(), in.name(), g.input_is_by_ref(i)});
      expected_inputs.push_back({serial_fwd_input(e.fwd_tensor), Connection::Kind::fwd});
    }
  }
  for (std::size_t k = 0; k < info.expected_outputs().size(); ++k) {
    const Tensor& fwd_input = info.expected_outputs()[k].fwd_tensor;
    loop.gathers.push_back({g.outputs()[k], !named.contains(fwd_input)});
    expected_outputs.push_back({serial_fwd_input(fwd_input), Connection::Kind::fwd_grad});
  }
  const Graph serial_grad = serialise(loop).graph;
  const auto serial_grad_ins = serial_grad.inputs();
  const auto serial_grad_outs = serial_grad.outputs();
  r.gradient = GraphWithNamedArgs(
      serial_grad,
      grad.args().map([&](const Tensor& t) { return serial_grad_ins[loop_input_of.at(t)]; }),
      transforms::GradGraphInfo(serial_grad, forward.graph, std::move(expected_inputs),
                                std::move(expected_outputs)),
      grad.named_outputs().map(
          [&](const Tensor& t) { return serial_grad_outs[output_index(g.outputs(), t)]; }));
  return r;
}

} // namespace pxl::addons
