// The autodiff transform: GradGraphInfo's contract, subgraphs, repeat, errors, a training flow.
#include "gradcheck.hpp"

#include "pxl/session.hpp"

#include <memory>

using namespace pxl;
using pxl::testing::check_gradients;
using pxl::testing::random_tensor;
using pxl::testing::ReferenceEvaluator;
using transforms::ExpectedConnection;
using V = std::vector<Tensor>;

namespace {
/// The kinds of `g`'s ops, in schedule order.
std::vector<OpKind> op_kinds(const Graph& g) {
  std::vector<OpKind> kinds;
  for (const auto& op : g.ops())
    kinds.push_back(op.kind());
  return kinds;
}
} // namespace

TEST_CASE("GradGraphInfo lists output gradients first, then activations, and one output per "
          "required input") {
  Ir ir;
  auto main = ir.main_graph().scope();
  Graph fwd = ir.create_graph(
      "f", [](Tensor x, Tensor w) { return ops::tanh(ops::matmul(x, w)); },
      TensorSpec{{2, 3}, float32}, TensorSpec{{3, 4}, float32});
  const auto outputs_before = fwd.outputs().size();
  const auto info = transforms::autodiff(fwd);
  CHECK(info.forward_graph() == fwd);
  REQUIRE(info.expected_inputs().size() == info.graph().inputs().size());
  CHECK(info.expected_inputs()[0] ==
        ExpectedConnection{fwd.outputs()[0], ExpectedConnection::Kind::fwd_grad});
  for (std::size_t i = 1; i < info.expected_inputs().size(); ++i)
    CHECK(info.expected_inputs()[i].kind == ExpectedConnection::Kind::fwd);
  REQUIRE(info.expected_outputs().size() == 2);
  CHECK(info.expected_outputs()[0].fwd_tensor == fwd.inputs()[0]);
  CHECK(info.expected_outputs()[1].fwd_tensor == fwd.inputs()[1]);
  // tanh's output is already an output; nothing else is needed, so no output was added.
  CHECK(fwd.outputs().size() == outputs_before);
}

TEST_CASE("only the required gradients are computed") {
  Ir ir;
  auto main = ir.main_graph().scope();
  Graph fwd = ir.create_graph(
      "f", [](Tensor x, Tensor w) { return ops::matmul(x, w); }, TensorSpec{{2, 3}, float32},
      TensorSpec{{3, 4}, float32});
  const auto info = transforms::autodiff(fwd, {.grads_required = V{fwd.inputs()[1]}});
  REQUIRE(info.expected_outputs().size() == 1);
  CHECK(info.expected_outputs()[0].fwd_tensor == fwd.inputs()[1]);
  // dW = xᵀ g needs only x: one matmul, one transpose (the reshapes are no-ops of 2-d shapes).
  std::size_t matmuls = 0;
  for (const auto& op : info.graph().ops())
    matmuls += op.kind() == OpKind::MatMul;
  CHECK(matmuls == 1);
}

TEST_CASE("gelu's gradient is one GeluGrad op, as PopXL's") {
  Ir ir;
  auto main = ir.main_graph().scope();
  Graph fwd = ir.create_graph(
      "f", [](Tensor x) { return ops::gelu(x); }, TensorSpec{{2, 3}, float32});
  const auto info = transforms::autodiff(fwd);
  CHECK(op_kinds(info.graph()) == std::vector<OpKind>{OpKind::GeluGrad});
}

TEST_CASE("tanh's gradient is one TanhGrad op of its output, as PopXL's") {
  Ir ir;
  auto main = ir.main_graph().scope();
  Graph fwd = ir.create_graph(
      "f", [](Tensor x) { return ops::tanh(x); }, TensorSpec{{2, 3}, float32});
  const auto info = transforms::autodiff(fwd);
  CHECK(op_kinds(info.graph()) == std::vector<OpKind>{OpKind::TanhGrad});
  // It reads tanh's output, not its input: the one activation saved.
  REQUIRE(info.expected_inputs().size() == 2);
  CHECK(info.expected_inputs()[1].fwd_tensor == fwd.outputs()[0]);
}

