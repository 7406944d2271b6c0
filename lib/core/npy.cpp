// HostTensor's .npy files (NumPy's format 1.0-3.0): the writer and the reader, which the
// fuzzers feed (test/fuzz/npy.cpp), so every size a file states is checked before use.
#include "pxl/core/host_tensor.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <new>
#include <optional>
#include <string_view>

namespace pxl {

namespace {

/// The `descr` NumPy writes for each dtype pxl holds.
std::string npy_descr(DType d) {
  switch (d) {
  case DType::float32:
    return "<f4";
  case DType::float16:
    return "<f2";
  case DType::int32:
    return "<i4";
  case DType::uint32:
    return "<u4";
  case DType::uint8:
    return "|u1";
  case DType::bool_:
    return "|b1";
  case DType::int8:
    return "|i1";
  case DType::int16:
    return "<i2";
  case DType::uint16:
    return "<u2";
  case DType::int64:
    return "<i8";
  case DType::uint64:
    return "<u8";
  case DType::float64:
    return "<f8";
  // PopXL's NumPy representation of float8: a structured dtype of one uint8 field named after
  // the format (popxl.utils.np_dtype_float8_143), its header descr a list.
  case DType::float8_143:
    return "[('float8_143', '|u1')]";
  case DType::float8_152:
    return "[('float8_152', '|u1')]";
  }
  return "";
}

/// The descr as the header's dict holds it: a quoted string, or a structured dtype's list.
std::string npy_descr_literal(DType d) {
  const std::string descr = npy_descr(d);
  return descr.front() == '[' ? descr : "'" + descr + "'";
}

constexpr std::string_view npy_magic = "\x93NUMPY";

/// `text` for an error message: non-printable bytes as \xNN, cut after `limit` characters, so
/// a hostile file cannot put control characters or megabytes into a message.
std::string npy_quote(std::string_view text, std::size_t limit = 60) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size() && i < limit; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      constexpr const char* hex = "0123456789abcdef";
      out += {'\\', 'x', hex[c >> 4], hex[c & 15]};
    }
  }
  return out + (text.size() > limit ? "\"..." : "\"");
}

[[noreturn]] void npy_fail(const std::string& path, const std::string& what) {
  throw IoError("load_npy: '" + path + "' " + what);
}

/// What a .npy header says.
struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

