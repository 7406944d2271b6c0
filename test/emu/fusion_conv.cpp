// Epilogue and update fusions of convolutions and matmuls: a Conv's or MatMul's bias and ReLU
// applied as it writes each image or tile, and an in-place update of a ConvWeightsGrad's
// result folded into it. Each fused program gives the bits of the
// same program with the fusion blocked (a second reader of the intermediate result), on 1-4
// workers, stores no intermediate result, and runs the fused step kind.
#include "helpers.hpp"
#include "reference.hpp"

#include "pxl/ops/conv.hpp"
#include "pxl/transforms/autodiff.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

using namespace pxl;
using test_emu::has_tensor;
using test_emu::pattern;

namespace test_fusion_conv {

/// Counts the steps of each kind a run executes.
struct StepKinds final : emu::StepObserver {
  std::vector<emu::StepKind> kinds;
  void on_step(const emu::StepInfo& info, const emu::StepTiming&, std::int64_t) override {
    kinds.push_back(info.kind);
  }
  long count(emu::StepKind k) const { return std::ranges::count(kinds, k); }
};

/// A program's results on `workers` workers: the values its d2h streams received, then its
/// variables `vars`, after one run on `inputs`; and the kinds of the steps it ran.
struct Outcome {
  std::vector<HostTensor> values;
  StepKinds kinds;
  emu::MemoryReport memory;
};

Outcome run(Ir& ir, const StreamInputs& inputs, const std::vector<DeviceToHostStream>& outs,
            const std::vector<Tensor>& vars, unsigned workers) {
  Outcome o;
  Session s(ir, "ipu_model", {.workers = workers, .oversubscribe = true});
  o.memory = s.memory_report();
  auto attached = s.attach();
  const StreamOutputs got = s.run(inputs, &o.kinds);
  for (const auto& d : outs)
    o.values.push_back(got.at(d));
  for (const auto& v : vars)
    o.values.push_back(s.get_tensor_data(v));
  return o;
}

/// Whether `a` and `b` hold the same bits, tensor by tensor.
bool same_bits(const std::vector<HostTensor>& a, const std::vector<HostTensor>& b) {
  return a.size() == b.size() && std::ranges::equal(a, b, [](const auto& x, const auto& y) {
           return x.spec() == y.spec() && std::ranges::equal(x.bytes(), y.bytes());
         });
}

enum class Epilogue { bias_relu, bias, relu };

/// `produce(x, w)` followed by `epilogue`: x streamed in as `x_shape`, w a variable of
/// `w_shape`, the bias a variable of `bias_size` values reshaped to `bias_shape`. With `block`,
/// the produced result also goes to a stream, so that nothing may fuse.
struct EpilogueProgram {
  Ir ir;
  HostToDeviceStream sx;
  DeviceToHostStream sy, blocked;
  std::string produced_id, biased_id;

  template <typename Produce>
  EpilogueProgram(DType dtype, const Shape& x_shape, const Shape& w_shape, Produce produce,
                  Epilogue epilogue, const Shape& bias_shape, bool block) {
    auto in_main = ir.main_graph().scope();
    sx = h2d_stream(x_shape, dtype, "x");
    const Tensor w = variable(pattern({w_shape, dtype}, 3), "w");
    const Tensor b = variable(pattern({{nelms(bias_shape)}, dtype}, 4), "b");
    Tensor y = produce(ops::host_load(sx), w);
    produced_id = y.id();
    if (block) {
      blocked = d2h_stream(y.shape(), dtype, "blocked");
      ops::host_store(blocked, y);
    }
    if (epilogue != Epilogue::relu) {
      y = y + ops::reshape(b, bias_shape);
      biased_id = y.id();
    }
    if (epilogue != Epilogue::bias)
      y = ops::relu(y);
    sy = d2h_stream(y.shape(), y.dtype(), "y");
    ops::host_store(sy, y);
  }
};

/// conv(x, w): x (2, 3, 7, 6), w (5, 3, 3, 3), padding 1; a bias of 5 values.
EpilogueProgram conv_epilogue(DType dtype, Epilogue epilogue, const Shape& bias_shape, bool block) {
  return EpilogueProgram(
      dtype, {2, 3, 7, 6}, {5, 3, 3, 3},
      [](Tensor x, Tensor w) {
        return ops::conv(x, w, {.padding = {1, 1, 1, 1}});
      },
      epilogue, bias_shape, block);
}

/// matmul(x, w): x (3, 5, 70), w (70, 150), tiles of 128 and 22 columns; a bias of 150 values.
EpilogueProgram matmul_epilogue(DType dtype, Epilogue epilogue, const Shape& bias_shape,
                                bool block) {
  return EpilogueProgram(
      dtype, {3, 5, 70}, {70, 150}, [](Tensor x, Tensor w) { return ops::matmul(x, w); }, epilogue,
      bias_shape, block);
}

} // namespace test_fusion_conv