TEST_CASE("softmax's gradient is one SoftmaxGrad op; layer norm's one LayerNormGrad and sums") {
  Ir ir;
  auto main = ir.main_graph().scope();
  Graph soft = ir.create_graph(
      "s", [](Tensor x) { return ops::softmax(x, 0); }, TensorSpec{{2, 3}, float32});
  CHECK(op_kinds(transforms::autodiff(soft).graph()) == std::vector<OpKind>{OpKind::SoftmaxGrad});
  Graph norm = ir.create_graph(
      "n", [](Tensor x, Tensor w, Tensor b) { return ops::layer_norm(x, w, b); },
      TensorSpec{{2, 3}, float32}, TensorSpec{{3}, float32}, TensorSpec{{3}, float32});
  const auto info = transforms::autodiff(norm, {.grads_required = V{norm.inputs()[0]}});
  CHECK(op_kinds(info.graph()) == std::vector<OpKind>{OpKind::LayerNormGrad});
  const auto all = transforms::autodiff(norm, {.force = true});
  CHECK(op_kinds(all.graph()) ==
        std::vector<OpKind>{OpKind::LayerNormGrad, OpKind::ReduceSum, OpKind::ReduceSum});
}

TEST_CASE("gradients of a tensor with several consumers are summed") {
  check_gradients([](V v) { return v[0] * v[0] + ops::exp(v[0]); }, {random_tensor({5}, 1)});
}

TEST_CASE("detach stops gradients") {
  Ir ir;
  auto main = ir.main_graph().scope();
  Graph fwd = ir.create_graph(
      "f", [](Tensor x) { return x * ops::detach(x); }, TensorSpec{{3}, float32});
  const auto info = transforms::autodiff(fwd);
  const HostTensor x({1.f, 2.f, 3.f}, {3});
  const HostTensor g({1.f, 1.f, 1.f}, {3});
  const auto grads = pxl::testing::autodiff_gradients(info, {x}, {g});
  // d(x·c)/dx = c = x: the detached factor contributes nothing.
  CHECK(grads[0] == x);
}

TEST_CASE("autodiff errors are clear") {
  Ir ir;
  auto main = ir.main_graph().scope();
  CHECK_THROWS_WITH_AS(transforms::autodiff(ir.main_graph()),
                       doctest::Contains("main graph cannot be differentiated"), GraphError);
  Graph fwd = ir.create_graph(
      "f", [](Tensor x) { return ops::exp(x); }, TensorSpec{{3}, float32});
  Graph other = ir.create_graph(
      "g", [](Tensor x) { return x; }, TensorSpec{{3}, float32});
  CHECK_THROWS_WITH_AS(transforms::autodiff(fwd, {.grads_provided = V{other.outputs()[0]}}),
                       doctest::Contains("is not an output of graph 'f_subgraph(0)'"), GraphError);
  CHECK_THROWS_WITH_AS(transforms::autodiff(fwd, {.grads_required = V{other.inputs()[0]}}),
                       doctest::Contains("is not an input of graph 'f_subgraph(0)'"), GraphError);
  CHECK_THROWS_WITH_AS(
      transforms::autodiff(fwd, {.grads_required = V{fwd.inputs()[0], fwd.inputs()[0]}}),
      doctest::Contains("is listed twice in grads_required; list each tensor once"), ValueError);
  CHECK_THROWS_WITH_AS(
      transforms::autodiff(fwd, {.grads_provided = V{fwd.outputs()[0], fwd.outputs()[0]}}),
      doctest::Contains("is listed twice in grads_provided"), ValueError);
  transforms::autodiff(fwd);
  CHECK_THROWS_WITH_AS(transforms::autodiff(fwd), doctest::Contains("was already differentiated"),
                       GraphError);
  CHECK_NOTHROW(transforms::autodiff(fwd, {.force = true}));

  Graph through_fused = ir.create_graph(
      "h",
      [](Tensor x) {
        auto labels = constant(HostTensor(std::vector<std::int32_t>{1}, {1}), "labels");
        return ops::nll_loss_with_softmax_grad(ops::softmax(x), labels).first;
      },
      TensorSpec{{1, 3}, float32});
  CHECK_THROWS_WITH_AS(transforms::autodiff(through_fused),
                       doctest::Contains("op NllWithSoftmaxGrad."), GraphError);
  // Floor and ceil, as PopXL: a gradient through them is refused, not silently zero.
  for (auto round : {ops::floor, ops::ceil}) {
    Graph rounded = ir.create_graph(
        "r", [round](Tensor x) { return round(x) * x; }, TensorSpec{{3}, float32});
    CHECK_THROWS_WITH_AS(transforms::autodiff(rounded), doctest::Contains("is not differentiable"),
                         GraphError);
  }
  Graph ints = ir.create_graph(
      "i", [](Tensor x) { return x + x; }, TensorSpec{{3}, int32});
  CHECK_THROWS_WITH_AS(transforms::autodiff(ints, {.grads_required = V{ints.inputs()[0]}}),
                       doctest::Contains("float32 and float16 tensors only"), DTypeError);
}

