// pxl::addons::Dropout: seeded dropout as a module.
#pragma once

#include "pxl/addons/module/module.hpp"

namespace pxl::addons {

/// Dropout with an explicit seed, as PopXL's `ops.dropout`: while `training` (and not traced
/// in TrainingMode(false), as Trainer's evaluation and prediction are), each element
/// is zeroed with probability `p` and the others are scaled by 1/(1 − p); the mask is a
/// function of the uint32[2] seed and the element index only (the same seed drops the same
/// elements; chain seeds with `ops::split_random_seed` for fresh masks). When `p == 0` or not
/// `training` it is the identity (an Identity op, so the graph keeps an output distinct from
/// its input) and the seed is unused. No variables.
///
///     PXL_SUBMODULE(Dropout, drop, 0.1);
///     Tensor build(Tensor x, Tensor seed) { return drop(fc(x), seed); }
class Dropout : public Module<Dropout> {
public:
  /// ValueError unless 0 ≤ p < 1.
  explicit Dropout(double p, bool training = true);

  /// x floating point (DTypeError otherwise), seed uint32 of shape (2,) (DTypeError /
  /// ShapeError otherwise, checked in every mode so a graph does not break when switched to
  /// training).
  Tensor build(const Tensor& x, const Tensor& seed);

  double p;
  bool training;
};

} // namespace pxl::addons
