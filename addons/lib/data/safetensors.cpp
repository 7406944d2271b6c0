// safetensors checkpoints: nlohmann-json header, raw little-endian data, atomic replacement.
#include "pxl/addons/safetensors.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

namespace pxl::addons {
namespace {

using nlohmann::json;

// Tensor bytes are written and read as they lie in memory.
static_assert(std::endian::native == std::endian::little,
              "safetensors data are little-endian; a big-endian host would need byte swaps");

struct DTypeCode {
  DType dtype;
  const char* code;
};
constexpr std::array<DTypeCode, 6> dtype_codes{{{float32, "F32"},
                                                {float16, "F16"},
                                                {int32, "I32"},
                                                {uint32, "U32"},
                                                {uint8, "U8"},
                                                {bool_, "BOOL"}}};
constexpr const char* metadata_key = "__metadata__";

const char* code_of(DType d) {
  for (const auto& c : dtype_codes)
    if (c.dtype == d)
      return c.code;
  PXL_ASSERT(false);
  return "";
}

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw IoError("safetensors file '" + path.string() + "' " + what);
}

/// A FILE* that is closed on every path out, and removed unless committed.
class TempFile {
public:
  explicit TempFile(std::filesystem::path path) : path_(std::move(path)) {
    file_ = std::fopen(path_.c_str(), "wb");
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (file_)
      std::fclose(file_);
    if (!committed_) {
      std::error_code ec;
      std::filesystem::remove(path_, ec);
    }
  }
  bool ok() const { return file_ != nullptr; }
  bool write(const void* p, std::size_t n) { return n == 0 || std::fwrite(p, 1, n, file_) == n; }
  /// Flushes the data to disk before the rename, so a crash never leaves a renamed file
  /// without its data.
  bool close() {
    const bool ok = std::fflush(file_) == 0 && ::fsync(fileno(file_)) == 0;
    const bool closed = std::fclose(file_) == 0;
    file_ = nullptr;
    return ok && closed;
  }
  void commit() { committed_ = true; }
  const std::filesystem::path& path() const { return path_; }

private:
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
  bool committed_ = false;
};

/// A tensor entry of a parsed header.
struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  std::uint64_t begin;
  std::uint64_t end;
};

/// A parsed and validated file: its entries, metadata and data section.
struct Parsed {
  std::vector<Entry> entries;
  std::map<std::string, std::string> metadata;
  std::vector<char> bytes;
  std::size_t data_start = 0;
};

std::uint64_t unsigned_of(const json& v, bool& ok) {
  if (v.is_number_unsigned())
    return v.get<std::uint64_t>();
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0)
    return static_cast<std::uint64_t>(v.get<std::int64_t>());
  ok = false;
  return 0;
}

