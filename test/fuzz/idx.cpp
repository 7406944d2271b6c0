// libFuzzer target: addons::data::read_idx on any bytes, raw or gzip-compressed. An IoError
// (any pxl::Error) is the expected answer to a malformed file; another exception, a crash, a
// hang or a sanitizer report is a bug.
#include "fuzz_file.hpp"

#include "pxl/addons/data/idx.hpp"

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const pxl::fuzz::FuzzDir dir("idx");
  try {
    (void)pxl::addons::data::read_idx(dir.write("input.idx", data, size));
  } catch (const pxl::Error&) {
  }
  return 0;
}
