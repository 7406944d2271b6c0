// A program outside pxl's tree: the README's first example (extracted from README.md by
// .ci/consumers/run into readme_includes.inc and readme_body.inc), then one pxl::addons type.
// It is built against an installed pxl with pkg-config and CMake, and with pxl as a Meson
// subproject.
#include "readme_includes.inc"

#include <pxl/addons/layers/linear.hpp>
#include <pxl/version.hpp>

#include <iostream>

void readme_example() {
#include "readme_body.inc"
}

int main() {
  std::cout << "pxl " << PXL_VERSION << "\n";
  readme_example();
  std::cout << "\n";
  // pxl::addons: a Linear module traced into a graph; its variables are named after it.
  pxl::Ir ir;
  auto in_main = ir.main_graph().scope();
  auto [facts, linear] = pxl::addons::Linear(3).create_graph(pxl::TensorSpec{{2, 4}, pxl::float32});
  for (const auto& key : facts.keys_flat())
    std::cout << key << "\n";
}
