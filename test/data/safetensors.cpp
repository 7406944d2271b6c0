// safetensors: bitwise round trips, a hand-made known-good file, atomic writes, corrupt files.
#include "pxl/addons/safetensors.hpp"

#include "temp_dir.hpp"

#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

using pxl::HostTensor;
using pxl::IoError;
using pxl::Shape;
using pxl::addons::load_safetensors;
using pxl::addons::load_safetensors_metadata;
using pxl::addons::save_safetensors;
using pxl::test::read_bytes;
using pxl::test::TempDir;

namespace {

/// The 8-byte little-endian length prefix, then the header text, then the data bytes.
std::string st_file(const std::string& header, const std::string& data) {
  std::string s;
  for (int i = 0; i < 8; ++i)
    s += static_cast<char>((std::uint64_t{header.size()} >> (8 * i)) & 0xff);
  return s + header + data;
}

} // namespace

TEST_CASE("a hand-made safetensors file, built from the format's description, loads") {
  // What the Python safetensors package writes for
  //   {"a": float32 [1, -2], "b": int32 [[-3]], "c": uint8 [7, 8, 255], "d": float16 1.0}
  // with metadata {"format": "pt"} (unpadded; readers accept any header length).
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"I32","shape":[1,1],"data_offsets":[8,12]},)"
      R"("c":{"dtype":"U8","shape":[3],"data_offsets":[12,15]},)"
      R"("d":{"dtype":"F16","shape":[],"data_offsets":[15,17]}})";
  REQUIRE(header.size() == 249);
  const std::string bytes = std::string("\xf9\x00\x00\x00\x00\x00\x00\x00", 8) + header +
                            std::string("\x00\x00\x80\x3f"
                                        "\x00\x00\x00\xc0" // 1.0f, -2.0f
                                        "\xfd\xff\xff\xff" // -3
                                        "\x07\x08\xff"     // 7, 8, 255
                                        "\x00\x3c",        // half 1.0
                                        17);
  TempDir dir;
  const auto path = dir.write("fixture.safetensors", bytes);
  const auto t = load_safetensors(path);
  REQUIRE(t.size() == 4);
  CHECK(t.at("a") == HostTensor({1.0f, -2.0f}));
  CHECK(t.at("b") == HostTensor(std::vector<std::int32_t>{-3}, {1, 1}));
  CHECK(t.at("c") == HostTensor(std::vector<std::uint8_t>{7, 8, 255}, {3}));
  CHECK(t.at("d").shape() == Shape{});
  CHECK(t.at("d").dtype() == pxl::float16);
  CHECK(t.at("d").item() == 1.0);
  CHECK(load_safetensors_metadata(path) == std::map<std::string, std::string>{{"format", "pt"}});
}

