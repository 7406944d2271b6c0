// Central finite-difference checks of autodiff, evaluated with the reference evaluator.
#pragma once

#include "op_test.hpp"
#include "reference.hpp"

#include "pxl/session.hpp"
#include "pxl/transforms/autodiff.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <random>

namespace pxl::testing {

/// Random float32 values in [lo, hi).
inline HostTensor random_tensor(Shape shape, std::uint32_t seed, float lo = -1.f, float hi = 1.f) {
  HostTensor t(std::move(shape), float32);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (auto& x : t.data<float>())
    x = dist(gen);
  return t;
}

/// Gradients of the graph's inputs for output gradients `out_grads`, through the autodiff
/// gradient graph (forward evaluated first for the activations).
inline std::vector<HostTensor> autodiff_gradients(const transforms::GradGraphInfo& info,
                                                  const std::vector<HostTensor>& inputs,
                                                  const std::vector<HostTensor>& out_grads) {
  ReferenceEvaluator ev(info.forward_graph().ir());
  const Graph fwd = info.forward_graph();
  const auto fwd_values = ev.evaluate(fwd, inputs);
  const auto fwd_ins = fwd.inputs(), fwd_outs = fwd.outputs();
  std::vector<HostTensor> grad_inputs;
  std::size_t next_grad = 0;
  for (const auto& e : info.expected_inputs()) {
    if (e.kind == transforms::ExpectedConnection::Kind::fwd_grad) {
      grad_inputs.push_back(out_grads.at(next_grad++));
      continue;
    }
    const auto in_it = std::find(fwd_ins.begin(), fwd_ins.end(), e.fwd_tensor);
    if (in_it != fwd_ins.end()) {
      grad_inputs.push_back(inputs.at(static_cast<std::size_t>(in_it - fwd_ins.begin())));
    } else {
      const auto out_it = std::find(fwd_outs.begin(), fwd_outs.end(), e.fwd_tensor);
      REQUIRE(out_it != fwd_outs.end());
      grad_inputs.push_back(fwd_values.at(static_cast<std::size_t>(out_it - fwd_outs.begin())));
    }
  }
  return ev.evaluate(info.graph(), grad_inputs);
}

/// The same gradients computed on the emulator: a main graph feeds the inputs and output
/// gradients through streams, calls the forward graph and then its gradient graph with the
/// forward call's activations (PopXL's flow), and stores every input gradient. The IPU has IO
/// tiles, for ops that run there (an io_tile_copy); the others' results do not depend on it.
inline std::vector<HostTensor> emulator_gradients(const transforms::GradGraphInfo& info,
                                                  const std::vector<HostTensor>& inputs,
                                                  const std::vector<HostTensor>& out_grads) {
  Ir& ir = info.forward_graph().ir();
  const Graph fwd = info.forward_graph();
  StreamInputs feed;
  std::vector<DeviceToHostStream> results;
  {
    auto main = ir.main_graph().scope();
    std::vector<Tensor> xs, gs;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      auto s = h2d_stream(inputs[i].shape(), inputs[i].dtype(), "x" + std::to_string(i));
      feed.emplace(s, inputs[i]);
      xs.push_back(ops::host_load(s));
    }
    for (std::size_t k = 0; k < out_grads.size(); ++k) {
      auto s = h2d_stream(out_grads[k].shape(), out_grads[k].dtype(), "g" + std::to_string(k));
      feed.emplace(s, out_grads[k]);
      auto on = ipu(info.graph().inputs()[k].ipu()); // where its output is
      gs.push_back(ops::host_load(s));
    }
    const auto fwd_call = ops::call_with_info(fwd, xs);
    const auto grads = ops::call(info.graph(), gs, info.inputs_dict(fwd_call));
    for (std::size_t j = 0; j < grads.size(); ++j) {
      results.push_back(d2h_stream(grads[j].shape(), grads[j].dtype(), "d" + std::to_string(j)));
      auto on = ipu(grads[j].ipu());
      ops::host_store(results.back(), grads[j]);
    }
  }
  emu::Target with_io_tiles = emu::ipu2();
  with_io_tiles.io_tiles = 32;
  for (const Op& op : ir.main_graph().ops())
    with_io_tiles.ipus = std::max(with_io_tiles.ipus, op.ipu() + 1);
  Session session{ir, with_io_tiles, {.workers = 3, .oversubscribe = true}};
  auto attached = session.attach();
  auto out = session.run(feed);
  std::vector<HostTensor> r;
  for (const auto& s : results)
    r.push_back(out.at(s));
  return r;
}

/// Checks d(sum_k <r_k, f_k(x)>)/dx from autodiff against central differences, for every
/// float input, and that the emulator computes the same gradients as the reference. `fn` is traced
/// with `specs`; `inputs` are the point of evaluation. Returns how many input elements were
/// compared.
template <typename Fn>
std::size_t check_gradients(Fn&& fn, const std::vector<HostTensor>& inputs, double eps = 1e-2,
                            double rtol = 2e-2, double atol = 2e-3) {
  Ir ir;
  auto main = ir.main_graph().scope();
  Graph fwd = ir.create_graph(
      "f", [&](std::vector<Tensor> xs) { return fn(xs); }, specs_of(inputs));
  const std::size_t n_out = fwd.outputs().size();
  std::vector<HostTensor> out_grads;
  for (std::size_t k = 0; k < n_out; ++k)
    out_grads.push_back(
        random_tensor(fwd.outputs()[k].shape(), 1000 + static_cast<std::uint32_t>(k)));
  std::vector<Tensor> required;
  for (const auto& t : fwd.inputs())
    if (is_floating_point(t.dtype()))
      required.push_back(t);
  const auto info = transforms::autodiff(fwd, {.grads_required = required});
  const auto grads = autodiff_gradients(info, inputs, out_grads);
  // The emulator runs the same gradient graph: it must agree with the reference evaluator.
  const auto on_emulator = emulator_gradients(info, inputs, out_grads);
  REQUIRE(on_emulator.size() == grads.size());
  for (std::size_t j = 0; j < grads.size(); ++j)
    CHECK(allclose(on_emulator[j], grads[j], 1e-4, 1e-6));
  // The objective, evaluated in double from the reference's float outputs.
  auto objective = [&](const std::vector<HostTensor>& xs) {
    ReferenceEvaluator ev(ir);
    const auto outs = ev.evaluate(fwd, xs);
    double s = 0;
    for (std::size_t k = 0; k < n_out; ++k)
      for (std::int64_t i = 0; i < outs[k].nelms(); ++i)
        s += outs[k].item(i) * out_grads[k].item(i);
    return s;
  };
  std::size_t g = 0, compared = 0;
  for (std::size_t j = 0; j < inputs.size(); ++j) {
    if (!is_floating_point(inputs[j].dtype()))
      continue;
    const HostTensor& analytic = grads.at(g++);
    REQUIRE(analytic.shape() == inputs[j].shape());
    for (std::int64_t i = 0; i < inputs[j].nelms(); ++i) {
      auto plus = inputs, minus = inputs;
      plus[j].data<float>()[static_cast<std::size_t>(i)] += static_cast<float>(eps);
      minus[j].data<float>()[static_cast<std::size_t>(i)] -= static_cast<float>(eps);
      const double numeric = (objective(plus) - objective(minus)) / (2 * eps);
      const double a = analytic.item(i);
      INFO("input " << j << " element " << i << ": autodiff " << a << " vs finite difference "
                    << numeric);
      CHECK(std::abs(a - numeric) <= atol + rtol * std::abs(numeric));
      ++compared;
    }
  }
  return compared;
}

} // namespace pxl::testing
