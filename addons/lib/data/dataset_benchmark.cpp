// dataset_benchmark: a timed loop over the pipeline's elements; its report as JSON.
#include "pxl/addons/data/dataset_benchmark.hpp"

#include <nlohmann/json.hpp>

#include <chrono>

namespace pxl::addons::data {
namespace {

double rate(std::int64_t count, double seconds) {
  return seconds > 0 ? static_cast<double>(count) / seconds : 0.0;
}

} // namespace

double DatasetBenchmark::elements_per_second() const { return rate(elements, seconds); }
double DatasetBenchmark::examples_per_second() const { return rate(examples, seconds); }
double DatasetBenchmark::bytes_per_second() const { return rate(bytes, seconds); }

std::string DatasetBenchmark::json() const {
  const nlohmann::ordered_json j = {
      {"elements", elements},
      {"examples", examples},
      {"bytes", bytes},
      {"seconds", seconds},
      {"elements_per_second", elements_per_second()},
      {"examples_per_second", examples_per_second()},
      {"bytes_per_second", bytes_per_second()},
  };
  return j.dump();
}

DatasetBenchmark dataset_benchmark(const TensorDataset& dataset, std::int64_t elements) {
  if (elements < 1)
    throw ValueError("dataset_benchmark: the number of elements to read must be at least 1, "
                     "found " +
                     std::to_string(elements));
  const bool batched = dataset.settings().batch_size.has_value();
  DatasetBenchmark r;
  const auto start = std::chrono::steady_clock::now();
  for (const LabelledBatch& element : dataset.elements()) {
    ++r.elements;
    r.examples += batched ? element.features.shape()[0] : 1;
    r.bytes += static_cast<std::int64_t>(element.features.nbytes() + element.labels.nbytes());
    if (r.elements == elements)
      break;
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

} // namespace pxl::addons::data
