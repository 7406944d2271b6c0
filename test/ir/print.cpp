#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

using namespace pxl;

namespace {
std::string read_file(const std::string& path) {
  std::ifstream f(path);
  REQUIRE_MESSAGE(f.good(), "missing golden file " << path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> lines;
  std::istringstream is(s);
  for (std::string l; std::getline(is, l);)
    lines.push_back(l);
  return lines;
}
} // namespace

TEST_CASE("print_schedule of a traced 4-layer MLP matches PopXL's format line by line") {
  Ir ir;
  auto main = ir.main_graph().scope();
  const std::vector<std::int64_t> widths{784, 512, 512, 512, 10};
  std::vector<TensorSpec> params;
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    params.push_back({{widths[l], widths[l + 1]}, float32});
    params.push_back({{widths[l + 1]}, float32});
  }
  Graph net = ir.create_graph(
      "Net",
      [](Tensor x, std::vector<Tensor> p) {
        for (std::size_t l = 0; l < 4; ++l) {
          x = ops::matmul(x, p[2 * l]) + p[2 * l + 1];
          if (l < 3)
            x = ops::gelu(x);
        }
        return x;
      },
      TensorSpec{{1, 784}, float32}, params);
  std::map<Tensor, std::string> names;
  for (std::size_t l = 0; l < 4; ++l) {
    names[net.inputs()[1 + 2 * l]] = "fc" + std::to_string(l + 1) + ".weight";
    names[net.inputs()[2 + 2 * l]] = "fc" + std::to_string(l + 1) + ".bias";
  }
  const auto actual = lines_of(net.print_schedule(names));
  const auto expected = lines_of(read_file(PXL_SOURCE_DIR "/test/ir/golden/mlp_schedule.txt"));
  REQUIRE(actual.size() == expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i)
    CHECK(actual[i] == expected[i]);
}

TEST_CASE("DOT export shows every graph, op and call edge") {
  Ir ir;
  auto main = ir.main_graph().scope();
  Graph sq = ir.create_graph(
      "Square", [](Tensor x) { return x * x; }, TensorSpec{{2}, float32});
  REQUIRE(sq.ops().size() == 1);
  const std::string dot = ir.to_dot();
  CHECK(dot.rfind("digraph pxl {", 0) == 0);
  CHECK(dot.find("subgraph cluster_0") != std::string::npos);
  CHECK(dot.find("label=\"Square_subgraph(0)\"") != std::string::npos);
  CHECK(dot.find("Mul.") != std::string::npos);
  CHECK(dot.back() == '\n');
}
