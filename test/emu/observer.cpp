// Step observers: every executed step with its StepInfo, in execution order; none, no cost.
#include "helpers.hpp"

#include <doctest/doctest.h>

#include <vector>

using namespace pxl;

namespace {
struct Recorder final : emu::StepObserver {
  struct Event {
    emu::StepInfo info;
    std::int64_t replicas = 0;
    bool ordered = false;
  };
  std::vector<Event> events;
  void on_step(const emu::StepInfo& info, const emu::StepTiming& timing,
               std::int64_t replicas) override {
    events.push_back({info, replicas, timing.start <= timing.end});
  }
};

/// Runs, on two workers under `rec`, the main graph whose two results (a forward op's and
/// its gradient's) `build` returns, each stored to a host stream; returns the two values.
template <typename Build>
std::pair<HostTensor, HostTensor> run_pass_pair(Recorder& rec, Build build) {
  Ir ir;
  DeviceToHostStream y_stream, dx_stream;
  {
    auto in_main = ir.main_graph().scope();
    const std::pair<Tensor, Tensor> r = build();
    y_stream = d2h_stream(r.first.shape(), float32, "y");
    dx_stream = d2h_stream(r.second.shape(), float32, "dx");
    ops::host_store(y_stream, r.first);
    ops::host_store(dx_stream, r.second);
  }
  Session s(ir, "ipu_model", {.workers = 2, .oversubscribe = true});
  auto attached = s.attach();
  const auto out = s.run({}, &rec);
  return {out.at(y_stream), out.at(dx_stream)};
}
} // namespace

TEST_CASE("An observer sees every step with its op, bytes and flops") {
  Ir ir;
  HostToDeviceStream a_stream;
  DeviceToHostStream y_stream;
  {
    auto in_main = ir.main_graph().scope();
    a_stream = h2d_stream({4, 8}, float32, "a");
    y_stream = d2h_stream({4, 16}, float32, "y");
    auto w = variable(HostTensor::full({8, 16}, float32, 0.5), "w");
    // abs, not relu: a ReLU would be fused into the matmul (fuse_epilogues).
    ops::host_store(y_stream, ops::abs(ops::matmul(ops::host_load(a_stream), w)));
  }
  for (unsigned workers : {1u, 2u}) {
    CAPTURE(workers);
    Session s(ir, "ipu_model", {.workers = workers, .oversubscribe = true});
    auto attached = s.attach();
    Recorder rec;
    const auto out = s.run({{a_stream, HostTensor::full({4, 8}, float32, 1.0)}}, &rec);
    CHECK(out.at(y_stream) == HostTensor::full({4, 16}, float32, 4.0));
    REQUIRE(rec.events.size() == 4); // HostLoad, MatMul, Abs, HostStore
    const auto& mm = rec.events[1].info;
    CHECK(mm.kind == emu::StepKind::kernel);
    CHECK(mm.op_kind == OpKind::MatMul);
    CHECK(mm.flops == 2 * 4 * 16 * 8);
    CHECK(mm.bytes_read == (4 * 8 + 8 * 16) * 4);
    CHECK(mm.bytes_written == 4 * 16 * 4);
    CHECK(mm.graph == IrView::main_graph());
    CHECK(rec.events[0].info.op_kind == OpKind::HostLoad);
    CHECK(rec.events[2].info.op_kind == OpKind::Abs);
    CHECK(rec.events[2].info.flops == 4 * 16);
    CHECK(rec.events[3].info.op_kind == OpKind::HostStore);
    for (const auto& e : rec.events) {
      CHECK(e.replicas == 1);
      CHECK(e.ordered);
      CHECK(e.info.op.has_value());
    }
  }
}