using namespace test_fusion_conv;

namespace test_fusion_conv {

/// `make(dtype, epilogue, bias_shape, block)`'s program with each epilogue, float32 and float16,
/// each bias shape: on 1-4 workers bitwise the program with the fusion blocked, one `fused`
/// step between the host load and store, no buffer for the intermediate results; and the
/// epilogue visibly did something (zeros from ReLU, negative values from the bias alone).
template <typename Make>
void check_epilogue_fuses(Make make, const Shape& x_shape, std::initializer_list<Shape> bias_shapes,
                          emu::StepKind fused_kind) {
  for (DType dtype : {float32, float16})
    for (Epilogue epilogue : {Epilogue::bias_relu, Epilogue::bias, Epilogue::relu})
      for (const Shape& bias_shape : bias_shapes) {
        CAPTURE(name(dtype));
        CAPTURE(static_cast<int>(epilogue));
        CAPTURE(to_string(bias_shape));
        const HostTensor x = pattern({x_shape, dtype}, 5);
        EpilogueProgram plain = make(dtype, epilogue, bias_shape, true);
        const Outcome expected = run(plain.ir, {{plain.sx, x}}, {plain.sy}, {}, 1);
        CHECK(expected.kinds.count(fused_kind) == 0);
        EpilogueProgram fused = make(dtype, epilogue, bias_shape, false);
        for (unsigned workers = 1; workers <= 4; ++workers) {
          CAPTURE(workers);
          const Outcome got = run(fused.ir, {{fused.sx, x}}, {fused.sy}, {}, workers);
          CHECK(same_bits(got.values, expected.values));
          CHECK(got.kinds.count(fused_kind) == 1);
          // host_load, the fused step, host_store: no buffer for the intermediate results.
          CHECK(got.kinds.kinds.size() == 3);
          CHECK_FALSE(has_tensor(got.memory, fused.produced_id));
          if (epilogue == Epilogue::bias_relu)
            CHECK_FALSE(has_tensor(got.memory, fused.biased_id));
        }
        const HostTensor y32 = expected.values[0].astype(float32);
        const auto y = y32.data<float>();
        if (epilogue != Epilogue::bias)
          CHECK(std::ranges::count(y, 0.0f) > 0);
        else
          CHECK(std::ranges::count_if(y, [](float v) { return v < 0; }) > 0);
      }
}

} // namespace test_fusion_conv

TEST_CASE("A conv's bias and ReLU are applied as it writes each image, bitwise the unfused steps") {
  check_epilogue_fuses(conv_epilogue, {2, 3, 7, 6}, {Shape{5, 1, 1}, Shape{1, 5, 1, 1}},
                       emu::StepKind::fused_conv);
}

