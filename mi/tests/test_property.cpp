// Property: random value trees written as MI and parsed back are identical.
#include "rocplay/mi/parser.hpp"

#include <catch2/catch.hpp>

#include <random>

using namespace rocplay::mi;

namespace {

struct Tree {
  NodeKind kind = NodeKind::String;
  std::string name;
  std::string bytes; // for strings: raw bytes, any value
  std::vector<Tree> children;
};

std::string random_name(std::mt19937& rng) {
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyz-_0123456789";
  std::uniform_int_distribution<int> len(1, 12);
  std::uniform_int_distribution<int> pick(0, sizeof(kChars) - 2);
  std::string s;
  const int n = len(rng);
  for (int i = 0; i < n; ++i) {
    s.push_back(kChars[pick(rng)]);
  }
  return s;
}

Tree random_tree(std::mt19937& rng, int depth, bool named) {
  Tree t;
  if (named) {
    t.name = random_name(rng);
  }
  std::uniform_int_distribution<int> kind(0, depth > 5 ? 0 : 2);
  t.kind = static_cast<NodeKind>(kind(rng));
  if (t.kind == NodeKind::String) {
    std::uniform_int_distribution<int> len(0, 20);
    std::uniform_int_distribution<int> byte(0, 255);
    const int n = len(rng);
    for (int i = 0; i < n; ++i) {
      t.bytes.push_back(static_cast<char>(byte(rng)));
    }
    return t;
  }
  std::uniform_int_distribution<int> count(0, 5);
  std::bernoulli_distribution names(0.5); // lists hold values or results
  const bool child_named = t.kind == NodeKind::Tuple || names(rng);
  const int n = count(rng);
  for (int i = 0; i < n; ++i) {
    t.children.push_back(random_tree(rng, depth + 1, child_named));
  }
  return t;
}

std::string write(const Tree& t) {
  std::string out;
  if (!t.name.empty()) {
    out += t.name + "=";
  }
  if (t.kind == NodeKind::String) {
    return out + "\"" + escape(t.bytes) + "\"";
  }
  out += t.kind == NodeKind::Tuple ? "{" : "[";
  for (std::size_t i = 0; i < t.children.size(); ++i) {
    out += (i ? "," : "") + write(t.children[i]);
  }
  return out + (t.kind == NodeKind::Tuple ? "}" : "]");
}

void check_same(const Tree& t, const Value& v) {
  REQUIRE(v.valid());
  CHECK(v.name() == t.name);
  REQUIRE(v.node().kind == t.kind);
  if (t.kind == NodeKind::String) {
    CHECK(v.bytes() == t.bytes);
    return;
  }
  REQUIRE(v.size() == t.children.size());
  std::size_t i = 0;
  for (const Value child : v) {
    check_same(t.children[i++], child);
  }
}

} // namespace

TEST_CASE("random value trees round-trip through MI text", "[property]") {
  std::mt19937 rng(20261121);
  for (int iteration = 0; iteration < 2000; ++iteration) {
    std::vector<Tree> results;
    std::uniform_int_distribution<int> count(0, 4);
    const int n = count(rng);
    for (int i = 0; i < n; ++i) {
      results.push_back(random_tree(rng, 0, true));
    }
    std::string line = std::to_string(iteration) + "^done";
    for (const auto& r : results) {
      line += "," + write(r);
    }
    const auto records = parse_all(line + "\n");
    REQUIRE(records.size() == 1);
    INFO(line);
    REQUIRE_FALSE(records[0].is_error());
    CHECK(records[0].token() == static_cast<std::uint64_t>(iteration));
    const Value root = records[0].results();
    REQUIRE(root.size() == results.size());
    for (std::size_t i = 0; i < results.size(); ++i) {
      check_same(results[i], root[i]);
    }
  }
}
