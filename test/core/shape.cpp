#include "pxl/core/shape.hpp"
#include "pxl/core/error.hpp"

#include <doctest/doctest.h>

using namespace pxl;

TEST_CASE("shape helpers") {
  CHECK(nelms(Shape{}) == 1);
  CHECK(nelms(Shape{2, 3, 4}) == 24);
  CHECK(nelms(Shape{2, 0}) == 0);
  CHECK(to_string(Shape{1, 784}) == "(1, 784)");
  CHECK(to_string(Shape{3}) == "(3,)");
  CHECK(to_string(Shape{}) == "()");
  CHECK(strides_of(Shape{2, 3, 4}) == Shape{12, 4, 1});
  CHECK(to_string(TensorSpec{{784, 512}, float32}) == "[(784, 512) float32]");
}

TEST_CASE("NumPy broadcasting") {
  CHECK(broadcast_shapes(Shape{2, 3}, Shape{3}, "t") == Shape{2, 3});
  CHECK(broadcast_shapes(Shape{4, 1, 3}, Shape{5, 1}, "t") == Shape{4, 5, 3});
  CHECK(broadcast_shapes(Shape{}, Shape{2}, "t") == Shape{2});
  CHECK_THROWS_WITH_AS(broadcast_shapes(Shape{2, 3}, Shape{4}, "Add"),
                       doctest::Contains("Add: shapes (2, 3) and (4,) do not broadcast"),
                       ShapeError);
}

TEST_CASE("axis normalisation") {
  CHECK(normalize_axis(-1, 3, "op") == 2);
  CHECK(normalize_axis(0, 3, "op") == 0);
  CHECK_THROWS_WITH_AS(
      normalize_axis(3, 3, "ReduceSum"),
      doctest::Contains("ReduceSum: axis 3 is out of range for a tensor of rank 3"), ValueError);
  CHECK_THROWS_AS(normalize_axis(-4, 3, "op"), ValueError);
}
