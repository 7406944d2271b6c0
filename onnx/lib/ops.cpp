// The supported ONNX operators: the rows of each family's file (ops_elementwise.cpp,
// ops_shape.cpp, ops_nn.cpp), each built from pxl's public op builders, or folded on the host
// when every input is known at import (shape arithmetic).
#include "folding.hpp"

#include <algorithm>

namespace pxl::onnx::detail {

const std::vector<OpRow>& op_table() {
  static const std::vector<OpRow> rows = [] {
    std::vector<OpRow> all;
    for (auto family : {elementwise_rows, shape_rows, nn_rows})
      for (OpRow& row : family())
        all.push_back(std::move(row));
    return all;
  }();
  return rows;
}

const OpRow* find_op(const std::string& op_type) {
  const auto& rows = op_table();
  const auto it =
      std::find_if(rows.begin(), rows.end(), [&](const OpRow& r) { return op_type == r.op_type; });
  return it == rows.end() ? nullptr : &*it;
}

} // namespace pxl::onnx::detail

namespace pxl::onnx {

std::vector<SupportedOperator> supported_operators() {
  std::vector<SupportedOperator> out;
  for (const auto& row : detail::op_table())
    out.push_back({row.op_type, row.min_opset, row.max_opset, row.restriction});
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.op_type < b.op_type; });
  return out;
}

} // namespace pxl::onnx
