// The file a libFuzzer target hands its input to: the readers read paths, not bytes.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace pxl::fuzz {

/// A private scratch directory per fuzzer process (TMPDIR honoured), removed at exit, holding
/// the file each input is written to and whatever the target writes next to it.
class FuzzDir {
public:
  explicit FuzzDir(const std::string& name)
      : dir_(std::filesystem::temp_directory_path() /
             ("pxl-fuzz-" + name + "-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir_);
  }
  FuzzDir(const FuzzDir&) = delete;
  FuzzDir& operator=(const FuzzDir&) = delete;
  ~FuzzDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::filesystem::path operator/(const std::string& file) const { return dir_ / file; }

  /// Writes `data` to `file` in this directory, replacing it, and returns its path.
  std::filesystem::path write(const std::string& file, const std::uint8_t* data,
                              std::size_t size) const {
    const auto path = dir_ / file;
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f || (size > 0 && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0)
      std::abort(); // the harness, not the reader, failed
    return path;
  }

private:
  std::filesystem::path dir_;
};

} // namespace pxl::fuzz
