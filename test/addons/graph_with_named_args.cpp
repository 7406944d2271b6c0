// GraphWithNamedArgs, BoundGraph and addons::autodiff, checked on the emulator.
#include "pxl/addons.hpp"
#include "pxl/pxl.hpp"

#include "helpers.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using namespace pxl;
using addons::Linear;
using addons::NamedTensors;
using Keys = std::vector<std::string>;

namespace {

// x · W + b by hand for a (1, n) x.
HostTensor affine(const HostTensor& x, const HostTensor& w, const HostTensor& b) {
  const auto n = w.shape()[0], m = w.shape()[1];
  HostTensor y({1, m}, float32);
  for (std::int64_t j = 0; j < m; ++j) {
    double acc = b.item(j);
    for (std::int64_t i = 0; i < n; ++i)
      acc += x.item(i) * w.item(i * m + j);
    y.data<float>()[static_cast<std::size_t>(j)] = static_cast<float>(acc);
  }
  return y;
}

struct Net : addons::Module<Net> {
  PXL_SUBMODULE(Linear, fc1, 5);
  PXL_SUBMODULE(Linear, fc2, 3);
  Tensor build(Tensor x) { return fc2(ops::gelu(fc1(x))); }
};

/// A (1, 4) input x through one Linear(2) graph bound to `calls` sets of variables ("set0",
/// "set1", ...), call i's output stored to stream "y<i>".
struct CallSites {
  Ir ir;
  HostToDeviceStream xs;
  std::vector<DeviceToHostStream> ys;
  std::vector<NamedTensors> vars;

  explicit CallSites(int calls) {
    auto main = ir.main_graph().scope();
    xs = h2d_stream({1, 4}, float32, "x");
    auto x = ops::host_load(xs);
    auto [facts, graph] = Linear(2).create_graph(x);
    for (int i = 0; i < calls; ++i) {
      vars.push_back(facts.init("set" + std::to_string(i)));
      auto y = graph.bind(vars.back()).call({x})[0];
      ys.push_back(d2h_stream({1, 2}, float32, "y" + std::to_string(i)));
      ops::host_store(ys.back(), y);
    }
  }
};

} // namespace

TEST_CASE("two bound graphs of one graph: different variables, different outputs, code once") {
  const HostTensor x_data({1.f, -2.f, 0.5f, 3.f}, {1, 4});
  CallSites two(2);
  Session session{two.ir, "ipu_model"};
  auto attached = session.attach();
  const auto out = session.run({{two.xs, x_data}});
  for (int i = 0; i < 2; ++i) {
    const auto w = session.get_tensor_data(two.vars[i].at("weight"));
    const auto b = session.get_tensor_data(two.vars[i].at("bias"));
    CHECK(allclose(out.at(two.ys[i]), affine(x_data, w, b), 1e-5, 1e-6));
  }
  CHECK_FALSE(out.at(two.ys[0]) == out.at(two.ys[1]));

  // The graph is compiled once: a second call site costs one more Call op, not another copy
  // of the graph's code.
  CallSites single(1);
  Session one{single.ir, "ipu_model"};
  const auto two_sites = session.memory_report().ipus[0];
  const auto one_site = one.memory_report().ipus[0];
  CHECK(two_sites.steps - one_site.steps == 2); // one Call op and one HostStore op more
  CHECK(two_sites.vertex_code == one_site.vertex_code);
}

TEST_CASE("BoundGraph: extra args override bound ones; rebinding; inputs_dict binding") {
  Ir ir;
  auto main = ir.main_graph().scope();
  auto x = constant(HostTensor({1.f, 2.f}, {1, 2}), "x");
  auto created = Linear(2).create_graph(x);
  auto& facts = created.first;
  auto& graph = created.second;
  auto a = facts.init("a");
  auto b = facts.init("b");
  const auto bound = graph.bind(a);
  CHECK(bound.bound().size() == 2);

  auto site = [&](const CallSiteInfo& info, const std::string& key) {
    return info.graph_to_parent(graph.args().at(key));
  };
  auto only_b_weight = b.filter_keys({"weight"});
  const auto mixed = bound.call_with_info({x}, only_b_weight);
  CHECK(site(mixed, "weight") == b.at("weight"));
  CHECK(site(mixed, "bias") == a.at("bias"));

  const auto rebound = bound.bind(b);
  const auto all_b = rebound.call_with_info({x});
  CHECK(site(all_b, "weight") == b.at("weight"));
  CHECK(site(all_b, "bias") == b.at("bias"));
  // The original binding is unchanged.
  CHECK(site(bound.call_with_info({x}), "weight") == a.at("weight"));

  // Keys the graph does not have are ignored when binding.
  auto extra = a;
  extra.insert("unrelated", x);
  CHECK(graph.bind(extra).bound().size() == 2);

  // Named args passed directly, and a binding through inputs_dict.
  CHECK(site(graph.call_with_info({x}, b), "bias") == b.at("bias"));
  const auto by_dict = graph.call_with_info({}, a, {{graph.positional_inputs()[0], x}});
  CHECK(by_dict.parent_input(0) == x);
  CHECK(graph.call({x}, a).size() == 1);
  CHECK(graph.copy().graph() == graph.graph());
}

