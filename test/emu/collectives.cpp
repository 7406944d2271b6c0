// Collectives on the lockstep emulator: closed forms, the replicated reference evaluator as
// the oracle, bitwise equality for 1, 2 and 3 workers, and gradients by finite differences.
#include "helpers.hpp"
#include "replicated_reference.hpp"

#include <pxl/transforms/autodiff.hpp>

#include <doctest/doctest.h>

#include <functional>
#include <random>

using namespace pxl;
using namespace pxl::ops::collectives;

namespace {

/// [replicas, *shape] float32 values, distinct per replica.
HostTensor per_replica(std::int64_t replicas, Shape shape, std::uint32_t seed) {
  shape.insert(shape.begin(), replicas);
  HostTensor t(std::move(shape), float32);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (auto& v : t.data<float>())
    v = dist(gen);
  return t;
}

/// A main graph loading x (one element per replica), applying `fn` and storing the result;
/// runs it on the emulator with 1, 2 and 3 workers (bitwise equal) and on the replicated
/// reference evaluator (equal to float rounding) and returns the emulator's output.
HostTensor run_checked(std::int64_t replicas, const HostTensor& x,
                       const std::function<Tensor(Ir&, Tensor)>& fn) {
  Ir ir(replicas);
  DeviceToHostStream y;
  HostToDeviceStream xs;
  {
    auto main = ir.main_graph().scope();
    Shape element(x.shape().begin() + (replicas > 1 ? 1 : 0), x.shape().end());
    xs = h2d_stream(element, x.dtype(), "x");
    const Tensor out = fn(ir, ops::host_load(xs));
    y = d2h_stream(out.shape(), out.dtype(), "y");
    ops::host_store(y, out);
  }
  HostTensor first;
  for (unsigned workers : {1u, 2u, 3u}) {
    CAPTURE(workers);
    Session s(ir, "ipu_model", {.workers = workers, .oversubscribe = true});
    auto attached = s.attach();
    const HostTensor out = s.run({{xs, x}}).at(y);
    if (workers == 1)
      first = out;
    else
      CHECK(out == first);
  }
  const auto ref = testing::run_replicated(ir, {{"x", x}});
  CHECK(allclose(first, ref.at("y"), 1e-6, 1e-7));
  return first;
}

float at(const HostTensor& t, std::int64_t i) {
  return t.data<float>()[static_cast<std::size_t>(i)];
}

} // namespace

TEST_CASE("replicated_all_reduce: every operator over every replica and over groups") {
  const std::int64_t R = 4;
  const HostTensor x = per_replica(R, {2, 3}, 1);
  const auto sum = run_checked(R, x, [](Ir&, Tensor t) { return replicated_all_reduce(t); });
  for (std::int64_t r = 0; r < R; ++r)
    for (std::int64_t i = 0; i < 6; ++i) {
      const double want =
          static_cast<double>(at(x, i)) + at(x, 6 + i) + at(x, 12 + i) + at(x, 18 + i);
      CHECK(at(sum, r * 6 + i) == static_cast<float>(want));
    }
  // Groups of 2 replicas 2 apart: {0, 2} and {1, 3}.
  const auto grouped = run_checked(R, x, [](Ir& ir, Tensor t) {
    return replicated_all_reduce(t, CollectiveOperator::max, ir.replica_grouping(2, 2));
  });
  for (std::int64_t i = 0; i < 6; ++i) {
    CHECK(at(grouped, i) == std::max(at(x, i), at(x, 12 + i)));
    CHECK(at(grouped, 12 + i) == at(grouped, i));
    CHECK(at(grouped, 6 + i) == std::max(at(x, 6 + i), at(x, 18 + i)));
  }
  for (auto op : {CollectiveOperator::mean, CollectiveOperator::mul, CollectiveOperator::min,
                  CollectiveOperator::square_add}) {
    CAPTURE(static_cast<int>(op));
    run_checked(R, x, [op](Ir& ir, Tensor t) {
      return replicated_all_reduce(t, op, ir.replica_grouping(1, 2));
    });
  }
  // In place, and in float16, int32 and bool.
  run_checked(R, x, [](Ir&, Tensor t) { return replicated_all_reduce_(t * 1.0); });
  run_checked(R, x, [](Ir&, Tensor t) {
    return ops::cast(replicated_all_reduce(ops::cast(t, float16)), float32);
  });
  run_checked(R, x, [](Ir&, Tensor t) {
    return ops::cast(replicated_all_reduce(ops::cast(t * 10.0, int32), CollectiveOperator::mean),
                     float32);
  });
  const auto any = run_checked(R, x, [](Ir&, Tensor t) {
    return ops::cast(replicated_all_reduce(ops::greater(t, constant(0.9, float32)),
                                           CollectiveOperator::logical_or),
                     float32);
  });
  CHECK(any.nelms() == R * 6);
}

