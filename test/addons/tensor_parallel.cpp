// Tensor parallelism across the IPUs of one replica: TensorParallelLinear's columns-rows pair
// over 2 IPUs computes two Linear layers, its outputs and every gradient.
#include "pxl/addons.hpp"
#include "pxl/pxl.hpp"

#include "helpers.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

using namespace pxl;

// Named: in a unity build this file shares its unit with others of the suite.
namespace test_tensor_parallel {

constexpr std::int64_t rows = 4, features = 6, hidden = 8, outputs = 3;
const std::vector<std::int64_t> two_ipus{0, 1};

/// Megatron-LM's MLP over IPUs 0 and 1: relu between a columns and a rows layer. `x1` is a
/// second input with x0's value, the replicated input of IPU 1.
struct MegatronMlp : addons::Module<MegatronMlp> {
  PXL_SUBMODULE(addons::TensorParallelLinear, fc1, hidden, two_ipus,
                addons::TensorParallelSplit::columns);
  PXL_SUBMODULE(addons::TensorParallelLinear, fc2, outputs, two_ipus,
                addons::TensorParallelSplit::rows);
  std::vector<Tensor> build(const Tensor& x0, const Tensor& x1) {
    std::vector<Tensor> h = fc1(std::vector<Tensor>{x0, ops::ipu_copy(x1, 1)});
    for (std::size_t k = 0; k < h.size(); ++k) {
      auto on = ipu(static_cast<std::int64_t>(k));
      h[k] = ops::relu(h[k]);
    }
    return fc2(h);
  }
};

/// Columns [begin, begin + n) of the 2-D `t` (a 1-D `t`: elements).
HostTensor columns(const HostTensor& t, std::int64_t begin, std::int64_t n) {
  const std::int64_t r = t.rank() == 1 ? 1 : t.shape()[0], c = t.shape().back();
  HostTensor out(t.rank() == 1 ? Shape{n} : Shape{r, n}, float32);
  for (std::int64_t i = 0; i < r; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      out.data<float>()[static_cast<std::size_t>(i * n + j)] =
          t.data<float>()[static_cast<std::size_t>(i * c + begin + j)];
  return out;
}

/// Rows [begin, begin + n) of the 2-D `t`.
HostTensor row_block(const HostTensor& t, std::int64_t begin, std::int64_t n) {
  const std::int64_t c = t.shape()[1];
  HostTensor out({n, c}, float32);
  for (std::int64_t i = 0; i < n * c; ++i)
    out.data<float>()[static_cast<std::size_t>(i)] =
        t.data<float>()[static_cast<std::size_t>(begin * c + i)];
  return out;
}

/// Two Linear layers with relu between, and their gradients for the output gradient dy, in
/// double: the unsplit layer the pair must equal.
struct Unsplit {
  std::vector<double> y, dw1, db1, dw2, db2, dx;
  Unsplit(const HostTensor& x, const HostTensor& w1, const HostTensor& b1, const HostTensor& w2,
          const HostTensor& b2, const HostTensor& dy) {
    auto at = [](const HostTensor& t, std::int64_t i) {
      return static_cast<double>(t.data<float>()[static_cast<std::size_t>(i)]);
    };
    std::vector<double> pre(rows * hidden), h(rows * hidden), dh(rows * hidden);
    y.assign(rows * outputs, 0.0);
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < hidden; ++j) {
        double s = at(b1, j);
        for (std::int64_t k = 0; k < features; ++k)
          s += at(x, i * features + k) * at(w1, k * hidden + j);
        pre[static_cast<std::size_t>(i * hidden + j)] = s;
        h[static_cast<std::size_t>(i * hidden + j)] = std::max(s, 0.0);
      }
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t o = 0; o < outputs; ++o) {
        double s = at(b2, o);
        for (std::int64_t j = 0; j < hidden; ++j)
          s += h[static_cast<std::size_t>(i * hidden + j)] * at(w2, j * outputs + o);
        y[static_cast<std::size_t>(i * outputs + o)] = s;
      }
    dw2.assign(hidden * outputs, 0.0);
    db2.assign(outputs, 0.0);
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t o = 0; o < outputs; ++o) {
        db2[static_cast<std::size_t>(o)] += at(dy, i * outputs + o);
        for (std::int64_t j = 0; j < hidden; ++j)
          dw2[static_cast<std::size_t>(j * outputs + o)] +=
              h[static_cast<std::size_t>(i * hidden + j)] * at(dy, i * outputs + o);
      }
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < hidden; ++j) {
        double s = 0;
        for (std::int64_t o = 0; o < outputs; ++o)
          s += at(dy, i * outputs + o) * at(w2, j * outputs + o);
        dh[static_cast<std::size_t>(i * hidden + j)] =
            pre[static_cast<std::size_t>(i * hidden + j)] > 0 ? s : 0.0;
      }
    dw1.assign(features * hidden, 0.0);
    db1.assign(hidden, 0.0);
    dx.assign(rows * features, 0.0);
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < hidden; ++j) {
        const double g = dh[static_cast<std::size_t>(i * hidden + j)];
        db1[static_cast<std::size_t>(j)] += g;
        for (std::int64_t k = 0; k < features; ++k) {
          dw1[static_cast<std::size_t>(k * hidden + j)] += at(x, i * features + k) * g;
          dx[static_cast<std::size_t>(i * features + k)] += g * at(w1, k * hidden + j);
        }
      }
  }
};