namespace {
/// Whether `g.call(args...)` compiles.
template <class G, class... Args>
constexpr bool callable_with = requires(const G& g, const Args&... args) {
  g.call(args...);
};
} // namespace

// The PopXL spellings: positional tensors as separate arguments, then what else is bound.
static_assert(callable_with<addons::BoundGraph, Tensor>);
static_assert(callable_with<addons::BoundGraph, Tensor, Tensor, Tensor>);
static_assert(callable_with<addons::GraphWithNamedArgs, Tensor, InputsDict>);
static_assert(callable_with<addons::GraphWithNamedArgs, Tensor, Tensor, addons::CallArgs>);
static_assert(callable_with<addons::BoundGraph, Tensor, NamedTensors>);
static_assert(callable_with<addons::BoundGraph>);
// A tensor after the InputsDict or NamedTensors is not positional any more.
static_assert(!callable_with<addons::BoundGraph, NamedTensors, Tensor>);
static_assert(!callable_with<addons::BoundGraph, Tensor, InputsDict, Tensor>);
static_assert(!callable_with<addons::BoundGraph, Tensor, double>);

TEST_CASE("call and call_with_info take positional tensors as PopXL does: call(x), call(x, w)") {
  Ir ir;
  auto main = ir.main_graph().scope();
  auto x = constant(HostTensor({1.f, 2.f}, {1, 2}), "x");
  auto created = Linear(2).create_graph(x); // not a structured binding: lambdas read `graph`
  auto& facts = created.first;
  const auto& graph = created.second;
  auto a = facts.init("a");
  auto b = facts.init("b");
  const auto bound = graph.bind(a);
  auto site = [&](const CallSiteInfo& info, const std::string& key) {
    return info.graph_to_parent(graph.args().at(key));
  };

  // One tensor, as the list form would pass it.
  const auto one = bound.call_with_info(x);
  CHECK(one.parent_input(0) == x);
  CHECK(site(one, "weight") == a.at("weight"));
  CHECK(bound.call(x).size() == 1);
  // Then named args, as an InputsDict (popxl.addons' `args=`) or NamedTensors.
  const auto weight_in = graph.args().at("weight");
  const auto by_dict = bound.call_with_info(x, InputsDict{{weight_in, b.at("weight")}});
  CHECK(site(by_dict, "weight") == b.at("weight"));
  CHECK(site(by_dict, "bias") == a.at("bias"));
  CHECK(site(graph.call_with_info(x, b), "bias") == b.at("bias"));
  CHECK(graph.call(x, b).size() == 1);
  // Or as CallArgs, naming each part.
  const auto named = graph.call_with_info(
      x, {.args = {{weight_in, a.at("weight")}}, .named = b.filter_keys({"bias"})});
  CHECK(site(named, "weight") == a.at("weight"));
  CHECK(site(named, "bias") == b.at("bias"));
  CHECK(graph.call_with_info({x}, {.named = b}).parent_input(0) == x);
  CHECK(site(bound.call_with_info({x}, InputsDict{{weight_in, b.at("weight")}}), "weight") ==
        b.at("weight"));
  CHECK(bound.call({x}, InputsDict{{weight_in, b.at("weight")}}).size() == 1);
  const auto inlined = bound.call_with_info(x, {.options = {.inline_graph = true}});
  CHECK(inlined.outputs().size() == 1);

  // Several positional tensors: a graph of all-positional inputs, called with x, w, b.
  const Tensor x_ = x, w_ = a.at("weight"), b_ = a.at("bias");
  Graph affine = ir.create_graph([](Tensor p, Tensor q, Tensor r) { return ops::matmul(p, q) + r; },
                                 x_, w_, b_);
  const addons::GraphWithNamedArgs plain(affine);
  const auto three = plain.call_with_info(x_, w_, b_);
  CHECK(three.inputs() == std::vector<Tensor>{x_, w_, b_});
  CHECK(plain.bind({}).call(x_, w_, b_).size() == 1);

  // Wrong counts give the list form's errors.
  CHECK_THROWS_WITH_AS(bound.call(x, x), doctest::Contains("expected 1 positional input(s), got 2"),
                       GraphError);
  CHECK_THROWS_WITH_AS(bound.call(), doctest::Contains("expected 1 positional input(s), got 0"),
                       GraphError);
  CHECK_THROWS_WITH_AS(plain.call(x_, w_),
                       doctest::Contains("expected 3 positional input(s), got 2"), GraphError);
  CHECK_THROWS_WITH_AS(graph.call(x), doctest::Contains("named inputs not bound: weight, bias"),
                       GraphError);
  CHECK_THROWS_WITH_AS(graph.call(x, InputsDict{{x, x}}),
                       doctest::Contains("inputs_dict binds x, which is not an input"), GraphError);
}