TEST_CASE("autodiff through an outlined subgraph called twice") {
  check_gradients(
      [](V v) {
        Graph square = current_graph().ir().create_graph(
            "Layer", [](Tensor x, Tensor w) { return ops::tanh(ops::matmul(x, w)); }, v[0], v[1]);
        auto h = ops::call(square, {v[0], v[1]})[0];
        return ops::call(square, {h, v[1]})[0];
      },
      {random_tensor({2, 3}, 70), random_tensor({3, 3}, 71)});
}

TEST_CASE("autodiff through repeat") {
  check_gradients(
      [](V v) {
        Graph step = current_graph().ir().create_graph(
            "Step", [](Tensor x, Tensor w) { return ops::tanh(ops::matmul(x, w)); }, v[0], v[1]);
        return ops::repeat(step, 3, {v[0], v[1]})[0];
      },
      {random_tensor({2, 3}, 72), random_tensor({3, 3}, 73)});
}

TEST_CASE("autodiff through repeat whose body keeps an activation") {
  // The body's tanh output is an activation its gradient reads: the differentiated body
  // returns it too, and the loop must still carry only its own output.
  check_gradients(
      [](V v) {
        Graph step = current_graph().ir().create_graph(
            "Step", [](Tensor x, Tensor w) { return ops::tanh(ops::matmul(x, w)) * 0.5; }, v[0],
            v[1]);
        return ops::repeat(step, 3, {v[0], v[1]})[0];
      },
      {random_tensor({2, 3}, 74), random_tensor({3, 3}, 75)});
}

TEST_CASE("a differentiated loop body returns activations; the loop carries only its outputs") {
  Ir ir;
  const TensorSpec xs{{2, 3}, float32}, ws{{3, 3}, float32};
  Graph step = ir.create_graph(
      "Step", [](Tensor x, Tensor w) { return ops::tanh(ops::matmul(x, w)) * 0.5; }, xs, ws);
  Graph fwd = ir.create_graph(
      "f",
      [&](Tensor x, Tensor w) {
        return ops::repeat(step, 3, {x, w})[0];
      },
      xs, ws);
  transforms::autodiff(fwd);
  REQUIRE(step.outputs().size() == 2); // tanh's output, which its gradient reads, joined them
  HostToDeviceStream x_in, w_in;
  DeviceToHostStream looped, unrolled;
  {
    auto in_main = ir.main_graph().scope();
    x_in = h2d_stream(xs.shape, float32, "x");
    w_in = h2d_stream(ws.shape, float32, "w");
    looped = d2h_stream(xs.shape, float32, "looped");
    unrolled = d2h_stream(xs.shape, float32, "unrolled");
    const Tensor x = ops::host_load(x_in), w = ops::host_load(w_in);
    ops::host_store(looped, ops::call(fwd, {x, w})[0]);
    Tensor h = x;
    for (int i = 0; i < 3; ++i)
      h = ops::call(step, {h, w})[0];
    ops::host_store(unrolled, h);
  }
  const HostTensor x = random_tensor(xs.shape, 90), w = random_tensor(ws.shape, 91);
  Session session(ir, "ipu_model", {.workers = 2, .oversubscribe = true});
  auto attached = session.attach();
  const auto out = session.run({{x_in, x}, {w_in, w}});
  CHECK(out.at(looped) == out.at(unrolled));
  ReferenceEvaluator ev(ir);
  const auto expected = ev.run({{"x", x}, {"w", w}});
  CHECK(expected.at("looped") == expected.at("unrolled"));
  CHECK(allclose(out.at(looped), expected.at("looped"), 1e-5, 1e-6));
}