/// `got` against the closed form `want` (float32 sums in another order: not bitwise).
void check_near(const HostTensor& got, const std::vector<double>& want) {
  REQUIRE(static_cast<std::size_t>(got.nelms()) == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    CHECK(std::abs(got.data<float>()[i] - want[i]) <= 1e-5 + 1e-5 * std::abs(want[i]));
  }
}

/// The values of `v` at the positions `index` of an (r, c) tensor's part of `n` columns from
/// `begin` (or rows when `by_rows`), as a flat vector.
std::vector<double> part_of(const std::vector<double>& v, std::int64_t r, std::int64_t c,
                            std::int64_t begin, std::int64_t n, bool by_rows) {
  std::vector<double> out;
  for (std::int64_t i = 0; i < r; ++i)
    for (std::int64_t j = 0; j < c; ++j)
      if (by_rows ? (i >= begin && i < begin + n) : (j >= begin && j < begin + n))
        out.push_back(v[static_cast<std::size_t>(i * c + j)]);
  return out;
}

TEST_CASE("TensorParallelLinear: a columns and a rows layer over 2 IPUs equal two Linear "
          "layers, outputs and gradients") {
  const HostTensor xv = test_addons::ramp({rows, features});
  const HostTensor w1 = test_addons::ramp({features, hidden}, 0.5);
  const HostTensor b1 = test_addons::ramp({hidden}, 0.1);
  const HostTensor w2 = test_addons::ramp({hidden, outputs}, 0.4);
  const HostTensor b2 = test_addons::ramp({outputs}, 0.2);
  const HostTensor dyv = test_addons::ramp({rows, outputs}, 0.3);
  const Unsplit want(xv, w1, b1, w2, b2, dyv);

  Ir ir;
  HostToDeviceStream xs, dys0, dys1;
  std::map<std::string, DeviceToHostStream> out;
  addons::NamedTensors vars;
  {
    auto in_main = ir.main_graph().scope();
    xs = h2d_stream({rows, features}, float32, "x");
    dys0 = h2d_stream({rows, outputs}, float32, "dy0");
    const Tensor x = ops::host_load(xs);
    MegatronMlp net;
    auto [facts, fwd] = net.create_graph(x, x);
    // Every input's gradient: the two x's (positional) and the variables (named).
    auto bwd = addons::autodiff(fwd, {.grads_required = fwd.graph().inputs()});
    vars = facts.init();
    const auto fwd_info = fwd.bind(vars).call_with_info({x, x});
    std::vector<Tensor> dy{ops::host_load(dys0)};
    {
      auto on = ipu(1); // each IPU's copy of the output gets the whole, identical gradient
      dys1 = h2d_stream({rows, outputs}, float32, "dy1");
      dy.push_back(ops::host_load(dys1));
    }
    const auto bwd_info =
        bwd.bind(vars).call_with_info(dy, {}, bwd.grad_graph_info().inputs_dict(fwd_info));
    const auto store = [&](const std::string& name, const Tensor& t) {
      auto on = ipu(t.ipu());
      out.emplace(name, d2h_stream(t.shape(), float32, name));
      ops::host_store(out.at(name), t);
    };
    store("y0", fwd_info.outputs()[0]);
    store("y1", fwd_info.outputs()[1]);
    store("dx0", bwd_info.outputs()[0]);
    store("dx1", bwd_info.outputs()[1]);
    const addons::NamedTensors grads = bwd.grads(bwd_info);
    for (const auto& item : grads.items()) {
      CAPTURE(item.first);
      CHECK(item.second.ipu() == vars.at(item.first).ipu());
      store(item.first, item.second);
    }
    CHECK(vars.at("fc1.1.weight").ipu() == 1);
    CHECK(vars.at("fc2.1.bias").ipu() == 1);
  }
  Session s(ir, "ipu_model", {.workers = 2, .oversubscribe = true});
  s.write_variables_data({{vars.at("fc1.0.weight"), columns(w1, 0, hidden / 2)},
                          {vars.at("fc1.1.weight"), columns(w1, hidden / 2, hidden / 2)},
                          {vars.at("fc1.0.bias"), columns(b1, 0, hidden / 2)},
                          {vars.at("fc1.1.bias"), columns(b1, hidden / 2, hidden / 2)},
                          {vars.at("fc2.0.weight"), row_block(w2, 0, hidden / 2)},
                          {vars.at("fc2.1.weight"), row_block(w2, hidden / 2, hidden / 2)},
                          {vars.at("fc2.0.bias"), b2},
                          {vars.at("fc2.1.bias"), b2}});
  auto attached = s.attach();
  const auto got = s.run({{xs, xv}, {dys0, dyv}, {dys1, dyv}});
  const auto at = [&](const std::string& name) { return got.at(out.at(name)); };
  check_near(at("y0"), want.y);
  CHECK(at("y1") == at("y0"));    // the same all-reduce on both IPUs
  check_near(at("dx0"), want.dx); // all_reduce_identical_inputs: whole on each IPU
  check_near(at("dx1"), want.dx);
  for (std::int64_t k = 0; k < 2; ++k) {
    const std::string p = std::to_string(k) + ".";
    const std::int64_t begin = k * hidden / 2;
    check_near(at("fc1." + p + "weight"),
               part_of(want.dw1, features, hidden, begin, hidden / 2, false));
    check_near(at("fc1." + p + "bias"), part_of(want.db1, 1, hidden, begin, hidden / 2, false));
    check_near(at("fc2." + p + "weight"),
               part_of(want.dw2, hidden, outputs, begin, hidden / 2, true));
    check_near(at("fc2." + p + "bias"), want.db2); // each IPU's copy: the whole gradient
  }
}