TEST_CASE("GraphWithNamedArgs and BoundGraph errors") {
  Ir ir;
  auto main = ir.main_graph().scope();
  auto x = constant(HostTensor({1.f, 2.f}, {1, 2}), "x");
  auto [facts, graph] = Linear(2).create_graph(x);
  const std::string g = graph.graph().name();
  auto vars = facts.init();
  CHECK_THROWS_WITH_AS(
      graph.call({x}),
      doctest::Contains(("call of " + g + ": named inputs not bound: weight, bias").c_str()),
      GraphError);
  CHECK_THROWS_WITH_AS(graph.bind(vars.filter_keys({"weight"})).call({x}),
                       doctest::Contains("named inputs not bound: bias"), GraphError);
  CHECK_THROWS_WITH_AS(graph.bind(vars).call({}),
                       doctest::Contains("expected 1 positional input(s), got 0"), GraphError);
  CHECK_THROWS_WITH_AS(graph.bind(vars).call({x, x}),
                       doctest::Contains("expected 1 positional input(s), got 2"), GraphError);
  CHECK_THROWS_WITH_AS(graph.call({x}, vars, {{x, x}}),
                       doctest::Contains("inputs_dict binds x, which is not an input"), GraphError);
  CHECK_THROWS_WITH_AS(graph.grad_graph_info(),
                       doctest::Contains((g + " is not a gradient graph").c_str()), ValueError);
  CHECK_THROWS_WITH_AS(graph.grads(graph.bind(vars).call_with_info({x})),
                       doctest::Contains("is not a gradient graph"), ValueError);
  NamedTensors not_inputs;
  not_inputs.insert("x", x);
  CHECK_THROWS_WITH_AS(addons::GraphWithNamedArgs(graph.graph(), not_inputs),
                       doctest::Contains(("named arg 'x' (x) is not an input of " + g).c_str()),
                       GraphError);
  CHECK_THROWS_WITH_AS(addons::GraphWithNamedArgs(graph.graph(), {}, {}, not_inputs),
                       doctest::Contains(("named output 'x' (x) is not an output of " + g).c_str()),
                       GraphError);
}

TEST_CASE("print_schedule shows named args by name and what Call ops call") {
  Ir ir;
  auto main = ir.main_graph().scope();
  auto [facts, graph] = Linear(2).create_graph(TensorSpec{{1, 3}, float32});
  CHECK(graph.print_schedule() ==
        "Graph : Linear_subgraph(0)\n"
        "  (%0, weight=%1, bias=%3) -> (%4) {\n"
        "    MatMul.0 (%0 [(1, 3) float32], %1 [(3, 2) float32]) -> (%2 [(1, 2) float32])\n"
        "    Add.1 (%2 [(1, 2) float32], %3 [(2,) float32]) -> (%4 [(1, 2) float32])\n"
        "  }\n");
}

