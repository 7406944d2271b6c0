// Test data and training steps shared by the addons' tests.
#pragma once

#include "pxl/addons.hpp"
#include "pxl/addons/ops/cross_entropy.hpp"
#include "pxl/pxl.hpp"

#include <cmath>
#include <cstddef>

namespace pxl::test_addons {

/// Deterministic, irregular float32 test data of `shape`: scale · sin(1.3 i + 0.4).
inline HostTensor ramp(Shape shape, double scale = 1.0) {
  HostTensor t(shape, float32);
  auto d = t.data<float>();
  for (std::size_t i = 0; i < d.size(); ++i)
    d[i] = static_cast<float>(scale * std::sin(1.3 * static_cast<double>(i) + 0.4));
  return t;
}

/// The classification tests' images: `rows` rows of `features` standard-normal floats (seed 11).
inline HostTensor normal_images(std::int64_t rows, std::int64_t features) {
  return addons::init::normal(0.0, 1.0, {rows, features})(float32, 11);
}

/// The classification tests' labels: (3 i + 1) mod `classes` for row i, int32.
inline HostTensor cyclic_labels(std::int64_t rows, std::int64_t classes) {
  std::vector<std::int32_t> v;
  for (std::int64_t i = 0; i < rows; ++i)
    v.push_back(static_cast<std::int32_t>((i * 3 + 1) % classes));
  return HostTensor(v, {rows});
}

/// `t` as a stream array of `n` elements: [n, *element] (the leading dim dropped when 1).
inline HostTensor transfers_of(const HostTensor& t, std::int64_t n) {
  if (n == 1)
    return t;
  Shape shape = t.shape();
  shape[0] /= n;
  shape.insert(shape.begin(), n);
  return t.reshaped(shape);
}

/// The gradients, under the weights' keys, of the mean cross-entropy of `fwd` bound to
/// `weights` on inputs x with labels y, through `bwd` (fwd's autodiff).
inline addons::NamedTensors cross_entropy_grads(const addons::GraphWithNamedArgs& fwd,
                                                const addons::GraphWithNamedArgs& bwd,
                                                const addons::NamedTensors& weights,
                                                const Tensor& x, const Tensor& y) {
  auto fwd_info = fwd.bind(weights).call_with_info({x});
  auto [loss, dlogits] = addons::ops::cross_entropy_with_grad(fwd_info.outputs()[0], y);
  auto bwd_info = bwd.call_with_info({dlogits}, {}, bwd.grad_graph_info().inputs_dict(fwd_info));
  return bwd.grads(bwd_info);
}

/// The host streams of a least-squares fit: inputs "x" [rows, features] and targets "t"
/// [rows, outputs] in, the mean squared error "loss" out.
struct LeastSquaresStreams {
  HostToDeviceStream x, t;
  DeviceToHostStream loss;
};

/// LeastSquaresStreams made in the current graph's Ir.
inline LeastSquaresStreams least_squares_streams(std::int64_t rows, std::int64_t features,
                                                 std::int64_t outputs) {
  return {.x = h2d_stream({rows, features}, float32, "x"),
          .t = h2d_stream({rows, outputs}, float32, "t"),
          .loss = d2h_stream({}, float32, "loss")};
}

/// Stores the mean of (y - t)² to `loss`, y the output of the call `fwd`, and returns the
/// gradients of the sum of squares (rows·outputs times the mean's: a learning rate folds the
/// factor in) for `vars`, through `bwd` (the called graph's autodiff) bound to them.
inline addons::NamedTensors squared_error_grads(const addons::GraphWithNamedArgs& bwd,
                                                const addons::NamedTensors& vars,
                                                const CallSiteInfo& fwd, const Tensor& t,
                                                const DeviceToHostStream& loss) {
  const Tensor diff = fwd.parent_output(0) - t;
  ops::host_store(loss, ops::mean(diff * diff));
  auto bwd_info =
      bwd.bind(vars).call_with_info({diff * 2.0}, {}, bwd.grad_graph_info().inputs_dict(fwd));
  return bwd.grads(bwd_info);
}

} // namespace pxl::test_addons
