#include "fusion.hpp"

#include "pxl/ir/attrs.hpp"
#include "pxl/ir/op_kind.hpp"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <variant>
#include <vector>

namespace pxl::emu::detail {

namespace {

/// Whether `op` is a Transpose that swaps its last two axes and keeps every other axis.
bool swaps_last_two(const IrView& ir, OpId op) {
  if (ir.kind(op) != OpKind::Transpose)
    return false;
  const auto rank = ir.spec(ir.inputs(op)[0]).rank();
  if (rank < 2)
    return false;
  const std::vector<std::int64_t>& perm = ir.attrs_as<TransposeAttrs>(op).perm;
  if (perm.empty()) // reverses every axis: a swap of the last two only at rank 2
    return rank == 2;
  for (std::int64_t d = 0; d < rank - 2; ++d)
    if (perm[static_cast<std::size_t>(d)] != d)
      return false;
  return perm[static_cast<std::size_t>(rank - 2)] == rank - 1 &&
         perm[static_cast<std::size_t>(rank - 1)] == rank - 2;
}

/// Whether `step` may change value `v`: it writes it (in-place ops alias their output to
/// their input) or hands it to a call, which may take it by reference.
bool may_write(const IrView& ir, const FlatStep& step, std::size_t v) {
  if (std::ranges::find(step.outputs, v) != step.outputs.end())
    return true;
  return !step.is_copy() && !ir.callees(*step.op).empty() &&
         std::ranges::find(step.inputs, v) != step.inputs.end();
}

/// Whether no step strictly between `first` and `last` may change any of `values`.
bool unchanged_between(const IrView& ir, const std::vector<FlatStep>& steps, std::size_t first,
                       std::size_t last, std::initializer_list<std::size_t> values) {
  for (std::size_t i = first + 1; i < last; ++i)
    for (auto v : values)
      if (may_write(ir, steps[i], v))
        return false;
  return true;
}

/// Drops steps marked in `removed` and the values no remaining step or graph boundary uses,
/// renumbering the rest in order.
void compact(FlatSchedule& s, const std::vector<bool>& removed) {
  std::vector<FlatStep> kept;
  for (std::size_t i = 0; i < s.steps.size(); ++i)
    if (!removed[i])
      kept.push_back(std::move(s.steps[i]));
  s.steps = std::move(kept);

  std::vector<bool> used(s.values.size(), false);
  for (const auto& step : s.steps) {
    for (auto v : step.inputs)
      used[v] = true;
    for (auto v : step.outputs)
      used[v] = true;
  }
  for (auto v : s.inputs)
    used[v] = true;
  for (auto v : s.outputs)
    used[v] = true;
  std::vector<std::size_t> renumber(s.values.size(), 0);
  std::vector<FlatValue> values;
  for (std::size_t v = 0; v < s.values.size(); ++v)
    if (used[v]) {
      renumber[v] = values.size();
      values.push_back(s.values[v]);
    }
  s.values = std::move(values);
  auto apply = [&](std::vector<std::size_t>& vs) {
    for (auto& v : vs)
      v = renumber[v];
  };
  for (auto& step : s.steps) {
    apply(step.inputs);
    apply(step.outputs);
  }
  apply(s.inputs);
  apply(s.outputs);
}

/// How many steps read each value, plus one for each graph output it is.
std::vector<std::size_t> count_readers(const FlatSchedule& s) {
  std::vector<std::size_t> readers(s.values.size(), 0);
  for (const auto& step : s.steps)
    for (auto v : step.inputs)
      ++readers[v];
  for (auto v : s.outputs)
    ++readers[v];
  return readers;
}

/// Whether none of `op`'s inputs and outputs is empty (the conv kernels' fused forms assume it).
bool has_no_empty_tensor(const IrView& ir, OpId op) {
  const auto empty = [&](TensorId t) { return ir.spec(t).nelms() == 0; };
  return std::ranges::none_of(ir.inputs(op), empty) && std::ranges::none_of(ir.outputs(op), empty);
}

/// Whether `bias`, an operand of an Add with a result of shape `y`, holds one value per index
/// of y's axis `axis`: y's size there and 1 on every other axis it has, right-aligned as
/// broadcasting aligns it, reaching that axis. A convolution's bias is per channel (axis 1 of
/// (N, C, spatial...)), a linear layer's per column (the last axis of a matmul's result).
bool per_index_of(const Shape& bias, const Shape& y, std::size_t axis) {
  const std::size_t rank = y.size();
  if (bias.size() + axis < rank || bias.size() > rank)
    return false;
  for (std::size_t d = 0; d < bias.size(); ++d) {
    const std::size_t at = rank - bias.size() + d;
    if (bias[d] != (at == axis ? y[axis] : 1))
      return false;
  }
  return true;
}

/// The axis of a bias the epilogue of a `kind` step adds (fuse_epilogues): a Conv's channels,
/// a MatMul's columns.
std::size_t bias_axis(OpKind kind, const Shape& y) {
  return kind == OpKind::Conv ? 1 : y.size() - 1;
}

/// The (keep, scale) of an in-place update of input 0 by input 1 that can fold into a matmul.
std::optional<StepFusion::Update> update_of(const IrView& ir, OpId op) {
  switch (ir.kind(op)) {
  case OpKind::AddInplace:
    return StepFusion::Update{1.0, 1.0};
  case OpKind::ScaledAddInplace: {
    const auto& s = ir.attrs_as<ScalarAttrs>(op);
    return StepFusion::Update{s.a, s.b};
  }
  case OpKind::Accumulate:
    return StepFusion::Update{1.0, ir.attrs_as<ScalarAttrs>(op).a};
  default:
    return std::nullopt;
  }
}

/// Lets steps read past the single-input steps `is_view` picks (a Reshape, a Transpose):
/// input k of step j, produced by such a step t, reads t's input instead when
/// `reads_in_place(j, k, t)` says it may (after noting how in the step's fusion). Views left
/// with no readers are removed, and values nothing uses any more are dropped.
template <typename IsView, typename ReadsInPlace>
void read_views_in_place(FlatSchedule& schedule, IsView is_view, ReadsInPlace reads_in_place) {
  auto& steps = schedule.steps;
  const std::size_t none = steps.size();
  // The step that produced each value last, when that step is a view.
  std::vector<std::size_t> view_of(schedule.values.size(), none);
  std::vector<std::size_t> readers = count_readers(schedule);
  std::vector<bool> lost_reader(steps.size(), false); // views a reader now bypasses
  for (std::size_t j = 0; j < steps.size(); ++j) {
    for (std::size_t k = 0; k < steps[j].inputs.size(); ++k) {
      const std::size_t t = view_of[steps[j].inputs[k]];
      if (t == none || !reads_in_place(j, k, t))
        continue;
      const std::size_t source = steps[t].inputs[0], view = steps[t].outputs[0];
      steps[j].inputs[k] = source;
      --readers[view];
      ++readers[source];
      lost_reader[t] = true;
    }
    // A value written here no longer holds what an earlier view produced.
    for (auto v : steps[j].outputs)
      view_of[v] = is_view(steps[j]) ? j : none;
  }
  if (std::ranges::none_of(lost_reader, [](bool b) { return b; }))
    return;
  std::vector<bool> removed(steps.size(), false);
  for (std::size_t i = 0; i < steps.size(); ++i)
    removed[i] = lost_reader[i] && readers[steps[i].outputs[0]] == 0;
  compact(schedule, removed);
}

} // namespace

void fuse_reshapes(const IrView& ir, FlatSchedule& schedule) {
  const auto& steps = schedule.steps;
  read_views_in_place(
      schedule,
      [&](const FlatStep& step) { return !step.is_copy() && ir.kind(*step.op) == OpKind::Reshape; },
      [&](std::size_t j, std::size_t, std::size_t t) {
        const FlatStep& step = steps[j];
        const std::size_t source = steps[t].inputs[0], reshaped = steps[t].outputs[0];
        return !step.is_copy() && ir.callees(*step.op).empty() &&
               schedule.values[source].ipu == step.ipu && !may_write(ir, step, reshaped) &&
               !may_write(ir, step, source) &&
               unchanged_between(ir, steps, t, j, {source, reshaped});
      });
}

namespace {

/// Whether `op` computes as a plain product does: not a MatMul or convolution with float16
/// partials, or a MatMul's float32 result of float16 operands (kernels/matmul_partials.hpp,
/// kernels/conv_partials.hpp), which takes no epilogue and no update.
bool has_plain_partials(const IrView& ir, OpId op) {
  switch (ir.kind(op)) {
  case OpKind::MatMul:
    return ir.attrs_as<MatMulAttrs>(op).partials_type == float32 &&
           ir.spec(ir.outputs(op)[0]).dtype == ir.spec(ir.inputs(op)[0]).dtype;
  case OpKind::Conv:
  case OpKind::ConvTranspose:
  case OpKind::ConvWeightsGrad:
    return ir.attrs_as<ConvAttrs>(op).partials_type == float32;
  default:
    return true;
  }
}

} // namespace

void fuse_transposes(const IrView& ir, FlatSchedule& schedule) {
  auto& steps = schedule.steps;
  read_views_in_place(
      schedule,
      [&](const FlatStep& step) { return !step.is_copy() && swaps_last_two(ir, *step.op); },
      [&](std::size_t j, std::size_t k, std::size_t t) {
        FlatStep& step = steps[j];
        const std::size_t source = steps[t].inputs[0], transposed = steps[t].outputs[0];
        if (step.is_copy() || ir.kind(*step.op) != OpKind::MatMul || k >= 2 ||
            schedule.values[source].ipu != step.ipu ||
            !unchanged_between(ir, steps, t, j, {source, transposed}))
          return false;
        step.fusion.transposed_inputs |= 1u << k;
        return true;
      });
}

void fuse_epilogues(const IrView& ir, FlatSchedule& schedule) {
  auto& steps = schedule.steps;
  const std::size_t none = steps.size();
  const std::vector<std::size_t> readers = count_readers(schedule);
  // The Conv or MatMul step (with what it has absorbed so far) that wrote each value.
  std::vector<std::size_t> producer_of(schedule.values.size(), none);
  std::vector<bool> removed(steps.size(), false);
  // Whether `step` at `j`, an Add or Relu, can absorb its input `k`'s producer `c`.
  auto absorbs = [&](std::size_t j, std::size_t k, std::size_t c) {
    const FlatStep& step = steps[j];
    const FlatStep& conv = steps[c];
    const OpId op = *step.op;
    const std::size_t y = step.inputs[k];
    if (readers[y] != 1 || conv.ipu != step.ipu || conv.fusion.relu ||
        ir.spec(ir.outputs(op)[0]) != ir.spec(ir.inputs(op)[k]))
      return false;
    if (ir.kind(op) == OpKind::Add) {
      const std::size_t bias = step.inputs[1 - k];
      const TensorSpec& b = ir.spec(ir.inputs(op)[1 - k]);
      const Shape& y_shape = ir.spec(ir.inputs(op)[k]).shape;
      if (conv.fusion.bias || bias == y || b.dtype != ir.spec(ir.inputs(op)[k]).dtype ||
          !per_index_of(b.shape, y_shape, bias_axis(ir.kind(*conv.op), y_shape)))
        return false;
    }
    // The merged step runs here: what the producer (and a bias it took) reads must hold the
    // same values as where it was.
    for (auto v : conv.inputs)
      if (!unchanged_between(ir, steps, c, j, {v}))
        return false;
    return true;
  };
  for (std::size_t j = 0; j < steps.size(); ++j) {
    FlatStep& step = steps[j];
    const OpKind kind = step.is_copy() ? OpKind::Identity : ir.kind(*step.op);
    if (kind == OpKind::Add || kind == OpKind::Relu) {
      for (std::size_t k = 0; k < (kind == OpKind::Add ? 2u : 1u); ++k) {
        const std::size_t c = producer_of[step.inputs[k]];
        if (c == none || !absorbs(j, k, c))
          continue;
        // The producer moves here, writing the Add's or Relu's result.
        FlatStep merged = std::move(steps[c]);
        if (kind == OpKind::Add) {
          merged.inputs.push_back(step.inputs[1 - k]);
          merged.fusion.bias = true;
        } else {
          merged.fusion.relu = true;
        }
        merged.outputs = step.outputs;
        step = std::move(merged);
        removed[c] = true;
        break;
      }
    }
    // A value written here is a producer's result only if this is a float Conv or MatMul
    // (with transposes read in place, an epilogue so far, or neither) without an empty tensor.
    const OpKind written_by = step.is_copy() ? OpKind::Identity : ir.kind(*step.op);
    const bool producer = (written_by == OpKind::Conv || written_by == OpKind::MatMul) &&
                          has_no_empty_tensor(ir, *step.op) && has_plain_partials(ir, *step.op) &&
                          (ir.spec(ir.outputs(*step.op)[0]).dtype == float32 ||
                           ir.spec(ir.outputs(*step.op)[0]).dtype == float16);
    for (auto v : step.outputs)
      producer_of[v] = producer ? j : none;
  }
  if (std::ranges::any_of(removed, [](bool r) { return r; }))
    compact(schedule, removed);
}

void fuse_product_updates(const IrView& ir, FlatSchedule& schedule, bool fold_float16) {
  auto& steps = schedule.steps;
  const std::size_t none = steps.size();
  const std::vector<std::size_t> readers = count_readers(schedule);
  // The MatMul or ConvWeightsGrad step that wrote each value.
  std::vector<std::size_t> product_of(schedule.values.size(), none);
  std::vector<bool> removed(steps.size(), false);
  // float32 and float16 products fold (float16 computing the update in float, then rounding).
  auto is_float = [&](TensorId t) {
    const DType d = ir.spec(t).dtype;
    return d == float32 || (d == float16 && fold_float16);
  };
  // A float32 product scaled by a float32 scalar tensor (w -= lr·g with lr a tensor): the
  // Mul step, and the value of the scalar.
  struct Scaled {
    std::size_t mul, scalar, product, matmul;
  };
  std::vector<std::optional<Scaled>> scaled_of(schedule.values.size());
  auto is_scalar = [&](std::size_t v) {
    const TensorSpec& spec = ir.spec(schedule.values[v].tensor);
    return spec.dtype == float32 && spec.nelms() == 1;
  };
  // Whether step `j` multiplies a float32 matmul product (read by it alone) by a float32
  // scalar tensor, giving the product's shape.
  auto scales_product = [&](std::size_t j) -> std::optional<Scaled> {
    const FlatStep& step = steps[j];
    if (step.is_copy() || ir.kind(*step.op) != OpKind::Mul ||
        ir.spec(ir.outputs(*step.op)[0]).dtype != float32)
      return std::nullopt;
    for (std::size_t k = 0; k < 2; ++k) {
      const std::size_t product = step.inputs[k], scalar = step.inputs[1 - k];
      if (product_of[product] != none && readers[product] == 1 && is_scalar(scalar) &&
          ir.spec(ir.outputs(*step.op)[0]).shape == ir.spec(ir.inputs(*step.op)[k]).shape)
        return Scaled{j, scalar, product, product_of[product]};
    }
    return std::nullopt;
  };
  // The product step that update step `j` (of `op`) can absorb, or none.
  auto foldable = [&](std::size_t j, OpId op) {
    const FlatStep& step = steps[j];
    const std::size_t target = step.inputs[0];
    std::size_t product = step.inputs[1];
    std::size_t m = product_of[product];
    // Through a Mul by a scalar tensor: the update then reads the scalar, which must hold the
    // same value there, and the product is the Mul's.
    if (const auto& s = scaled_of[product]) {
      if (readers[product] != 1 || s->scalar == target ||
          !unchanged_between(ir, steps, s->mul, j, {s->scalar}))
        return none;
      product = s->product;
      m = s->matmul;
    }
    const auto op_inputs = ir.inputs(op);
    if (m == none || readers[product] != 1 || !is_float(op_inputs[0]) ||
        ir.spec(op_inputs[0]).dtype != ir.spec(op_inputs[1]).dtype ||
        ir.spec(op_inputs[0]).shape != ir.spec(op_inputs[1]).shape ||
        std::ranges::find(steps[m].inputs, target) != steps[m].inputs.end() ||
        steps[m].ipu != step.ipu ||
        !unchanged_between(ir, steps, m, j, {steps[m].inputs[0], steps[m].inputs[1]}))
      return none;
    return m;
  };
  for (std::size_t j = 0; j < steps.size(); ++j) {
    FlatStep& step = steps[j];
    if (!step.is_copy()) {
      if (auto update = update_of(ir, *step.op)) {
        if (const std::size_t m = foldable(j, *step.op); m != none) {
          // The update's output aliases its input 0: the merged step writes the same value.
          const std::optional<Scaled> scaled = scaled_of[step.inputs[1]];
          FlatStep merged = std::move(steps[m]);
          merged.outputs = {step.inputs[0]};
          if (scaled) {
            merged.inputs.push_back(scaled->scalar);
            update->scaled_by_input = true;
            removed[scaled->mul] = true;
          }
          merged.fusion.update = update;
          merged.ipu = step.ipu;
          step = std::move(merged);
          removed[m] = true;
        }
      }
    }
    const std::optional<Scaled> scaled = scales_product(j);
    // A value written here holds a float product only if this is a MatMul or ConvWeightsGrad
    // without an update (a convolution's weight gradient, without an empty tensor).
    const OpKind kind = step.is_copy() ? OpKind::Identity : ir.kind(*step.op);
    const bool product = (kind == OpKind::MatMul ||
                          (kind == OpKind::ConvWeightsGrad && has_no_empty_tensor(ir, *step.op))) &&
                         !step.fusion.update && !step.fusion.bias && !step.fusion.relu &&
                         has_plain_partials(ir, *step.op) && is_float(ir.outputs(*step.op)[0]);
    for (auto v : step.outputs) {
      product_of[v] = product ? j : none;
      scaled_of[v] = scaled;
    }
  }
  if (std::ranges::any_of(removed, [](bool r) { return r; }))
    compact(schedule, removed);
}

void fuse_all_reduce_updates(const IrView& ir, FlatSchedule& schedule) {
  auto& steps = schedule.steps;
  const std::size_t none = steps.size();
  const std::vector<std::size_t> readers = count_readers(schedule);
  std::vector<std::size_t> reduce_of(schedule.values.size(), none); // the step that wrote it
  std::vector<bool> removed(steps.size(), false);
  // Whether `op` is a float32 add or mean all-reduce that really reduces in the forward.
  auto foldable_reduce = [&](OpId op) {
    if (ir.kind(op) != OpKind::ReplicatedAllReduce || ir.spec(ir.inputs(op)[0]).dtype != float32)
      return false;
    const auto& a = ir.attrs_as<CollectiveAttrs>(op);
    return a.variant != AllReduceVariant::identical_inputs &&
           (a.op == CollectiveOperator::add || a.op == CollectiveOperator::mean);
  };
  for (std::size_t j = 0; j < steps.size(); ++j) {
    FlatStep& step = steps[j];
    if (!step.is_copy() && ir.kind(*step.op) == OpKind::ScaledAddInplace) {
      const auto op_inputs = ir.inputs(*step.op);
      const std::size_t target = step.inputs[0], product = step.inputs[1];
      const std::size_t m = reduce_of[product];
      if (m != none && readers[product] == 1 && ir.spec(op_inputs[0]).dtype == float32 &&
          ir.spec(op_inputs[0]).shape == ir.spec(op_inputs[1]).shape &&
          steps[m].inputs[0] != target && steps[m].ipu == step.ipu &&
          unchanged_between(ir, steps, m, j, {steps[m].inputs[0]})) {
        const auto& s = ir.attrs_as<ScalarAttrs>(*step.op);
        FlatStep merged = std::move(steps[m]);
        merged.inputs = {merged.inputs[0], target};
        merged.outputs = {target};
        merged.fusion.update = StepFusion::Update{s.a, s.b};
        step = std::move(merged);
        removed[m] = true;
      }
    }
    const bool reduced = !step.is_copy() && !step.is_fused() && foldable_reduce(*step.op);
    for (auto v : step.outputs)
      reduce_of[v] = reduced ? j : none;
  }
  if (std::ranges::any_of(removed, [](bool r) { return r; }))
    compact(schedule, removed);
}

} // namespace pxl::emu::detail