TEST_CASE("No conv epilogue fusion for a bias that is not per channel, or a conv result read "
          "twice") {
  // A bias over the last axis (6 values) is an ordinary Add; so is a bias added to a conv
  // result also streamed out.
  Ir ir;
  HostToDeviceStream sx;
  DeviceToHostStream sy, sz;
  Tensor w, b;
  {
    auto in_main = ir.main_graph().scope();
    sx = h2d_stream({2, 3, 7, 6}, float32, "x");
    w = variable(pattern({{5, 3, 3, 3}, float32}, 3), "w");
    b = variable(pattern({{6}, float32}, 4), "b");
    const Tensor y = ops::conv(ops::host_load(sx), w, {.padding = {1, 1, 1, 1}});
    sy = d2h_stream(y.shape(), y.dtype(), "y");
    ops::host_store(sy, ops::relu(y + b));
    const Tensor y2 = ops::conv(ops::host_load(sx), w, {.padding = {1, 1, 1, 1}});
    sz = d2h_stream(y2.shape(), float32, "z");
    ops::host_store(sz, ops::relu(y2 + ops::reshape(b, {1, 1, 1, 6})));
  }
  const HostTensor x = pattern({{2, 3, 7, 6}, float32}, 5);
  testing::ReferenceEvaluator ref(ir);
  const auto expected = ref.run({{"x", x}});
  const Outcome got = run(ir, {{sx, x}}, {sy, sz}, {}, 2);
  CHECK(got.kinds.count(emu::StepKind::fused_conv) == 0);
  CHECK(allclose(got.values[0], expected.at("y"), 1e-5, 1e-6));
  CHECK(allclose(got.values[1], expected.at("z"), 1e-5, 1e-6));
}

namespace test_fusion_conv {

enum class Update { scaled_add, accumulate, add, scaled_by_tensor };

/// w (8, 4 / groups, 3, 3) updated by the gradient of conv(x, w) (x (3, 4, 6, 5), stride 2,
/// padding 1) given dy: scaled_add_, accumulate_ or add_, or add_ of −lr·g with lr streamed in
/// (float32). With `block`, the gradient also goes to a stream, so that it is not folded.
struct WeightsUpdate {
  Ir ir;
  HostToDeviceStream sx, sdy, slr;
  DeviceToHostStream blocked;
  Tensor w;
  std::string grad_id;

  WeightsUpdate(DType dtype, Update update, std::int64_t groups, bool block) {
    auto in_main = ir.main_graph().scope();
    const ops::ConvOptions geometry{.stride = {2, 2}, .padding = {1, 1, 1, 1}, .groups = groups};
    sx = h2d_stream({3, 4, 6, 5}, dtype, "x");
    sdy = h2d_stream({3, 8, 3, 3}, dtype, "dy");
    w = variable(pattern({{8, 4 / groups, 3, 3}, dtype}, 6), "w");
    const Tensor g =
        ops::conv_weights_grad(ops::host_load(sdy), ops::host_load(sx), w.spec().shape, geometry);
    grad_id = g.id();
    if (block) {
      blocked = d2h_stream(g.shape(), dtype, "blocked");
      ops::host_store(blocked, g);
    }
    switch (update) {
    case Update::scaled_add:
      ops::scaled_add_(w, g, {.a = 0.9, .b = -0.05});
      break;
    case Update::accumulate:
      ops::var_updates::accumulate_(w, g, 0.25);
      break;
    case Update::add:
      ops::add_(w, g);
      break;
    case Update::scaled_by_tensor:
      slr = h2d_stream({}, float32, "lr");
      ops::add_(w, ops::negate(ops::host_load(slr)) * g);
      break;
    }
  }
};

} // namespace test_fusion_conv

