// libFuzzer target: pxl::onnx::Model::parse on any bytes, and the graph it builds. An
// ImportError (any pxl::Error: a builder's refusal of a node) is the expected answer to a
// malformed or unsupported model; another exception, a crash, a hang or a sanitizer report is
// a bug, in pxl's importer or in what it hands to the ONNX library.
#include "pxl/ir/ir.hpp"
#include "pxl/onnx/import.hpp"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const auto model = pxl::onnx::Model::parse(std::as_bytes(std::span(data, size)),
                                               {.all_constants = true}, "fuzz input");
    pxl::Ir ir;
    auto in_main = ir.main_graph().scope();
    std::vector<pxl::Tensor> inputs;
    for (const auto& spec : model.inputs()) {
      pxl::Shape shape = spec.shape;
      for (auto& d : shape)
        d = d < 0 ? 1 : d;
      if (pxl::nelms(shape) > (1 << 16))
        return 0; // a constant input of that size would only test the allocator
      inputs.push_back(pxl::constant(pxl::HostTensor::full(shape, spec.dtype, 0.5)));
    }
    (void)model.build(inputs);
  } catch (const pxl::Error&) {
  }
  return 0;
}