TEST_CASE("save then load is bitwise identical for every dtype") {
  TempDir dir;
  const float nan_payload = std::bit_cast<float>(0x7fc12345u);
  std::map<std::string, HostTensor> tensors{
      {"f32", HostTensor({0.0f, -0.0f, 1.5f, std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::denorm_min(), nan_payload},
                         {2, 3})},
      {"f16", HostTensor(std::vector<pxl::half>{pxl::half(1.0f), pxl::half(-65504.0f),
                                                pxl::half(0.000061035f)},
                         {3})},
      {"i32", HostTensor(std::vector<std::int32_t>{std::numeric_limits<std::int32_t>::min(), -1, 0,
                                                   std::numeric_limits<std::int32_t>::max()},
                         {2, 1, 2})},
      {"u32", HostTensor(std::vector<std::uint32_t>{0u, 1u, 0xffffffffu}, {3})},
      {"u8", HostTensor(std::vector<std::uint8_t>{0, 128, 255}, {1, 3})},
      {"bool", HostTensor({true, false, true, true}, {2, 2})},
      {"i8", HostTensor(std::vector<std::int8_t>{-128, -1, 127}, {3})},
      {"i16", HostTensor(std::vector<std::int16_t>{-32768, 2, 32767}, {3, 1})},
      {"u16", HostTensor(std::vector<std::uint16_t>{0, 65535}, {2})},
      {"i64", HostTensor(std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::min(),
                                                   (std::int64_t{1} << 53) + 1, -1},
                         {3})},
      {"u64", HostTensor(std::vector<std::uint64_t>{~std::uint64_t{0}, 0}, {1, 2})},
      {"f64", HostTensor(std::vector<double>{0.1, -0.0, 1e300, 5e-324,
                                             std::bit_cast<double>(0x7ff8000000abcdefull)},
                         {5})},
      {"scalar", HostTensor::scalar(3.25f)},
      {"empty", HostTensor(Shape{0, 4}, pxl::int32)},
      {"fc1.weight", HostTensor(Shape{784, 512}, pxl::float32)},
  };
  auto w = tensors.at("fc1.weight").data<float>();
  for (std::size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<float>(i) * 1e-3f - 7.0f;
  const std::map<std::string, std::string> meta{{"epoch", "3"}, {"note", "π ≈ 3.14 \"quoted\""}};
  const auto path = dir / "ckpt.safetensors";
  save_safetensors(path, tensors, meta);

  const auto loaded = load_safetensors(path);
  REQUIRE(loaded.size() == tensors.size());
  for (const auto& entry : tensors) {
    const auto& name = entry.first;
    const auto& t = entry.second;
    CAPTURE(name);
    CHECK(loaded.at(name) == t); // shape, dtype and every byte
  }
  CHECK(load_safetensors_metadata(path) == meta);

  // The layout other tools rely on: header length prefix, JSON, data 8-byte aligned.
  const std::string bytes = read_bytes(path);
  std::uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  CHECK(header_len % 8 == 0);
  CHECK(bytes[8] == '{');
  std::size_t total = 0;
  for (const auto& [name, t] : tensors)
    total += t.nbytes();
  CHECK(bytes.size() == 8 + header_len + total);

  // No tensors at all is a valid (empty) file.
  save_safetensors(path, {});
  CHECK(load_safetensors(path).empty());
  CHECK(read_bytes(path).size() == 16); // length prefix and "{}" padded to 8 bytes

  // No metadata: no "__metadata__" key at all.
  save_safetensors(path, {{"x", HostTensor({1.0f})}});
  CHECK(read_bytes(path).find("__metadata__") == std::string::npos);
  CHECK(load_safetensors_metadata(path).empty());
  CHECK(load_safetensors(path).at("x") == HostTensor({1.0f}));
}

TEST_CASE("save_safetensors replaces the file atomically and leaves no temporary behind") {
  TempDir dir;
  const auto path = dir / "model.safetensors";
  save_safetensors(path, {{"v", HostTensor({1, 2, 3})}});
  save_safetensors(path, {{"v", HostTensor({4, 5})}});
  CHECK(load_safetensors(path).at("v") == HostTensor({4, 5}));
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path()))
    ++files;
  CHECK(files == 1);

  const auto bad = dir / "no-such-dir" / "model.safetensors";
  CHECK_THROWS_WITH_AS(
      save_safetensors(bad, {{"v", HostTensor({1})}}),
      doctest::Contains(("save_safetensors: cannot create '" + bad.string() + "'").c_str()),
      IoError);
  CHECK_THROWS_WITH_AS(save_safetensors(path, {{"__metadata__", HostTensor({1})}}),
                       doctest::Contains("tensor name '__metadata__'"), pxl::ValueError);
  CHECK_THROWS_WITH_AS(
      save_safetensors(path, {{"", HostTensor({1})}}),
      doctest::Contains(("tensor name '' for '" + path.string() + "' is empty").c_str()),
      pxl::ValueError);
  CHECK_THROWS_WITH_AS(save_safetensors(path, {{"a\xff", HostTensor({1})}}),
                       doctest::Contains("is not valid UTF-8"), pxl::ValueError);
  CHECK_THROWS_WITH_AS(save_safetensors(path, {{"v", HostTensor({1})}}, {{"k", "\xff\xfe"}}),
                       doctest::Contains("must be valid UTF-8"), pxl::ValueError);
  // The failed saves left the previous file intact.
  CHECK(load_safetensors(path).at("v") == HostTensor({4, 5}));
}

