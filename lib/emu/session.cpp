// pxl::Session: the public face of the emulator's Engine.
#include "pxl/session.hpp"
#include "engine.hpp"
#include "ir/handle_access.hpp"

#include "pxl/core/error.hpp"

#include <algorithm>

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
  std::int64_t used = 1;
  for (const auto& op : pxl::detail::HandleAccess::storage(ir)->ops)
    used = std::max(used, op.ipu + 1);
  emu::Target t = emu::ipu2();
  while (t.ipus < used)
    t.ipus *= 2;
  return t;
}
} // namespace

Session::Attachment::~Attachment() {
  if (engine_)
    engine_->detach();
}

Session::Session(Ir& ir, std::string_view device, SessionOptions options)
    : Session(ir, target_for(ir, device), options) {}
Session::Session(Ir& ir, emu::Target target, SessionOptions options)
    : engine_(std::make_unique<emu::detail::Engine>(ir, std::move(target), options)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

Session::Attachment Session::attach() {
  engine_->attach();
  return Attachment(engine_.get());
}
bool Session::is_attached() const { return engine_->attached(); }

StreamOutputs Session::run(const StreamInputs& inputs) {
  StreamOutputs outputs;
  engine_->run(inputs, outputs, false);
  return outputs;
}
void Session::run_with_outputs(const StreamInputs& inputs, StreamOutputs& outputs) {
  engine_->run(inputs, outputs, true);
}
std::future<StreamOutputs> Session::run_async(StreamInputs inputs) {
  return engine_->run_async(std::move(inputs));
}
std::vector<HostToDeviceStream> Session::expected_inputs() const {
  return engine_->expected_inputs();
}
StreamOutputs Session::create_host_outputs() const { return engine_->create_host_outputs(); }

void Session::set_h2d_callback(const HostToDeviceStream& stream, H2DCallback fn,
                               FeedOptions options) {
  engine_->set_h2d_callback(stream, std::move(fn), options);
}
void Session::set_d2h_callback(const DeviceToHostStream& stream, D2HCallback fn,
                               OutfeedOptions options) {
  engine_->set_d2h_callback(stream, std::move(fn), options);
}
std::shared_ptr<OutfeedQueue> Session::outfeed_queue(const DeviceToHostStream& stream,
                                                     OutfeedOptions options) {
  const std::size_t capacity = static_cast<std::size_t>(
      options.depth > 0 ? options.depth : engine_->options().stream_queue_depth);
  auto queue = std::make_shared<OutfeedQueue>(capacity);
  set_d2h_callback(
      stream, [queue](const HostTensor& element) { queue->push(element); }, options);
  return queue;
}
void Session::set_outfeed_mode(const DeviceToHostStream& stream, OutfeedMode mode) {
  engine_->set_outfeed_mode(stream, mode);
}
std::vector<FeedStats> Session::feed_stats() const { return engine_->feed_stats(); }

HostTensor Session::get_tensor_data(const Tensor& t) {
  return std::move(engine_->get_tensors_data({t}).begin()->second);
}
std::map<Tensor, HostTensor> Session::get_tensors_data(const std::vector<Tensor>& ts) {
  return engine_->get_tensors_data(ts);
}
void Session::write_variable_data(const Tensor& t, const HostTensor& data) {
  engine_->write_variables_data({{t, data}});
}
void Session::write_variables_data(const std::map<Tensor, HostTensor>& data) {
  engine_->write_variables_data(data);
}
void Session::weights_to_host() { engine_->weights_to_host(); }
void Session::weights_from_host() { engine_->weights_from_host(); }

emu::MemoryReport Session::memory_report() const { return engine_->memory_report(); }
const emu::Target& Session::target() const { return engine_->target(); }
unsigned Session::num_workers() const { return engine_->num_workers(); }
Ir& Session::ir() const { return engine_->ir(); }

} // namespace pxl
