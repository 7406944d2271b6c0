// The array a run reads an h2d stream from: borrowed or owned, never copied.
#pragma once

#include "pxl/core/host_tensor.hpp"

#include <memory>
#include <span>
#include <utility>

namespace pxl {

/// A HostTensor handed to Session::run. Given as an lvalue it is borrowed (it must outlive the
/// run, as a NumPy array passed to PopXL's session.run does); given as a temporary it is moved
/// in and owned. Either way no element is copied: a device loop's [N, ...] arrays cost nothing
/// per run. Copies of an InputArray borrow or share the same array.
class InputArray {
public:
  InputArray(const HostTensor& borrowed) : array_(&borrowed) {}
  InputArray(HostTensor&& owned)
      : owned_(std::make_shared<const HostTensor>(std::move(owned))), array_(owned_.get()) {}

  const HostTensor& get() const { return *array_; }
  operator const HostTensor&() const { return *array_; }
  const TensorSpec& spec() const { return array_->spec(); }
  const Shape& shape() const { return array_->shape(); }
  DType dtype() const { return array_->dtype(); }
  std::span<const std::byte> bytes() const { return array_->bytes(); }

  /// Whether the array is borrowed (and so must outlive the run).
  bool borrowed() const { return owned_ == nullptr; }
  /// An owning InputArray with a copy of a borrowed array (itself when already owning).
  InputArray owned() const { return borrowed() ? InputArray(HostTensor(*array_)) : *this; }

private:
  std::shared_ptr<const HostTensor> owned_;
  const HostTensor* array_;
};

} // namespace pxl