TEST_CASE("autodiff through conditional: each branch, with inputs of its own") {
  // then (x, w): tanh(x @ w) * x; else (x, b): exp(x) + b. Gradients reach the taken branch's
  // inputs; the other branch's get zeros.
  auto fn = [](V v) {
    Ir& ir = current_graph().ir();
    Graph then_g = ir.create_graph(
        "Then", [](Tensor x, Tensor w) { return ops::tanh(ops::matmul(x, w)) * x; }, v[0], v[1]);
    Graph else_g = ir.create_graph(
        "Else", [](Tensor x, Tensor b) { return ops::exp(x) + b; }, v[0], v[2]);
    return ops::conditional(v[3], then_g, else_g, {v[0], v[1]}, {v[0], v[2]})[0];
  };
  for (const bool take_then : {true, false}) {
    CAPTURE(take_then);
    check_gradients(fn, {random_tensor({2, 2}, 76), random_tensor({2, 2}, 77),
                         random_tensor({2, 2}, 78), HostTensor::scalar(take_then)});
  }
}

TEST_CASE("a 4-layer MLP's gradients match the hand-derived backward pass") {
  // y = W4ᵀ relu(W3ᵀ relu(W2ᵀ relu(W1ᵀ x))) per sample, loss = sum(y * r).
  const std::vector<std::int64_t> widths{5, 4, 4, 3, 2};
  std::vector<HostTensor> inputs{random_tensor({3, 5}, 80)};
  for (std::size_t l = 0; l < 4; ++l)
    inputs.push_back(random_tensor({widths[l], widths[l + 1]}, 81 + static_cast<std::uint32_t>(l)));
  Ir ir;
  auto main = ir.main_graph().scope();
  Graph fwd = ir.create_graph(
      "Mlp",
      [](V v) {
        Tensor h = v[0];
        for (std::size_t l = 1; l <= 4; ++l) {
          h = ops::matmul(h, v[l]);
          if (l < 4)
            h = ops::relu(h);
        }
        return h;
      },
      pxl::testing::specs_of(inputs));
  const auto info = transforms::autodiff(fwd);
  const HostTensor r = random_tensor({3, 2}, 90);
  const auto grads = pxl::testing::autodiff_gradients(info, inputs, {r});

  // Hand-derived backward in double.
  using Mat = std::vector<std::vector<double>>;
  auto to_mat = [](const HostTensor& t) {
    Mat m(static_cast<std::size_t>(t.shape()[0]),
          std::vector<double>(static_cast<std::size_t>(t.shape()[1])));
    for (std::size_t i = 0; i < m.size(); ++i)
      for (std::size_t j = 0; j < m[i].size(); ++j)
        m[i][j] = t.item(static_cast<std::int64_t>(i * m[i].size() + j));
    return m;
  };
  auto mul = [](const Mat& a, const Mat& b) {
    Mat c(a.size(), std::vector<double>(b[0].size()));
    for (std::size_t i = 0; i < a.size(); ++i)
      for (std::size_t k = 0; k < b.size(); ++k)
        for (std::size_t j = 0; j < b[0].size(); ++j)
          c[i][j] += a[i][k] * b[k][j];
    return c;
  };
  auto transpose = [](const Mat& a) {
    Mat t(a[0].size(), std::vector<double>(a.size()));
    for (std::size_t i = 0; i < a.size(); ++i)
      for (std::size_t j = 0; j < a[0].size(); ++j)
        t[j][i] = a[i][j];
    return t;
  };
  std::vector<Mat> acts{to_mat(inputs[0])}, pre;
  for (std::size_t l = 1; l <= 4; ++l) {
    Mat z = mul(acts.back(), to_mat(inputs[l]));
    pre.push_back(z);
    if (l < 4)
      for (auto& row : z)
        for (auto& e : row)
          e = std::max(e, 0.0);
    acts.push_back(z);
  }
  Mat g = to_mat(r);
  std::vector<Mat> dw(5);
  for (std::size_t l = 4; l >= 1; --l) {
    if (l < 4)
      for (std::size_t i = 0; i < g.size(); ++i)
        for (std::size_t j = 0; j < g[i].size(); ++j)
          g[i][j] *= pre[l - 1][i][j] > 0 ? 1.0 : 0.0;
    dw[l] = mul(transpose(acts[l - 1]), g);
    g = mul(g, transpose(to_mat(inputs[l])));
  }
  for (std::size_t l = 1; l <= 4; ++l) {
    const Mat got = to_mat(grads[l]);
    for (std::size_t i = 0; i < got.size(); ++i)
      for (std::size_t j = 0; j < got[i].size(); ++j)
        CHECK(got[i][j] == doctest::Approx(dw[l][i][j]).epsilon(1e-5));
  }
  const Mat dx = to_mat(grads[0]);
  for (std::size_t i = 0; i < dx.size(); ++i)
    for (std::size_t j = 0; j < dx[i].size(); ++j)
      CHECK(dx[i][j] == doctest::Approx(g[i][j]).epsilon(1e-5));
}

