// npy_close A.npy B.npy: exit 0 when max |a − b| / max |b| < 1e-4 (the measure of
// agreement with PyTorch), else print it and exit 1. pxl_run.sh's comparison, without Python.
#include "pxl/core/host_tensor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: npy_close A.npy B.npy\n");
    return 2;
  }
  try {
    const auto a = pxl::HostTensor::load_npy(argv[1]).astype(pxl::float32);
    const auto b = pxl::HostTensor::load_npy(argv[2]).astype(pxl::float32);
    if (a.shape() != b.shape()) {
      std::fprintf(stderr, "npy_close: the shapes differ\n");
      return 1;
    }
    double diff = 0, scale = 0;
    for (std::size_t i = 0; i < b.data<float>().size(); ++i) {
      diff = std::max(diff, std::abs(double(a.data<float>()[i]) - b.data<float>()[i]));
      scale = std::max(scale, std::abs(double(b.data<float>()[i])));
    }
    std::printf("max |a - b| / max |b| = %g\n", diff / scale);
    return diff / scale < 1e-4 ? 0 : 1;
  } catch (const pxl::Error& e) {
    std::fprintf(stderr, "npy_close: %s\n", e.what());
    return 1;
  }
}
