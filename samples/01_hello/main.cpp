// Lesson 1: build a graph, print its schedule and run it on the built-in IPU emulator.
#include <pxl/pxl.hpp>

#include <iostream>

int main() {
  pxl::Ir ir;
  pxl::HostToDeviceStream x_stream;
  pxl::DeviceToHostStream y_stream;
  pxl::Tensor w;
  {
    // `with ir.main_graph:` — ops created in this scope go to the main graph.
    auto in_main = ir.main_graph().scope();
    x_stream = pxl::h2d_stream({2, 2}, pxl::float32, "x");
    auto x = pxl::ops::host_load(x_stream, "x");
    w = pxl::variable(pxl::HostTensor({1.f, 2.f, 3.f, 4.f}, {2, 2}), "w");
    auto y = pxl::ops::matmul(x, w) + 1.0;
    y_stream = pxl::d2h_stream({2, 2}, pxl::float32, "y");
    pxl::ops::host_store(y_stream, y);
  }
  std::cout << ir.main_graph().print_schedule() << "\n";

  // Compiling happens here; running needs an attachment (`with session:`).
  pxl::Session session{ir, "ipu_model"};
  auto attached = session.attach();
  const auto out = session.run({{x_stream, pxl::HostTensor({1.f, 0.f, 0.f, 1.f}, {2, 2})}});
  std::cout << "y = " << out.at(y_stream) << "\n";
  std::cout << "w = " << session.get_tensor_data(w) << "\n";
}
