// IDX reading through zlib's gzFile API, which passes raw files through unchanged.
#include "pxl/addons/data/idx.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <system_error>

namespace pxl::addons::data {
namespace {

/// Deflate cannot compress better than about 1032:1, so a gzip file of `n` bytes holds at most
/// this much; a header claiming more is corrupt, and we say so before allocating it.
constexpr std::uint64_t max_deflate_ratio = 1032;
/// The IDX type codes pxl reads and the dtype each becomes.
struct IdxType {
  std::uint8_t code;
  DType dtype;
  const char* name;
};
constexpr std::array<IdxType, 3> idx_types{
    {{0x08, uint8, "unsigned byte"}, {0x0C, int32, "int"}, {0x0D, float32, "float"}}};

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<std::remove_pointer_t<gzFile>, GzCloser>;

std::string hex_byte(unsigned v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", v & 0xffu);
  return buf;
}

class IdxReader {
public:
  IdxReader(const std::filesystem::path& path, const ReadOptions& options)
      : path_(path), options_(options) {}

  HostTensor read() {
    std::error_code ec;
    if (!std::filesystem::exists(path_, ec))
      fail("does not exist");
    file_size_ = std::filesystem::file_size(path_, ec);
    if (ec)
      fail("cannot be read: " + ec.message());
    file_.reset(gzopen(path_.c_str(), "rb"));
    if (!file_)
      fail("cannot be opened");
    // zlib reads up to this much at once: a bigger buffer makes large files faster, and a
    // small file needs no more than its size (zlib allocates three times this per open).
    gzbuffer(file_.get(),
             static_cast<unsigned>(std::clamp<std::uintmax_t>(file_size_, 1u << 13, 1u << 17)));

    std::array<unsigned char, 4> magic{};
    read_exactly(magic.data(), magic.size(), "the 4-byte magic number");
    const auto* type = std::find_if(idx_types.begin(), idx_types.end(),
                                    [&](const IdxType& t) { return t.code == magic[2]; });
    if (magic[0] != 0 || magic[1] != 0)
      fail("has a bad magic number: expected 0x00 0x00 <type> <rank>, found " + hex_byte(magic[0]) +
           " " + hex_byte(magic[1]) + " " + hex_byte(magic[2]) + " " + hex_byte(magic[3]) +
           (gzdirect(file_.get()) ? "" : " (after gzip decompression)"));
    if (type == idx_types.end())
      fail("has IDX type code " + hex_byte(magic[2]) +
           "; expected 0x08 (unsigned byte), 0x0c (int) or 0x0d (float)");
    if (magic[3] == 0)
      fail("has rank 0; expected at least one dimension");

    Shape shape(magic[3]);
    for (std::size_t i = 0; i < shape.size(); ++i) {
      std::array<unsigned char, 4> d{};
      read_exactly(d.data(), d.size(), "dimension " + std::to_string(i));
      shape[i] = (std::int64_t{d[0]} << 24) | (d[1] << 16) | (d[2] << 8) | d[3];
    }
    std::uint64_t payload = 0;
    try {
      payload = static_cast<std::uint64_t>(nbytes(shape, type->dtype));
    } catch (const ShapeError&) {
      fail("has dimensions " + to_string(shape) + " whose byte count overflows 64 bits");
    }
    const std::size_t item = size_of(type->dtype);
    const std::uint64_t header = 4 + 4 * std::uint64_t{magic[3]};
    check_length(shape, header, payload);
    if (payload > options_.max_bytes)
      fail("is too large: dimensions " + to_string(shape) + " need " + std::to_string(payload) +
           " data bytes, more than ReadOptions::max_bytes (" + std::to_string(options_.max_bytes) +
           ")");

    std::optional<HostTensor> allocated;
    try {
      allocated.emplace(shape, type->dtype);
    } catch (const std::bad_alloc&) {
      fail("is too large: dimensions " + to_string(shape) + " need " + std::to_string(payload) +
           " data bytes, which could not be allocated");
    }
    HostTensor& out = *allocated;
    read_exactly(out.bytes().data(), out.nbytes(),
                 std::to_string(payload) + " data bytes for dimensions " + to_string(shape));
    unsigned char extra = 0;
    const int more = gzread(file_.get(), &extra, 1);
    if (more < 0)
      fail_zlib();
    if (more > 0)
      fail("has trailing bytes after the " + std::to_string(header + payload) +
           " bytes its dimensions " + to_string(shape) + " describe");
    if (item > 1 && std::endian::native == std::endian::little)
      byteswap32(out);
    return std::move(out);
  }

private:
  [[noreturn]] void fail(const std::string& what) const {
    throw IoError("IDX file '" + path_.string() + "' " + what);
  }
  [[noreturn]] void fail_zlib() const {
    int code = Z_OK;
    const char* msg = gzerror(file_.get(), &code);
    fail("is corrupt: zlib reports '" + std::string(msg ? msg : "?") + "'");
  }

  /// A raw file's length is known up front: compare it exactly, before allocating. A gzip
  /// file's decompressed length is known only after reading, so only implausible sizes are
  /// caught here and the rest by the reads that follow.
  void check_length(const Shape& shape, std::uint64_t header, std::uint64_t payload) const {
    const std::uint64_t expected = header + payload;
    if (gzdirect(file_.get())) {
      if (file_size_ < expected)
        fail("is truncated: dimensions " + to_string(shape) + " need " + std::to_string(expected) +
             " bytes, found " + std::to_string(file_size_));
      if (file_size_ > expected)
        fail("has trailing bytes: dimensions " + to_string(shape) + " need " +
             std::to_string(expected) + " bytes, found " + std::to_string(file_size_));
    } else if (file_size_ > 0 && expected / max_deflate_ratio > file_size_) {
      fail("is truncated: dimensions " + to_string(shape) + " need " + std::to_string(expected) +
           " bytes, more than its " + std::to_string(file_size_) + " compressed bytes can hold");
    }
  }

  void read_exactly(void* dst, std::size_t n, const std::string& what) {
    auto* p = static_cast<unsigned char*>(dst);
    std::size_t done = 0;
    while (done < n) {
      // gzread takes an unsigned count; read in chunks far below its limit.
      const auto chunk = static_cast<unsigned>(std::min<std::size_t>(n - done, 1u << 30));
      const int got = gzread(file_.get(), p + done, chunk);
      if (got < 0)
        fail_zlib();
      if (got == 0)
        break;
      done += static_cast<std::size_t>(got);
    }
    if (done < n) {
      int code = Z_OK;
      const char* msg = gzerror(file_.get(), &code);
      fail("is truncated: expected " + what + ", found only " + std::to_string(done) + " of " +
           std::to_string(n) + " bytes" +
           (code != Z_OK && msg ? " (zlib: " + std::string(msg) + ")" : std::string()));
    }
  }

  /// IDX stores multi-byte values big-endian.
  static void byteswap32(HostTensor& t) {
    auto bytes = t.bytes();
    for (std::size_t i = 0; i + 4 <= bytes.size(); i += 4) {
      std::swap(bytes[i], bytes[i + 3]);
      std::swap(bytes[i + 1], bytes[i + 2]);
    }
  }

  std::filesystem::path path_;
  ReadOptions options_;
  std::uint64_t file_size_ = 0;
  GzFile file_;
};

} // namespace

HostTensor read_idx(const std::filesystem::path& path, const ReadOptions& options) {
  return IdxReader(path, options).read();
}

} // namespace pxl::addons::data