TEST_CASE("load_safetensors names the file and the problem for every corrupt file") {
  TempDir dir;
  const std::string f32_2 = R"("dtype":"F32","shape":[2],"data_offsets":[0,8])";
  const std::string eight(8, '\0');
  const auto check_error = [&](const std::string& bytes, const std::string& expected) {
    CAPTURE(expected);
    const auto path = dir.write("bad.safetensors", bytes);
    try {
      (void)load_safetensors(path);
      FAIL("no IoError");
    } catch (const IoError& e) {
      const std::string msg = e.what();
      CAPTURE(msg);
      CHECK(msg.find("safetensors file '" + path.string() + "'") != std::string::npos);
      CHECK(msg.find(expected) != std::string::npos);
    }
  };
  SUBCASE("missing") {
    const auto path = dir / "none.safetensors";
    CHECK_THROWS_WITH_AS(load_safetensors(path),
                         ("safetensors file '" + path.string() + "' does not exist").c_str(),
                         IoError);
  }
  SUBCASE("shorter than the length prefix") {
    check_error(std::string("\x10\x00\x00", 3),
                "is truncated: 3 bytes, shorter than the 8-byte header length");
  }
  SUBCASE("header length beyond the file") {
    check_error(st_file("{}", "").substr(0, 9),
                "is truncated: its header length is 2 bytes but only 1 bytes follow");
  }
  SUBCASE("header not JSON") {
    check_error(st_file("{\"a\":", ""), "has a header that is not valid JSON");
  }
  SUBCASE("header not an object") {
    check_error(st_file("[1,2]", ""), "has a header that is a JSON array; expected an object");
  }
  SUBCASE("entry not an object with the three fields") {
    check_error(st_file(R"({"a":{"dtype":"F32","shape":[2]}})", eight),
                "header entry for tensor 'a' that is not an object with dtype, shape and "
                "data_offsets");
  }
  SUBCASE("unknown dtype") {
    check_error(st_file(R"({"a":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]}})", eight),
                "tensor 'a' with dtype 'BF16', which pxl does not hold; expected one of F32, F16, "
                "I32, U32, U8, BOOL, I8, I16, U16, I64, U64, F64");
  }
  SUBCASE("a new dtype's size is checked against the offsets") {
    check_error(st_file(R"({"a":{"dtype":"I64","shape":[2],"data_offsets":[0,8]}})", eight),
                "has tensor 'a' of I64 shape [2] with data_offsets [0,8] spanning 8 bytes; the "
                "shape needs 16");
  }
  SUBCASE("dtype not a string") {
    check_error(st_file(R"({"a":{"dtype":4,"shape":[2],"data_offsets":[0,8]}})", eight),
                "tensor 'a' with dtype 4; expected a string");
  }
  SUBCASE("negative dimension") {
    check_error(st_file(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", eight),
                "tensor 'a' with shape [-2]; expected an array of non-negative integers");
  }
  SUBCASE("shape not an array") {
    check_error(st_file(R"({"a":{"dtype":"F32","shape":2,"data_offsets":[0,8]}})", eight),
                "tensor 'a' with shape 2; expected an array of non-negative integers");
  }
  SUBCASE("data_offsets malformed") {
    check_error(st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", eight),
                "tensor 'a' with data_offsets [0]; expected [begin, end]");
    check_error(st_file(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", eight),
                "tensor 'a' with data_offsets [8,0]; expected [begin, end] with 0 <= begin <= end");
  }
  SUBCASE("offsets not matching shape × item size") {
    check_error(st_file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight),
                "tensor 'a' of F32 shape [3] with data_offsets [0,8] spanning 8 bytes; the shape "
                "needs 12");
  }
  SUBCASE("offsets out of range") {
    check_error(st_file("{\"a\":{" + f32_2 + "}}", "1234"),
                "tensor 'a' with data_offsets [0, 8) out of range: the data section has 4 bytes");
  }
  SUBCASE("overlapping tensors") {
    check_error(
        st_file("{\"a\":{" + f32_2 + R"(},"b":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})",
                eight),
        "overlapping tensors 'a' and 'b': one ends at byte 8 and the other begins at 4");
  }
  SUBCASE("a gap between tensors") {
    check_error(st_file(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                        R"("b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}})",
                        "123456"),
                "gap in its data section: bytes [2, 4) before tensor 'b' belong to no tensor");
  }
  SUBCASE("trailing bytes after the last tensor") {
    check_error(st_file("{\"a\":{" + f32_2 + "}}", eight + "xyz"),
                "3 trailing bytes: its tensors cover 8 of 11 data bytes");
  }
  SUBCASE("BOOL bytes other than 0 and 1") {
    check_error(st_file(R"({"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})",
                        std::string("\x01\x00\x02", 3)),
                "BOOL tensor 'm' with byte 2 at element 2; expected 0 or 1");
  }
  SUBCASE("metadata that is not strings") {
    check_error(st_file(R"({"__metadata__":{"epoch":3}})", ""),
                "__metadata__ entry 'epoch' = 3; expected a string");
    check_error(st_file(R"({"__metadata__":[1]})", ""),
                "__metadata__ [1]; expected an object of strings");
  }
}