Entry parse_entry(const std::filesystem::path& path, const std::string& name, const json& v) {
  const std::string what = "tensor '" + name + "'";
  if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
    fail(path, "has a header entry for " + what +
                   " that is not an object with dtype, shape and data_offsets: " + v.dump());
  const json& dt = v["dtype"];
  if (!dt.is_string())
    fail(path, "has " + what + " with dtype " + dt.dump() + "; expected a string");
  const auto code = dt.get<std::string>();
  const auto* found = std::find_if(dtype_codes.begin(), dtype_codes.end(),
                                   [&](const DTypeCode& c) { return code == c.code; });
  if (found == dtype_codes.end())
    fail(path, "has " + what + " with dtype '" + code +
                   "', which pxl does not hold; expected F32, F16, I32, U32, U8 or BOOL");

  const json& sh = v["shape"];
  bool ok = sh.is_array();
  Shape shape;
  std::uint64_t count = 1;
  for (const json& d : ok ? sh : json::array()) {
    const std::uint64_t dim = unsigned_of(d, ok);
    if (!ok || dim > static_cast<std::uint64_t>(INT64_MAX) ||
        __builtin_mul_overflow(count, dim, &count)) {
      ok = false;
      break;
    }
    shape.push_back(static_cast<std::int64_t>(dim));
  }
  if (!ok)
    fail(path, "has " + what + " with shape " + sh.dump() +
                   "; expected an array of non-negative integers");

  const json& off = v["data_offsets"];
  ok = off.is_array() && off.size() == 2;
  const std::uint64_t begin = ok ? unsigned_of(off[0], ok) : 0;
  const std::uint64_t end = ok ? unsigned_of(off[1], ok) : 0;
  if (!ok || begin > end)
    fail(path, "has " + what + " with data_offsets " + off.dump() +
                   "; expected [begin, end] with 0 <= begin <= end");
  std::uint64_t nbytes = 0;
  if (__builtin_mul_overflow(count, std::uint64_t{size_of(found->dtype)}, &nbytes) ||
      nbytes != end - begin)
    fail(path,
         "has " + what + " of " + code + " shape " + sh.dump() + " with data_offsets " +
             off.dump() + " spanning " + std::to_string(end - begin) + " bytes; the shape needs " +
             (nbytes == end - begin ? std::string("more than 2^64") : std::to_string(nbytes)));
  return {name, found->dtype, std::move(shape), begin, end};
}

/// The tensors must tile the data section exactly, as the format requires: no overlaps, no
/// gaps, nothing after the last one.
void check_layout(const std::filesystem::path& path, std::vector<Entry>& entries,
                  std::uint64_t data_size) {
  std::ranges::sort(entries, [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t at = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : entries) {
    if (e.end > data_size)
      fail(path, "has tensor '" + e.name + "' with data_offsets [" + std::to_string(e.begin) +
                     ", " + std::to_string(e.end) + ") out of range: the data section has " +
                     std::to_string(data_size) + " bytes");
    if (e.begin < at)
      fail(path, "has overlapping tensors '" + previous->name + "' and '" + e.name +
                     "': one ends at byte " + std::to_string(at) + " and the other begins at " +
                     std::to_string(e.begin));
    if (e.begin > at)
      fail(path, "has a gap in its data section: bytes [" + std::to_string(at) + ", " +
                     std::to_string(e.begin) + ") before tensor '" + e.name +
                     "' belong to no tensor");
    at = e.end;
    previous = &e;
  }
  if (at != data_size)
    fail(path, "has " + std::to_string(data_size - at) + " trailing bytes: its tensors cover " +
                   std::to_string(at) + " of " + std::to_string(data_size) + " data bytes");
}

Parsed parse(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(path, std::filesystem::exists(path) ? "cannot be opened" : "does not exist");
  Parsed p;
  std::error_code ec;
  const auto file_size = std::filesystem::file_size(path, ec);
  if (ec)
    fail(path, "cannot be read: " + ec.message());
  p.bytes.resize(static_cast<std::size_t>(file_size));
  if (!in.read(p.bytes.data(), static_cast<std::streamsize>(p.bytes.size())))
    fail(path, "could not be read");
  const std::uint64_t size = p.bytes.size();
  if (size < 8)
    fail(path,
         "is truncated: " + std::to_string(size) + " bytes, shorter than the 8-byte header length");
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i)
    header_len = (header_len << 8) | static_cast<unsigned char>(p.bytes[static_cast<size_t>(i)]);
  if (header_len > size - 8)
    fail(path, "is truncated: its header length is " + std::to_string(header_len) +
                   " bytes but only " + std::to_string(size - 8) + " bytes follow");
  p.data_start = 8 + static_cast<std::size_t>(header_len);

  json header;
  try {
    header = json::parse(p.bytes.begin() + 8, p.bytes.begin() + static_cast<long>(p.data_start));
  } catch (const json::parse_error& e) {
    fail(path, std::string("has a header that is not valid JSON: ") + e.what());
  }
  if (!header.is_object())
    fail(path, std::string("has a header that is a JSON ") + header.type_name() +
                   "; expected an object mapping tensor names to entries");
  for (const auto& [name, v] : header.items()) {
    if (name == metadata_key) {
      if (!v.is_object())
        fail(path, "has __metadata__ " + v.dump() + "; expected an object of strings");
      for (const auto& [k, s] : v.items()) {
        if (!s.is_string())
          fail(path, "has __metadata__ entry '" + k + "' = " + s.dump() + "; expected a string");
        p.metadata.emplace(k, s.get<std::string>());
      }
      continue;
    }
    p.entries.push_back(parse_entry(path, name, v));
  }
  check_layout(path, p.entries, size - p.data_start);
  return p;
}

} // namespace

