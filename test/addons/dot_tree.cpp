// DotTree, NamedTensors and NamedTensorData: order, access, conversions and every error.
#include "pxl/addons/module/named_tensors.hpp"
#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

using namespace pxl;
using addons::DotTree;
using Keys = std::vector<std::string>;

namespace {
DotTree<int> sample() {
  DotTree<int> t;
  t.insert("fc1.weight", 1);
  t.insert("fc2.weight", 2);
  t.insert("fc1.bias", 3);
  t.insert("scale", 4);
  return t;
}
} // namespace

TEST_CASE("DotTree keeps insertion order, nested: a sub-tree's leaves stay together") {
  const auto t = sample();
  CHECK(t.keys_flat() == Keys{"fc1.weight", "fc1.bias", "fc2.weight", "scale"});
  CHECK(t.values_flat() == std::vector<int>{1, 3, 2, 4});
  CHECK(t.keys() == Keys{"fc1", "fc2", "scale"});
  const auto values = t.values();
  REQUIRE(values.size() == 3);
  CHECK(std::get<1>(values[0]).keys_flat() == Keys{"weight", "bias"});
  CHECK(std::get<1>(values[1]).at("weight") == 2);
  CHECK(std::get<0>(values[2]) == 4);
  CHECK(t.size() == 3);
  CHECK(t.size_flat() == 4);
  CHECK_FALSE(t.empty());
  CHECK(DotTree<int>{}.empty());
}

TEST_CASE("DotTree access by dotted key and by sub-tree") {
  auto t = sample();
  CHECK(t.at("fc1.bias") == 3);
  CHECK(t["fc2.weight"] == 2);
  t.at("scale") = 40;
  CHECK(t.at("scale") == 40);
  const auto fc1 = t.sub("fc1");
  CHECK(fc1.keys_flat() == Keys{"weight", "bias"});
  CHECK(fc1.at("weight") == 1);
  CHECK(t.contains("fc1"));
  CHECK(t.contains("fc1.weight"));
  CHECK_FALSE(t.contains("fc"));
  CHECK_FALSE(t.contains("fc3"));
  CHECK(t.is_leaf("scale"));
  CHECK_FALSE(t.is_leaf("fc1"));
}

TEST_CASE("DotTree insert with overwrite, sub-tree insert, update, erase") {
  auto t = sample();
  t.insert("fc1.weight", 10, /*overwrite=*/true);
  CHECK(t.keys_flat() == Keys{"fc1.weight", "fc1.bias", "fc2.weight", "scale"});
  CHECK(t.at("fc1.weight") == 10);

  DotTree<int> more{{"a", 5}, {"b.c", 6}};
  t.insert("extra", more);
  CHECK(t.at("extra.b.c") == 6);
  // A leaf joining an existing sub-tree goes right after that sub-tree's last leaf.
  t.insert("fc1.scale", 7);
  CHECK(t.keys_flat() ==
        Keys{"fc1.weight", "fc1.bias", "fc1.scale", "fc2.weight", "scale", "extra.a", "extra.b.c"});

  DotTree<int> u{{"scale", 8}, {"new", 9}};
  CHECK_THROWS_AS(t.update(u), ValueError);
  t.update(u, /*overwrite=*/true);
  CHECK(t.at("scale") == 8);
  CHECK(t.at("new") == 9);

  t.erase("extra");
  CHECK_FALSE(t.contains("extra"));
  t.erase("new");
  CHECK(t.size_flat() == 5);
}

TEST_CASE("DotTree to_dict, from_dict, pack and unpack") {
  const auto t = sample();
  const auto d = t.to_dict();
  CHECK(d == std::map<std::string, int>{
                 {"fc1.bias", 3}, {"fc1.weight", 1}, {"fc2.weight", 2}, {"scale", 4}});
  const auto back = DotTree<int>::from_dict(d);
  CHECK(back.to_dict() == d);
  CHECK(back.keys_flat() == Keys{"fc1.bias", "fc1.weight", "fc2.weight", "scale"});

  const auto [keys, values] = t.unpack();
  CHECK(keys == Keys{"fc1.bias", "fc1.weight", "fc2.weight", "scale"});
  CHECK(values == std::vector<int>{3, 1, 2, 4});
  const auto packed = DotTree<int>::pack(keys, values);
  CHECK(packed.to_dict() == d);
}

