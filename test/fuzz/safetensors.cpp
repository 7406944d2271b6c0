// libFuzzer target: addons::load_safetensors and load_safetensors_metadata on any bytes. An
// IoError (any pxl::Error) is the expected answer to a malformed file; another exception, a
// crash, a hang or a sanitizer report is a bug. What loads must save and load back the same:
// the reader accepts no name or metadata the writer refuses.
#include "fuzz_file.hpp"

#include "pxl/addons/safetensors.hpp"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const pxl::fuzz::FuzzDir dir("safetensors");
  const auto path = dir.write("input.safetensors", data, size);
  try {
    (void)pxl::addons::load_safetensors_metadata(path);
  } catch (const pxl::Error&) {
  }
  try {
    const auto tensors = pxl::addons::load_safetensors(path);
    const auto metadata = pxl::addons::load_safetensors_metadata(path);
    const auto again = dir / "again.safetensors";
    pxl::addons::save_safetensors(again, tensors, metadata);
    if (pxl::addons::load_safetensors(again) != tensors ||
        pxl::addons::load_safetensors_metadata(again) != metadata)
      std::abort();
  } catch (const pxl::Error&) {
  }
  return 0;
}
