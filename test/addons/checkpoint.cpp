// save_checkpoint / load_checkpoint: a session's variables through a safetensors file.
#include "pxl/addons/training/checkpoint.hpp"
#include "pxl/addons/safetensors.hpp"
#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

using namespace pxl;
using pxl::addons::NamedTensors;

namespace {
/// w += x on every run: the variables change, so a checkpoint holds the trained values.
struct Trained {
  Ir ir;
  HostToDeviceStream x;
  NamedTensors variables;

  Trained() {
    auto in_main = ir.main_graph().scope();
    x = h2d_stream({2}, float32, "x");
    auto w = variable(HostTensor({1.f, 2.f}, {2}), "w");
    auto b = variable(HostTensor({3.f}, {1}), "b");
    ops::add_(w, ops::host_load(x));
    variables = NamedTensors::from_dict({{"layer.w", w}, {"layer.b", b}});
  }
};

std::filesystem::path temp_file(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("pxl_checkpoint_test_" + name);
}
} // namespace

TEST_CASE("A checkpoint saved from one session loads into another by name") {
  const auto path = temp_file("roundtrip.safetensors");
  Trained a;
  Session sa(a.ir, "ipu_model", {.workers = 1});
  {
    auto attached = sa.attach();
    sa.run({{a.x, HostTensor({10.f, 20.f}, {2})}});
    pxl::addons::save_checkpoint(sa, a.variables, path, {{"epoch", "1"}});
  }
  CHECK(pxl::addons::load_safetensors_metadata(path).at("epoch") == "1");
  Trained b;
  Session sb(b.ir, "ipu_model", {.workers = 1});
  pxl::addons::load_checkpoint(sb, b.variables, path);
  CHECK(sb.get_tensor_data(b.variables.at("layer.w")) == HostTensor({11.f, 22.f}, {2}));
  CHECK(sb.get_tensor_data(b.variables.at("layer.b")) == HostTensor({3.f}, {1}));
  std::filesystem::remove(path);
}

TEST_CASE("int8, int16 and uint16 variables round-trip through a checkpoint") {
  const auto path = temp_file("narrow.safetensors");
  const auto build = [](Ir& ir, const HostTensor& a, const HostTensor& b, const HostTensor& c) {
    auto in_main = ir.main_graph().scope();
    return NamedTensors::from_dict(
        {{"a", variable(a, "a")}, {"b", variable(b, "b")}, {"c", variable(c, "c")}});
  };
  const HostTensor a(std::vector<std::int8_t>{-128, 5, 127}, {3});
  const HostTensor b(std::vector<std::int16_t>{-32768, 32767}, {2, 1});
  const HostTensor c(std::vector<std::uint16_t>{65535}, {1});
  Ir ir1, ir2;
  const auto v1 = build(ir1, a, b, c);
  const auto v2 = build(ir2, a.astype(float32).astype(int8), HostTensor({2, 1}, int16),
                        HostTensor({1}, uint16));
  Session s1(ir1, "ipu_model", {.workers = 1});
  pxl::addons::save_checkpoint(s1, v1, path);
  CHECK(pxl::addons::load_safetensors(path).at("b") == b);
  Session s2(ir2, "ipu_model", {.workers = 1});
  pxl::addons::load_checkpoint(s2, v2, path);
  CHECK(s2.get_tensor_data(v2.at("a")) == a);
  CHECK(s2.get_tensor_data(v2.at("b")) == b);
  CHECK(s2.get_tensor_data(v2.at("c")) == c);
  std::filesystem::remove(path);
}

TEST_CASE("A checkpoint that does not match the variables is refused with their names") {
  const auto path = temp_file("mismatch.safetensors");
  Trained t;
  Session s(t.ir, "ipu_model", {.workers = 1});
  pxl::addons::save_safetensors(
      path, {{"layer.w", HostTensor({2}, float32)}, {"layer.extra", HostTensor({1}, float32)}});
  try {
    pxl::addons::load_checkpoint(s, t.variables, path);
    FAIL("a checkpoint without layer.b was loaded");
  } catch (const ValueError& e) {
    CHECK(std::string(e.what()).find("missing: 'layer.b'") != std::string::npos);
    CHECK(std::string(e.what()).find("unexpected: 'layer.extra'") != std::string::npos);
  }
  pxl::addons::save_safetensors(
      path, {{"layer.w", HostTensor({3}, float32)}, {"layer.b", HostTensor({1}, float32)}});
  CHECK_THROWS_AS(pxl::addons::load_checkpoint(s, t.variables, path), ShapeError);
  std::filesystem::remove(path);
  CHECK_THROWS_AS(pxl::addons::load_checkpoint(s, t.variables, path), IoError);
  // Nothing was written by the refused loads.
  CHECK(s.get_tensor_data(t.variables.at("layer.w")) == HostTensor({1.f, 2.f}, {2}));
}
