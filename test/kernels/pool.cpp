// roi_align and its gradient against the reference, and pools through oneDNN: max_pool,
// average_pool and their gradients against the naive reference over 1-3 spatial axes, strides,
// padding, dilation, ceil_mode and count_include_pad, in float32 and float16; bitwise equal on 1-4
// workers, threads included; and the tie rule of the max's gradient, on inputs full of ties.
#include "harness.hpp"

#include "pxl/ops/pool.hpp"

#include <cmath>

using namespace pxl;
using namespace pxl::testing;

namespace test_kernels_pool {

/// A pool: the input's shape, the window and the geometry.
struct Geometry {
  Shape x;
  std::vector<std::int64_t> k;
  ops::PoolOptions o;
};

const std::vector<Geometry>& geometries() {
  static const std::vector<Geometry> g = {
      // 1-d: plain, strided and padded, dilated, ceil_mode
      {{2, 3, 11}, {3}, {}},
      {{2, 4, 12}, {3}, {.stride = {2}, .padding = {1, 2}}},
      {{1, 2, 20}, {4}, {.padding = {2, 1}, .dilation = {3}}},
      {{3, 2, 10}, {3}, {.stride = {2}, .padding = {1, 1}, .ceil_mode = true}},
      // 2-d: ResNet's 3 x 3 stride 2, 2 x 2, ceil_mode, dilation, pad_type
      {{3, 3, 9, 9}, {3, 3}, {.stride = {2, 2}, .padding = {1, 1, 1, 1}}},
      {{2, 4, 8, 8}, {2, 2}, {.stride = {2, 2}}},
      {{2, 4, 10, 9}, {3, 2}, {.stride = {2, 3}, .padding = {1, 0, 1, 1}, .ceil_mode = true}},
      {{2, 2, 9, 9}, {3, 3}, {.padding = {2, 1, 1, 2}, .dilation = {2, 2}}},
      {{2, 5, 7, 6}, {3, 3}, {.stride = {2, 2}, .pad_type = ops::PadType::same_lower}},
      {{1, 16, 7, 7}, {7, 7}, {}},
      // a window of more than 255 taps: oneDNN's workspace holds int32 indices, not bytes
      {{2, 3, 17, 16}, {17, 16}, {}},
      // 3-d
      {{2, 2, 5, 6, 4}, {2, 3, 2}, {.stride = {1, 2, 1}, .padding = {1, 0, 0, 0, 1, 1}}},
      {{1, 3, 5, 5, 5},
       {3, 3, 3},
       {.stride = {2, 2, 2}, .padding = {1, 1, 1, 1, 1, 1}, .ceil_mode = true}},
  };
  return g;
}

ops::PoolOptions with_pad_count(ops::PoolOptions o, bool count_pad) {
  o.count_include_pad = count_pad;
  return o;
}

Shape pooled(const Geometry& g) {
  Ir ir;
  auto graph = ir.create_empty_graph("shape");
  auto scope = graph.scope();
  return ops::max_pool(graph_input(g.x, float32), g.k, g.o).shape();
}

constexpr double f32_rtol = 1e-6;

TEST_CASE("max_pool against the reference, 1-4 workers bitwise") {
  for_each_case(geometries(), [](const Geometry& g, DType d) {
    const auto k = g.k;
    const auto o = g.o;
    check_kernel([k, o](Tensor x) { return ops::max_pool(x, k, o); },
                 {random_tensor(g.x, d, -1, 1, 1)}, f32_rtol);
  });
}

TEST_CASE("average_pool against the reference, with and without count_include_pad") {
  for_each_case(geometries(), [](const Geometry& g, DType d) {
    for (const bool count_pad : {false, true}) {
      CAPTURE(count_pad);
      const auto k = g.k;
      const auto o = with_pad_count(g.o, count_pad);
      check_kernel([k, o](Tensor x) { return ops::average_pool(x, k, o); },
                   {random_tensor(g.x, d, 0, 1, 2)}, f32_rtol);
    }
  });
}

TEST_CASE("max_pool_grad against the reference, 1-4 workers bitwise") {
  for_each_case(geometries(), [](const Geometry& g, DType d) {
    const auto k = g.k;
    const auto o = g.o;
    check_kernel([k, o](Tensor dy, Tensor x) { return ops::max_pool_grad(dy, x, k, o); },
                 {random_tensor(pooled(g), d, 0, 1, 3), random_tensor(g.x, d, -1, 1, 4)}, f32_rtol);
  });
}

TEST_CASE("average_pool_grad against the reference, with and without count_include_pad") {
  for_each_case(geometries(), [](const Geometry& g, DType d) {
    for (const bool count_pad : {false, true}) {
      CAPTURE(count_pad);
      const auto k = g.k;
      const auto o = with_pad_count(g.o, count_pad);
      const Shape x = g.x;
      check_kernel([k, o, x](Tensor dy) { return ops::average_pool_grad(dy, x, k, o); },
                   {random_tensor(pooled(g), d, 0, 1, 5)}, f32_rtol);
    }
  });
}

/// `shape` filled with 0, 1 or 2 (3 too in float16, where a draw just below 3 rounds to 3):
/// most windows hold several largest elements.
HostTensor full_of_ties(const Shape& shape, DType d, std::uint64_t salt) {
  HostTensor t = random_tensor(shape, d, 0, 3, salt);
  for (std::int64_t i = 0; i < t.nelms(); ++i)
    ref::store(t, i, std::floor(t.item(i)));
  return t;
}

TEST_CASE("max_pool_grad: oneDNN's argmax is the first largest tap of each window") {
  // The reference takes the first of the largest taps in the window's row-major order; the
  // kernel must agree exactly on inputs full of ties, every geometry, both dtypes.
  for_each_case(geometries(), [](const Geometry& g, DType d) {
    const auto k = g.k;
    const auto o = g.o;
    const HostTensor x = full_of_ties(g.x, d, 7);
    // At most four values, so every window of five or more taps repeats one.
    bool few_values = true;
    for (std::int64_t i = 0; i < x.nelms(); ++i)
      few_values =
          few_values && x.item(i) == std::floor(x.item(i)) && x.item(i) >= 0 && x.item(i) <= 3;
    CHECK(few_values);
    check_kernel([k, o](Tensor dy, Tensor t) { return ops::max_pool_grad(dy, t, k, o); },
                 {random_tensor(pooled(g), d, 0.5, 1, 6), x}, f32_rtol);
  });
  // Equal values everywhere: each window sends its gradient to its top-left element.
  const auto x = tensor({1, 1, 3, 3}, float32, std::vector<double>(9, 1.0));
  const auto dy = tensor({1, 1, 2, 2}, float32, {1, 2, 3, 4});
  check_values(check_kernel(
                   [](Tensor g, Tensor a) {
                     return ops::max_pool_grad(g, a, {2, 2});
                   },
                   {dy, x})[0],
               {{1, 1, 3, 3}, float32}, {1, 2, 0, 3, 4, 0, 0, 0, 0});
}

TEST_CASE("pools: hand-computed values") {
  const auto x = tensor({1, 1, 3, 3}, float32, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  check_values(check_kernel(
                   [](Tensor a) {
                     return ops::max_pool(a, {2, 2});
                   },
                   {x})[0],
               {{1, 1, 2, 2}, float32}, {5, 6, 8, 9});
  check_values(check_kernel(
                   [](Tensor a) {
                     return ops::average_pool(a, {2, 2});
                   },
                   {x})[0],
               {{1, 1, 2, 2}, float32}, {3, 4, 6, 7});
  check_values(check_kernel([](Tensor a) { return ops::global_average_pool(a); }, {x})[0],
               {{1, 1, 1, 1}, float32}, {5});
  check_values(check_kernel([](Tensor a) { return ops::global_max_pool(a); }, {x})[0],
               {{1, 1, 1, 1}, float32}, {9});
  // A 2 x 2 average over the padded plane: the corner windows count 1 element, or 4.
  const ops::PoolOptions padded{.stride = {2, 2}, .padding = {1, 1, 1, 1}};
  check_values(check_kernel(
                   [padded](Tensor a) {
                     return ops::average_pool(a, {2, 2}, padded);
                   },
                   {x})[0],
               {{1, 1, 2, 2}, float32}, {1, 2.5, 5.5, 7});
  check_values(check_kernel(
                   [padded](Tensor a) {
                     return ops::average_pool(a, {2, 2}, with_pad_count(padded, true));
                   },
                   {x})[0],
               {{1, 1, 2, 2}, float32}, {0.25, 1.25, 2.75, 7});
}

TEST_CASE("pool kernels are bitwise identical when run on concurrent threads") {
  for (const DType d : {float32, float16}) {
    CAPTURE(d);
    const Geometry g{{6, 8, 12, 12}, {3, 3}, {.stride = {2, 2}, .padding = {1, 1, 1, 1}}};
    const auto k = g.k;
    const auto o = g.o;
    const Shape xs = g.x;
    std::vector<KernelCase> cases;
    cases.push_back(make_case([k, o](Tensor x) { return ops::max_pool(x, k, o); },
                              {random_tensor(g.x, d, -1, 1, 8)}));
    const auto oi = with_pad_count(o, true);
    cases.push_back(make_case([k, oi](Tensor x) { return ops::average_pool(x, k, oi); },
                              {random_tensor(g.x, d, -1, 1, 9)}));
    cases.push_back(
        make_case([k, o](Tensor dy, Tensor x) { return ops::max_pool_grad(dy, x, k, o); },
                  {random_tensor(pooled(g), d, -1, 1, 10), full_of_ties(g.x, d, 11)}));
    cases.push_back(
        make_case([k, oi, xs](Tensor dy) { return ops::average_pool_grad(dy, xs, k, oi); },
                  {random_tensor(pooled(g), d, -1, 1, 12)}));
    check_threads_bitwise(cases);
  }
}

TEST_CASE("pools over an empty batch give empty results") {
  check_kernel([](Tensor x) { return ops::max_pool(x, {2}); }, {HostTensor({0, 2, 5}, float32)});
  check_kernel(
      [](Tensor dy) {
        return ops::average_pool_grad(dy, {0, 2, 5}, {2});
      },
      {HostTensor({0, 2, 4}, float32)});
}

} // namespace test_kernels_pool

namespace test_kernels_roi_align {

TEST_CASE("roi_align and its gradient against the reference, float32 and float16, 1-4 workers") {
  // Boxes inside, across and past the 7x6 maps, reversed, narrower than a pixel, and one whose
  // 2x2 bins put samples exactly on the far edges (x = 6, y = 7); two ROIs on images outside
  // the batch.
  const std::vector<double> boxes = {0.3, 0.6, 4.1, 5.2, -1.5, -0.5, 2.5, 3.0, 3.0, 2.0,
                                     9.5, 8.5, 4.0, 5.0, 1.0,  2.0,  2.2, 2.4, 2.3, 2.5,
                                     0.0, 0.0, 5.0, 6.0, 3.0,  4.0,  7.0, 8.0};
  const std::vector<double> images = {0, 1, 1, 0, 1, 2, 1};
  const std::vector<double> outside = {0, 1, 1, 0, -1, 2, 0};
  struct Setting {
    std::vector<std::int64_t> size;
    float scale;
    std::int64_t ratio;
  };
  const std::vector<Setting> settings = {{{2, 2}, 1.f, 1}, {{3, 2}, 0.5f, 2}, {{1, 4}, 1.25f, 3}};
  for (const DType d : {float32, float16}) {
    CAPTURE(d);
    const auto x = random_tensor({2, 3, 7, 6}, d, 0.5, 2, 40);
    const auto rois = tensor({7, 4}, d, boxes);
    for (const auto& batch : {images, outside})
      for (const Setting& st : settings) {
        CAPTURE(st.ratio);
        const auto idx = tensor({7}, int32, batch);
        const auto size = st.size;
        const float scale = st.scale;
        const std::int64_t ratio = st.ratio;
        check_kernel(
            [size, scale, ratio](Tensor t, Tensor r, Tensor i) {
              return ops::roi_align(t, r, i, size, scale, ratio);
            },
            {x, rois, idx});
        check_kernel(
            [size, scale, ratio](Tensor g, Tensor r, Tensor i) {
              return ops::roi_align_grad(g, r, i, {2, 3, 7, 6}, size, scale, ratio);
            },
            {random_tensor({7, 3, size[0], size[1]}, d, 0.5, 2, 41), rois, idx});
      }
  }
}

} // namespace test_kernels_roi_align