TEST_CASE("hostile safetensors files are IoErrors naming the file and the problem") {
  TempDir dir;
  const auto check_error = [&](const std::string& bytes, const std::string& expected,
                               const pxl::ReadOptions& options = {}) {
    CAPTURE(expected);
    const auto path = dir.write("hostile.safetensors", bytes);
    try {
      (void)load_safetensors(path, options);
      FAIL("no IoError");
    } catch (const IoError& e) {
      const std::string msg = e.what();
      CAPTURE(msg);
      CHECK(msg.find("safetensors file '" + path.string() + "'") != std::string::npos);
      CHECK(msg.find(expected) != std::string::npos);
    }
  };
  const auto entry = [](const std::string& shape, const std::string& offsets) {
    return R"({"a":{"dtype":"F32","shape":)" + shape + R"(,"data_offsets":)" + offsets + "}}";
  };
  SUBCASE("a number out of range (1e400)") {
    check_error(st_file(entry("[1e400]", "[0,4]"), "1234"),
                "has a header that is not valid JSON: [json.exception.out_of_range.406] number "
                "overflow parsing '1e400'");
    check_error(st_file(R"({"__metadata__":{"k":"v"},"x":-1e400})", ""),
                "number overflow parsing '-1e400'");
  }
  SUBCASE("an integer beyond 64 bits") {
    check_error(st_file(entry("[18446744073709551616]", "[0,4]"), "1234"),
                "tensor 'a' with shape [1.8446744073709552e+19]; expected an array of "
                "non-negative integers");
  }
  SUBCASE("a shape number that is not a number") {
    check_error(st_file(entry(R"(["2"])", "[0,8]"), std::string(8, '\0')),
                R"(tensor 'a' with shape ["2"]; expected an array of non-negative integers)");
  }
  SUBCASE("deep nesting: 100000 '['") {
    check_error(st_file(std::string(100000, '['), ""),
                "has a header nested more than 64 levels deep");
    check_error(st_file(R"({"a":)" + std::string(100000, '['), ""),
                "has a header nested more than 64 levels deep");
    check_error(st_file(std::string(100000, '{'), ""), "not valid JSON");
  }
  SUBCASE("a shape whose byte count overflows") {
    check_error(st_file(entry("[4611686018427387904,4]", "[0,0]"), ""),
                "tensor 'a' of F32 shape [4611686018427387904,4] whose byte count overflows 64 "
                "bits");
  }
  SUBCASE("a tensor promising 2^60 bytes in a small file: refused, not allocated") {
    check_error(st_file(R"({"a":{"dtype":"U8","shape":[1152921504606846976],)"
                        R"("data_offsets":[0,1152921504606846976]}})",
                        "1234"),
                "tensor 'a' with data_offsets [0, 1152921504606846976) out of range: the data "
                "section has 4 bytes");
  }
  SUBCASE("a header length promising 2^60 bytes") {
    check_error(std::string("\0\0\0\0\0\0\0\x10{}", 10),
                "is truncated: its header length is 1152921504606846976 bytes but only 2 bytes "
                "follow");
  }
  SUBCASE("a header longer than the format allows (a sparse file, never read)") {
    const auto path = dir / "sparse.safetensors";
    std::ofstream(path, std::ios::binary) << std::string("\x01\xe1\xf5\x05\0\0\0\0", 8);
    std::filesystem::resize_file(path, 8 + 100'000'001);
    CHECK_THROWS_WITH_AS(load_safetensors_metadata(path),
                         doctest::Contains("has a header of 100000001 bytes; expected at most "
                                           "100000000, the format's limit"),
                         IoError);
  }
  SUBCASE("names the writer refuses are refused on load too") {
    check_error(st_file(R"({"":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", "x"),
                "has a tensor '', a name that is empty");
  }
  SUBCASE("a key given twice") {
    check_error(st_file(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                        R"("a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})",
                        "x"),
                "has key 'a' twice in one object of its header");
    check_error(
        st_file(R"({"a":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}})", "x"),
        "has key 'dtype' twice");
  }
  SUBCASE("invalid UTF-8 in the header") {
    check_error(st_file("{\"a\xff\":{}}", ""), "not valid JSON");
  }
  SUBCASE("more data than ReadOptions::max_bytes") {
    check_error(st_file(entry("[2]", "[0,8]"), std::string(8, '\0')),
                "is too large: its tensors hold 8 bytes, more than ReadOptions::max_bytes (7)",
                {.max_bytes = 7});
  }
  SUBCASE("every truncation of a valid file") {
    const auto whole = st_file(entry("[2]", "[0,8]"), std::string(8, '\0'));
    for (std::size_t n = 0; n < whole.size(); ++n) {
      CAPTURE(n);
      check_error(whole.substr(0, n), n < whole.size() - 8 ? "truncated" : "out of range");
    }
  }
}