TEST_CASE("addons::autodiff names the gradient graph's weight inputs and gradient outputs") {
  Ir ir;
  HostToDeviceStream xs;
  DeviceToHostStream dw_stream, db_stream, dx_stream;
  NamedTensors vars;
  {
    auto main = ir.main_graph().scope();
    xs = h2d_stream({1, 3}, float32, "x");
    auto x = ops::host_load(xs);
    auto [facts, fwd] = Linear(2).create_graph(x);
    auto bwd = addons::autodiff(fwd);
    CHECK(bwd.is_grad_graph());
    CHECK(bwd.grad_graph_info().forward_graph() == fwd.graph());
    // dx = dy · Wᵀ reads the weight, which keeps its name.
    CHECK(bwd.args().keys_flat() == Keys{"weight"});
    CHECK(bwd.named_outputs().keys_flat() == Keys{"weight", "bias"});
    CHECK_THROWS_WITH_AS(fwd.autodiff(), doctest::Contains(fwd.graph().name().c_str()), GraphError);

    vars = facts.init();
    auto fwd_info = fwd.bind(vars).call_with_info({x});
    auto dy = constant(HostTensor({1.f, 2.f}, {1, 2}), "dy");
    // popxl.addons: `bwd.call_with_info(dy, args=activations)`.
    const auto activations = bwd.grad_graph_info().inputs_dict(fwd_info);
    auto bwd_info = bwd.bind(vars).call_with_info(dy, {.args = activations});
    // The same call in the other spellings binds the same tensors.
    CHECK(bwd.bind(vars).call_with_info(dy, activations).inputs() == bwd_info.inputs());
    CHECK(bwd.bind(vars).call_with_info({dy}, activations).inputs() == bwd_info.inputs());
    CHECK(bwd.bind(vars).call_with_info({dy}, {}, activations).inputs() == bwd_info.inputs());
    CHECK(bwd.call_with_info(dy, {.args = activations, .named = vars}).inputs() ==
          bwd_info.inputs());
    const auto grads = bwd.grads(bwd_info);
    const auto by_parent =
        bwd.grad_graph_info().fwd_parent_ins_to_grad_parent_outs(fwd_info, bwd_info);
    CHECK(grads.at("weight") == by_parent.at(vars.at("weight")));
    CHECK(grads.at("bias") == by_parent.at(vars.at("bias")));
    CHECK_THROWS_WITH_AS(bwd.grads(fwd_info), doctest::Contains("the call site calls"), GraphError);

    dw_stream = d2h_stream({3, 2}, float32, "dw");
    db_stream = d2h_stream({2}, float32, "db");
    dx_stream = d2h_stream({1, 3}, float32, "dx");
    ops::host_store(dw_stream, grads.at("weight"));
    ops::host_store(db_stream, grads.at("bias"));
    ops::host_store(dx_stream, by_parent.at(x));
  }
  Session session{ir, "ipu_model"};
  auto attached = session.attach();
  const HostTensor x({1.f, -1.f, 2.f}, {1, 3});
  const auto out = session.run({{xs, x}});
  // dW = xᵀ · dy, db = dy, dx = dy · Wᵀ.
  CHECK(out.at(dw_stream) == HostTensor({1.f, 2.f, -1.f, -2.f, 2.f, 4.f}, {3, 2}));
  CHECK(out.at(db_stream) == HostTensor({1.f, 2.f}));
  const auto w = session.get_tensor_data(vars.at("weight"));
  HostTensor dx({1, 3}, float32);
  for (std::int64_t i = 0; i < 3; ++i)
    dx.data<float>()[static_cast<std::size_t>(i)] =
        static_cast<float>(1.0 * w.item(i * 2) + 2.0 * w.item(i * 2 + 1));
  CHECK(allclose(out.at(dx_stream), dx, 1e-6, 1e-7));
}

