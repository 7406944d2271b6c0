// The Trainer's forward-only programs: evaluation (the batch's loss and accuracy) and
// prediction (the model's outputs).
#include "programs.hpp"

#include "model_io.hpp"

#include "pxl/addons/module/training_mode.hpp"
#include "pxl/addons/training/metrics.hpp"
#include "pxl/ir/ir.hpp"

namespace pxl::addons::trainer_detail {

void build_forward_program(Program& p, const CompileOptions& o, const TraceModel& trace,
                           const TensorSpec& x, const std::optional<TensorSpec>& y) {
  p.x_spec = x;
  {
    auto in_main = p.ir.main_graph().scope();
    p.x = h2d_stream(x.shape, x.dtype, "x");
    // The model's inference form: running statistics, no dropout.
    auto [factories, fwd] = [&] {
      const TrainingMode inference(false);
      return trace(model_spec(x, o.dtype));
    }();
    p.variables = factories.init("", o.seed);
    // The logits of a softmax output, which the loss reads instead: a second output.
    std::optional<Tensor> logits = y ? loss_logits(o, fwd.graph().outputs().at(0)) : std::nullopt;
    if (logits) {
      auto in_fwd = fwd.graph().scope();
      graph_output(*logits);
    }
    const std::vector<Tensor> outs =
        fwd.bind(p.variables).call({model_input(p.x, o.dtype)}, {}, {}, {.inline_graph = true});
    const Tensor& model_out = outs[0];
    auto on_last = ipu(model_out.ipu());
    const Tensor out = loss_input(model_out);
    if (y) {
      p.y = h2d_stream(y->shape, y->dtype, "y");
      const Tensor labels = pxl::ops::host_load(p.y);
      p.loss = d2h_stream({}, float32, "loss");
      const Tensor loss = logits ? loss_with_grad(o, loss_input(outs[1]), labels, 1.0, true).first
                                 : loss_with_grad(o, out, labels).first;
      pxl::ops::host_store(p.loss, loss);
      if (!o.metrics.empty()) {
        p.accuracy = d2h_stream({}, float32, "accuracy");
        pxl::ops::host_store(p.accuracy, sparse_categorical_accuracy(out, labels));
      }
    } else {
      p.out = d2h_stream(out.shape(), out.dtype(), "out");
      pxl::ops::host_store(p.out, out);
    }
  }
  p.session.emplace(p.ir, "ipu_model",
                    SessionOptions{.workers = o.workers,
                                   .engine_options = report_options(o, y ? "test" : "predict")});
  p.attached.emplace(p.session->attach());
}

} // namespace pxl::addons::trainer_detail
