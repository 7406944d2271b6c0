// pxl::addons::data::dataset_benchmark: how fast a TensorDataset yields batches on its own
// (TensorFlow's ipu.dataset_benchmark).
#pragma once

#include "pxl/addons/data/pipeline.hpp"

#include <cstdint>
#include <string>

namespace pxl::addons::data {

/// What one dataset_benchmark measured. An element is what the data set yields (a batch once
/// batched), an example one row of it.
struct DatasetBenchmark {
  std::int64_t elements = 0;
  std::int64_t examples = 0;
  /// Bytes of the features and labels of the elements read.
  std::int64_t bytes = 0;
  /// Wall-clock time of the reading.
  double seconds = 0;

  /// The counts over `seconds`; 0 for a time of 0 (nothing measured).
  double elements_per_second() const;
  double examples_per_second() const;
  double bytes_per_second() const;
  /// The fields and rates as one JSON object, with the keys above: {"elements": 3750,
  /// "examples": 120000, "bytes": ..., "seconds": ..., "elements_per_second": ...,
  /// "examples_per_second": ..., "bytes_per_second": ...}.
  std::string json() const;
};

/// Reads `elements` elements of `dataset.elements()` as fast as it can, without a device, and
/// reports the rates: the most a device fed by this pipeline could consume (compare with what
/// the program consumes to see whether the host will starve it). Stops early when the data
/// set has fewer elements. ValueError for `elements` below 1.
///
///     auto r = dataset_benchmark(train.shuffle(train.size(), 0).batch(32).repeat(), 3750);
///     std::cout << r.json();
DatasetBenchmark dataset_benchmark(const TensorDataset& dataset, std::int64_t elements);

} // namespace pxl::addons::data
