// pxl::addons::DotTree: an insertion-ordered, nested tree of values addressed by dotted names.
#pragma once

#include "pxl/core/error.hpp"
#include "pxl/fwd.hpp"

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <functional>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace pxl::addons {

// impl: what the templates here call out of line. Exported, since the templates are
// instantiated in users' code, but not API (`detail` namespaces are private to the binary).
namespace impl {
/// Splits "a.b.c" into its components; ValueError unless every component is a non-empty run
/// of letters, digits and underscores (an identifier or a non-negative index).
std::vector<std::string> split_key(std::string_view key, std::string_view what);
/// Whether `key` is `prefix` or lies under it ("a.b" is under "a", "ab" is not).
bool key_under(std::string_view key, std::string_view prefix);
/// "a, b, c" for error messages.
std::string join_keys(const std::vector<std::string>& keys);
} // namespace impl

/// A nested name → value tree (popxl.addons' DotTree). Leaves are addressed by dotted keys
/// ("fc1.weight"); every key prefix ("fc1") names a sub-tree. Order is insertion order, kept
/// nested: leaves of one sub-tree stay together, in the order their sub-tree first appeared.
///
///     DotTree<int> t;
///     t.insert("fc1.weight", 1);
///     t.insert("fc2.weight", 2);
///     t.insert("fc1.bias", 3);
///     t.keys_flat();      // fc1.weight, fc1.bias, fc2.weight
///     t.keys();           // fc1, fc2
///     t.sub("fc1").at("bias") == 3;
///
/// Mistakes (a missing key, a duplicate insert without `overwrite`, a leaf where a sub-tree
/// is expected or the other way round, a malformed key) throw pxl::ValueError naming the key.
template <typename T>
class DotTree {
public:
  using value_type = T;
  using Item = std::pair<std::string, T>;

  DotTree() = default;
  /// Leaves from dotted keys, in the order given (later duplicates are errors).
  DotTree(std::initializer_list<Item> items) {
    for (const auto& [k, v] : items)
      insert(k, v);
  }

  /// A tree from a flat map of dotted keys (sorted by key, as the map is).
  static DotTree from_dict(const std::map<std::string, T>& dict) {
    DotTree t;
    for (const auto& [k, v] : dict)
      t.insert(k, v);
    return t;
  }
  /// A tree from parallel lists of dotted keys and values (ValueError if the sizes differ).
  static DotTree pack(const std::vector<std::string>& keys, const std::vector<T>& values) {
    if (keys.size() != values.size())
      throw ValueError("DotTree::pack: expected as many values as keys, got " +
                       std::to_string(keys.size()) + " keys and " + std::to_string(values.size()) +
                       " values");
    DotTree t;
    for (std::size_t i = 0; i < keys.size(); ++i)
      t.insert(keys[i], values[i]);
    return t;
  }

  /// Adds a leaf. Without `overwrite` an existing leaf `key` is an error; with it the value is
  /// replaced in place. A key that is, or lies under, the other kind of node is always an error.
  void insert(std::string_view key, T value, bool overwrite = false) {
    const auto parts = impl::split_key(key, "DotTree::insert");
    const std::string k(key);
    std::size_t insert_at = items_.size();
    std::size_t best_depth = 0;
    for (std::size_t i = 0; i < items_.size(); ++i) {
      const std::string& other = items_[i].first;
      if (other == k) {
        if (!overwrite)
          throw ValueError("DotTree::insert: key '" + k +
                           "' already exists (pass overwrite = true to replace it)");
        items_[i].second = std::move(value);
        return;
      }
      if (impl::key_under(other, k))
        throw ValueError("DotTree::insert: '" + k + "' is a sub-tree (it holds '" + other +
                         "'), not a leaf");
      if (impl::key_under(k, other))
        throw ValueError("DotTree::insert: '" + other + "' is a leaf, so '" + k +
                         "' cannot be placed under it");
      // Keep sub-trees contiguous: go right after the last leaf sharing the deepest prefix.
      const auto other_parts = impl::split_key(other, "DotTree::insert");
      std::size_t depth = 0;
      while (depth < parts.size() && depth < other_parts.size() &&
             parts[depth] == other_parts[depth])
        ++depth;
      if (depth > 0 && depth >= best_depth) {
        best_depth = depth;
        insert_at = i + 1;
      }
    }
    items_.insert(items_.begin() + static_cast<std::ptrdiff_t>(insert_at),
                  Item{k, std::move(value)});
  }
  /// Adds every leaf of `tree` under `key` ("key.<leaf key>").
  void insert(std::string_view key, const DotTree& tree, bool overwrite = false) {
    impl::split_key(key, "DotTree::insert");
    for (const auto& [k, v] : tree.items_)
      insert(std::string(key) + "." + k, v, overwrite);
  }
  /// Inserts every leaf of `other` (same rules as insert).
  void update(const DotTree& other, bool overwrite = false) {
    for (const auto& [k, v] : other.items_)
      insert(k, v, overwrite);
  }
  /// Removes a leaf or a whole sub-tree; ValueError if `key` is neither.
  void erase(std::string_view key) {
    require(key, "DotTree::erase");
    std::erase_if(items_, [&](const Item& it) { return impl::key_under(it.first, key); });
  }

  /// Whether `key` names a leaf or a sub-tree.
  bool contains(std::string_view key) const {
    return std::any_of(items_.begin(), items_.end(),
                       [&](const Item& it) { return impl::key_under(it.first, key); });
  }
  bool is_leaf(std::string_view key) const { return find(key) != nullptr; }

  /// The leaf at a dotted key.
  const T& at(std::string_view key) const { return leaf(key, "DotTree::at"); }
  T& at(std::string_view key) {
    return const_cast<T&>(std::as_const(*this).leaf(key, "DotTree::at"));
  }
  const T& operator[](std::string_view key) const { return at(key); }
  T& operator[](std::string_view key) { return at(key); }

  /// A copy of the sub-tree at `key`, its keys relative to it.
  DotTree sub(std::string_view key) const {
    require(key, "DotTree::sub");
    if (is_leaf(key))
      throw ValueError("DotTree::sub: '" + std::string(key) + "' is a leaf, not a sub-tree");
    DotTree t;
    const std::string prefix = std::string(key) + ".";
    for (const auto& [k, v] : items_)
      if (k.starts_with(prefix))
        t.items_.emplace_back(k.substr(prefix.size()), v);
    return t;
  }

  /// Top-level keys, in order ("fc1", "fc2").
  std::vector<std::string> keys() const {
    std::vector<std::string> r;
    for (const auto& [k, v] : items_) {
      std::string head = k.substr(0, k.find('.'));
      if (std::find(r.begin(), r.end(), head) == r.end())
        r.push_back(std::move(head));
    }
    return r;
  }
  /// Top-level values, in order: a leaf's value or a sub-tree (nested view of `keys()`).
  std::vector<std::variant<T, DotTree>> values() const {
    std::vector<std::variant<T, DotTree>> r;
    for (const auto& key : keys()) {
      if (const T* v = find(key))
        r.emplace_back(std::in_place_index<0>, *v);
      else
        r.emplace_back(std::in_place_index<1>, sub(key));
    }
    return r;
  }
  /// Every leaf key, dotted, in order.
  std::vector<std::string> keys_flat() const {
    std::vector<std::string> r;
    for (const auto& [k, v] : items_)
      r.push_back(k);
    return r;
  }
  /// Every leaf value, in order.
  std::vector<T> values_flat() const {
    std::vector<T> r;
    for (const auto& [k, v] : items_)
      r.push_back(v);
    return r;
  }
  /// (key, value) per leaf, dotted, in order.
  const std::vector<Item>& items() const { return items_; }

  /// Number of top-level entries (leaves and sub-trees), as Python's len(DotTree).
  std::size_t size() const { return keys().size(); }
  /// Number of leaves.
  std::size_t size_flat() const { return items_.size(); }
  bool empty() const { return items_.empty(); }

  /// Flat map of dotted keys (sorted by key).
  std::map<std::string, T> to_dict() const { return {items_.begin(), items_.end()}; }
  /// Leaf keys sorted, with their values in the same order.
  std::pair<std::vector<std::string>, std::vector<T>> unpack() const {
    std::pair<std::vector<std::string>, std::vector<T>> r;
    for (const auto& [k, v] : to_dict()) {
      r.first.push_back(k);
      r.second.push_back(v);
    }
    return r;
  }

  /// The same keys with `fn(value)` (or `fn(key, value)`) as values.
  template <typename Fn>
  auto map(Fn&& fn) const {
    if constexpr (std::invocable<Fn&, const std::string&, const T&>) {
      using U = std::remove_cvref_t<std::invoke_result_t<Fn&, const std::string&, const T&>>;
      DotTree<U> r;
      for (const auto& [k, v] : items_)
        r.insert(k, fn(k, v));
      return r;
    } else {
      using U = std::remove_cvref_t<std::invoke_result_t<Fn&, const T&>>;
      DotTree<U> r;
      for (const auto& [k, v] : items_)
        r.insert(k, fn(v));
      return r;
    }
  }
  /// The leaves at or under any of `keys` (each must exist), in this tree's order.
  DotTree filter_keys(const std::vector<std::string>& keys) const {
    for (const auto& key : keys)
      require(key, "DotTree::filter_keys");
    DotTree r;
    for (const auto& item : items_)
      if (std::any_of(keys.begin(), keys.end(),
                      [&](const std::string& key) { return impl::key_under(item.first, key); }))
        r.items_.push_back(item);
    return r;
  }
  /// Pairs the leaves of both trees that have the same dotted key: `{this value: other value}`
  /// (e.g. one IR's variables to another's). Keys present in only one tree are skipped.
  template <typename U>
  std::map<T, U> to_mapping(const DotTree<U>& other) const {
    std::map<T, U> r;
    for (const auto& [k, v] : items_)
      if (other.is_leaf(k))
        r.emplace(v, other.at(k));
    return r;
  }

  /// Values sorted by their tensors' names (NamedTensors' `tensors`).
  std::vector<T> tensors() const requires std::same_as<T, Tensor> {
    auto r = values_flat();
    std::sort(r.begin(), r.end(), [](const T& a, const T& b) { return a.id() < b.id(); });
    return r;
  }
  /// Flat map of dotted keys to tensors (NamedTensors' `named_tensors`).
  std::map<std::string, T> named_tensors() const requires std::same_as<T, Tensor> {
    return to_dict();
  }

  /// Nested, indented rendering, one leaf per line ("fc1:\n  weight: <value>").
  std::string to_string() const {
    std::ostringstream os;
    print(os, "");
    return os.str();
  }
  friend std::ostream& operator<<(std::ostream& os, const DotTree& t) {
    return os << t.to_string();
  }

  friend bool operator==(const DotTree& a, const DotTree& b) requires std::equality_comparable<T> {
    return a.items_ == b.items_;
  }

private:
  template <typename>
  friend class DotTree;

  const T* find(std::string_view key) const {
    for (const auto& [k, v] : items_)
      if (k == key)
        return &v;
    return nullptr;
  }
  void require(std::string_view key, std::string_view what) const {
    if (!contains(key))
      throw ValueError(std::string(what) + ": no key '" + std::string(key) +
                       "'; available: " + impl::join_keys(keys_flat()));
  }
  const T& leaf(std::string_view key, std::string_view what) const {
    if (const T* v = find(key))
      return *v;
    if (contains(key))
      throw ValueError(std::string(what) + ": '" + std::string(key) +
                       "' is a sub-tree, not a leaf (use sub())");
    require(key, what);
    return *find(key); // unreachable: require threw
  }
  void print(std::ostream& os, const std::string& indent) const {
    for (const auto& key : keys()) {
      if (const T* v = find(key)) {
        os << indent << key << ": " << *v << "\n";
      } else {
        os << indent << key << ":\n";
        sub(key).print(os, indent + "  ");
      }
    }
  }

  std::vector<Item> items_;
};

} // namespace pxl::addons
