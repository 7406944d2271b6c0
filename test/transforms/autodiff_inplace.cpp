// Autodiff and in-place ops: every case gives the finite-difference gradient (checked on the
// reference evaluator and the emulator) or a GraphError naming the op, the tensor and the fix.
#include "gradcheck.hpp"

#include "pxl/ops/var_updates.hpp"
#include "pxl/session.hpp"

using namespace pxl;
using pxl::testing::check_gradients;
using pxl::testing::random_tensor;
using V = std::vector<Tensor>;

namespace {
/// The message of the GraphError `f` throws ("" if none).
template <typename F>
std::string graph_error(F&& f) {
  try {
    f();
  } catch (const GraphError& e) {
    return e.what();
  }
  return "";
}

std::size_t count_kind(const Graph& g, OpKind k) {
  std::size_t n = 0;
  for (const auto& op : g.ops())
    n += op.kind() == k;
  return n;
}
} // namespace

TEST_CASE("a read after an in-place add sees the update, and so does its gradient") {
  // y = 2·x0; y += x1; loss = <r, y·y>: dL/dx1 = 2·r·y, not 0.
  check_gradients(
      [](V v) {
        Tensor y = v[0] * 2.0;
        const Tensor before = y;
        ops::add_(y, v[1]);
        return before * before; // the old handle names the updated buffer
      },
      {random_tensor({4}, 1), random_tensor({4}, 2)});
}

TEST_CASE("a graph output named by a handle older than an in-place update holds the update") {
  check_gradients(
      [](V v) {
        Tensor y = ops::exp(v[0]);
        ops::add_(y, v[1]);
        return y;
      },
      {random_tensor({3}, 3), random_tensor({3}, 4)});
}

TEST_CASE("an activation changed in place after it was saved is read as it was") {
  // y = exp(x0); z = y·x1; y += 1: the gradients of exp and of the product need the old y.
  check_gradients(
      [](V v) {
        Tensor y = ops::exp(v[0]);
        Tensor z = y * v[1];
        y += 1.0;
        return V{z, y};
      },
      {random_tensor({5}, 5), random_tensor({5}, 6)});
  // The saved value is a copy made in the forward graph before the update.
  Ir ir;
  auto main = ir.main_graph().scope();
  Graph fwd = ir.create_graph(
      "f",
      [](Tensor x0, Tensor x1) {
        Tensor y = ops::exp(x0);
        Tensor z = y * x1;
        ops::add_(y, constant(HostTensor({1.f}, {1})));
        return z;
      },
      TensorSpec{{2}, float32}, TensorSpec{{2}, float32});
  transforms::autodiff(fwd);
  const auto sched = fwd.ops();
  const auto copy = std::find_if(sched.begin(), sched.end(),
                                 [](const Op& op) { return op.kind() == OpKind::Identity; });
  const auto update = std::find_if(sched.begin(), sched.end(),
                                   [](const Op& op) { return op.kind() == OpKind::AddInplace; });
  REQUIRE(copy != sched.end());
  CHECK(copy < update);
}

TEST_CASE("a required input updated in place gets the gradient of its value before the update") {
  // y = x·x; x *= 3; loss = <r, y + x>: dL/dx = r·(2x + 3).
  check_gradients(
      [](V v) {
        Tensor x = v[0];
        Tensor y = x * x;
        x *= 3.0;
        return y + x;
      },
      {random_tensor({4}, 7)});
  check_gradients(
      [](V v) {
        Tensor x = v[0];
        x += 1.0;
        return x * x;
      },
      {random_tensor({4}, 8)});
}

TEST_CASE("y += f(x) residuals train") {
  check_gradients(
      [](V v) {
        Tensor h = ops::tanh(ops::matmul(v[0], v[1]));
        h += ops::tanh(ops::matmul(h, v[2]));
        h += ops::tanh(ops::matmul(h, v[2]));
        return h * h;
      },
      {random_tensor({2, 3}, 9), random_tensor({3, 3}, 10), random_tensor({3, 3}, 11)});
}

TEST_CASE("the in-place sub, mul, scaled add and accumulator updates are differentiated") {
  check_gradients(
      [](V v) {
        Tensor y = ops::exp(v[0]);
        y *= v[1]; // needs y's value before the product
        y -= v[0];
        y *= 0.5;
        y += 2.0;
        return y * v[1];
      },
      {random_tensor({2, 3}, 12), random_tensor({3}, 13)});
  check_gradients(
      [](V v) {
        Tensor y = ops::tanh(v[0]);
        ops::scaled_add_(y, v[1], {.a = 0.5, .b = -2.0});
        ops::var_updates::accumulate_(y, v[1], 3.0);
        ops::var_updates::accumulator_scale_(y, -0.25);
        return y * y;
      },
      {random_tensor({2, 3}, 14), random_tensor({1, 3}, 15)});
  check_gradients(
      [](V v) {
        Tensor y = v[0] * v[0];
        const Tensor seen = y * 2.0;
        ops::var_updates::copy_var_update_(y, ops::tanh(v[1]));
        return seen + y * v[0];
      },
      {random_tensor({4}, 16), random_tensor({4}, 17)});
  check_gradients(
      [](V v) {
        Tensor y = v[0] * 2.0;
        ops::var_updates::accumulator_zero_(y);
        y += v[1];
        return y * v[0];
      },
      {random_tensor({4}, 18), random_tensor({4}, 19)});
}