TEST_CASE("Convolution steps carry 2·N·C_out·out·(C_in / groups)·kernel flops, each pass alike") {
  Ir ir;
  DeviceToHostStream y_stream, dx_stream, dw_stream;
  {
    auto in_main = ir.main_graph().scope();
    const auto x = variable(HostTensor::full({2, 4, 5, 5}, float32, 1.0), "x");
    const auto w = variable(HostTensor::full({6, 2, 3, 3}, float32, 0.5), "w");
    const auto g = variable(HostTensor::full({2, 6, 3, 3}, float32, 1.0), "g");
    const auto y = ops::conv(x, w, {.groups = 2});
    const auto dx = ops::conv_transpose(g, w, {.groups = 2});
    const auto dw = ops::conv_weights_grad(g, x, w.shape(), {.groups = 2});
    y_stream = d2h_stream(y.shape(), float32, "y");
    dx_stream = d2h_stream(dx.shape(), float32, "dx");
    dw_stream = d2h_stream(dw.shape(), float32, "dw");
    ops::host_store(y_stream, y);
    ops::host_store(dx_stream, dx);
    ops::host_store(dw_stream, dw);
  }
  Session s(ir, "ipu_model", {.workers = 2, .oversubscribe = true});
  auto attached = s.attach();
  Recorder rec;
  const auto out = s.run({}, &rec);
  // y sums 2 input channels x 9 taps of 0.5; dx's corner one tap of each of a group's 3 output
  // channels; dw 2 images x 9 positions of ones.
  CHECK(out.at(y_stream) == HostTensor::full({2, 6, 3, 3}, float32, 9.0));
  CHECK(out.at(dx_stream).item(0) == 1.5);
  CHECK(out.at(dw_stream) == HostTensor::full({6, 2, 3, 3}, float32, 18.0));
  std::vector<OpKind> kinds;
  for (const auto& e : rec.events)
    if (family_of(e.info.op_kind) == OpFamily::conv) {
      kinds.push_back(e.info.op_kind);
      CHECK(e.info.flops == 2 * (2 * 6 * 3 * 3) * (2 * 3 * 3));
    }
  CHECK(kinds == std::vector<OpKind>{OpKind::Conv, OpKind::ConvTranspose, OpKind::ConvWeightsGrad});
}

TEST_CASE("Pool steps carry one operation per window tap of each pooled element") {
  Recorder rec;
  const auto [y, dx] = run_pass_pair(rec, [] {
    const auto x = variable(HostTensor::full({2, 3, 6, 6}, float32, 1.0), "x");
    const auto g = variable(HostTensor::full({2, 3, 3, 3}, float32, 1.0), "g");
    const ops::PoolOptions o{.stride = {2, 2}, .padding = {1, 1, 1, 1}};
    return std::pair{ops::average_pool(x, {3, 3}, o), ops::max_pool_grad(g, x, {3, 3}, o)};
  });
  // The average of ones is one; on a plane of ones each window's gradient goes to its first tap
  // inside the image, (0, 0) for the first window and no other.
  CHECK(y == HostTensor::full({2, 3, 3, 3}, float32, 1.0));
  CHECK(dx.item(0) == 1.0);
  std::vector<OpKind> kinds;
  for (const auto& e : rec.events)
    if (family_of(e.info.op_kind) == OpFamily::pool) {
      kinds.push_back(e.info.op_kind);
      CHECK(e.info.flops == (2 * 3 * 3 * 3) * (3 * 3));
    }
  CHECK(kinds == std::vector<OpKind>{OpKind::AveragePool, OpKind::MaxPoolGrad});
}

TEST_CASE("roi_align steps carry four taps per sample of each pooled element, each pass alike") {
  Recorder rec;
  const auto [y, dx] = run_pass_pair(rec, [] {
    const auto x = variable(HostTensor::full({1, 2, 4, 4}, float32, 1.0), "x");
    const auto g = variable(HostTensor::full({1, 2, 2, 2}, float32, 1.0), "g");
    const auto rois = variable(HostTensor({0.f, 0.f, 2.f, 2.f}, {1, 4}), "rois");
    const auto idx = variable(HostTensor(std::vector<std::int32_t>{0}, {1}), "idx");
    return std::pair{ops::roi_align(x, rois, idx, {2, 2}, 1.f, 2),
                     ops::roi_align_grad(g, rois, idx, {1, 2, 4, 4}, {2, 2}, 1.f, 2)};
  });
  // Every sample of a plane of ones reads one. Pixel (0, 0) is read only by bin (0, 0), whose
  // samples at 0.25 and 0.75 weigh it 0.75 + 0.25 along each axis: 1 of the bin's 4 samples.
  CHECK(y == HostTensor::full({1, 2, 2, 2}, float32, 1.0));
  CHECK(dx.item(0) == 0.25);
  std::vector<OpKind> kinds;
  for (const auto& e : rec.events)
    if (e.info.op_kind == OpKind::RoiAlign || e.info.op_kind == OpKind::RoiAlignGrad) {
      kinds.push_back(e.info.op_kind);
      CHECK(e.info.flops == 4 * (2 * 2 * 2) * (2 * 2));
    }
  CHECK(kinds == std::vector<OpKind>{OpKind::RoiAlign, OpKind::RoiAlignGrad});
}

