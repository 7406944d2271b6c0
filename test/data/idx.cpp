// read_idx: real gzip files, crafted raw files of each type, and every malformed-file error.
#include "pxl/addons/data/idx.hpp"

#include "temp_dir.hpp"

#include <doctest/doctest.h>

#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

using pxl::HostTensor;
using pxl::IoError;
using pxl::Shape;
using pxl::addons::data::read_idx;
using pxl::test::read_bytes;
using pxl::test::TempDir;

namespace {

const std::filesystem::path fmnist = "/usr/share/datasets/fashion-mnist";

/// An IDX header: 0x00 0x00 type rank, then big-endian 32-bit dimensions.
std::string idx_header(unsigned char type, std::vector<std::uint32_t> dims) {
  std::string s{'\0', '\0', static_cast<char>(type), static_cast<char>(dims.size())};
  for (auto d : dims)
    for (int shift = 24; shift >= 0; shift -= 8)
      s += static_cast<char>((d >> shift) & 0xff);
  return s;
}

/// Writes `bytes` gzip-compressed to `name` in `dir` (zlib comes with the addons library).
std::filesystem::path write_gz(const TempDir& dir, const std::string& name,
                               const std::string& bytes) {
  const auto p = dir / name;
  gzFile f = gzopen(p.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) ==
          static_cast<int>(bytes.size()));
  REQUIRE(gzclose(f) == Z_OK);
  return p;
}

} // namespace

TEST_CASE("read_idx reads the gzip-compressed Fashion-MNIST test labels") {
  const HostTensor labels = read_idx(fmnist / "t10k-labels-idx1-ubyte.gz");
  CHECK(labels.dtype() == pxl::uint8);
  CHECK(labels.shape() == Shape{10000});
  const std::vector<int> first{9, 2, 1, 1, 6, 1, 4, 6, 5, 7};
  for (std::size_t i = 0; i < first.size(); ++i)
    CHECK(labels.data<std::uint8_t>()[i] == first[i]);
}

TEST_CASE("read_idx reads raw uint8, int32 and float32 files, converting from big-endian") {
  TempDir dir;
  SUBCASE("uint8 [2, 3]") {
    const auto t = read_idx(dir.write("u8", idx_header(0x08, {2, 3}) + "\x01\x02\x03\xfd\xfe\xff"));
    CHECK(t.dtype() == pxl::uint8);
    CHECK(t.shape() == Shape{2, 3});
    CHECK(t == HostTensor(std::vector<std::uint8_t>{1, 2, 3, 253, 254, 255}, {2, 3}));
  }
  SUBCASE("int32 [3]") {
    const std::string data("\x00\x00\x01\x02"
                           "\xff\xff\xff\xfe"
                           "\x7f\xff\xff\xff",
                           12);
    const auto t = read_idx(dir.write("i32", idx_header(0x0C, {3}) + data));
    CHECK(t == HostTensor(std::vector<std::int32_t>{258, -2, 2147483647}, {3}));
  }
  SUBCASE("float32 [1, 2]") {
    // 1.5f = 0x3fc00000, -2.0f = 0xc0000000
    const std::string data("\x3f\xc0\x00\x00"
                           "\xc0\x00\x00\x00",
                           8);
    const auto t = read_idx(dir.write("f32", idx_header(0x0D, {1, 2}) + data));
    CHECK(t == HostTensor(std::vector<float>{1.5f, -2.0f}, {1, 2}));
  }
  SUBCASE("gzip-compressed int32 [2, 1]") {
    const std::string data("\x00\x00\x00\x05"
                           "\x80\x00\x00\x00",
                           8);
    const auto t = read_idx(write_gz(dir, "i32.gz", idx_header(0x0C, {2, 1}) + data));
    CHECK(t == HostTensor(std::vector<std::int32_t>{5, -2147483647 - 1}, {2, 1}));
  }
  SUBCASE("an empty dimension gives an empty tensor") {
    const auto t = read_idx(dir.write("empty", idx_header(0x08, {0, 28, 28})));
    CHECK(t.shape() == Shape{0, 28, 28});
    CHECK(t.nbytes() == 0);
  }
}