TEST_CASE("With one replica (or groups of one) a collective is the identity") {
  const HostTensor x = per_replica(1, {5}, 2).reshaped({5});
  CHECK(run_checked(1, x, [](Ir&, Tensor t) { return replicated_all_reduce(t); }) == x);
  CHECK(run_checked(1, x, [](Ir&, Tensor t) { return replicated_all_gather(t); }) ==
        x.reshaped({1, 5}));
  const HostTensor x2 = per_replica(2, {5}, 3);
  CHECK(run_checked(2, x2, [](Ir& ir, Tensor t) {
          return replicated_all_reduce(t, CollectiveOperator::add, ir.replica_grouping(1, 1));
        }) == x2);
}

TEST_CASE("replicated_reduce_scatter and replicated_all_gather are inverse layouts") {
  const std::int64_t R = 4;
  const HostTensor x = per_replica(R, {3, 3}, 4); // 9 elements: shards of 3, the last padded
  const auto shards = run_checked(R, x, [](Ir&, Tensor t) { return replicated_reduce_scatter(t); });
  CHECK(shards.shape() == Shape{4, 3});
  for (std::int64_t r = 0; r < R; ++r)
    for (std::int64_t i = 0; i < 3; ++i) {
      const std::int64_t src = r * 3 + i;
      const float want = src < 9
                             ? static_cast<float>(static_cast<double>(at(x, src)) + at(x, 9 + src) +
                                                  at(x, 18 + src) + at(x, 27 + src))
                             : 0.f;
      CHECK(at(shards, r * 3 + i) == want);
    }
  // Gathering the shards back gives the all-reduce on every replica (plus the padding).
  const auto round_trip = run_checked(R, x, [](Ir&, Tensor t) {
    return replicated_all_gather(replicated_reduce_scatter(t))
        .flatten()
        .slice(0, 9)
        .reshape({3, 3});
  });
  const auto reduced = run_checked(R, x, [](Ir&, Tensor t) { return replicated_all_reduce(t); });
  CHECK(allclose(round_trip, reduced, 0, 0));
  const auto concat = run_checked(R, x, [](Ir& ir, Tensor t) {
    return replicated_all_gather(t, 1, ir.replica_grouping(1, 2), GatherShape::concat);
  });
  CHECK(concat.shape() == Shape{4, 3, 6});
  // Replica 1's row 2 is [x_0 row 2, x_1 row 2].
  for (std::int64_t j = 0; j < 3; ++j) {
    CHECK(at(concat, 18 + 2 * 6 + j) == at(x, 2 * 3 + j));
    CHECK(at(concat, 18 + 2 * 6 + 3 + j) == at(x, 9 + 2 * 3 + j));
  }
}

TEST_CASE("replicated_slice and replica_sharded_slice keep each replica's part") {
  const std::int64_t R = 2;
  const HostTensor x = per_replica(R, {2, 4}, 5);
  const auto parts = run_checked(R, x, [](Ir&, Tensor t) { return replicated_slice(t, 1); });
  CHECK(parts.shape() == Shape{2, 2, 2});
  CHECK(at(parts, 0) == at(x, 0));
  CHECK(at(parts, 4) == at(x, 8 + 2)); // replica 1 keeps columns 2..3
  const auto shards = run_checked(R, per_replica(R, {3}, 6),
                                  [](Ir&, Tensor t) { return replica_sharded_slice(t); });
  CHECK(shards.shape() == Shape{2, 2});
  CHECK(at(shards, 3) == 0.f); // replica 1's shard is element 2 and padding
}