TEST_CASE("An update of a conv's weight gradient is folded into it, bitwise the unfused steps") {
  const HostTensor lr = HostTensor::full({}, float32, 0.05);
  for (DType dtype : {float32, float16})
    for (Update update :
         {Update::scaled_add, Update::accumulate, Update::add, Update::scaled_by_tensor})
      for (std::int64_t groups : {1, 2}) {
        if (update == Update::scaled_by_tensor && dtype != float32)
          continue; // a scalar tensor's product folds for float32 (fuse_product_updates)
        CAPTURE(name(dtype));
        CAPTURE(static_cast<int>(update));
        CAPTURE(groups);
        const HostTensor x = pattern({{3, 4, 6, 5}, dtype}, 7),
                         dy = pattern({{3, 8, 3, 3}, dtype}, 8);
        // lr goes in only where the program reads it.
        const auto inputs = [&](const WeightsUpdate& u) {
          StreamInputs in{{u.sx, x}, {u.sdy, dy}};
          if (update == Update::scaled_by_tensor)
            in.emplace(u.slr, lr);
          return in;
        };
        WeightsUpdate plain(dtype, update, groups, true);
        const Outcome expected = run(plain.ir, inputs(plain), {}, {plain.w}, 1);
        CHECK(expected.kinds.count(emu::StepKind::fused_conv) == 0);
        WeightsUpdate fused(dtype, update, groups, false);
        for (unsigned workers = 1; workers <= 4; ++workers) {
          CAPTURE(workers);
          const Outcome got = run(fused.ir, inputs(fused), {}, {fused.w}, workers);
          CHECK(same_bits(got.values, expected.values));
          CHECK(got.kinds.count(emu::StepKind::fused_conv) == 1);
          CHECK_FALSE(has_tensor(got.memory, fused.grad_id));
        }
        // The update moved the weights.
        CHECK_FALSE(expected.values[0] == pattern({{8, 4 / groups, 3, 3}, dtype}, 6));
      }
}

TEST_CASE("SGD on a conv layer with bias and ReLU: both fusions engage in training, and results "
          "are the reference's") {
  // fwd(x, w, b) = relu(conv(x, w) + b), its gradient by autodiff given dy, both inlined into
  // the main graph, then w -= 0.1·dw and b -= 0.1·db. Relu's gradient reads relu's output, so
  // the pre-activation has one reader and the forward fuses; dw has one reader, the update.
  Ir ir;
  HostToDeviceStream sx, sdy;
  DeviceToHostStream sy;
  Tensor w, b;
  {
    auto in_main = ir.main_graph().scope();
    sx = h2d_stream({2, 3, 7, 6}, float32, "x");
    sdy = h2d_stream({2, 5, 7, 6}, float32, "dy");
    sy = d2h_stream({2, 5, 7, 6}, float32, "y");
    w = variable(pattern({{5, 3, 3, 3}, float32}, 3), "w");
    b = variable(pattern({{5}, float32}, 4), "b");
    Graph fwd = ir.create_graph(
        "conv_layer",
        [](Tensor x, Tensor wt, Tensor bias) {
          return ops::relu(ops::conv(x, wt, {.padding = {1, 1, 1, 1}}) +
                           ops::reshape(bias, {5, 1, 1}));
        },
        TensorSpec{{2, 3, 7, 6}, float32}, w.spec(), b.spec());
    const auto info = transforms::autodiff(fwd);
    const ops::CallOptions inlined{.inline_graph = true};
    const auto call = ops::call_with_info(fwd, {ops::host_load(sx), w, b}, {}, inlined);
    ops::host_store(sy, call.outputs()[0]);
    const auto grads =
        ops::call(info.graph(), {ops::host_load(sdy)}, info.inputs_dict(call), inlined);
    ops::scaled_add_(w, grads[1], {.a = 1.0, .b = -0.1});
    ops::scaled_add_(b, grads[2], {.a = 1.0, .b = -0.1});
  }
  const HostTensor x = pattern({{2, 3, 7, 6}, float32}, 5),
                   dy = pattern({{2, 5, 7, 6}, float32}, 9);
  testing::ReferenceEvaluator ref(ir);
  const auto expected = ref.run({{"x", x}, {"dy", dy}});
  std::vector<HostTensor> first;
  for (unsigned workers = 1; workers <= 4; ++workers) {
    CAPTURE(workers);
    const Outcome got = run(ir, {{sx, x}, {sdy, dy}}, {sy}, {w, b}, workers);
    // The forward's bias and ReLU, and w's update.
    CHECK(got.kinds.count(emu::StepKind::fused_conv) == 2);
    if (workers == 1) {
      first = got.values;
      CHECK(allclose(got.values[0], expected.at("y"), 1e-5, 1e-6));
      CHECK(allclose(got.values[1], ref.variable(w), 1e-5, 1e-6));
      CHECK(allclose(got.values[2], ref.variable(b), 1e-5, 1e-6));
    } else {
      CHECK(same_bits(got.values, first));
    }
  }
}