/// The Python dict literal of a .npy header, `{'descr': '<f4', 'fortran_order': False,
/// 'shape': (2, 3), }`: exactly these three keys, string, bool and tuple-of-integer values
/// (Python 2's `3L` included), then spaces and a newline. Anything else is an IoError.
class NpyHeaderParser {
public:
  NpyHeaderParser(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  NpyHeader parse() {
    NpyHeader h;
    bool has_descr = false, has_order = false, has_shape = false;
    expect('{');
    while (skip_spaces(), peek() != '}') {
      const std::string key = string_literal("a quoted key");
      skip_spaces();
      expect(':');
      skip_spaces();
      const auto seen = [&](bool& flag) {
        if (flag)
          fail("has key '" + key + "' twice");
        flag = true;
      };
      if (key == "descr") {
        seen(has_descr);
        h.descr = peek() == '[' ? structured_descr() : string_literal("a quoted dtype");
      } else if (key == "fortran_order") {
        seen(has_order);
        h.fortran_order = boolean();
      } else if (key == "shape") {
        seen(has_shape);
        h.shape = tuple();
      } else {
        fail("has key " + npy_quote(key) + "; expected only 'descr', 'fortran_order' and 'shape'");
      }
      skip_spaces();
      if (peek() != '}')
        expect(',');
    }
    ++at_;
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\n' || text_[at_] == '\0'))
      ++at_;
    if (at_ != text_.size())
      fail_here("the end of the header");
    if (!has_descr || !has_order || !has_shape)
      fail("has no '" +
           std::string(!has_descr   ? "descr"
                       : !has_order ? "fortran_order"
                                    : "shape") +
           "' key; expected 'descr', 'fortran_order' and 'shape'");
    return h;
  }

private:
  [[noreturn]] void fail(const std::string& what) const { npy_fail(path_, "header " + what); }
  [[noreturn]] void fail_here(const std::string& expected) const {
    fail("is malformed at byte " + std::to_string(at_) + ": expected " + expected + ", found " +
         (at_ < text_.size() ? npy_quote(text_.substr(at_), 20) : std::string("its end")));
  }
  char peek() const { return at_ < text_.size() ? text_[at_] : '\0'; }
  void skip_spaces() {
    while (peek() == ' ')
      ++at_;
  }
  void expect(char c) {
    if (at_ >= text_.size() || text_[at_] != c)
      fail_here(std::string("'") + c + "'");
    ++at_;
  }
  std::string string_literal(const char* what) {
    const char quote = peek();
    if (quote != '\'' && quote != '"')
      fail_here(what);
    const auto end = text_.find(quote, at_ + 1);
    if (end == std::string_view::npos)
      fail_here(std::string("a closing ") + quote);
    std::string s(text_.substr(at_ + 1, end - at_ - 1));
    at_ = end + 1;
    return s;
  }
  bool boolean() {
    for (const std::string_view word : {"True", "False"})
      if (text_.substr(at_, word.size()) == word) {
        at_ += word.size();
        return word == "True";
      }
    fail_here("True or False");
  }
  /// A structured dtype of one field, `[('name', 'u1')]`, in npy_descr's spelling (the field's
  /// byte order, meaningless for one byte, as '|').
  std::string structured_descr() {
    expect('[');
    skip_spaces();
    expect('(');
    skip_spaces();
    const std::string field = string_literal("a quoted field name");
    skip_spaces();
    expect(',');
    skip_spaces();
    std::string type = string_literal("a quoted field dtype");
    skip_spaces();
    expect(')');
    skip_spaces();
    if (peek() == ',')
      ++at_, skip_spaces();
    expect(']');
    if (type == "u1" || type == "<u1")
      type = "|u1";
    return "[('" + field + "', '" + type + "')]";
  }
  Shape tuple() {
    Shape shape;
    expect('(');
    while (skip_spaces(), peek() != ')') {
      const char* first = text_.data() + at_;
      const char* last = text_.data() + text_.size();
      std::int64_t d = 0;
      const auto [end, ec] = std::from_chars(first, last, d);
      if (ec == std::errc::result_out_of_range)
        fail("has shape dimension " + npy_quote({first, static_cast<std::size_t>(end - first)}) +
             ", which does not fit in 64 bits");
      if (ec != std::errc() || end == first)
        fail_here("a dimension (a non-negative integer)");
      if (d < 0)
        fail("has negative shape dimension " + std::to_string(d));
      shape.push_back(d);
      at_ = static_cast<std::size_t>(end - text_.data());
      if (peek() == 'L') // Python 2 longs
        ++at_;
      skip_spaces();
      if (peek() != ')')
        expect(',');
    }
    ++at_;
    return shape;
  }

  std::string_view text_;
  const std::string& path_;
  std::size_t at_ = 0;
};

} // namespace

void HostTensor::save_npy(const std::string& path) const {
  std::string dict = "{'descr': " + npy_descr_literal(dtype()) +
                     ", 'fortran_order': False, 'shape': " + pxl::to_string(shape()) + ", }";
  // Magic (6), version (2), header length (2, or 4 from version 2.0 on, for headers of 64 KiB
  // and more), then the dict padded with spaces to a multiple of 64 and ended by a newline.
  const bool v1 = dict.size() + 1 + 64 + 10 <= 0xffff;
  const std::size_t prefix = v1 ? 10 : 12;
  dict.append((64 - (prefix + dict.size() + 1) % 64) % 64, ' ');
  dict += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f)
    throw IoError("save_npy: cannot open '" + path + "' for writing");
  std::string head(npy_magic);
  head += {static_cast<char>(v1 ? 1 : 2), 0};
  for (std::size_t i = 0; i < prefix - 8; ++i)
    head += static_cast<char>((dict.size() >> (8 * i)) & 0xff);
  f.write(head.data(), static_cast<std::streamsize>(head.size()));
  f.write(dict.data(), static_cast<std::streamsize>(dict.size()));
  f.write(reinterpret_cast<const char*>(bytes_.data()), static_cast<std::streamsize>(nbytes()));
  if (!f)
    throw IoError("save_npy: writing '" + path + "' failed");
}

