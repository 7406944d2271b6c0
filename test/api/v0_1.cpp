// A program written against pxl 0.1's API, as its users wrote it: it must keep compiling, with
// deprecation warnings only (this file is built with -Wno-error=deprecated-declarations), and
// compute what it computed then. What 0.1 spelled differently is listed in CHANGELOG.md.
#include <pxl/addons.hpp>
#include <pxl/pxl.hpp>

#include <doctest/doctest.h>

namespace {

/// 0.1's SGD step on one variable: `scaled_add_(w, grad, 1.0, -lr)`, positional factors.
pxl::HostTensor sgd_step_0_1(const pxl::HostTensor& w0, const pxl::HostTensor& g, double lr) {
  pxl::Ir ir;
  pxl::Tensor w;
  {
    auto in_main = ir.main_graph().scope();
    w = pxl::variable(w0, "w");
    auto grad = pxl::constant(g, "grad");
    pxl::ops::scaled_add_(w, grad, 1.0, -lr);
  }
  pxl::Session session{ir, "ipu_model"};
  auto attached = session.attach();
  session.run();
  return session.get_tensor_data(w);
}

} // namespace

TEST_CASE("0.1: lesson 1's graph (matmul, a scalar added) still builds and runs") {
  pxl::Ir ir;
  pxl::HostToDeviceStream x_stream;
  pxl::DeviceToHostStream y_stream;
  {
    auto in_main = ir.main_graph().scope();
    x_stream = pxl::h2d_stream({2, 2}, pxl::float32, "x");
    auto x = pxl::ops::host_load(x_stream, "x");
    auto w = pxl::variable(pxl::HostTensor({1.f, 2.f, 3.f, 4.f}, {2, 2}), "w");
    y_stream = pxl::d2h_stream({2, 2}, pxl::float32, "y");
    pxl::ops::host_store(y_stream, pxl::ops::matmul(x, w) + 1.0);
  }
  pxl::Session session{ir, "ipu_model"};
  auto attached = session.attach();
  const auto out = session.run({{x_stream, pxl::HostTensor({1.f, 0.f, 0.f, 1.f}, {2, 2})}});
  CHECK(out.at(y_stream) == pxl::HostTensor({2.f, 3.f, 4.f, 5.f}, {2, 2}));
}

TEST_CASE("0.1: scaled_add_(w, g, a, b) with positional factors is a·w + b·g, in place") {
  const pxl::HostTensor w({1.f, -2.f, 0.5f}, {3});
  const pxl::HostTensor g({0.5f, 1.f, -4.f}, {3});
  CHECK(sgd_step_0_1(w, g, 0.25) == pxl::HostTensor({0.875f, -2.25f, 1.5f}, {3}));
}

TEST_CASE("0.1: scaled_add(x, y, a, b) with positional factors is a·x + b·y") {
  pxl::Ir ir;
  pxl::DeviceToHostStream out;
  {
    auto in_main = ir.main_graph().scope();
    auto x = pxl::constant(pxl::HostTensor({1.f, 2.f}, {2}), "x");
    auto y = pxl::constant(pxl::HostTensor({10.f, -1.f}, {2}), "y");
    out = pxl::d2h_stream({2}, pxl::float32, "out");
    pxl::ops::host_store(out, pxl::ops::scaled_add(x, y, 2.0, 0.5));
  }
  pxl::Session session{ir, "ipu_model"};
  auto attached = session.attach();
  CHECK(session.run().at(out) == pxl::HostTensor({7.f, 3.5f}, {2}));
}

TEST_CASE("0.1: an optimizer's learning rate reads as a double") {
  const pxl::addons::optimizers::SGDOptions sgd{.lr = 0.05};
  const double lr = sgd.lr;
  CHECK(lr == 0.05);
}
