#include "ir/ir_hold.hpp"
#include "ir/handle_access.hpp"

namespace pxl::detail {

IrHold::IrHold(const Ir& ir) : storage_(HandleAccess::shared_storage(ir)) {
  if (!storage_)
    throw SessionError("Session: the Ir was moved from; create the Session from the Ir it was "
                       "moved to");
  storage_->holds.fetch_add(1, std::memory_order_relaxed);
}

IrHold& IrHold::operator=(IrHold&& other) noexcept {
  if (this != &other) {
    if (storage_)
      storage_->holds.fetch_sub(1, std::memory_order_relaxed);
    storage_ = std::move(other.storage_);
  }
  return *this;
}

IrHold::~IrHold() {
  if (storage_)
    storage_->holds.fetch_sub(1, std::memory_order_relaxed);
}

IrView IrHold::view() const {
  PXL_ASSERT(storage_ != nullptr);
  return HandleAccess::view(storage_.get());
}

Ir* IrHold::ir() const { return storage_ ? storage_->owner : nullptr; }

} // namespace pxl::detail