TEST_CASE("a by-reference input updated in place in the forward is read as it was") {
  // f(x, c&) = x·c, then c += 1 (a counter, a running statistic): dL/dx = r·c_old.
  Ir ir;
  Graph fwd = ir.create_empty_graph("f");
  {
    auto in_f = fwd.scope();
    Tensor x = graph_input({3}, float32, "x");
    Tensor c = graph_input({3}, float32, "c", /*by_ref=*/true);
    graph_output(x * c);
    ops::add_(c, constant(HostTensor({1.f}, {1})));
  }
  const auto info = transforms::autodiff(fwd, {.grads_required = V{fwd.inputs()[0]}});
  const HostTensor x0({1.f, -2.f, 0.5f}, {3}), c0({3.f, 4.f, -5.f}, {3}), r({1.f, 2.f, 3.f}, {3});
  Tensor c;
  DeviceToHostStream dx_out;
  StreamInputs feed;
  {
    auto main = ir.main_graph().scope();
    c = variable(c0, "c");
    auto xs = h2d_stream({3}, float32, "x"), rs = h2d_stream({3}, float32, "r");
    feed.emplace(xs, x0);
    feed.emplace(rs, r);
    const auto fwd_call = ops::call_with_info(fwd, {ops::host_load(xs), c});
    const auto dx = ops::call(info.graph(), {ops::host_load(rs)}, info.inputs_dict(fwd_call));
    dx_out = d2h_stream({3}, float32, "dx");
    ops::host_store(dx_out, dx[0]);
  }
  Session session{ir};
  auto attached = session.attach();
  const auto out = session.run(feed);
  CHECK(out.at(dx_out) == HostTensor({3.f, 8.f, -15.f}, {3}));
  CHECK(session.get_tensor_data(c) == HostTensor({4.f, 5.f, -4.f}, {3}));
}

TEST_CASE("a by-reference update inside a called graph on the gradient path is a clear error") {
  Ir ir;
  auto main = ir.main_graph().scope();
  Graph bump = ir.create_empty_graph("bump");
  {
    auto in_bump = bump.scope();
    Tensor t = graph_input({3}, float32, "t", /*by_ref=*/true);
    Tensor u = graph_input({3}, float32, "u");
    ops::add_(t, u);
  }
  Graph fwd = ir.create_graph(
      "f",
      [&](Tensor x) {
        Tensor y = x * 2.0;
        ops::call(bump, {y, x});
        return y * y;
      },
      TensorSpec{{3}, float32});
  const auto message = graph_error([&] { transforms::autodiff(fwd); });
  CHECK(message.find("in place through its input 0, by reference in graph 'bump'") !=
        std::string::npos);
  CHECK(message.find("return the new value from 'bump' as an output") != std::string::npos);
  // Off the gradient path (the buffer is detached from x) the update is fine.
  Graph counted = ir.create_graph(
      "g",
      [&](Tensor x, Tensor n) {
        ops::call(bump, {n, n});
        return x * x + n;
      },
      TensorSpec{{3}, float32}, TensorSpec{{3}, float32});
  const auto info = transforms::autodiff(counted, {.grads_required = V{counted.inputs()[0]}});
  const auto grads = pxl::testing::autodiff_gradients(
      info, {HostTensor({1.f, 2.f, 3.f}, {3}), HostTensor({0.f, 0.f, 0.f}, {3})},
      {HostTensor({1.f, 1.f, 1.f}, {3})});
  CHECK(grads[0] == HostTensor({2.f, 4.f, 6.f}, {3}));
}

TEST_CASE("a gradient call after an in-place update of an activation is a clear error") {
  Ir ir;
  auto main = ir.main_graph().scope();
  Graph fwd = ir.create_graph(
      "f", [](Tensor x, Tensor w) { return ops::matmul(x, w); }, TensorSpec{{1, 2}, float32},
      TensorSpec{{2, 2}, float32});
  const auto info = transforms::autodiff(fwd);
  Tensor w = variable(HostTensor({1.f, 2.f, 3.f, 4.f}, {2, 2}), "w");
  Tensor x = constant(HostTensor({1.f, 1.f}, {1, 2}), "x");
  const auto fwd_call = ops::call_with_info(fwd, {x, w});
  const auto dict = info.inputs_dict(fwd_call); // before the update: fine
  CHECK(dict.size() == 2);                      // dx needs w, dw needs x
  ops::scaled_add_(w, ops::init({2, 2}, float32), {.b = -0.1});
  const auto message = graph_error([&] { (void)info.inputs_dict(fwd_call); });
  CHECK(message.find("reads 'w' [(2, 2) float32] as Call.") != std::string::npos);
  CHECK(message.find("ScaledAddLhsInplace.") != std::string::npos);
  CHECK(message.find("call the gradient graph before that update") != std::string::npos);
}

TEST_CASE("activation copies leave the forward graph's other results unchanged") {
  // Only a value changed after it is saved is copied.
  Ir ir;
  auto main = ir.main_graph().scope();
  Graph fwd = ir.create_graph(
      "f", [](Tensor x) { return ops::tanh(x) * x; }, TensorSpec{{3}, float32});
  transforms::autodiff(fwd);
  CHECK(count_kind(fwd, OpKind::Identity) == 0);
}