TEST_CASE("DotTree map, filter_keys and to_mapping") {
  const auto t = sample();
  const auto doubled = t.map([](int v) { return 2.0 * v; });
  CHECK(doubled.keys_flat() == t.keys_flat());
  CHECK(doubled.at("fc1.bias") == 6.0);
  const auto named = t.map([](const std::string& k, int v) { return k + "=" + std::to_string(v); });
  CHECK(named.at("fc2.weight") == "fc2.weight=2");

  const auto f = t.filter_keys({"fc1", "scale"});
  CHECK(f.keys_flat() == Keys{"fc1.weight", "fc1.bias", "scale"});

  DotTree<std::string> other{{"fc1.weight", "w1"}, {"scale", "s"}, {"unrelated", "u"}};
  const auto m = t.to_mapping(other);
  CHECK(m == std::map<int, std::string>{{1, "w1"}, {4, "s"}});
}

TEST_CASE("DotTree prints nested and indented") {
  CHECK(sample().to_string() == "fc1:\n  weight: 1\n  bias: 3\nfc2:\n  weight: 2\nscale: 4\n");
}

TEST_CASE("DotTree errors name the key") {
  auto t = sample();
  CHECK_THROWS_WITH_AS(t.insert("fc1.weight", 0), doctest::Contains("'fc1.weight' already exists"),
                       ValueError);
  CHECK_THROWS_WITH_AS(t.insert("fc1", 0), doctest::Contains("'fc1' is a sub-tree"), ValueError);
  CHECK_THROWS_WITH_AS(t.insert("scale.x", 0), doctest::Contains("'scale' is a leaf"), ValueError);
  CHECK_THROWS_WITH_AS(t.insert("a..b", 0), doctest::Contains("malformed key 'a..b'"), ValueError);
  CHECK_THROWS_WITH_AS(t.insert("", 0), doctest::Contains("malformed key ''"), ValueError);
  CHECK_THROWS_WITH_AS(t.insert("a b", 0), doctest::Contains("malformed key"), ValueError);
  CHECK_THROWS_WITH_AS(t.at("fc3.weight"),
                       doctest::Contains("no key 'fc3.weight'; available: fc1.weight, fc1.bias"),
                       ValueError);
  CHECK_THROWS_WITH_AS(t.at("fc1"), doctest::Contains("'fc1' is a sub-tree, not a leaf"),
                       ValueError);
  CHECK_THROWS_WITH_AS(t.sub("scale"), doctest::Contains("'scale' is a leaf, not a sub-tree"),
                       ValueError);
  CHECK_THROWS_WITH_AS(t.sub("nope"), doctest::Contains("no key 'nope'"), ValueError);
  CHECK_THROWS_WITH_AS(t.filter_keys({"nope"}), doctest::Contains("filter_keys: no key 'nope'"),
                       ValueError);
  CHECK_THROWS_WITH_AS(t.erase("nope"), doctest::Contains("erase: no key 'nope'"), ValueError);
  CHECK_THROWS_WITH_AS(DotTree<int>::pack({"a", "b"}, {1}),
                       doctest::Contains("2 keys and 1 values"), ValueError);
  CHECK_THROWS_WITH_AS(DotTree<int>{}.at("x"), doctest::Contains("available: (none)"), ValueError);
}

TEST_CASE("NamedTensors: tensors() sorted by tensor name, named_tensors() flat") {
  Ir ir;
  auto main = ir.main_graph().scope();
  const auto b = variable(HostTensor({1.f}), "b");
  const auto a = variable(HostTensor({2.f}), "a");
  addons::NamedTensors nt;
  nt.insert("layer.w", b);
  nt.insert("first", a);
  CHECK(nt.tensors() == std::vector<Tensor>{a, b});
  CHECK(nt.named_tensors() == std::map<std::string, Tensor>{{"first", a}, {"layer.w", b}});

  std::map<Tensor, HostTensor> data{{a, HostTensor({2.f})}, {b, HostTensor({1.f})}};
  const auto host = addons::named_data(nt, data);
  CHECK(host.at("layer.w") == HostTensor({1.f}));
  data.erase(b);
  CHECK_THROWS_WITH_AS(addons::named_data(nt, data),
                       doctest::Contains("no host data for 'layer.w'"), ValueError);
}

TEST_CASE("NamedTensorData round-trips through a flat map of host tensors") {
  addons::NamedTensorData d;
  d.insert("fc1.weight", HostTensor({1.f, 2.f}, {2}));
  d.insert("fc1.bias", HostTensor({3.f}));
  const std::map<std::string, HostTensor> flat = d.to_dict();
  const auto back = addons::NamedTensorData::from_dict(flat);
  CHECK(back.at("fc1.weight") == HostTensor({1.f, 2.f}, {2}));
  CHECK(back.sub("fc1").keys_flat() == Keys{"bias", "weight"});
}
