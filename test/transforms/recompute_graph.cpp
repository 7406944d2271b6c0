// recompute_graph: gradients bitwise those of stored activations, a lower not-always-live peak,
// the rewritten GradGraphInfo, accumulators carried over, and the frozen Ir.
#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

#include <algorithm>

namespace test_recompute_graph {

using namespace pxl;
using transforms::ExpectedConnection;

constexpr std::int64_t rows = 64, width = 16, hidden = 256, layers = 4;

struct Run {
  std::vector<HostTensor> weights; // after one SGD step
  std::int64_t peak = 0;           // not-always-live peak of IPU 0
  std::size_t grad_inputs = 0;
};

HostTensor weight(std::int64_t in, std::int64_t out, std::int64_t seed) {
  std::vector<float> w(static_cast<std::size_t>(in * out));
  for (std::size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<float>((static_cast<std::int64_t>(i) * 7 + seed * 3) % 11 - 5) / 32.0F;
  return HostTensor(w, {in, out});
}

/// `layers` calls of one layer graph tanh(x·w1)·w2, whose gradient needs its wide hidden
/// activation, then their gradients in reverse order (loss ½·sum(y²)), then one SGD step; the
/// gradient graph recomputed or not, on `workers` workers.
Run train(bool recompute, unsigned workers = 1) {
  Ir ir;
  std::vector<Tensor> ws;
  transforms::GradGraphInfo info = [&] {
    auto in_main = ir.main_graph().scope();
    Graph layer = ir.create_graph(
        "layer",
        [](Tensor x, Tensor w1, Tensor w2) {
          return ops::matmul(ops::tanh(ops::matmul(x, w1)), w2);
        },
        TensorSpec{{rows, width}, float32}, TensorSpec{{width, hidden}, float32},
        TensorSpec{{hidden, width}, float32});
    return transforms::autodiff(layer);
  }();
  if (recompute)
    info = transforms::recompute_graph(info);
  {
    auto in_main = ir.main_graph().scope();
    Tensor x = constant(HostTensor(std::vector<float>(rows * width, 0.25F), {rows, width}), "x");
    std::vector<CallSiteInfo> calls;
    for (std::int64_t l = 0; l < layers; ++l) {
      const Tensor w1 = variable(weight(width, hidden, l), "w1_" + std::to_string(l));
      const Tensor w2 = variable(weight(hidden, width, l + 5), "w2_" + std::to_string(l));
      ws.push_back(w1);
      ws.push_back(w2);
      calls.push_back(ops::call_with_info(info.forward_graph(), {x, w1, w2}));
      x = calls.back().parent_output(0);
    }
    Tensor dy = x;
    std::vector<Tensor> dws(ws.size());
    for (std::int64_t l = layers - 1; l >= 0; --l) {
      const auto& call = calls[static_cast<std::size_t>(l)];
      const auto grads = ops::call(info.graph(), {dy}, info.inputs_dict(call));
      dy = grads[0];
      dws[static_cast<std::size_t>(2 * l)] = grads[1];
      dws[static_cast<std::size_t>(2 * l + 1)] = grads[2];
    }
    for (std::size_t k = 0; k < ws.size(); ++k)
      ops::scaled_add_(ws[k], dws[k], {.b = -0.1});
  }
  Session session{ir, "ipu_model", {.workers = workers, .oversubscribe = true}};
  auto attached = session.attach();
  session.run();
  Run r;
  for (const auto& w : ws)
    r.weights.push_back(session.get_tensor_data(w));
  r.peak = session.memory_report().ipus.at(0).not_always_live_peak;
  r.grad_inputs = info.graph().inputs().size();
  return r;
}

TEST_CASE("recompute_graph: gradients bitwise those of stored activations (1 and 3 workers), at "
          "a lower peak") {
  const Run stored = train(false);
  const Run recomputed = train(true);
  const Run three = train(true, 3);
  for (std::size_t k = 0; k < stored.weights.size(); ++k) {
    CAPTURE(k);
    CHECK(recomputed.weights[k] == stored.weights[k]);
    CHECK(three.weights[k] == stored.weights[k]);
  }
  // Stored: every layer's hidden activation (rows × hidden floats, 64 KiB) lives from its
  // forward call to its gradient call. Recomputed: one at a time, inside the gradient call.
  MESSAGE("peak stored ", stored.peak, " recomputed ", recomputed.peak);
  CHECK(recomputed.peak + rows * hidden * 4 <= stored.peak);
  // dy, then x, w1 and w2: no activation.
  CHECK(recomputed.grad_inputs == 4);
  CHECK(stored.grad_inputs > 4);
}

TEST_CASE("recompute_graph: the new GradGraphInfo expects forward inputs, not activations") {
  Ir ir;
  auto in_main = ir.main_graph().scope();
  Graph f = ir.create_graph(
      "f", [](Tensor x, Tensor w, Tensor b) { return ops::exp(ops::matmul(x, w)) + b; },
      TensorSpec{{2, 3}, float32}, TensorSpec{{3, 4}, float32}, TensorSpec{{4}, float32});
  const auto info = transforms::autodiff(f, {.grads_required = std::vector{f.inputs()[1]}});
  const auto r = transforms::recompute_graph(info);
  CHECK(r.graph().name() == info.graph().name() + "_recomp");
  CHECK(r.forward_graph() == f);
  CHECK(r.expected_outputs() == info.expected_outputs());
  const auto& e = r.expected_inputs();
  REQUIRE(e.size() == r.graph().inputs().size());
  CHECK(e[0] == ExpectedConnection{f.outputs()[0], ExpectedConnection::Kind::fwd_grad});
  // Every forward input, each once, and no activation.
  std::vector<Tensor> fwd_tensors;
  for (std::size_t i = 1; i < e.size(); ++i) {
    CHECK(e[i].kind == ExpectedConnection::Kind::fwd);
    fwd_tensors.push_back(e[i].fwd_tensor);
  }
  std::sort(fwd_tensors.begin(), fwd_tensors.end());
  auto ins = f.inputs();
  std::sort(ins.begin(), ins.end());
  CHECK(fwd_tensors == ins);
  // The recomputation calls the forward graph, then the gradient graph.
  std::vector<OpKind> kinds;
  for (const auto& op : r.graph().ops())
    kinds.push_back(op.kind());
  CHECK(kinds == std::vector<OpKind>{OpKind::Call, OpKind::Call});

  // It computes the gradient of the stored version, bitwise.
  const Tensor x = constant(HostTensor(std::vector<float>{1, -2, 0.5F, 3, 0.25F, -1}, {2, 3}));
  const Tensor w = variable(HostTensor::full({3, 4}, float32, 0.3), "w");
  const Tensor b = variable(HostTensor::full({4}, float32, -1.0), "b");
  const CallSiteInfo call = ops::call_with_info(f, {x, w, b});
  const Tensor dy = constant(HostTensor::full({2, 4}, float32, 0.5));
  const Tensor stored = ops::call(info.graph(), {dy}, info.inputs_dict(call))[0];
  const Tensor recomputed = ops::call(r.graph(), {dy}, r.inputs_dict(call))[0];
  const auto out_s = d2h_stream(stored.shape(), stored.dtype(), "s");
  const auto out_r = d2h_stream(recomputed.shape(), recomputed.dtype(), "r");
  ops::host_store(out_s, stored);
  ops::host_store(out_r, recomputed);
  Session session{ir, "ipu_model"};
  auto attached = session.attach();
  const auto outs = session.run();
  CHECK(outs.at(out_r) == outs.at(out_s));
  CHECK_FALSE(outs.at(out_s) == HostTensor::full({3, 4}, float32, 0.0));
  // A frozen Ir is refused.
  CHECK_THROWS_WITH_AS(
      transforms::recompute_graph(info),
      doctest::Contains(
          "recompute_graph: adding recomputation to gradient graph 'f_subgraph(0)_grad'"),
      GraphError);
}

TEST_CASE("recompute_graph carries autodiff_with_accumulation's accumulators over") {
  Ir ir;
  auto in_main = ir.main_graph().scope();
  Graph f = ir.create_graph(
      "f", [](Tensor x, Tensor w) { return ops::sum(ops::sin(x * w)); }, TensorSpec{{3}, float32},
      TensorSpec{{3}, float32});
  const Tensor w_in = f.inputs()[1];
  const auto info = transforms::autodiff_with_accumulation(f, {w_in});
  const auto r = transforms::recompute_graph(info);
  REQUIRE(r.accumulators().size() == 1);
  CHECK(r.accumulators()[0].fwd_tensor == w_in);
  const auto r_inputs = r.graph().inputs();
  const auto at = [&](const Tensor& t) {
    return static_cast<std::size_t>(std::find(r_inputs.begin(), r_inputs.end(), t) -
                                    r_inputs.begin());
  };
  REQUIRE(at(r.accumulators()[0].input) < r_inputs.size());
  REQUIRE(at(r.mean_accum_counter()) < r_inputs.size());
  CHECK(r.graph().input_is_by_ref(at(r.accumulators()[0].input)));
  CHECK(r.graph().input_is_by_ref(at(r.mean_accum_counter())));
  CHECK(r.accumulators()[0].input.name() == info.accumulators()[0].input.name());

  const Tensor w = variable(HostTensor(std::vector<float>{0.5F, -1, 2}, {3}), "w");
  const Tensor acc_s = variable(HostTensor::full({3}, float32, 0.0), "acc_s");
  const Tensor acc_r = variable(HostTensor::full({3}, float32, 0.0), "acc_r");
  const Tensor k_s = variable(HostTensor::full({}, float32, 0.0), "k_s");
  const Tensor k_r = variable(HostTensor::full({}, float32, 0.0), "k_r");
  for (int step = 0; step < 3; ++step) {
    const Tensor x = constant(HostTensor(std::vector<float>{1.0F + static_cast<float>(step), -0.5F,
                                                            0.25F * static_cast<float>(step)},
                                         {3}));
    const CallSiteInfo call = ops::call_with_info(f, {x, w});
    const Tensor one = constant(1.0, float32);
    InputsDict s = info.inputs_dict(call), rr = r.inputs_dict(call);
    const auto ms = info.accumulators_dict({{w_in, acc_s}}, k_s);
    const auto mr = r.accumulators_dict({{w_in, acc_r}}, k_r);
    s.insert(s.end(), ms.begin(), ms.end());
    rr.insert(rr.end(), mr.begin(), mr.end());
    ops::call(info.graph(), {one}, s);
    ops::call(r.graph(), {one}, rr);
  }
  Session session{ir, "ipu_model"};
  auto attached = session.attach();
  session.run();
  CHECK(session.get_tensor_data(acc_r) == session.get_tensor_data(acc_s));
  CHECK(session.get_tensor_data(k_r).item() == 3.0);
  CHECK_FALSE(session.get_tensor_data(acc_r) == HostTensor::full({3}, float32, 0.0));
}

} // namespace test_recompute_graph