TEST_CASE("Observed calls and loops: the callee's steps each time, then the enclosing step") {
  Ir ir(2);
  DeviceToHostStream y_stream;
  Graph body;
  {
    auto in_main = ir.main_graph().scope();
    y_stream = d2h_stream({3}, float32, "y");
    auto w = variable(HostTensor::full({3}, float32, 1.0), "w");
    body = ir.create_graph(
        "body", [](Tensor t) { return t * 2.0; }, TensorSpec{{3}, float32});
    auto looped = ops::repeat(body, 3, {w})[0];
    ops::host_store(y_stream, looped);
  }
  Session s(ir, "ipu_model", {.workers = 2});
  auto attached = s.attach();
  Recorder rec;
  const auto out = s.run({}, &rec);
  CHECK(out.at(y_stream) == HostTensor({8.f, 8.f, 8.f, 8.f, 8.f, 8.f}, {2, 3}));
  // The body (one Mul) three times, then the Repeat step, then the HostStore.
  REQUIRE(rec.events.size() == 5);
  for (int i = 0; i < 3; ++i) {
    CHECK(rec.events[static_cast<std::size_t>(i)].info.op_kind == OpKind::Mul);
    CHECK(rec.events[static_cast<std::size_t>(i)].info.graph == IrView::id(body));
  }
  const auto& loop = rec.events[3].info;
  CHECK(loop.kind == emu::StepKind::repeat);
  CHECK(loop.callee == IrView::id(body));
  CHECK(loop.trips == 3);
  CHECK(rec.events[4].info.op_kind == OpKind::HostStore);
  for (const auto& e : rec.events)
    CHECK(e.replicas == 2);
}

TEST_CASE("Fused steps say so: a transpose read in place and an update folded into a matmul") {
  Ir ir;
  HostToDeviceStream x_stream;
  {
    auto in_main = ir.main_graph().scope();
    x_stream = h2d_stream({4, 8}, float32, "x");
    auto w = variable(HostTensor::full({8, 8}, float32, 0.5), "w");
    auto x = ops::host_load(x_stream);
    // w -= 0.1 * x^T x: the transpose is read in place and the update folded into the matmul.
    ops::scaled_add_(w, ops::matmul(x.T(), x), {.b = -0.1});
  }
  Session s(ir, "ipu_model", {.workers = 1});
  auto attached = s.attach();
  Recorder rec;
  s.run({{x_stream, HostTensor::full({4, 8}, float32, 1.0)}}, &rec);
  REQUIRE(rec.events.size() == 2); // HostLoad, then the fused MatMul
  CHECK(rec.events[1].info.kind == emu::StepKind::fused_matmul);
  CHECK(rec.events[1].info.op_kind == OpKind::MatMul);
  CHECK(rec.events[1].info.flops == 2 * 8 * 8 * 4);
}

TEST_CASE("An observer that throws fails that run, which stops there; the next run is whole") {
  Ir ir;
  HostToDeviceStream x;
  DeviceToHostStream y;
  {
    auto in_main = ir.main_graph().scope();
    x = h2d_stream({64}, float32, "x");
    y = d2h_stream({64}, float32, "y");
    ops::host_store(y, ops::exp(ops::relu(ops::host_load(x))) * 2.0);
  }
  for (unsigned workers : {1u, 2u}) {
    CAPTURE(workers);
    Session s(ir, "ipu_model", {.workers = workers, .oversubscribe = true});
    auto attached = s.attach();
    test_emu::ThrowingObserver throwing;
    CHECK_THROWS_WITH_AS(s.run({{x, HostTensor::full({64}, float32, 0.0)}}, &throwing),
                         "observer gave up", ValueError);
    CHECK(throwing.calls == 2); // not called again in that run
    Recorder rec;
    const auto out = s.run({{x, HostTensor::full({64}, float32, 0.0)}}, &rec);
    CHECK(out.at(y) == HostTensor::full({64}, float32, 2.0));
    CHECK(rec.events.size() == 5);
  }
}