TEST_CASE("read_idx names the file and the problem for missing and malformed files") {
  TempDir dir;
  const auto check_error = [](const std::filesystem::path& p, const std::string& expected) {
    CAPTURE(expected);
    try {
      (void)read_idx(p);
      FAIL("no IoError for " << p);
    } catch (const IoError& e) {
      const std::string msg = e.what();
      CAPTURE(msg);
      CHECK(msg.find("'" + p.string() + "'") != std::string::npos);
      CHECK(msg.find(expected) != std::string::npos);
    }
  };
  SUBCASE("missing") { check_error(dir / "nope.gz", "does not exist"); }
  SUBCASE("a directory") { check_error(dir.path(), "cannot be"); }
  SUBCASE("empty file") {
    check_error(dir.write("e", ""), "is truncated: expected the 4-byte magic number");
  }
  SUBCASE("bad magic") {
    check_error(dir.write("m", std::string("\x01\x00\x08\x01\x00\x00\x00\x01\x07", 9)),
                "bad magic number: expected 0x00 0x00 <type> <rank>, found 0x01 0x00 0x08 0x01");
  }
  SUBCASE("unsupported type code") {
    check_error(dir.write("t", idx_header(0x0B, {1}) + "xx"),
                "type code 0x0b; expected 0x08 (unsigned byte), 0x0c (int) or 0x0d (float)");
  }
  SUBCASE("rank 0") { check_error(dir.write("r", idx_header(0x08, {})), "rank 0"); }
  SUBCASE("truncated dimensions") {
    check_error(dir.write("d", idx_header(0x08, {3, 4}).substr(0, 10)),
                "is truncated: expected dimension 1, found only 2 of 4 bytes");
  }
  SUBCASE("truncated data") {
    check_error(dir.write("td", idx_header(0x08, {2, 3}) + "12345"),
                "is truncated: dimensions (2, 3) need 18 bytes, found 17");
  }
  SUBCASE("trailing bytes") {
    check_error(dir.write("tb", idx_header(0x08, {2, 3}) + "1234567"),
                "has trailing bytes: dimensions (2, 3) need 18 bytes, found 19");
  }
  SUBCASE("dimensions whose size overflows") {
    check_error(dir.write("o", idx_header(0x0D, {0xffffffff, 0xffffffff, 0xffffffff})),
                "overflows");
  }
  SUBCASE("truncated gzip file") {
    const auto whole = read_bytes(fmnist / "t10k-labels-idx1-ubyte.gz");
    check_error(dir.write("half.gz", whole.substr(0, whole.size() / 2)),
                "is truncated: expected 10000 data bytes for dimensions (10000,)");
  }
  SUBCASE("gzip file with trailing data (a second gzip member)") {
    const auto whole = read_bytes(fmnist / "t10k-labels-idx1-ubyte.gz");
    check_error(dir.write("twice.gz", whole + whole),
                "has trailing bytes after the 10008 bytes its dimensions (10000,) describe");
  }
  SUBCASE("gzip file whose compressed data are corrupt") {
    auto bytes = read_bytes(fmnist / "t10k-labels-idx1-ubyte.gz");
    for (std::size_t i = 100; i < 200; ++i)
      bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
    check_error(dir.write("corrupt.gz", bytes), "corrupt: zlib reports");
  }
  SUBCASE("bad magic inside a gzip file") {
    check_error(write_gz(dir, "m.gz", std::string("\x08\x03\x00\x00\x00\x00\x00\x01\x07", 9)),
                "found 0x08 0x03 0x00 0x00 (after gzip decompression)");
  }
  SUBCASE("truncated data inside a well-formed gzip file") {
    check_error(write_gz(dir, "t.gz", idx_header(0x08, {2, 3}) + "1234"),
                "is truncated: expected 6 data bytes for dimensions (2, 3), found only 4 of 6");
  }
  SUBCASE("trailing bytes inside a well-formed gzip file") {
    check_error(write_gz(dir, "x.gz", idx_header(0x08, {2, 3}) + "1234567"),
                "has trailing bytes after the 18 bytes its dimensions (2, 3) describe");
  }
  SUBCASE("gzip file whose dimensions need more than it can hold") {
    // 10^6 × 10^6 bytes cannot come out of a gzip file of a few dozen bytes: refused before
    // anything is allocated.
    check_error(write_gz(dir, "huge.gz", idx_header(0x08, {1000000, 1000000})),
                "is truncated: dimensions (1000000, 1000000) need 1000000000012 bytes, more than "
                "its");
  }
  SUBCASE("gzip magic without a valid gzip stream") {
    check_error(dir.write("fake.gz", std::string("\x1f\x8b\x08\x00garbage", 11)),
                "is truncated: expected the 4-byte magic number, found only 0 of 4 bytes (zlib:");
  }
}

TEST_CASE("read_idx refuses hostile sizes before allocating them") {
  TempDir dir;
  const auto check_error = [](const std::filesystem::path& p, const std::string& expected,
                              const pxl::ReadOptions& options = {}) {
    CAPTURE(expected);
    try {
      (void)read_idx(p, options);
      FAIL("no IoError for " << p);
    } catch (const IoError& e) {
      const std::string msg = e.what();
      CAPTURE(msg);
      CHECK(msg.find("IDX file '" + p.string() + "'") != std::string::npos);
      CHECK(msg.find(expected) != std::string::npos);
    }
  };
  SUBCASE("a raw file promising 2^60 bytes") {
    check_error(dir.write("huge", idx_header(0x08, {0x40000000, 0x40000000}) + "x"),
                "is truncated: dimensions (1073741824, 1073741824) need 1152921504606846988 "
                "bytes, found 13");
  }
  SUBCASE("dimensions whose byte count overflows int64 but not uint64") {
    // (2^32-1)^2 elements: above 2^63, below 2^64.
    check_error(dir.write("o", idx_header(0x0D, {0xffffffff, 0xffffffff})),
                "has dimensions (4294967295, 4294967295) whose byte count overflows 64 bits");
  }
  SUBCASE("more data than ReadOptions::max_bytes") {
    check_error(dir.write("big", idx_header(0x08, {2, 3}) + "123456"),
                "is too large: dimensions (2, 3) need 6 data bytes, more than "
                "ReadOptions::max_bytes (5)",
                {.max_bytes = 5});
    CHECK(read_idx(dir / "big", {.max_bytes = 6}).shape() == Shape{2, 3});
  }
  SUBCASE("every truncation of a valid file") {
    const auto whole = idx_header(0x0C, {2, 1}) + std::string(8, '\x01');
    for (std::size_t n = 0; n < whole.size(); ++n) {
      CAPTURE(n);
      check_error(dir.write("cut", whole.substr(0, n)), "is truncated");
    }
  }
}

TEST_CASE("read_idx: dimensions that overflow next to a zero hold no element and load empty") {
  TempDir dir;
  const auto t = read_idx(dir.write("z", idx_header(0x08, {0xffffffff, 0xffffffff, 0})));
  CHECK(t.shape() == Shape{0xffffffff, 0xffffffff, 0});
  CHECK(t.nbytes() == 0);
}
