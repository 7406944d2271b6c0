// Lesson 4: replication. An Ir with a replication factor runs on that many replicas in
// lockstep, each on its own slice of every stream array; collectives combine their values:
// all-reduce, reduce-scatter and all-gather, over every replica or over a ReplicaGrouping. The
// gradients of data-parallel training are averaged this way (addons::average_across_replicas).
#include <pxl/addons.hpp>
#include <pxl/pxl.hpp>

#include <iostream>
#include <vector>

namespace col = pxl::ops::collectives;

int main() {
  constexpr std::int64_t replicas = 4;
  pxl::Ir ir(replicas);
  pxl::HostToDeviceStream x_stream;
  pxl::DeviceToHostStream sum_stream, mean_stream, shard_stream, gathered_stream, pairs_stream,
      grad_stream;
  const pxl::ReplicaGrouping pairs = ir.replica_grouping(/*stride=*/2, /*group_size=*/2);
  {
    auto in_main = ir.main_graph().scope();
    // Shapes are per replica: each replica loads its own [4] element.
    x_stream = pxl::h2d_stream({4}, pxl::float32, "x");
    auto x = pxl::ops::host_load(x_stream, "x");

    auto sum = col::replicated_all_reduce(x); // CollectiveOperator::add over every replica
    auto mean = col::replicated_all_reduce(x, pxl::CollectiveOperator::mean);
    // Replica k keeps the k-th quarter of the sum; gathering the quarters gives it back whole.
    auto shard = col::replicated_reduce_scatter(x);
    auto gathered = col::replicated_all_gather(shard, 0, std::nullopt, col::GatherShape::concat);
    // Over a grouping: replicas {0, 2} and {1, 3} reduce separately.
    auto pair_max = col::replicated_all_reduce(x, pxl::CollectiveOperator::max, pairs);

    // Data parallel: each replica's gradient averaged (here a made-up gradient, 2·x).
    pxl::addons::NamedTensors grads{{"w", x * 2.0}};
    auto averaged = pxl::addons::average_across_replicas(grads).at("w");

    auto store = [](pxl::DeviceToHostStream& s, const pxl::Tensor& t, const char* name) {
      s = pxl::d2h_stream(t.shape(), t.dtype(), name);
      pxl::ops::host_store(s, t);
    };
    store(sum_stream, sum, "sum");
    store(mean_stream, mean, "mean");
    store(shard_stream, shard, "shard");
    store(gathered_stream, gathered, "gathered");
    store(pairs_stream, pair_max, "pair_max");
    store(grad_stream, averaged, "grad");
  }
  std::cout << pairs.to_string() << ": groups of replicas 0..3 =";
  for (auto g : pairs.assignment())
    std::cout << " " << g;
  std::cout << "; transposed: " << pairs.transpose().to_string() << "\n";

  pxl::Session session{ir, "ipu_model"};
  auto attached = session.attach();
  // Stream arrays are [replicas, *shape]: replica r loads row r, here 10·r + [0, 1, 2, 3].
  std::vector<float> x;
  for (std::int64_t r = 0; r < replicas; ++r)
    for (int i = 0; i < 4; ++i)
      x.push_back(static_cast<float>(10 * r + i));
  const auto out = session.run({{x_stream, pxl::HostTensor(x, {replicas, 4})}});
  // Outputs come back the same way: one row per replica.
  std::cout << "x        = " << pxl::HostTensor(x, {replicas, 4}) << "\n";
  std::cout << "sum      = " << out.at(sum_stream) << "\n";
  std::cout << "mean     = " << out.at(mean_stream) << "\n";
  std::cout << "shard    = " << out.at(shard_stream) << "\n";
  std::cout << "gathered = " << out.at(gathered_stream) << "\n";
  std::cout << "pair max = " << out.at(pairs_stream) << "\n";
  std::cout << "grad     = " << out.at(grad_stream) << "\n";
}