namespace {
struct TutorialIr {
  Ir ir;
  HostToDeviceStream img_stream, label_stream;
  DeviceToHostStream loss_stream;
};

/// The PopXL MNIST tutorial's training step on a small net: autodiff(fwd) → call_with_info(fwd)
/// → inputs_dict → call_with_info(bwd) → fwd_parent_ins_to_grad_parent_outs → scaled_add_.
std::unique_ptr<TutorialIr> build_tutorial_ir() {
  auto t = std::make_unique<TutorialIr>();
  Ir& ir = t->ir;
  auto main = ir.main_graph().scope();
  t->img_stream = h2d_stream({8, 6}, float32, "image");
  t->label_stream = h2d_stream({8}, int32, "label");
  t->loss_stream = d2h_stream({}, float32, "loss");
  Tensor w1 = variable(random_tensor({6, 5}, 100, -0.5f, 0.5f), "fc1.weight");
  Tensor b1 = variable(HostTensor(Shape{5}, float32), "fc1.bias");
  Tensor w2 = variable(random_tensor({5, 3}, 101, -0.5f, 0.5f), "fc2.weight");
  Graph fwd = ir.create_graph(
      "Net",
      [](Tensor x, Tensor a, Tensor b, Tensor c) {
        return ops::matmul(ops::gelu(ops::matmul(x, a) + b), c);
      },
      TensorSpec{{8, 6}, float32}, w1, b1, w2);
  const auto bwd = transforms::autodiff(
      fwd, {.grads_required = V{fwd.inputs()[1], fwd.inputs()[2], fwd.inputs()[3]}});
  Tensor img = ops::host_load(t->img_stream);
  Tensor labels = ops::host_load(t->label_stream);
  const auto fwd_info = ops::call_with_info(fwd, {img, w1, b1, w2});
  auto [loss, dlogits] =
      ops::nll_loss_with_softmax_grad(ops::softmax(fwd_info.parent_output(0)), labels);
  const auto bwd_info = ops::call_with_info(bwd.graph(), {dlogits}, bwd.inputs_dict(fwd_info));
  const auto grads = bwd.fwd_parent_ins_to_grad_parent_outs(fwd_info, bwd_info);
  REQUIRE(grads.size() == 3);
  for (const Tensor& w : {w1, b1, w2})
    ops::scaled_add_(w, grads.at(w), {.b = -0.5});
  ops::host_store(t->loss_stream, loss);
  return t;
}

const HostTensor tutorial_images = random_tensor({8, 6}, 102);
const HostTensor tutorial_labels(std::vector<std::int32_t>{0, 1, 2, 0, 1, 2, 0, 1}, {8});
} // namespace

TEST_CASE("the PopXL MNIST-tutorial flow trains on a fixed batch (reference evaluator)") {
  auto t = build_tutorial_ir();
  ReferenceEvaluator ev(t->ir);
  const std::map<std::string, HostTensor> feed{{"image", tutorial_images},
                                               {"label", tutorial_labels}};
  const double first = ev.run(feed).at("loss").item();
  double last = first;
  for (int step = 0; step < 60; ++step)
    last = ev.run(feed).at("loss").item();
  CHECK(last < 0.5 * first);
}

TEST_CASE("the PopXL MNIST-tutorial flow trains on the emulator and matches the reference") {
  auto t = build_tutorial_ir();
  ReferenceEvaluator ev(t->ir);
  const std::map<std::string, HostTensor> feed{{"image", tutorial_images},
                                               {"label", tutorial_labels}};
  Session session{t->ir, "ipu_model", {.workers = 2}};
  auto attached = session.attach();
  const StreamInputs inputs{{t->img_stream, tutorial_images}, {t->label_stream, tutorial_labels}};
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    last = session.run(inputs).at(t->loss_stream).item();
    const double expected = ev.run(feed).at("loss").item();
    CHECK(last == doctest::Approx(expected).epsilon(1e-4));
    if (step == 0)
      first = last;
  }
  CHECK(last < 0.5 * first);
}
