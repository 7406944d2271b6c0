// KernelOp: what a kernel sees of the op it compiles, read through the IrView.
#pragma once

#include "pxl/ir/view.hpp"

#include <cstddef>
#include <string>

namespace pxl::emu::detail {

/// One of the op's tensors: its spec, nothing more.
class KernelTensor {
public:
  KernelTensor(const IrView& view, TensorId id) : spec_(&view.spec(id)) {}
  const TensorSpec& spec() const { return *spec_; }
  const Shape& shape() const { return spec_->shape; }
  DType dtype() const { return spec_->dtype; }
  std::int64_t rank() const { return spec_->rank(); }
  std::int64_t nelms() const { return spec_->nelms(); }

private:
  const TensorSpec* spec_;
};

/// The op a kernel is compiled for: kind, attributes and the specs of its tensors. Valid while
/// the compile function runs; kernels keep what they need by value.
class KernelOp {
public:
  KernelOp(const IrView& view, OpId id) : view_(view), id_(id) {}
  OpId id() const { return id_; }
  OpKind kind() const { return view_.kind(id_); }
  std::size_t num_inputs() const { return view_.inputs(id_).size(); }
  std::size_t num_outputs() const { return view_.outputs(id_).size(); }
  KernelTensor input(std::size_t i) const { return {view_, view_.inputs(id_)[i]}; }
  KernelTensor output(std::size_t i) const { return {view_, view_.outputs(id_)[i]}; }
  /// The attributes of an op of kind `K`, typed by its op table row.
  template <OpKind K>
  const op_attrs_t<K>& attrs() const {
    PXL_ASSERT(kind() == K);
    return view_.attrs_as<op_attrs_t<K>>(id_);
  }
  template <typename A>
  const A& attrs_as() const {
    return view_.attrs_as<A>(id_);
  }
  /// "MatMul.101", as print_schedule shows the op.
  std::string debug_name() const {
    return std::string(op_type_name(kind())) + "." + std::to_string(id_.value);
  }

private:
  const IrView& view_;
  OpId id_;
};

} // namespace pxl::emu::detail
