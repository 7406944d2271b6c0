// safetensors checkpoints: nlohmann-json header, raw little-endian data, atomic replacement.
#include "pxl/addons/safetensors.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <new>
#include <optional>
#include <set>
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
/// The format's codes, one per DType but the float8 ones (safetensors' own spelling). Its
/// F8_E4M3 and F8_E5M2 are the OCP formats (bias 7 and 15, with -0 and, for E5M2,
/// infinities), not PopXL's float8_143 and float8_152, so those have none.
constexpr std::array<DTypeCode, all_dtypes.size() - 2> dtype_codes{{{float32, "F32"},
                                                                    {float16, "F16"},
                                                                    {int32, "I32"},
                                                                    {uint32, "U32"},
                                                                    {uint8, "U8"},
                                                                    {bool_, "BOOL"},
                                                                    {int8, "I8"},
                                                                    {int16, "I16"},
                                                                    {uint16, "U16"},
                                                                    {int64, "I64"},
                                                                    {uint64, "U64"},
                                                                    {float64, "F64"}}};
constexpr const char* metadata_key = "__metadata__";
/// The reference implementation's limit on the header, which bounds what parsing it costs.
constexpr std::uint64_t max_header_bytes = 100'000'000;
/// A header is three levels deep (the object, an entry, its shape); deeper JSON is not one,
/// and stops here, before anything recursive (printing it in a message) meets it.
constexpr int max_json_depth = 64;

/// `v` for an error message: compact JSON, invalid UTF-8 replaced, cut after `limit` bytes.
std::string show(const json& v, std::size_t limit = 100) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > limit ? s.substr(0, limit) + "..." : s;
}

/// A name or key for an error message, in single quotes, escaped as JSON escapes it and cut
/// after `limit` bytes.
std::string quoted(const std::string& name, std::size_t limit = 100) {
  std::string s = json(name).dump(-1, ' ', false, json::error_handler_t::replace);
  s = s.substr(1, s.size() - 2);
  return "'" + (s.size() > limit ? s.substr(0, limit) + "..." : s) + "'";
}

/// Why `name` cannot name a tensor, or an empty string when it can. Saving and loading both
/// ask, so whatever loads can be saved back.
std::string name_problem(const std::string& name) {
  if (name.empty())
    return "is empty";
  if (name == metadata_key)
    return "is reserved for the metadata";
  try {
    (void)json(name).dump(); // nlohmann's UTF-8 check, the one its parser applies
  } catch (const json::type_error&) {
    return "is not valid UTF-8";
  }
  return {};
}

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

/// A parsed and validated header: its entries (in data order), metadata and where the data
/// section starts, in a file still open at that point.
struct Parsed {
  std::vector<Entry> entries;
  std::map<std::string, std::string> metadata;
  std::ifstream in;
  std::uint64_t data_start = 0;
  std::uint64_t data_size = 0;
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
  const std::string what = "tensor " + quoted(name);
  if (const auto problem = name_problem(name); !problem.empty())
    fail(path, "has a " + what + ", a name that " + problem +
                   " (save_safetensors refuses it too); expected a non-empty UTF-8 name other "
                   "than \"__metadata__\"");
  if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
    fail(path, "has a header entry for " + what +
                   " that is not an object with dtype, shape and data_offsets: " + show(v));
  const json& dt = v["dtype"];
  if (!dt.is_string())
    fail(path, "has " + what + " with dtype " + show(dt) + "; expected a string");
  const auto code = dt.get<std::string>();
  const auto* found = std::find_if(dtype_codes.begin(), dtype_codes.end(),
                                   [&](const DTypeCode& c) { return code == c.code; });
  if (found == dtype_codes.end()) {
    std::string codes;
    for (const auto& c : dtype_codes)
      codes += (codes.empty() ? "" : ", ") + std::string(c.code);
    fail(path, "has " + what + " with dtype " + quoted(code) +
                   ", which pxl does not hold; expected one of " + codes);
  }

  const json& sh = v["shape"];
  bool ok = sh.is_array();
  Shape shape;
  for (const json& d : ok ? sh : json::array()) {
    const std::uint64_t dim = unsigned_of(d, ok);
    if (!ok || dim > static_cast<std::uint64_t>(INT64_MAX)) {
      ok = false;
      break;
    }
    shape.push_back(static_cast<std::int64_t>(dim));
  }
  if (!ok)
    fail(path, "has " + what + " with shape " + show(sh) +
                   "; expected an array of non-negative integers");
  std::uint64_t nbytes = 0;
  try {
    nbytes = static_cast<std::uint64_t>(pxl::nbytes(shape, found->dtype));
  } catch (const ShapeError&) {
    fail(path, "has " + what + " of " + code + " shape " + show(sh) +
                   " whose byte count overflows 64 bits");
  }

