// How the Trainer's training program takes its data (infeeds fed by producer threads, or one
// step's arrays per run) and gives back each micro-batch's logs.
#include "programs.hpp"

#include "pxl/dist.hpp"

#include <cstring>

namespace pxl::addons::trainer_detail {

namespace {

/// Batches a producer prepares ahead of the device when the dataset does not say (prefetch).
constexpr std::int64_t default_prefetch = 8;

} // namespace

void BatchLog::operator()(const HostTensor& values) {
  // Replicas store the same all-reduced values, step-major: take replica 0's.
  if (element++ % replicas == 0)
    record(values.data<float>());
}

void BatchLog::record(std::span<const float> v) {
  loss_sum += v[0];
  if (with_accuracy)
    accuracy_sum += v[1];
  if (!callbacks.empty() && !error) {
    Logs logs{{"loss", v[0]}};
    if (with_accuracy)
      logs.emplace(std::string(accuracy_metric), v[1]);
    try {
      for (const auto& c : callbacks)
        c->on_batch_end(batch, logs);
    } catch (...) {
      error = std::current_exception();
    }
  }
  ++batch;
  if (progress)
    progress->update(++in_epoch, v[0]);
}

std::map<std::string, std::string> report_options(const CompileOptions& o,
                                                  std::string_view program) {
  if (o.report_directory.empty())
    return {};
  return {{"autoReport.all", "true"},
          {"autoReport.directory", o.report_directory + "/" + std::string(program)}};
}

data::LocalReplicas local_replicas(const CompileOptions& o) {
  if (o.distributed && dist::is_distributed())
    return {o.replicas, dist::replica_offset(), dist::num_local_replicas()};
  return {o.replicas, 0, o.replicas};
}

HostTensor row_range(const HostTensor& t, std::int64_t first, std::int64_t count) {
  Shape shape = t.shape();
  const std::size_t row = t.bytes().size() / static_cast<std::size_t>(shape[0]);
  shape[0] = count;
  HostTensor rows(shape, t.dtype());
  std::memcpy(rows.bytes().data(), t.bytes().data() + static_cast<std::size_t>(first) * row,
              rows.bytes().size());
  return rows;
}

BatchCursor::BatchCursor(data::TensorDataset dataset, std::int64_t per_epoch,
                         std::int64_t passes_per_epoch)
    : dataset_(std::move(dataset)), per_pass_(dataset_.batches_per_epoch()), per_epoch_(per_epoch),
      passes_per_epoch_(passes_per_epoch) {}

const data::LabelledBatch& BatchCursor::next() {
  if (in_epoch_ == per_epoch_) {
    in_epoch_ = 0;
    ++epoch_;
    // The epoch's batches are taken: the next starts at its own first pass, the rest of this
    // one's unread (with a stream over the passes, it goes on where this one stopped).
    if (passes_per_epoch_ > 0) {
      pass_ = epoch_ * static_cast<std::uint64_t>(passes_per_epoch_);
      view_.reset();
    }
  }
  if (view_ && in_pass_ == per_pass_) {
    ++pass_;
    view_.reset();
  }
  if (!view_) {
    view_.emplace(dataset_.epoch(pass_));
    at_.emplace(view_->begin());
    in_pass_ = 0;
  } else {
    ++*at_;
  }
  ++in_pass_;
  ++in_epoch_;
  return **at_;
}

void bind_infeed(Program& p, std::shared_ptr<BatchCursor> cursor,
                 const data::LabelledBatchSpec& spec, std::int64_t prefetch,
                 std::int64_t batches_per_run, data::LocalReplicas replicas) {
  // A step takes an element of each stream per (local) replica.
  const std::int64_t depth = (prefetch > 0 ? prefetch : default_prefetch) * replicas.count;
  // The cursor is touched under the fan-out's lock only.
  auto fan_out = std::make_shared<data::BatchFanOut>(
      [cursor = std::move(cursor)]() -> data::BatchHalves {
        const data::LabelledBatch& b = cursor->next();
        return {&b.features, &b.labels};
      },
      spec.features, spec.labels, depth, batches_per_run, replicas,
      data::FanOutWording{.feeder = "Trainer::fit"});
  p.session->set_h2d_callback(
      p.x, [fan_out](HostTensor& e) { fan_out->fill(data::BatchFanOut::features, e); },
      {.depth = depth});
  p.session->set_h2d_callback(
      p.y, [fan_out](HostTensor& e) { fan_out->fill(data::BatchFanOut::labels, e); },
      {.depth = depth});
}

void run_one_step(Program& p, const data::LabelledBatch& batch, data::LocalReplicas replicas,
                  emu::StepObserver* observer) {
  // One replica in all takes the batch as it is (borrowed); else this process's replicas' rows.
  auto local_rows = [&](const HostTensor& t) -> InputArray {
    if (replicas.total == 1)
      return t;
    const std::int64_t b = t.shape()[0] / replicas.total;
    HostTensor rows = row_range(t, replicas.first * b, replicas.count * b);
    if (replicas.count == 1)
      return rows;
    Shape shape = t.shape();
    shape[0] = b;
    shape.insert(shape.begin(), replicas.count);
    return rows.reshaped(shape);
  };
  const StreamOutputs out = p.session->run(
      {{p.x, local_rows(batch.features)}, {p.y, local_rows(batch.labels)}}, observer);
  const auto values = out.at(p.loss).data<float>();
  p.log->record(values.first(values.size() / static_cast<std::size_t>(replicas.count)));
}

} // namespace pxl::addons::trainer_detail