HostTensor HostTensor::load_npy(const std::string& path, const ReadOptions& options) {
  std::ifstream f(path, std::ios::binary);
  std::error_code ec;
  if (!f)
    throw IoError("load_npy: cannot open '" + path + "'" +
                  (std::filesystem::exists(path, ec) ? "" : ": it does not exist"));
  const std::uint64_t size = std::filesystem::file_size(path, ec);
  if (ec)
    npy_fail(path, "cannot be read: " + ec.message());
  // Every size the file states is checked against `size` before anything is allocated.
  const auto read = [&](std::size_t n, const std::string& what) {
    std::string s(n, '\0');
    if (!f.read(s.data(), static_cast<std::streamsize>(n)))
      npy_fail(path, "could not be read (" + what + ", " + std::to_string(n) + " bytes)");
    return s;
  };
  const std::string magic = read(std::min<std::uint64_t>(size, 8), "the magic string");
  if (magic.substr(0, 6) != npy_magic)
    npy_fail(path, "is not a .npy file (bad magic): expected " + npy_quote(npy_magic) + ", found " +
                       npy_quote(magic.substr(0, 6)));
  if (size < 8)
    npy_fail(path, "is truncated: " + std::to_string(size) +
                       " bytes, shorter than the 8-byte magic and version");
  const int major = static_cast<unsigned char>(magic[6]);
  if (major < 1 || major > 3)
    npy_fail(path, "has format version " + std::to_string(major) + "." +
                       std::to_string(static_cast<unsigned char>(magic[7])) +
                       "; expected 1.0, 2.0 or 3.0");
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  if (size < 8 + len_bytes)
    npy_fail(path, "is truncated: " + std::to_string(size) + " bytes, shorter than the " +
                       std::to_string(8 + len_bytes) + "-byte preamble of format " +
                       std::to_string(major) + ".0");
  const std::string len = read(len_bytes, "the header length");
  std::uint64_t header_len = 0;
  for (std::size_t i = len_bytes; i-- > 0;)
    header_len = (header_len << 8) | static_cast<unsigned char>(len[i]);
  const std::uint64_t data_start = 8 + len_bytes + header_len;
  if (data_start > size)
    npy_fail(path, "is truncated: its header length is " + std::to_string(header_len) +
                       " bytes but only " + std::to_string(size - 8 - len_bytes) + " bytes follow");
  const NpyHeader h =
      NpyHeaderParser(read(static_cast<std::size_t>(header_len), "the header"), path).parse();

  DType dtype{};
  bool found = false;
  std::string descrs;
  for (DType d : all_dtypes) {
    if (h.descr == npy_descr(d) || (size_of(d) == 1 && h.descr == "<" + npy_descr(d).substr(1))) {
      dtype = d;
      found = true;
    }
    descrs += (descrs.empty() ? "" : ", ") + npy_descr(d);
  }
  if (!found)
    npy_fail(path, "has dtype " + npy_quote(h.descr) + "; expected one of " + descrs +
                       " (little-endian)");
  if (h.fortran_order)
    npy_fail(path, "is in Fortran order; only C order is supported");
  std::uint64_t need = 0;
  try {
    need = static_cast<std::uint64_t>(pxl::nbytes(h.shape, dtype));
  } catch (const ShapeError& e) {
    npy_fail(path, "has a shape whose size overflows: " + std::string(e.what()));
  }
  const std::uint64_t have = size - data_start;
  const std::string needs = "shape " + npy_quote(pxl::to_string(h.shape), 200) + " of " +
                            std::string(name(dtype)) + " needs " + std::to_string(need) +
                            " bytes of data";
  if (need > have)
    npy_fail(path, "is truncated: its " + needs + ", found " + std::to_string(have));
  if (need < have)
    npy_fail(path, "has " + std::to_string(have - need) + " trailing bytes: its " + needs +
                       ", found " + std::to_string(have));
  if (need > options.max_bytes)
    npy_fail(path, "is too large: its " + needs + ", more than ReadOptions::max_bytes (" +
                       std::to_string(options.max_bytes) + ")");

  std::optional<HostTensor> t;
  try {
    t.emplace(h.shape, dtype);
  } catch (const std::bad_alloc&) {
    npy_fail(path, "is too large: its " + needs + ", which could not be allocated");
  }
  if (!f.read(reinterpret_cast<char*>(t->bytes_.data()), static_cast<std::streamsize>(need)))
    npy_fail(path, "could not be read: its " + needs + " (was it changed while being read?)");
  if (dtype == bool_) {
    // Any other byte would be an invalid bool object in memory.
    const auto bytes = t->bytes();
    const auto bad = std::find_if(bytes.begin(), bytes.end(), [](std::byte b) {
      return b != std::byte{0} && b != std::byte{1};
    });
    if (bad != bytes.end())
      npy_fail(path, "has bool byte " + std::to_string(static_cast<unsigned>(*bad)) +
                         " at element " + std::to_string(bad - bytes.begin()) +
                         "; expected 0 or 1");
  }
  return std::move(*t);
}

} // namespace pxl
