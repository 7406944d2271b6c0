// detail::HandleAccess: the one way lib/ makes handles from arena ids and reaches the arena
// behind a handle. Handles have no public constructor from the arena and no storage().
#pragma once

#include "ir/handle_check.hpp"
#include "ir/ir_storage.hpp"
#include "pxl/ir/ir.hpp"
#include "pxl/ir/remote_buffer.hpp"
#include "pxl/ir/view.hpp"

#include <memory>
#include <string_view>

namespace pxl::detail {

struct HandleAccess {
  /// The arena behind a Tensor, Op, Graph, stream or remote buffer handle: null for an empty
  /// handle and for one whose Ir is gone (its slot has moved on to a later generation).
  template <typename Handle>
  static IrStorage* storage(const Handle& h) {
    return live(h.ref_);
  }
  /// The arena behind `h`; GraphError naming `call` and the handle's kind when there is none.
  template <typename Handle>
  static IrStorage& arena(const Handle& h, std::string_view call) {
    if (IrStorage* ir = live(h.ref_)) [[likely]]
      return *ir;
    throw_unusable(h, call);
  }
  /// The GraphError arena() throws for `h`, empty or with its Ir gone.
  template <typename Handle>
  [[noreturn]] static void throw_unusable(const Handle& h, std::string_view call) {
    throw_unusable_handle(kind(h), h.ref_.slot == nullptr, call);
  }
  /// Whether `h` is empty: default-constructed, not made for an Ir since gone.
  template <typename Handle>
  static bool empty(const Handle& h) {
    return h.ref_.slot == nullptr;
  }
  /// The arena of an Ir (null for a moved-from Ir).
  static IrStorage* storage(const Ir& ir) { return ir.storage_.get(); }
  static const std::shared_ptr<IrStorage>& shared_storage(const Ir& ir) { return ir.storage_; }

  static Tensor tensor(IrStorage* ir, TensorId t) { return Tensor(ref(ir, t.value)); }
  static Op op(IrStorage* ir, OpId o) { return Op(ref(ir, o.value)); }
  static Graph graph(IrStorage* ir, GraphId g) { return Graph(ref(ir, g.value)); }
  static HostToDeviceStream h2d_stream(IrStorage* ir, StreamId s) {
    return HostToDeviceStream(ref(ir, s.value));
  }
  static DeviceToHostStream d2h_stream(IrStorage* ir, StreamId s) {
    return DeviceToHostStream(ref(ir, s.value));
  }
  static RemoteBuffer remote_buffer(IrStorage* ir, RemoteBufferId b) {
    return RemoteBuffer(ref(ir, b.value));
  }
  static IrView view(const IrStorage* ir) { return IrView(ir); }

  /// The Ir owning `ir`; GraphError naming `what` once that Ir has been destroyed (a Session
  /// may keep the arena alive longer than the Ir).
  static Ir& ir(const IrStorage& ir, std::string_view what);

  static HandleKind kind(const Tensor&) { return HandleKind::tensor; }
  static HandleKind kind(const Graph&) { return HandleKind::graph; }
  static HandleKind kind(const Op&) { return HandleKind::op; }
  static HandleKind kind(const StreamHandle& s) {
    return s.host_to_device_ ? HandleKind::h2d_stream : HandleKind::d2h_stream;
  }
  static HandleKind kind(const RemoteBuffer&) { return HandleKind::remote_buffer; }

private:
  static IrStorage* live(const HandleRef& r) {
    if (r.slot == nullptr || r.slot->generation.load(std::memory_order_acquire) != r.generation)
      return nullptr;
    return r.slot->storage.load(std::memory_order_relaxed);
  }
  /// Element `index` of `ir` (null: an empty handle, as for a moved-from Ir).
  static HandleRef ref(const IrStorage* ir, std::uint32_t index) {
    return ir ? HandleRef{ir->slot, ir->generation, index} : HandleRef{nullptr, 0, index};
  }
};

} // namespace pxl::detail