  const json& off = v["data_offsets"];
  ok = off.is_array() && off.size() == 2;
  const std::uint64_t begin = ok ? unsigned_of(off[0], ok) : 0;
  const std::uint64_t end = ok ? unsigned_of(off[1], ok) : 0;
  if (!ok || begin > end)
    fail(path, "has " + what + " with data_offsets " + show(off) +
                   "; expected [begin, end] with 0 <= begin <= end");
  if (nbytes != end - begin)
    fail(path, "has " + what + " of " + code + " shape " + show(sh) + " with data_offsets " +
                   show(off) + " spanning " + std::to_string(end - begin) +
                   " bytes; the shape needs " + std::to_string(nbytes));
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
      fail(path, "has tensor " + quoted(e.name) + " with data_offsets [" + std::to_string(e.begin) +
                     ", " + std::to_string(e.end) + ") out of range: the data section has " +
                     std::to_string(data_size) + " bytes");
    if (e.begin < at)
      fail(path, "has overlapping tensors " + quoted(previous->name) + " and " + quoted(e.name) +
                     ": one ends at byte " + std::to_string(at) + " and the other begins at " +
                     std::to_string(e.begin));
    if (e.begin > at)
      fail(path, "has a gap in its data section: bytes [" + std::to_string(at) + ", " +
                     std::to_string(e.begin) + ") before tensor " + quoted(e.name) +
                     " belong to no tensor");
    at = e.end;
    previous = &e;
  }
  if (at != data_size)
    fail(path, "has " + std::to_string(data_size - at) + " trailing bytes: its tensors cover " +
                   std::to_string(at) + " of " + std::to_string(data_size) + " data bytes");
}

/// Parses the header with nlohmann's DOM parser (iterative, so deep input cannot overflow the
/// stack while parsing), refusing nesting deeper than `max_json_depth` and a key given twice
/// in one object, which the DOM would silently collapse.
json parse_json(const std::filesystem::path& path, const std::string& text) {
  std::vector<std::set<std::string>> keys; // one set per object being parsed
  const json::parser_callback_t check = [&](int depth, json::parse_event_t event, json& v) {
    switch (event) {
    case json::parse_event_t::object_start:
    case json::parse_event_t::array_start:
      if (depth >= max_json_depth)
        fail(path, "has a header nested more than " + std::to_string(max_json_depth) +
                       " levels deep; expected a flat object of tensor entries");
      if (event == json::parse_event_t::object_start)
        keys.emplace_back();
      break;
    case json::parse_event_t::object_end:
      keys.pop_back();
      break;
    case json::parse_event_t::key:
      if (!keys.back().insert(v.get<std::string>()).second)
        fail(path,
             "has key " + quoted(v.get<std::string>()) + " twice in one object of its header");
      break;
    default:
      break;
    }
    return true;
  };
  try {
    return json::parse(text, check);
  } catch (const json::exception& e) {
    // Syntax errors and numbers out of range (1e400) alike.
    std::string why = e.what();
    if (why.size() > 200)
      why = why.substr(0, 200) + "...";
    fail(path, "has a header that is not valid JSON: " + why);
  }
}

/// Opens `path`, reads and validates its header against the file's size, and leaves the file
/// at the start of the data section. Nothing is allocated for what the file does not hold.
Parsed parse(const std::filesystem::path& path) {
  Parsed p;
  p.in.open(path, std::ios::binary);
  std::error_code ec;
  if (!p.in)
    fail(path, std::filesystem::exists(path, ec) ? "cannot be opened" : "does not exist");
  const std::uint64_t size = std::filesystem::file_size(path, ec);
  if (ec)
    fail(path, "cannot be read: " + ec.message());
  if (size < 8)
    fail(path,
         "is truncated: " + std::to_string(size) + " bytes, shorter than the 8-byte header length");
  std::array<unsigned char, 8> len{};
  if (!p.in.read(reinterpret_cast<char*>(len.data()), 8))
    fail(path, "could not be read: its 8-byte header length");
  std::uint64_t header_len = 0;
  for (std::size_t i = 8; i-- > 0;)
    header_len = (header_len << 8) | len[i];
  if (header_len > size - 8)
    fail(path, "is truncated: its header length is " + std::to_string(header_len) +
                   " bytes but only " + std::to_string(size - 8) + " bytes follow");
  if (header_len > max_header_bytes)
    fail(path, "has a header of " + std::to_string(header_len) + " bytes; expected at most " +
                   std::to_string(max_header_bytes) + ", the format's limit");
  p.data_start = 8 + header_len;
  p.data_size = size - p.data_start;

  std::string text(static_cast<std::size_t>(header_len), '\0');
  if (!p.in.read(text.data(), static_cast<std::streamsize>(text.size())))
    fail(path, "could not be read: its " + std::to_string(header_len) + "-byte header");
  const json header = parse_json(path, text);
  if (!header.is_object())
    fail(path, std::string("has a header that is a JSON ") + header.type_name() +
                   "; expected an object mapping tensor names to entries");
  for (const auto& item : header.items()) {
    const std::string& name = item.key();
    const json& v = item.value();
    if (name == metadata_key) {
      if (!v.is_object())
        fail(path, "has __metadata__ " + show(v) + "; expected an object of strings");
      for (const auto& m : v.items()) {
        if (!m.value().is_string())
          fail(path, "has __metadata__ entry " + quoted(m.key()) + " = " + show(m.value()) +
                         "; expected a string");
        p.metadata.emplace(m.key(), m.value().get<std::string>());
      }
      continue;
    }
    p.entries.push_back(parse_entry(path, name, v));
  }
  check_layout(path, p.entries, p.data_size);
  return p;
}