TEST_CASE("weights trained in one session and copied with to_mapping give identical outputs") {
  const HostTensor x_data({0.5f, -1.f, 2.f, 1.5f}, {1, 4});
  struct Program {
    Ir ir;
    HostToDeviceStream xs;
    DeviceToHostStream ys;
    NamedTensors vars;
  };
  // `train`: one SGD step on sum(y) after storing y.
  auto make = [&](Program& p, bool train, std::uint64_t seed) {
    auto main = p.ir.main_graph().scope();
    p.xs = h2d_stream({1, 4}, float32, "x");
    auto x = ops::host_load(p.xs);
    auto [facts, fwd] = Net{}.create_graph(x);
    p.vars = facts.init("", seed);
    std::optional<addons::GraphWithNamedArgs> bwd;
    if (train)
      bwd = addons::autodiff(fwd);
    auto fwd_info = fwd.bind(p.vars).call_with_info({x});
    p.ys = d2h_stream({1, 3}, float32, "y");
    ops::host_store(p.ys, fwd_info.parent_output(0));
    if (train) {
      auto dy = constant(HostTensor::full({1, 3}, float32, 1.0), "dy");
      auto bwd_info =
          bwd->bind(p.vars).call_with_info({dy}, {}, bwd->grad_graph_info().inputs_dict(fwd_info));
      const auto grads = bwd->grads(bwd_info);
      for (const auto& [key, v] : p.vars.items())
        ops::scaled_add_(v, grads.at(key), {.b = -0.1});
    }
  };
  Program a, b;
  make(a, /*train=*/true, 1);
  make(b, /*train=*/false, 2);
  Session sa{a.ir, "ipu_model"};
  Session sb{b.ir, "ipu_model"};
  auto att_a = sa.attach();
  auto att_b = sb.attach();
  const auto before = sa.get_tensors_data(a.vars.tensors());
  sa.run({{a.xs, x_data}});
  const auto trained = sa.get_tensors_data(a.vars.tensors());
  CHECK_FALSE(trained.at(a.vars.at("fc1.weight")) == before.at(a.vars.at("fc1.weight")));

  // Copy by name: a's variable → b's variable, then a's data onto b's variables.
  const auto mapping = a.vars.to_mapping(b.vars);
  CHECK(mapping.size() == 4);
  std::map<Tensor, HostTensor> copied;
  for (const auto& [va, vb] : mapping)
    copied.emplace(vb, trained.at(va));
  sb.write_variables_data(copied);

  // Checkpoint-style round trip through NamedTensorData as well.
  const auto data = addons::named_data(b.vars, sb.get_tensors_data(b.vars.tensors()));
  CHECK(data.at("fc2.bias") == trained.at(a.vars.at("fc2.bias")));

  // a's next run uses the trained weights before its update: same outputs as b's.
  const auto ya = sa.run({{a.xs, x_data}}).at(a.ys);
  const auto yb = sb.run({{b.xs, x_data}}).at(b.ys);
  CHECK(ya == yb);
}

TEST_CASE("addons::recompute_graph: the gradient graph's names, bitwise its gradients") {
  Ir ir;
  auto in_main = ir.main_graph().scope();
  auto [facts, fwd] =
      addons::Sequential{addons::Dense(8, addons::Activation::relu), addons::Dense(4)}.create_graph(
          TensorSpec{{6, 5}, float32});
  const auto bwd = fwd.autodiff({.grads_required = fwd.args().tensors()});
  const auto recomputed = addons::recompute_graph(bwd);
  CHECK(recomputed.is_grad_graph());
  CHECK(recomputed.graph().name() == bwd.graph().name() + "_recomp");
  // It reads every forward input, each weight under its name; its outputs are the same
  // gradients under the same names.
  const auto sorted = [](Keys k) {
    std::ranges::sort(k);
    return k;
  };
  CHECK(sorted(recomputed.args().keys_flat()) == sorted(fwd.args().keys_flat()));
  CHECK(recomputed.named_outputs().keys_flat() == bwd.named_outputs().keys_flat());
  const NamedTensors vars = facts.init("", 3);
  const Tensor x = constant(test_addons::normal_images(6, 5), "x");
  const Tensor y = constant(test_addons::cyclic_labels(6, 4), "y");
  const NamedTensors kept = test_addons::cross_entropy_grads(fwd, bwd, vars, x, y);
  const NamedTensors again = test_addons::cross_entropy_grads(fwd, recomputed, vars, x, y);
  std::vector<std::pair<Tensor, Tensor>> results;
  for (const auto& [key, g] : kept.items()) {
    results.emplace_back(variable(HostTensor(g.shape(), g.dtype()), "kept." + key),
                         variable(HostTensor(g.shape(), g.dtype()), "again." + key));
    ops::var_updates::copy_var_update_(results.back().first, g);
    ops::var_updates::copy_var_update_(results.back().second, again.at(key));
  }
  Session session(ir, "ipu_model");
  auto attached = session.attach();
  session.run();
  for (const auto& pair : results) { // no structured binding: CAPTURE is a lambda (clang 14)
    const std::string name = pair.first.name();
    CAPTURE(name);
    CHECK(session.get_tensor_data(pair.first).nelms() > 0);
    CHECK(session.get_tensor_data(pair.second) == session.get_tensor_data(pair.first));
  }
  CHECK_THROWS_AS(addons::recompute_graph(fwd), ValueError);
}
