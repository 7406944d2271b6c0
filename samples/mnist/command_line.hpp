// The main job's command line: its options, and CLI11's parse of them (every flag in --help).
#pragma once

#include "pxl/addons/data/fashion_mnist.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mnist {

struct Options {
  /// mlp (mnist::Net) or cnn (mnist::Cnn).
  std::string model = "mlp";
  int epochs = 1;
  std::int64_t batch_size = 8;
  /// 0.05 for SGD, 0.001 for Adam unless given.
  std::optional<double> learning_rate;
  std::string optimizer = "sgd";
  bool offload_optimizer_state = false;
  bool shard_optimizer_state = false;
  std::int64_t steps_per_execution = 1;
  std::int64_t gradient_accumulation = 1;
  std::int64_t replicas = 1;
  std::int64_t pipeline_stages = 1;
  /// The IPU of each pipeline stage; empty: stage k on IPU k.
  std::vector<std::int64_t> device_mapping;
  std::string pipeline_schedule = "grouped";
  bool recompute = false;
  std::string data_dir = pxl::addons::data::fashion_mnist_default_dir;
  std::optional<std::int64_t> limit;
  std::optional<std::int64_t> test_limit;
  std::uint64_t seed = 42;
  std::string save;
  std::string load;
  bool profile = false;
  std::string trace;
  std::string memory_report;
  std::string report;
  bool estimate_only = false;
  std::optional<std::string> target;
  // Every core (under mpirun, the cores shared by the instances on this host): workers take
  // over each other's chunks, so at the default batch of 8 two are 1.5-1.7x faster on an idle
  // 2-core machine and 0.86-1.0x of one beside a busy process (test/bench/contention).
  unsigned workers = 0;
  std::string dtype = "float32";
  bool stochastic_rounding = false;
  std::string matmul_partials_type = "float32";
  std::optional<double> available_memory_proportion;
};

/// The options of `argv`, or nullopt when the parse ended the program: --help printed
/// (`exit_code` 0) or a bad flag or value reported on stderr (`exit_code` 1).
std::optional<Options> parse_command_line(int argc, char** argv, int& exit_code);

} // namespace mnist
