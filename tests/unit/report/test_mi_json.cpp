// The MI JSON shape is lossless: every record of every MI fixture goes to JSON and back to MI
// and comes back the same record (order, repeated names, bare values, both list kinds, bytes).
#include "rocplay/mi/parser.hpp"
#include "rocplay/report/mi_json.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

using namespace rocplay;
namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

std::string base64_decode(std::string_view in) {
  auto digit = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') {
      return c - 'A';
    }
    if (c >= 'a' && c <= 'z') {
      return c - 'a' + 26;
    }
    if (c >= '0' && c <= '9') {
      return c - '0' + 52;
    }
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  std::string out;
  unsigned bits = 0;
  int count = 0;
  for (const char c : in) {
    const int d = digit(c);
    if (d < 0) {
      continue;
    }
    bits = (bits << 6) | static_cast<unsigned>(d);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<char>((bits >> count) & 0xff));
    }
  }
  return out;
}

// The reader side of docs/mi.md's JSON shape: JSON back to MI text.
std::string to_mi(const ojson& j);

std::string string_to_mi(const ojson& j) {
  const std::string bytes =
      j.is_string() ? j.get<std::string>() : base64_decode(j.at("$base64").get<std::string>());
  return "\"" + mi::escape(bytes) + "\"";
}

std::string pairs_to_mi(const ojson& pairs) {
  std::string out;
  for (const auto& pair : pairs) {
    if (!out.empty()) {
      out += ',';
    }
    const std::string name = pair.at(0).get<std::string>();
    if (!name.empty()) {
      out += name + "=";
    }
    out += to_mi(pair.at(1));
  }
  return out;
}

std::string to_mi(const ojson& j) {
  if (j.is_string() || (j.is_object() && j.contains("$base64"))) {
    return string_to_mi(j);
  }
  if (j.is_array()) {
    std::string out = "[";
    for (const auto& item : j) {
      out += (out.size() > 1 ? "," : "") + to_mi(item);
    }
    return out + "]";
  }
  if (j.contains("$tuple")) {
    return "{" + pairs_to_mi(j.at("$tuple")) + "}";
  }
  if (j.contains("$list")) {
    return "[" + pairs_to_mi(j.at("$list")) + "]";
  }
  std::string out = "{";
  for (const auto& [name, value] : j.items()) {
    out += (out.size() > 1 ? "," : "") + name + "=" + to_mi(value);
  }
  return out + "}";
}

std::string record_to_mi(const ojson& j) {
  static const std::map<std::string, std::string> kPrefix = {
      {"result", "^"},  {"exec", "*"},   {"status", "+"}, {"notify", "="},
      {"console", "~"}, {"target", "@"}, {"log", "&"}};
  const std::string kind = j.at("kind").get<std::string>();
  std::string out;
  if (j.contains("token")) {
    out += std::to_string(j.at("token").get<std::uint64_t>());
  }
  out += kPrefix.at(kind);
  if (j.contains("text")) {
    return out + string_to_mi(j.at("text"));
  }
  out += j.at("class").get<std::string>();
  std::string results = to_mi(j.at("values"));
  results = results.substr(1, results.size() - 2); // the record's tuple has no braces
  return results.empty() ? out : out + "," + results;
}

// Same kind, name, bytes and children, in order.
bool same_value(const mi::Value& a, const mi::Value& b) {
  if (a.node().kind != b.node().kind || a.name() != b.name()) {
    return false;
  }
  if (a.is_string()) {
    return a.bytes() == b.bytes();
  }
  if (a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!same_value(a.at(i), b.at(i))) {
      return false;
    }
  }
  return true;
}

std::string json_of(const mi::RecordView& rec) {
  std::string out;
  report::append_mi_record_json(out, rec);
  return out;
}