TEST_CASE("TensorParallelLinear's errors name the layer, the input and the fix") {
  Ir ir;
  auto in_main = ir.main_graph().scope();
  const Tensor a = constant(HostTensor({2, 6}, float32), "a");
  Tensor b, wide;
  {
    auto on = ipu(1);
    b = constant(HostTensor({2, 6}, float32), "b");
    wide = constant(HostTensor({2, 7}, float32), "wide");
  }
  using addons::TensorParallelLinear, addons::TensorParallelSplit;
  const auto build = [](TensorParallelLinear layer, std::vector<Tensor> xs) {
    return layer.build(xs);
  };
  const auto cols = TensorParallelSplit::columns;
  CHECK_THROWS_WITH_AS(build(TensorParallelLinear(4, {}, cols), {}),
                       doctest::Contains("no IPUs to split the layer over"), ValueError);
  CHECK_THROWS_WITH_AS(build(TensorParallelLinear(4, {1, 1}, cols), {a, b}),
                       doctest::Contains("IPU 1 is listed more than once"), ValueError);
  CHECK_THROWS_WITH_AS(build(TensorParallelLinear(4, {0, 1}, cols), {a}),
                       doctest::Contains("1 inputs for 2 IPUs"), ValueError);
  CHECK_THROWS_WITH_AS(build(TensorParallelLinear(4, {1, 0}, cols), {a, b}),
                       doctest::Contains("is on IPU 0, not on IPU 1; copy it there"), GraphError);
  CHECK_THROWS_WITH_AS(build(TensorParallelLinear(4, {0, 1}, cols), {a, wide}),
                       doctest::Contains("has another shape than input 0"), ShapeError);
  CHECK_THROWS_WITH_AS(build(TensorParallelLinear(5, {0, 1}, cols), {a, b}),
                       doctest::Contains("2 IPUs do not divide the 5 output features"), ValueError);
  const Tensor scalar = constant(1.0, float32, "s");
  CHECK_THROWS_WITH_AS(
      build(TensorParallelLinear(4, {0}, TensorParallelSplit::rows), {scalar}),
      doctest::Contains("TensorParallelLinear (rows): expected inputs of rank >= 1"), ShapeError);
}

} // namespace test_tensor_parallel