TEST_CASE("A matmul's bias and ReLU are applied as it writes each tile, bitwise the unfused "
          "steps") {
  check_epilogue_fuses(matmul_epilogue, {3, 5, 70}, {Shape{150}, Shape{1, 1, 150}},
                       emu::StepKind::fused_matmul);
}

TEST_CASE("No matmul epilogue for a bias that is not per column") {
  // A bias per row ((5, 1) over the (3, 5, 150) product) is an ordinary Add.
  Ir ir;
  HostToDeviceStream sx;
  DeviceToHostStream sy;
  {
    auto in_main = ir.main_graph().scope();
    sx = h2d_stream({3, 5, 70}, float32, "x");
    const Tensor w = variable(pattern({{70, 150}, float32}, 3), "w");
    const Tensor b = variable(pattern({{5, 1}, float32}, 4), "b");
    sy = d2h_stream({3, 5, 150}, float32, "y");
    ops::host_store(sy, ops::relu(ops::matmul(ops::host_load(sx), w) + b));
  }
  const HostTensor x = pattern({{3, 5, 70}, float32}, 5);
  testing::ReferenceEvaluator ref(ir);
  const auto expected = ref.run({{"x", x}});
  const Outcome got = run(ir, {{sx, x}}, {sy}, {}, 2);
  CHECK(allclose(got.values[0], expected.at("y"), 1e-5, 1e-6));
  // host_load, matmul, Add, Relu, host_store: the matmul absorbs nothing (ReLU reads the Add).
  CHECK(got.kinds.count(emu::StepKind::fused_matmul) == 0);
  CHECK(got.kinds.kinds.size() == 5);
}

TEST_CASE("Convolutions with float16 partials take no epilogue and no update: the reference's "
          "bits on 1-4 workers") {
  using namespace test_fusion_conv;
  const ops::ConvOptions o{.padding = {1, 1, 1, 1}, .partials_type = float16};
  Ir ir;
  HostToDeviceStream sx, sdy;
  DeviceToHostStream sy;
  Tensor w;
  {
    auto in_main = ir.main_graph().scope();
    sx = h2d_stream({2, 20, 5, 5}, float16, "x");
    sdy = h2d_stream({2, 6, 5, 5}, float16, "dy");
    w = variable(pattern({{6, 20, 3, 3}, float16}, 3), "w");
    const Tensor bias = variable(pattern({{1, 6, 1, 1}, float16}, 4), "bias");
    const Tensor x = ops::host_load(sx);
    const Tensor y = ops::relu(ops::conv(x, w, o) + bias);
    sy = d2h_stream(y.shape(), float16, "y");
    ops::host_store(sy, y);
    ops::scaled_add_(w, ops::conv_weights_grad(ops::host_load(sdy), x, w.spec().shape, o),
                     {.a = 0.9, .b = -0.05});
  }
  const HostTensor x = pattern({{2, 20, 5, 5}, float16}, 1);
  const HostTensor dy = pattern({{2, 6, 5, 5}, float16}, 2);
  testing::ReferenceEvaluator ref(ir);
  const auto expected = ref.run({{"x", x}, {"dy", dy}});
  for (unsigned workers = 1; workers <= 4; ++workers) {
    CAPTURE(workers);
    const Outcome got = run(ir, {{sx, x}, {sdy, dy}}, {sy}, {w}, workers);
    CHECK(got.kinds.count(emu::StepKind::fused_conv) == 0);
    CHECK(got.values[0] == expected.at("y"));
    CHECK(got.values[1] == ref.variable(w));
  }
}
