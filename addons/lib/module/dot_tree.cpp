// Key handling shared by every DotTree instantiation.
#include "pxl/addons/module/dot_tree.hpp"

#include <cctype>

namespace pxl::addons::impl {

std::vector<std::string> split_key(std::string_view key, std::string_view what) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = key.find('.', start);
    const std::string_view part =
        key.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    const bool ok = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    });
    if (!ok)
      throw ValueError(std::string(what) + ": malformed key '" + std::string(key) +
                       "' (expected dot-separated names of letters, digits and '_', like "
                       "'fc1.weight' or 'layers.0.bias')");
    parts.emplace_back(part);
    if (dot == std::string_view::npos)
      break;
    start = dot + 1;
  }
  return parts;
}

bool key_under(std::string_view key, std::string_view prefix) {
  return key.starts_with(prefix) && (key.size() == prefix.size() || key[prefix.size()] == '.');
}

std::string join_keys(const std::vector<std::string>& keys) {
  if (keys.empty())
    return "(none)";
  std::string r;
  for (const auto& k : keys)
    r += (r.empty() ? "" : ", ") + k;
  return r;
}

} // namespace pxl::addons::impl