void save_safetensors(const std::filesystem::path& path,
                      const std::map<std::string, HostTensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty())
    header[metadata_key] = metadata;
  std::uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (name.empty() || name == metadata_key)
      throw ValueError("save_safetensors: tensor name '" + name + "' for '" + path.string() +
                       "' is reserved or empty; choose another name");
    header[name] = {{"dtype", code_of(t.dtype())},
                    {"shape", t.shape()},
                    {"data_offsets", json::array({offset, offset + t.nbytes()})}};
    offset += t.nbytes();
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const json::type_error&) {
    // JSON text is UTF-8; other tools could not read the header either.
    throw ValueError("save_safetensors: tensor names and metadata for '" + path.string() +
                     "' must be valid UTF-8");
  }
  // Spaces pad the header so the data start 8-byte aligned, as the reference writer does.
  text.append((8 - text.size() % 8) % 8, ' ');
  std::array<unsigned char, 8> len{};
  for (std::size_t i = 0; i < 8; ++i)
    len[i] = static_cast<unsigned char>(std::uint64_t{text.size()} >> (8 * i));

  TempFile tmp(path.string() + ".tmp." + std::to_string(::getpid()));
  const auto io_error = [&](const char* step) {
    return IoError("save_safetensors: cannot " + std::string(step) + " '" + path.string() +
                   "' (via '" + tmp.path().string() + "'): " + std::strerror(errno));
  };
  if (!tmp.ok())
    throw io_error("create");
  bool ok = tmp.write(len.data(), len.size()) && tmp.write(text.data(), text.size());
  for (const auto& [name, t] : tensors)
    ok = ok && tmp.write(t.bytes().data(), t.nbytes());
  if (!ok || !tmp.close())
    throw io_error("write");
  std::error_code ec;
  std::filesystem::rename(tmp.path(), path, ec);
  if (ec)
    throw IoError("save_safetensors: cannot rename '" + tmp.path().string() + "' to '" +
                  path.string() + "': " + ec.message());
  tmp.commit();
}

std::map<std::string, HostTensor> load_safetensors(const std::filesystem::path& path) {
  Parsed p = parse(path);
  std::map<std::string, HostTensor> out;
  for (const Entry& e : p.entries) {
    HostTensor t(e.shape, e.dtype);
    const char* src = p.bytes.data() + p.data_start + e.begin;
    if (e.dtype == bool_) {
      // Any other byte would be an invalid bool object in memory.
      const auto* bad =
          std::find_if(src, src + t.nbytes(), [](char c) { return c != 0 && c != 1; });
      if (bad != src + t.nbytes())
        fail(path, "has BOOL tensor '" + e.name + "' with byte " +
                       std::to_string(static_cast<unsigned char>(*bad)) + " at element " +
                       std::to_string(bad - src) + "; expected 0 or 1");
    }
    if (t.nbytes() > 0) // an empty tensor's data pointer may be null
      std::memcpy(t.bytes().data(), src, t.nbytes());
    out.emplace(e.name, std::move(t));
  }
  return out;
}

std::map<std::string, std::string> load_safetensors_metadata(const std::filesystem::path& path) {
  return parse(path).metadata;
}

} // namespace pxl::addons
