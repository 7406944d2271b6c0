// Replicated tensor sharding in addons: a module's replica-sharded variable input, gathered
// before use, trains data-parallel (its gradient reduce-scattered by autodiff) bitwise as the
// whole weight with all-reduced gradients; factories and init of sharded variables; rts
// helpers and their errors.
#include "pxl/addons.hpp"
#include "pxl/pxl.hpp"

#include "helpers.hpp"

#include <doctest/doctest.h>

#include <vector>

using namespace pxl;
using addons::NamedTensors;
using doctest::Contains;

// Named: in a unity build this file shares its unit with others of the suite.
namespace test_rts {

constexpr std::int64_t features = 5, outputs = 3, rows = 4;

/// x @ W with W (5, 3) a graph input: whole, or this replica's shard gathered before use.
struct Layer : addons::Module<Layer> {
  std::int64_t shard_over = 1;
  Tensor build(const Tensor& x) {
    auto init = addons::init::normal(0.0, 0.5, {features, outputs});
    if (shard_over == 1)
      return ops::matmul(x, add_variable_input("weight", init));
    return ops::matmul(
        x, addons::rts::gather(add_replica_sharded_variable_input("weight", init, shard_over)));
  }
};

struct Trained {
  std::vector<HostTensor> losses;
  HostTensor weight;
};

/// `steps` SGD steps of a least-squares fit on `replicas` replicas, each with its own rows:
/// with a sharded weight (gradients reduce-scattered by autodiff) or a whole one (gradients
/// all-reduced); the learning rate divided by the replica count, so either is the global
/// batch's mean.
Trained train(std::int64_t replicas, bool sharded, unsigned workers, int steps) {
  Ir ir(replicas);
  test_addons::LeastSquaresStreams io;
  Tensor weight;
  {
    auto in_main = ir.main_graph().scope();
    io = test_addons::least_squares_streams(rows, features, outputs);
    const Tensor x = ops::host_load(io.x), t = ops::host_load(io.t);
    Layer layer;
    layer.shard_over = sharded ? replicas : 1;
    auto [facts, fwd] = layer.create_graph(x);
    CHECK(facts.at("weight").shard_over == layer.shard_over);
    auto bwd = addons::autodiff(fwd, {.grads_required = fwd.args().values_flat()});
    const NamedTensors vars = facts.init();
    weight = vars.at("weight");
    auto fwd_info = fwd.bind(vars).call_with_info({x});
    // The sum of squares' gradients; the mean's 1/(rows·outputs) folded into the rate.
    NamedTensors grads = test_addons::squared_error_grads(bwd, vars, fwd_info, t, io.loss);
    if (!sharded)
      grads = grads.map([](const Tensor& g) { return ops::collectives::replicated_all_reduce(g); });
    const double lr = 0.05 / static_cast<double>(replicas * rows * outputs);
    addons::optimizers::apply(addons::optimizers::SGD{{.lr = lr}}, vars, grads);
  }
  Session s(ir, "ipu_model", {.workers = workers, .oversubscribe = true});
  auto attached = s.attach();
  Trained r;
  for (int step = 0; step < steps; ++step) {
    Shape xs{replicas, rows, features}, ts{replicas, rows, outputs};
    if (replicas == 1) {
      xs.erase(xs.begin());
      ts.erase(ts.begin());
    }
    const auto seed = static_cast<std::uint64_t>(step);
    const HostTensor xv = addons::init::normal(0.0, 1.0, xs)(float32, 10 + seed);
    const HostTensor tv = addons::init::normal(0.0, 1.0, ts)(float32, 1000 + seed);
    r.losses.push_back(s.run({{io.x, xv}, {io.t, tv}}).at(io.loss));
  }
  r.weight = s.get_tensor_data(weight);
  CHECK(s.check_replicas_in_sync().empty());
  return r;
}

TEST_CASE("A sharded weight trains data-parallel bitwise as the whole weight") {
  const int steps = 20;
  for (const std::int64_t replicas : {2, 3}) {
    CAPTURE(replicas);
    const Trained whole = train(replicas, false, 1, steps);
    CHECK(whole.weight.shape() == Shape{features, outputs});
    for (const unsigned workers : {1u, 2u, 3u}) {
      CAPTURE(workers);
      const Trained sharded = train(replicas, true, workers, steps);
      CHECK(sharded.weight == whole.weight);
      CHECK(sharded.losses == whole.losses);
    }
    CHECK(whole.losses.back().item() < whole.losses.front().item());
  }
}

TEST_CASE("Sharded factories: the graph input is a shard, init makes a sharded variable") {
  Ir ir(4);
  auto in_main = ir.main_graph().scope();
  Layer layer;
  layer.shard_over = 2;
  auto [facts, fwd] = layer.create_graph(ops::init({rows, features}, float32));
  const Tensor input = fwd.args().at("weight");
  CHECK(input.shape() == Shape{8}); // ceil(15 / 2)
  CHECK(input.meta_shape() == Shape{features, outputs});
  CHECK(facts.at("weight").spec() == TensorSpec{{8}, float32});
  CHECK(facts.at("weight").meta_spec() == TensorSpec{{features, outputs}, float32});
  std::ostringstream printed;
  printed << facts.at("weight");
  CHECK(printed.str().find("sharded over 2") != std::string::npos);
  const NamedTensors vars = facts.init();
  const auto sharding = replica_sharding(vars.at("weight"));
  REQUIRE(sharding);
  CHECK(sharding->group == ir.replica_grouping(1, 2));
  // In Streaming Memory: a replica-sharded buffer of the shards.
  const NamedTensors remote = facts.init_remote("remote");
  const auto entry = remote_entry(remote.at("weight"));
  REQUIRE(entry);
  CHECK(entry->buffer.shape() == Shape{8});
  CHECK(replica_sharding(entry->buffer)->meta_shape == Shape{features, outputs});
  CHECK(replica_sharding(addons::load_remote(remote).at("weight")));
}

TEST_CASE("rts helpers: reduce_scatter and shard carry their sharding; gather undoes them") {
  Ir ir(2);
  auto in_main = ir.main_graph().scope();
  const Tensor g = variable(HostTensor({3, 3}, float32), "g");
  const NamedTensors scattered = addons::rts::reduce_scatter(NamedTensors{{"g", g}});
  CHECK(scattered.at("g").shape() == Shape{5});
  CHECK(scattered.at("g").meta_shape() == Shape{3, 3});
  const NamedTensors gathered = addons::rts::gather(NamedTensors{{"g", scattered.at("g")}});
  CHECK(gathered.at("g").shape() == Shape{3, 3});
  CHECK(addons::rts::shard(g).meta_shape() == Shape{3, 3});
  // Unsharded tensors pass through gather.
  CHECK(addons::rts::gather(NamedTensors{{"g", g}}).at("g") == g);
  CHECK_THROWS_WITH_AS(addons::add_replica_sharded_variable_input("w", addons::init::zeros({2}), 0),
                       Contains("'w' needs shard_over of at least 1, got 0"), ValueError);
}

} // namespace test_rts