// Parses `line`, writes it as JSON, reads the JSON back into MI and parses that: the two
// records must be the same.
bool check_round_trip(std::string_view line, const std::string& where) {
  mi::NodeTable nodes;
  mi::ParseError error;
  const mi::RecordView original = mi::parse_line(line, 1, nodes, error);
  if (original.is_error() || original.kind() == mi::RecordKind::Prompt) {
    return false;
  }
  const mi::Record kept(original);
  const std::string json = json_of(original);
  INFO(where << ": " << line << "\n  json: " << json);
  const ojson j = ojson::parse(json); // throws on invalid JSON
  const std::string back = record_to_mi(j);
  INFO("  back: " << back);
  mi::NodeTable nodes2;
  mi::ParseError error2;
  const mi::RecordView again = mi::parse_line(back, 1, nodes2, error2);
  REQUIRE_FALSE(again.is_error());
  CHECK(again.kind() == kept.kind());
  CHECK(again.token() == kept.token());
  CHECK(again.klass() == kept.klass());
  CHECK(same_value(again.results(), kept.results()));
  // The JSON of the record written back is the same text: nothing was normalised away.
  CHECK(json_of(again) == json);
  return true;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace

TEST_CASE("mi json: every record of every MI fixture survives MI -> JSON -> MI") {
  std::vector<fs::path> files;
  for (const auto& e :
       fs::recursive_directory_iterator(fs::path(ROCPLAY_SOURCE_DIR) / "fixtures")) {
    const auto ext = e.path().extension();
    if (e.is_regular_file() && (ext == ".mi" || ext == ".rec" || ext == ".rocplay")) {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 40);
  std::size_t records = 0;
  for (const auto& f : files) {
    std::istringstream lines(read_file(f));
    std::size_t line_no = 0;
    for (std::string line; std::getline(lines, line);) {
      ++line_no;
      if (!line.empty() && line.back() == '\r') {
        line.pop_back();
      }
      std::string_view payload = line;
      if (payload.rfind("< ", 0) == 0) {
        const auto space = payload.find(' ', 2);
        payload = space == std::string_view::npos ? std::string_view() : payload.substr(space + 1);
      }
      check_round_trip(payload, f.filename().string() + ":" + std::to_string(line_no));
      ++records;
    }
  }
  CHECK(records > 1000);
}

TEST_CASE("mi json: the shapes that used to print alike are told apart") {
  auto values_of = [](std::string_view line) {
    mi::NodeTable nodes;
    mi::ParseError error;
    const auto rec = mi::parse_line(line, 1, nodes, error);
    REQUIRE_FALSE(rec.is_error());
    std::string out;
    report::append_mi_value_json(out, rec.results());
    return out;
  };
  // Result order is kept.
  CHECK(values_of("^done,b=\"2\",a=\"1\"") == R"({"b":"2","a":"1"})");
  // A repeated name and a list of the same values differ.
  CHECK(values_of("^done,a=\"x\",a=\"y\"") == R"({"$tuple":[["a","x"],["a","y"]]})");
  CHECK(values_of("^done,a=[\"x\",\"y\"]") == R"({"a":["x","y"]})");
  // A list of results and a list of tuples differ.
  CHECK(values_of("^done,l=[a=\"1\"]") == R"({"l":{"$list":[["a","1"]]}})");
  CHECK(values_of("^done,l=[{a=\"1\"}]") == R"({"l":[{"a":"1"}]})");
  // Legacy bare values in a tuple (gdb's multi-location breakpoints) keep their place.
  CHECK(values_of("^done,bkpt={number=\"1\"},{number=\"1.1\"}") ==
        R"({"$tuple":[["bkpt",{"number":"1"}],["",{"number":"1.1"}]]})");
  // Bytes that are not UTF-8 keep their exact value; escapes are decoded.
  CHECK(values_of(R"(^done,s="\303\251",b="\377",n="a\nb\"")") ==
        "{\"s\":\"\xc3\xa9\",\"b\":{\"$base64\":\"/w==\",\"utf8_lossy\":\"\xef\xbf\xbd\"},"
        "\"n\":\"a\\nb\\\"\"}");
  // Control bytes are escaped for JSON.
  CHECK(values_of(R"(^done,c="\001\033")") == R"({"c":"\u0001\u001b"})");
}

TEST_CASE("mi json: a large tuple with a repeated name takes the tagged form") {
  std::string line = "^done";
  for (int i = 0; i < 40; ++i) {
    line += ",f" + std::to_string(i) + "=\"" + std::to_string(i) + "\"";
  }
  line += ",f7=\"again\"";
  check_round_trip(line, "generated");
  mi::NodeTable nodes;
  mi::ParseError error;
  const auto rec = mi::parse_line(line, 1, nodes, error);
  std::string out;
  report::append_mi_value_json(out, rec.results());
  CHECK(out.rfind("{\"$tuple\":", 0) == 0);
}

namespace {

// A random MI value: strings of any bytes (written with every kind of escape, or raw), tuples
// with repeated and bare names, both kinds of list, nested.
std::string random_value(std::mt19937& rng, int depth) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const int kind = depth > 3 ? 0 : pick(4);
  if (kind == 0) {
    std::string body;
    const int len = pick(12);
    for (int i = 0; i < len; ++i) {
      switch (pick(8)) {
      case 0:
        body += "\\n";
        break;
      case 1:
        body += "\\" + std::to_string(pick(4)) + std::to_string(pick(8)) + std::to_string(pick(8));
        break;
      case 2:
        body += "\\\"";
        break;
      case 3:
        body += static_cast<char>(0x80 + pick(0x80)); // raw high byte
        break;
      case 4:
        body += "\\x" + std::string(1, "0123456789abcdef"[pick(16)]) + "f";
        break;
      default:
        body += static_cast<char>('a' + pick(26));
      }
    }
    return "\"" + body + "\"";
  }
  const bool tuple = kind == 1 || kind == 3;
  const bool named = kind != 2;
  std::string out(1, tuple ? '{' : '[');
  const int n = pick(4);
  for (int i = 0; i < n; ++i) {
    if (i > 0) {
      out += ',';
    }
    if (named && pick(5) != 0) {
      out += std::string(1, "abc"[pick(3)]) + "=";
    }
    out += random_value(rng, depth + 1);
  }
  return out + (tuple ? '}' : ']');
}

} // namespace

TEST_CASE("mi json: random values with any bytes give valid JSON that writes back the same") {
  std::mt19937 rng(19);
  int checked = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string line = "^done";
    const int n = static_cast<int>(rng() % 4);
    for (int k = 0; k < n; ++k) {
      line += ",";
      line += std::string(1, "xyz"[rng() % 3]) + "=" + random_value(rng, 0);
    }
    checked += check_round_trip(line, "random " + std::to_string(i)) ? 1 : 0;
    checked +=
        check_round_trip("~" + random_value(rng, 4), "random stream " + std::to_string(i)) ? 1 : 0;
  }
  CHECK(checked > 5000); // nearly every generated line is MI the parser takes
}
