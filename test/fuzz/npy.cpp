// libFuzzer target: HostTensor::load_npy on any bytes. An IoError (any pxl::Error) is the
// expected answer to a malformed file; another exception, a crash, a hang or a sanitizer
// report is a bug. A file that loads must save and load back to the same tensor.
#include "fuzz_file.hpp"

#include "pxl/core/host_tensor.hpp"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const pxl::fuzz::FuzzDir dir("npy");
  const auto path = dir.write("input.npy", data, size);
  try {
    const auto t = pxl::HostTensor::load_npy(path);
    t.save_npy(dir / "again.npy");
    if (!(pxl::HostTensor::load_npy(dir / "again.npy") == t))
      std::abort();
  } catch (const pxl::Error&) {
  }
  return 0;
}