/// Removes `<path>.tmp.<pid>` files whose writer no longer runs: what a save killed mid-write
/// (SIGKILL, a crash) leaves behind. A running writer's file is left alone (kill(pid, 0) finds
/// it, or is not allowed to signal it), and so is this process's own (the save reuses it).
void remove_stale_temporaries(const std::filesystem::path& path) {
  const std::string prefix = path.filename().string() + ".tmp.";
  const auto dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0)
      continue;
    const char* last = name.data() + name.size();
    pid_t pid = 0;
    const auto parsed = std::from_chars(name.data() + prefix.size(), last, pid);
    if (parsed.ec != std::errc() || parsed.ptr != last || pid <= 0 || pid == ::getpid())
      continue;
    if (::kill(pid, 0) == -1 && errno == ESRCH) {
      std::error_code ignored; // another save may have removed it first
      std::filesystem::remove(it->path(), ignored);
    }
  }
}

/// Flushes `dir`'s entries to disk, so that a rename into it survives a power loss (POSIX
/// leaves a directory's own data to its fsync). False when that failed; a file system that
/// cannot sync directories (EINVAL) gives nothing to flush and counts as done.
bool sync_parent_directory(const std::filesystem::path& file) {
  const auto dir = file.has_parent_path() ? file.parent_path() : std::filesystem::path(".");
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return false;
  const bool synced = ::fsync(fd) == 0 || errno == EINVAL;
  const int saved = errno;
  ::close(fd);
  errno = saved;
  return synced;
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
    if (const auto problem = name_problem(name); !problem.empty())
      throw ValueError("save_safetensors: tensor name " + quoted(name) + " for '" + path.string() +
                       "' " + problem + "; choose a non-empty UTF-8 name other than " +
                       "\"__metadata__\"");
    if (is_float8(t.dtype()))
      throw DTypeError("save_safetensors: tensor " + quoted(name) + " for '" + path.string() +
                       "' is " + std::string(pxl::name(t.dtype())) +
                       ", which safetensors has no code for (its F8_E4M3 and F8_E5M2 are other "
                       "formats, with another exponent bias); save it with HostTensor::save_npy, "
                       "or widen it with host_pow2scale_cast_from_fp8");
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

  remove_stale_temporaries(path);
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
  if (!sync_parent_directory(path))
    throw IoError("save_safetensors: wrote '" + path.string() +
                  "', but cannot flush its directory to disk, so the save may not survive a "
                  "power loss: " +
                  std::strerror(errno));
}

std::map<std::string, HostTensor> load_safetensors(const std::filesystem::path& path,
                                                   const ReadOptions& options) {
  Parsed p = parse(path);
  // The tensors tile the data section exactly (checked), so it is what loading allocates.
  if (p.data_size > options.max_bytes)
    fail(path, "is too large: its tensors hold " + std::to_string(p.data_size) +
                   " bytes, more than ReadOptions::max_bytes (" +
                   std::to_string(options.max_bytes) + ")");
  std::map<std::string, HostTensor> out;
  for (const Entry& e : p.entries) { // in data order: the reads are sequential
    std::optional<HostTensor> t;
    try {
      t.emplace(e.shape, e.dtype);
    } catch (const std::bad_alloc&) {
      fail(path, "has tensor " + quoted(e.name) + " of " + std::to_string(e.end - e.begin) +
                     " bytes, which could not be allocated");
    }
    const auto bytes = t->bytes();
    if (!p.in.read(reinterpret_cast<char*>(bytes.data()),
                   static_cast<std::streamsize>(bytes.size())))
      fail(path, "could not be read: the " + std::to_string(bytes.size()) + " bytes of tensor " +
                     quoted(e.name) + " (was it changed while being read?)");
    if (e.dtype == bool_) {
      // Any other byte would be an invalid bool object in memory.
      const auto bad = std::find_if(bytes.begin(), bytes.end(), [](std::byte b) {
        return b != std::byte{0} && b != std::byte{1};
      });
      if (bad != bytes.end())
        fail(path, "has BOOL tensor " + quoted(e.name) + " with byte " +
                       std::to_string(static_cast<unsigned>(*bad)) + " at element " +
                       std::to_string(bad - bytes.begin()) + "; expected 0 or 1");
    }
    out.emplace(e.name, std::move(*t));
  }
  return out;
}

std::map<std::string, std::string> load_safetensors_metadata(const std::filesystem::path& path) {
  return parse(path).metadata;
}

} // namespace pxl::addons
