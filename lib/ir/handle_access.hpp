// detail::HandleAccess: the one way lib/ makes handles from arena ids and reaches the arena
// behind a handle. Handles have no public constructor from the arena and no storage().
#pragma once

#include "ir/ir_storage.hpp"
#include "pxl/ir/ir.hpp"
#include "pxl/ir/remote_buffer.hpp"
#include "pxl/ir/view.hpp"

#include <memory>
#include <string_view>

namespace pxl::detail {

struct HandleAccess {
  /// The arena behind a Tensor, Op, Graph or stream handle (null for an empty handle).
  template <typename Handle>
  static IrStorage* storage(const Handle& h) {
    return h.ir_;
  }
  /// The arena of an Ir (null for a moved-from Ir).
  static IrStorage* storage(const Ir& ir) { return ir.storage_.get(); }
  static const std::shared_ptr<IrStorage>& shared_storage(const Ir& ir) { return ir.storage_; }

  static Tensor tensor(IrStorage* ir, TensorId t) { return Tensor(ir, t.value); }
  static Op op(IrStorage* ir, OpId o) { return Op(ir, o.value); }
  static Graph graph(IrStorage* ir, GraphId g) { return Graph(ir, g.value); }
  static HostToDeviceStream h2d_stream(IrStorage* ir, StreamId s) {
    return HostToDeviceStream(ir, s.value);
  }
  static DeviceToHostStream d2h_stream(IrStorage* ir, StreamId s) {
    return DeviceToHostStream(ir, s.value);
  }
  static RemoteBuffer remote_buffer(IrStorage* ir, RemoteBufferId b) {
    return RemoteBuffer(ir, b.value);
  }
  static IrView view(const IrStorage* ir) { return IrView(ir); }

  /// The Ir owning `ir`; GraphError naming `what` once that Ir has been destroyed (a Session
  /// may keep the arena alive longer than the Ir).
  static Ir& ir(const IrStorage& ir, std::string_view what);
};

} // namespace pxl::detail