namespace {
/// How a finite-difference check perturbs the inputs and counts the loss.
enum class Convention {
  per_replica, ///< each replica's input is its own variable; the loss sums every replica's
  shared,      ///< the input is one tensor on every replica; the loss sums every replica's
  one_loss,    ///< per-replica inputs, and the loss is replica 0's (every replica computes it)
};

/// Autodiff of `fn` through a replicated graph on the emulator, against central differences
/// of the loss Σ <w_r, f(x)_r> evaluated with the replicated reference evaluator.
void check_replicated_gradient(std::int64_t replicas, Shape shape,
                               const std::function<Tensor(Ir&, Tensor)>& fn, Convention c) {
  Ir ir(replicas);
  HostToDeviceStream xs, ws;
  DeviceToHostStream ys, dxs;
  {
    auto main = ir.main_graph().scope();
    Graph fwd = ir.create_graph(
        "f", [&](Tensor t) { return fn(ir, t); }, TensorSpec{shape, float32});
    const auto info = transforms::autodiff(fwd);
    xs = h2d_stream(shape, float32, "x");
    const Shape out_shape = fwd.outputs()[0].shape();
    ws = h2d_stream(out_shape, float32, "w");
    const auto call = ops::call_with_info(fwd, {ops::host_load(xs)});
    ys = d2h_stream(out_shape, float32, "y");
    ops::host_store(ys, call.outputs()[0]);
    const auto dx = ops::call(info.graph(), {ops::host_load(ws)}, info.inputs_dict(call));
    dxs = d2h_stream(shape, float32, "dx");
    ops::host_store(dxs, dx[0]);
  }
  HostTensor x = per_replica(replicas, shape, 7);
  const std::int64_t n = x.nelms() / replicas;
  if (c == Convention::shared)
    for (std::int64_t r = 1; r < replicas; ++r)
      for (std::int64_t i = 0; i < n; ++i)
        x.data<float>()[static_cast<std::size_t>(r * n + i)] = at(x, i);
  Shape w_shape = ir.d2h_streams()[0].shape();
  HostTensor w = per_replica(replicas, w_shape, 8);
  if (c == Convention::one_loss) // every replica sees replica 0's loss gradient
    for (std::int64_t r = 1; r < replicas; ++r)
      for (std::int64_t i = 0; i < w.nelms() / replicas; ++i)
        w.data<float>()[static_cast<std::size_t>(r * (w.nelms() / replicas) + i)] = at(w, i);
  Session s(ir, "ipu_model", {.workers = 2});
  auto attached = s.attach();
  const HostTensor dx = s.run({{xs, x}, {ws, w}}).at(dxs);
  auto loss = [&](const HostTensor& at_x) {
    const HostTensor y = testing::run_replicated(ir, {{"x", at_x}, {"w", w}}).at("y");
    const std::int64_t m = y.nelms() / replicas;
    double l = 0;
    for (std::int64_t i = 0; i < (c == Convention::one_loss ? m : y.nelms()); ++i)
      l += y.item(i) * w.item(i);
    return l;
  };
  const double eps = 1e-2;
  for (std::int64_t r = 0; r < (c == Convention::shared ? 1 : replicas); ++r)
    for (std::int64_t i = 0; i < n; ++i) {
      HostTensor plus = x, minus = x;
      for (std::int64_t q = 0; q < replicas; ++q)
        if (q == r || c == Convention::shared) {
          plus.data<float>()[static_cast<std::size_t>(q * n + i)] += static_cast<float>(eps);
          minus.data<float>()[static_cast<std::size_t>(q * n + i)] -= static_cast<float>(eps);
        }
      const double numeric = (loss(plus) - loss(minus)) / (2 * eps);
      // Shared: every replica holds the gradient of the one tensor.
      const double analytic = dx.item(r * n + i);
      INFO("replica " << r << " element " << i << ": autodiff " << analytic
                      << " vs finite difference " << numeric);
      CHECK(std::abs(analytic - numeric) <= 2e-3 + 2e-2 * std::abs(numeric));
    }
}
} // namespace

