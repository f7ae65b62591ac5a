#include "rocplay/snapshot/shared_string.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

using rocplay::Interner;
using rocplay::SharedString;

namespace {

// Texts on both sides of the inline limit, and ones with NULs and high bytes.
std::vector<std::string> sample_texts() {
  std::vector<std::string> out = {"", "a", "aiter::start_sync<8>", std::string("nul\0inside", 10),
                                  "\xff\xfe high bytes"};
  for (std::size_t n : {SharedString::kInlineBytes - 1, SharedString::kInlineBytes,
                        SharedString::kInlineBytes + 1, std::size_t{300}}) {
    std::string s;
    for (std::size_t i = 0; i < n; ++i) {
      s.push_back(static_cast<char>('a' + i % 26));
    }
    out.push_back(s);
  }
  return out;
}

} // namespace

TEST_CASE("SharedString holds exactly the bytes it was given, inline or shared", "[snapshot]") {
  for (const std::string& text : sample_texts()) {
    CAPTURE(text.size());
    const SharedString s(text);
    CHECK(s.size() == text.size());
    CHECK(s.view() == text);
    CHECK(s == text);
    CHECK(s.empty() == text.empty());
    CHECK(s.c_str()[s.size()] == '\0');
    CHECK(s.str() == text);
    CHECK(fmt::format("{}", s) == text);
    std::ostringstream out;
    out << s;
    CHECK(out.str() == text);
  }
}

TEST_CASE("SharedString copies, moves and assignments keep their values apart", "[snapshot]") {
  for (const std::string& text : sample_texts()) {
    CAPTURE(text.size());
    SharedString original(text);
    SharedString copy = original;
    CHECK(copy == original);
    SharedString moved = std::move(copy);
    CHECK(moved.view() == text);
    CHECK(copy.empty()); // NOLINT(bugprone-use-after-move): a moved-from string is empty
    copy = moved;        // assign into the moved-from one
    CHECK(copy.view() == text);
    original = "replaced";
    CHECK(original == "replaced");
    CHECK(copy.view() == text); // a shared buffer is never written through
    SharedString& self = copy;
    copy = self;
    CHECK(copy.view() == text);
    copy = std::move(self);
    CHECK(copy.view() == text);
    original = moved;
    moved = SharedString();
    CHECK(original.view() == text);
    CHECK(moved.empty());
  }
}

TEST_CASE("SharedString compares and hashes by content", "[snapshot]") {
  const SharedString a("custom_all_reduce.cuh");
  const SharedString b(std::string("custom_all_reduce.cuh"));
  CHECK(a == b);
  CHECK(a == "custom_all_reduce.cuh");
  CHECK(a != "custom_all_reduce.cu");
  CHECK(SharedString("a") < SharedString("b"));
  CHECK(SharedString("b") > std::string_view("a"));
  CHECK(std::hash<SharedString>()(a) == std::hash<std::string_view>()("custom_all_reduce.cuh"));
  const std::unordered_set<SharedString> set = {a, b, SharedString("other")};
  CHECK(set.size() == 2);
  CHECK(std::string("in ") + a == "in custom_all_reduce.cuh");
  CHECK(a + "!" == "custom_all_reduce.cuh!");
}

TEST_CASE("Interner gives every copy of a long text one buffer", "[snapshot]") {
  Interner strings;
  const std::string long_name =
      "void aiter::allgather_vec<__hip_bfloat16, 8>(aiter::RankData*, aiter::Signal*)";
  const SharedString first = strings.get(long_name);
  const SharedString second = strings.get(std::string(long_name)); // another buffer, same text
  CHECK(first == second);
  CHECK(first.same_buffer(second));
  CHECK(first.data() == second.data());
  const SharedString other = strings.get(long_name + " ");
  CHECK_FALSE(other.same_buffer(first));
  const SharedString short_one = strings.get("start_sync");
  CHECK(short_one == "start_sync");
  CHECK_FALSE(short_one.same_buffer(strings.get("start_sync"))); // inline: nothing shared
}

TEST_CASE("SharedString converts to and from JSON as a string", "[snapshot]") {
  const SharedString s("AMDGPU Wave 1:2:1:1 (0,0,0)/0");
  const nlohmann::json j = s;
  CHECK(j == "AMDGPU Wave 1:2:1:1 (0,0,0)/0");
  CHECK(j.get<SharedString>() == s);
  CHECK_THROWS(nlohmann::json(3).get<SharedString>());
}

TEST_CASE("copies of one shared buffer die on other threads without losing count", "[snapshot]") {
  Interner strings;
  const SharedString name = strings.get(std::string(200, 'k'));
  std::atomic<std::size_t> seen{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([name, &seen] { // Catch's CHECK is not thread-safe: count instead
      for (int i = 0; i < 20000; ++i) {
        SharedString copy = name;
        seen += copy.size();
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  CHECK(seen == std::size_t{4} * 20000 * 200);
  CHECK(name == std::string(200, 'k'));
}
