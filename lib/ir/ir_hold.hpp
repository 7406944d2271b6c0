// What a Session keeps of its Ir: the storage, alive even if the Ir is destroyed first, and
// a freeze on changes for as long as the hold lives.
#pragma once

#include "pxl/ir/view.hpp"

#include <memory>

namespace pxl::detail {

/// Freezes `ir` (every later change to it throws GraphError naming what was attempted, as
/// PopXL's "The Ir is already prepared" does) and shares ownership of its storage, so views
/// and handles stay readable after the Ir itself is gone. Movable; a moved-from hold does
/// nothing. The freeze ends when the last hold on the Ir ends.
class IrHold {
public:
  explicit IrHold(const Ir& ir);
  IrHold(IrHold&&) noexcept = default;
  IrHold& operator=(IrHold&&) noexcept;
  IrHold(const IrHold&) = delete;
  IrHold& operator=(const IrHold&) = delete;
  ~IrHold();

  IrView view() const;
  /// The Ir, or null once it has been destroyed (or moved from).
  Ir* ir() const;

private:
  std::shared_ptr<IrStorage> storage_;
};

} // namespace pxl::detail
