// pxl::Session: the public face of the emulator's Engine.
#include "pxl/session.hpp"
#include "engine.hpp"

#include "dist/instance_layout.hpp"
#include "pxl/core/error.hpp"
#include "pxl/dist.hpp"

#include <algorithm>
#include <fstream>

namespace pxl {

namespace {
/// The IPU Model sizes the system from the Ir: the next power of two of the IPUs it uses.
emu::Target target_for(const Ir& ir, std::string_view device) {
  if (device == "ipu_hw")
    throw SessionError("Session: device \"ipu_hw\" needs IPU hardware, which pxl does not "
                       "drive; use \"ipu_model\", the built-in emulator");
  if (device != "ipu_model" && device != "cpu")
    throw SessionError("Session: unknown device \"" + std::string(device) +
                       "\"; use \"ipu_model\" (the built-in emulator) or pass an emu::Target");
  const IrView view(ir);
  std::int64_t used = 1;
  for (std::uint32_t o = 0; o < view.num_ops(); ++o)
    used = std::max(used, view.ipu(OpId{o}) + 1);
  emu::Target t = emu::ipu2();
  while (t.ipus < used)
    t.ipus *= 2;
  return t;
}
} // namespace

Session::Attachment::~Attachment() {
  if (auto engine = engine_.lock())
    engine->detach();
}

Session::Session(Ir& ir, std::string_view device, SessionOptions options)
    : Session(ir, target_for(ir, device), options) {}
Session::Session(Ir& ir, emu::Target target, SessionOptions options)
    : engine_(
          std::make_shared<emu::detail::Engine>(ir, std::move(target), options,
                                                options.distributed && dist::num_instances() > 1
                                                    ? std::optional(dist::detail::current_layout())
                                                    : std::nullopt)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

emu::detail::Engine& Session::engine() const {
  if (!engine_)
    throw SessionError("Session: this session was moved from; use the session it was moved to");
  return *engine_;
}

Session::Attachment Session::attach() {
  engine().attach();
  return Attachment(engine_);
}
bool Session::is_attached() const { return engine().attached(); }

StreamOutputs Session::run(const StreamInputs& inputs, emu::StepObserver* observer) {
  StreamOutputs outputs;
  engine().run(inputs, outputs, false, observer);
  return outputs;
}
void Session::run_with_outputs(const StreamInputs& inputs, StreamOutputs& outputs,
                               emu::StepObserver* observer) {
  engine().run(inputs, outputs, true, observer);
}
std::future<StreamOutputs> Session::run_async(StreamInputs inputs, emu::StepObserver* observer) {
  return engine().run_async(std::move(inputs), observer);
}
std::vector<HostToDeviceStream> Session::expected_inputs() const {
  return engine().expected_inputs();
}
StreamOutputs Session::create_host_outputs() const { return engine().create_host_outputs(); }

void Session::set_h2d_callback(const HostToDeviceStream& stream, H2DCallback fn,
                               FeedOptions options) {
  engine().set_h2d_callback(stream, std::move(fn), options);
}
void Session::set_d2h_callback(const DeviceToHostStream& stream, D2HCallback fn,
                               OutfeedOptions options) {
  engine().set_d2h_callback(stream, std::move(fn), options);
}
std::shared_ptr<OutfeedQueue> Session::outfeed_queue(const DeviceToHostStream& stream,
                                                     OutfeedOptions options) {
  return engine().outfeed_queue(stream, options);
}
void Session::set_outfeed_mode(const DeviceToHostStream& stream, OutfeedMode mode) {
  engine().set_outfeed_mode(stream, mode);
}
std::vector<FeedStats> Session::feed_stats() const { return engine().feed_stats(); }

HostTensor Session::get_tensor_data(const Tensor& t) {
  return std::move(engine().get_tensors_data({t}).begin()->second);
}
std::map<Tensor, HostTensor> Session::get_tensors_data(const std::vector<Tensor>& ts) {
  return engine().get_tensors_data(ts);
}
void Session::write_variable_data(const Tensor& t, const HostTensor& data) {
  engine().write_variables_data({{t, data}});
}
void Session::write_variables_data(const std::map<Tensor, HostTensor>& data) {
  engine().write_variables_data(data);
}
void Session::weights_to_host() { engine().weights_to_host(); }
void Session::weights_from_host() { engine().weights_from_host(); }
std::vector<ReplicaDrift> Session::check_replicas_in_sync() {
  return engine().check_replicas_in_sync();
}

emu::MemoryReport Session::memory_report() const { return engine().memory_report(); }
void Session::write_memory_report(const std::string& path) const {
  std::ofstream out(path);
  if (!out)
    throw IoError("Session::write_memory_report: cannot open '" + path + "' for writing");
  out << engine().memory_report().to_json() << '\n';
  if (!out.flush())
    throw IoError("Session::write_memory_report: writing '" + path + "' failed");
}
emu::Profile Session::profile() const { return engine().profile(); }
void Session::write_trace(const std::string& path) const { engine().write_trace(path); }
const emu::Target& Session::target() const { return engine().target(); }
unsigned Session::num_workers() const { return engine().num_workers(); }
Ir& Session::ir() const {
  Ir* ir = engine().ir();
  if (ir == nullptr)
    throw SessionError("Session::ir: the Ir this session was built from has been destroyed; "
                       "the session still runs on what it compiled");
  return *ir;
}

} // namespace pxl
