// Lesson 2: subgraphs. call runs a graph at a call site, call_with_info tells how the call
// site binds its tensors, repeat runs a graph in a loop that carries its outputs to its inputs.
#include <pxl/pxl.hpp>

#include <iostream>

int main() {
  pxl::Ir ir;
  pxl::HostToDeviceStream x_stream;
  pxl::DeviceToHostStream a_stream, b_stream, r_stream;
  pxl::Tensor calls;
  {
    auto in_main = ir.main_graph().scope();
    x_stream = pxl::h2d_stream({3}, pxl::float32, "x");
    auto x = pxl::ops::host_load(x_stream, "x");

    // A subgraph traced from a callable: every TensorSpec becomes a graph input.
    pxl::Graph affine = ir.create_graph(
        "affine", [](pxl::Tensor v, pxl::Tensor scale) { return v * scale + 1.0; },
        pxl::TensorSpec{{3}, pxl::float32}, pxl::TensorSpec{{}, pxl::float32});
    std::cout << affine.print_schedule() << "\n";

    auto two = pxl::constant(2.0, pxl::float32, "two");
    auto a = pxl::ops::call(affine, {x, two})[0];           // one compiled graph ...
    auto info = pxl::ops::call_with_info(affine, {a, two}); // ... called from two sites
    std::cout << "call site of " << info.called_graph().name() << ": graph input "
              << info.called_graph().inputs()[0].id() << " <- parent " << info.parent_input(0).id()
              << "\n";

    // A by-reference input: the subgraph's in-place update reaches the caller's variable.
    calls = pxl::variable(pxl::HostTensor::scalar(0.f), "calls");
    pxl::Graph count = ir.create_empty_graph("count");
    {
      auto in_count = count.scope();
      auto c = pxl::graph_input({}, pxl::float32, "c", /*by_ref=*/true);
      pxl::ops::add_(c, pxl::constant(1.0, pxl::float32));
    }
    pxl::ops::call(count, {calls});

    // repeat: (acc, v) -> acc / 2 + v, four times; acc is carried, v stays.
    pxl::Graph halve = ir.create_graph(
        "halve", [](pxl::Tensor acc, pxl::Tensor v) { return acc / 2.0 + v; },
        pxl::TensorSpec{{3}, pxl::float32}, pxl::TensorSpec{{3}, pxl::float32});
    auto r = pxl::ops::repeat(halve, 4, {x, info.parent_output(0)})[0];

    a_stream = pxl::d2h_stream({3}, pxl::float32, "a");
    b_stream = pxl::d2h_stream({3}, pxl::float32, "b");
    r_stream = pxl::d2h_stream({3}, pxl::float32, "r");
    pxl::ops::host_store(a_stream, a);
    pxl::ops::host_store(b_stream, info.parent_output(0));
    pxl::ops::host_store(r_stream, r);
  }

  pxl::Session session{ir, "ipu_model"};
  auto attached = session.attach();
  for (int step = 0; step < 2; ++step) {
    const auto out = session.run({{x_stream, pxl::HostTensor({0.f, 1.f, 2.f}, {3})}});
    std::cout << "run " << step << ": a = " << out.at(a_stream) << ", b = " << out.at(b_stream)
              << ", r = " << out.at(r_stream) << "\n";
  }
  std::cout << "calls = " << session.get_tensor_data(calls) << "\n";
}
