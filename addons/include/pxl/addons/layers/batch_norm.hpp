// pxl::addons::BatchNorm2D and BatchNormalization: batch normalisation, as PyTorch and Keras
// define it, with running statistics kept as state variables.
#pragma once

#include "pxl/addons/module/initializers.hpp"
#include "pxl/addons/module/module.hpp"

#include <cstdint>
#include <optional>

namespace pxl::addons {

/// BatchNorm2D's arguments, PyTorch's names and defaults:
/// `BatchNorm2D({.momentum = 0.01})`.
struct BatchNorm2DOptions {
  double eps = 1e-5;
  /// The weight of the batch's statistics in the running ones:
  /// running = (1 − momentum)·running + momentum·batch (PyTorch's convention).
  double momentum = 0.1;
  /// Whether there are a `weight` (γ, ones) and a `bias` (β, zeros).
  bool affine = true;
  /// The batch statistics over the batch of every replica (PyTorch's SyncBatchNorm): with it,
  /// R replicas of batch B normalise as one replica of batch R·B does. Off: each replica's own.
  bool synchronized = false;
  /// With `synchronized`: the statistics over groups of this many consecutive replicas rather
  /// than over all of them (TF's distributed batch norm group size, Graphcore's ResNet-50
  /// `BN_span`); 0: every replica. ValueError when negative or without `synchronized`, and at
  /// build unless it divides the replicas.
  std::int64_t replica_group_size = 0;
  /// The form to build: training (the batch's statistics, running ones updated) or inference
  /// (the running statistics). nullopt: the TrainingMode in force, ValueError outside one.
  std::optional<bool> training;
};

/// PyTorch's `BatchNorm2d` over (N, C, H, W): each channel normalised by its mean and variance,
/// then scaled and shifted: y = (x − mean) / sqrt(var + eps) · weight + bias.
///
/// Training form: mean and (biased) variance of the batch, over N, H and W; the running
/// statistics are then updated in place, the variance with Bessel's correction n / (n − 1),
/// n the values per channel (of every replica when synchronized), as PyTorch does. Inference
/// form: the running statistics. Trainer builds the first for training and the second for
/// evaluate and predict.
///
/// Variables: `weight` and `bias` (C) of x's dtype when affine; state variables
/// (add_state_variable_input) `running_mean` (zeros) and `running_var` (ones), float32
/// whatever x's dtype. Statistics are computed in float32 for a float16 x.
class BatchNorm2D : public Module<BatchNorm2D> {
public:
  /// ValueError for eps < 0 or a momentum outside [0, 1].
  explicit BatchNorm2D(BatchNorm2DOptions options = {});

  /// x: (N, C, H, W), float32 or float16 (ShapeError, DTypeError otherwise). ValueError when
  /// no form was chosen (options.training, or a TrainingMode).
  Tensor build(const Tensor& x);

  BatchNorm2DOptions options;
};

/// BatchNormalization's arguments, Keras's names and defaults:
/// `BatchNormalization({.axis = 1})` for a channels-first input.
struct BatchNormalizationOptions {
  /// The features axis (negative counts from the end): Keras's default, the last.
  std::int64_t axis = -1;
  /// The weight of the running statistics: moving = momentum·moving + (1 − momentum)·batch
  /// (Keras's convention, the opposite of PyTorch's).
  double momentum = 0.99;
  double epsilon = 1e-3;
  /// Whether there are a `bias` (β) and a `weight` (γ).
  bool center = true;
  bool scale = true;
  initializers::KerasInitializer beta_initializer = initializers::zeros();
  initializers::KerasInitializer gamma_initializer = initializers::ones();
  initializers::KerasInitializer moving_mean_initializer = initializers::zeros();
  initializers::KerasInitializer moving_variance_initializer = initializers::ones();
  /// As BatchNorm2DOptions::synchronized (Keras's `synchronized`).
  bool synchronized = false;
  /// As BatchNorm2DOptions::replica_group_size.
  std::int64_t replica_group_size = 0;
  /// As BatchNorm2DOptions::training (Keras's `training` call argument).
  std::optional<bool> training;
};

/// Keras's `BatchNormalization` over any input of rank ≥ 2: statistics over every axis but
/// `axis`. As BatchNorm2D, except that the moving variance is updated with the batch's biased
/// variance, as Keras does, and the defaults and momentum are Keras's. Variables: `weight`
/// (Keras's gamma), `bias` (beta), and the state variables `running_mean` (moving_mean) and
/// `running_var` (moving_variance).
class BatchNormalization : public Module<BatchNormalization> {
public:
  /// ValueError for epsilon < 0 or a momentum outside [0, 1].
  explicit BatchNormalization(BatchNormalizationOptions options = {});

  /// x of rank ≥ 2, float32 or float16; ShapeError for an axis out of range.
  Tensor build(const Tensor& x);

  BatchNormalizationOptions options;
};

} // namespace pxl::addons