namespace {

/// The names of `dir`'s entries.
std::vector<std::string> listing(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

/// A child process that sleeps until killed.
pid_t sleeping_child() {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    for (;;)
      ::pause();
  }
  return pid;
}

void kill_and_reap(pid_t pid) {
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

} // namespace

TEST_CASE("a save removes the temporaries of dead writers of the same file, never a live one's") {
  TempDir dir;
  const auto path = dir / "ckpt.safetensors";
  const pid_t live = sleeping_child();
  const pid_t dead = sleeping_child();
  kill_and_reap(dead); // its pid now names no process
  const auto tmp = [&](pid_t pid) {
    return dir.write("ckpt.safetensors.tmp." + std::to_string(pid), "half a checkpoint");
  };
  tmp(live);
  tmp(dead);
  dir.write("other.safetensors.tmp." + std::to_string(dead), "another file's"); // not ours
  dir.write("ckpt.safetensors.tmp.notapid", "not a temporary of ours");

  save_safetensors(path, {{"v", HostTensor({1.0f})}});
  CHECK(listing(dir.path()) ==
        std::vector<std::string>{"ckpt.safetensors", "ckpt.safetensors.tmp." + std::to_string(live),
                                 "ckpt.safetensors.tmp.notapid",
                                 "other.safetensors.tmp." + std::to_string(dead)});

  kill_and_reap(live); // the writer died: the next save removes its leftover
  save_safetensors(path, {{"v", HostTensor({2.0f})}});
  CHECK(listing(dir.path()) ==
        std::vector<std::string>{"ckpt.safetensors", "ckpt.safetensors.tmp.notapid",
                                 "other.safetensors.tmp." + std::to_string(dead)});
  CHECK(load_safetensors(path).at("v") == HostTensor({2.0f}));
}

TEST_CASE("a save killed with SIGKILL leaves the previous checkpoint whole; the next save cleans "
          "up after it") {
  TempDir dir;
  const auto path = dir / "ckpt.safetensors";
  const HostTensor big(Shape{1 << 20}, pxl::float32); // 4 MiB: a save takes a while
  save_safetensors(path, {{"w", HostTensor({7.0f})}});
  const pid_t writer = ::fork();
  REQUIRE(writer >= 0);
  if (writer == 0) {
    try {
      for (;;)
        save_safetensors(path, {{"w", big}});
    } catch (...) {
    }
    ::_exit(1);
  }
  // Kill it mid-write: once its temporary exists.
  const auto tmp = dir / ("ckpt.safetensors.tmp." + std::to_string(writer));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!std::filesystem::exists(tmp) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  kill_and_reap(writer);
  const auto loaded = load_safetensors(path); // whole: the old checkpoint or a complete new one
  CHECK((loaded.at("w") == HostTensor({7.0f}) || loaded.at("w") == big));

  save_safetensors(path, {{"w", HostTensor({8.0f})}});
  for (const auto& name : listing(dir.path())) {
    CAPTURE(name);
    CHECK(name.find("ckpt.safetensors.tmp.") == std::string::npos);
  }
  CHECK(load_safetensors(path).at("w") == HostTensor({8.0f}));
}

TEST_CASE("kill -9 during one save: the previous checkpoint stays, its temporary until the next "
          "save") {
  TempDir dir;
  const auto path = dir / "ckpt.safetensors";
  const HostTensor previous({7.0f, 7.5f});
  // 64 MiB: writing and flushing them takes far longer than the parent needs to see the
  // temporary appear and kill the writer.
  const HostTensor big(Shape{16 << 20}, pxl::float32);
  save_safetensors(path, {{"w", previous}});
  pid_t writer = -1;
  int status = 0;
  for (int attempt = 0; attempt < 5; ++attempt) {
    writer = ::fork();
    REQUIRE(writer >= 0);
    if (writer == 0) {
      try {
        save_safetensors(path, {{"w", big}});
      } catch (...) {
        ::_exit(2);
      }
      ::_exit(0);
    }
    const auto tmp = dir / ("ckpt.safetensors.tmp." + std::to_string(writer));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!std::filesystem::exists(tmp) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
    ::kill(writer, SIGKILL);
    ::waitpid(writer, &status, 0);
    if (WIFSIGNALED(status))
      break;
    // The save won the race and finished: put the previous checkpoint back and try again.
    save_safetensors(path, {{"w", previous}});
  }
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  const std::string stale = "ckpt.safetensors.tmp." + std::to_string(writer);
  // What the killed save leaves: the previous checkpoint, whole, and its temporary.
  CHECK(listing(dir.path()) == std::vector<std::string>{"ckpt.safetensors", stale});
  CHECK(load_safetensors(path).at("w") == previous);
  // The next save of the same file removes the temporary (its writer is dead).
  save_safetensors(path, {{"w", HostTensor({8.0f})}});
  CHECK(listing(dir.path()) == std::vector<std::string>{"ckpt.safetensors"});
  CHECK(load_safetensors(path).at("w") == HostTensor({8.0f}));
}

TEST_CASE("one traced save: test/data/fsync_check.sh reads its system calls") {
  // The script runs this case under strace and looks for the directory's fsync after the
  // rename; run alone, it is one save that must load back.
  TempDir dir;
  const auto path = dir / "ckpt_traced.safetensors";
  save_safetensors(path, {{"w", HostTensor({1.0f, 2.0f})}});
  CHECK(load_safetensors(path).at("w") == HostTensor({1.0f, 2.0f}));
}