TEST_CASE("Collective gradients match finite differences through a replicated graph") {
  using C = Convention;
  check_replicated_gradient(
      3, {2, 2}, [](Ir&, Tensor t) { return replicated_all_reduce(t * t); }, C::per_replica);
  check_replicated_gradient(
      4, {3},
      [](Ir& ir, Tensor t) {
        return replicated_all_reduce(t, CollectiveOperator::mean, ir.replica_grouping(2, 2));
      },
      C::per_replica);
  check_replicated_gradient(
      2, {5}, [](Ir&, Tensor t) { return replicated_reduce_scatter(t * t); }, C::per_replica);
  check_replicated_gradient(
      2, {2, 3}, [](Ir&, Tensor t) { return replicated_all_gather(t * t); }, C::per_replica);
  check_replicated_gradient(
      2, {2, 3},
      [](Ir&, Tensor t) { return replicated_all_gather(t, 1, std::nullopt, GatherShape::concat); },
      C::per_replica);
  check_replicated_gradient(
      2, {4, 2}, [](Ir&, Tensor t) { return replicated_slice(t * t); }, C::shared);
  check_replicated_gradient(
      2, {3}, [](Ir&, Tensor t) { return replica_sharded_slice(t * t); }, C::shared);
  check_replicated_gradient(
      2, {3}, [](Ir&, Tensor t) { return replicated_all_reduce_identical_inputs(t * t); },
      C::shared);
  check_replicated_gradient(
      2, {3}, [](Ir&, Tensor t) { return replicated_all_reduce_identical_grad_inputs(t * t); },
      C::one_loss);
}

TEST_CASE("Autodiff refuses collectives whose operator has no gradient") {
  Ir ir(2);
  Graph g = ir.create_graph(
      "f", [](Tensor t) { return replicated_all_reduce(t, CollectiveOperator::max); },
      TensorSpec{{2}, float32});
  CHECK_THROWS_WITH_AS(transforms::autodiff(g), doctest::Contains("other than add or mean"),
                       GraphError);
}

namespace {
struct StepKinds final : emu::StepObserver {
  std::vector<emu::StepKind> kinds;
  void on_step(const emu::StepInfo& info, const emu::StepTiming&, std::int64_t) override {
    kinds.push_back(info.kind);
  }
};

/// w -= 0.1 · mean over replicas of g; with `store_reduced` the reduced gradient also goes to
/// a stream, so it has a second reader and the update cannot be folded.
HostTensor sgd_on_reduced(bool store_reduced, unsigned workers, StepKinds& kinds) {
  const std::int64_t R = 4;
  Ir ir(R);
  HostToDeviceStream gs;
  Tensor w;
  {
    auto main = ir.main_graph().scope();
    gs = h2d_stream({3, 7}, float32, "g");
    w = variable(per_replica(1, {3, 7}, 11).reshaped({3, 7}), "w");
    const Tensor reduced = replicated_all_reduce(ops::host_load(gs), CollectiveOperator::mean);
    if (store_reduced)
      ops::host_store(d2h_stream({3, 7}, float32, "reduced"), reduced);
    ops::scaled_add_(w, reduced, {.a = 0.9, .b = -0.1});
  }
  Session s(ir, "ipu_model", {.workers = workers, .oversubscribe = true});
  auto attached = s.attach();
  s.run({{gs, per_replica(R, {3, 7}, 12)}}, &kinds);
  CHECK(s.check_replicas_in_sync().empty()); // every replica got the same update
  return s.get_tensor_data(w);
}
} // namespace

TEST_CASE("An in-place update of an all-reduce is folded into it, bitwise as the two steps") {
  StepKinds fused_kinds, plain_kinds;
  const HostTensor fused = sgd_on_reduced(false, 1, fused_kinds);
  const HostTensor plain = sgd_on_reduced(true, 1, plain_kinds);
  CHECK(std::ranges::count(fused_kinds.kinds, emu::StepKind::fused_all_reduce) == 1);
  CHECK(std::ranges::count(plain_kinds.kinds, emu::StepKind::fused_all_reduce) == 0);
  CHECK(fused == plain);
  for (unsigned workers : {2u, 3u}) {
    StepKinds k;
    CHECK(sgd_on_reduced(false, workers, k) == fused);
  }
}
