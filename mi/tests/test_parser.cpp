#include "rocplay/mi/parser.hpp"

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

using namespace rocplay::mi;

namespace {
Record one(std::string_view line) {
  auto records = parse_all(line);
  REQUIRE(records.size() == 1);
  return records[0];
}
} // namespace

TEST_CASE("record kinds, classes and tokens", "[parser]") {
  struct Row {
    const char* name;
    const char* line;
    RecordKind kind;
    const char* klass;
    std::optional<std::uint64_t> token;
  };
  auto row = GENERATE(values<Row>({
      {"done", "^done", RecordKind::Result, "done", std::nullopt},
      {"done with token", "12^done,value=\"1\"", RecordKind::Result, "done", 12},
      {"running", "3^running", RecordKind::Result, "running", 3},
      {"connected", "^connected", RecordKind::Result, "connected", std::nullopt},
      {"error", "7^error,msg=\"No symbol table.\"", RecordKind::Result, "error", 7},
      {"exit", "^exit", RecordKind::Result, "exit", std::nullopt},
      {"exec stopped", "*stopped,reason=\"signal-received\"", RecordKind::Exec, "stopped",
       std::nullopt},
      {"exec with token", "5*running,thread-id=\"all\"", RecordKind::Exec, "running", 5},
      {"status", "+download,{section=\".text\"}", RecordKind::Status, "download", std::nullopt},
      {"notify", "=thread-created,id=\"1\",group-id=\"i1\"", RecordKind::Notify, "thread-created",
       std::nullopt},
      {"console", "~\"hello\\n\"", RecordKind::Console, "", std::nullopt},
      {"target", "@\"out\"", RecordKind::Target, "", std::nullopt},
      {"log", "&\"warning: x\\n\"", RecordKind::Log, "", std::nullopt},
      {"prompt", "(gdb)", RecordKind::Prompt, "", std::nullopt},
      {"prompt with space", "(gdb) ", RecordKind::Prompt, "", std::nullopt},
      {"cuda-gdb prompt", "(cuda-gdb) ", RecordKind::Prompt, "", std::nullopt},
      {"readline marker before a record", "\x01^running", RecordKind::Result, "running",
       std::nullopt},
  }));
  DYNAMIC_SECTION(row.name) {
    const Record r = one(row.line);
    CHECK(r.kind() == row.kind);
    CHECK(r.klass() == row.klass);
    CHECK(r.token() == row.token);
  }
}

TEST_CASE("CRLF and LF give the same records", "[parser]") {
  const auto lf = parse_all("^done,a=\"1\"\n(gdb) \n~\"x\"\n");
  const auto crlf = parse_all("^done,a=\"1\"\r\n(gdb) \r\n~\"x\"\r\n");
  REQUIRE(lf.size() == 3);
  REQUIRE(crlf.size() == 3);
  for (std::size_t i = 0; i < lf.size(); ++i) {
    CHECK(lf[i].line() == crlf[i].line());
    CHECK(lf[i].kind() == crlf[i].kind());
  }
  CHECK(crlf[0]["a"].raw() == "1");
}

TEST_CASE("values: tuples, lists of values, lists of results", "[parser]") {
  const Record r = one("^done,stack=[frame={level=\"0\",addr=\"0x10\"},frame={level=\"1\","
                       "addr=\"0x20\"}],ids=[\"1\",\"2\"],empty={},none=[]");
  const Value stack = r["stack"];
  REQUIRE(stack.is_list());
  REQUIRE(stack.size() == 2);
  CHECK(stack[0].name() == "frame");
  CHECK(stack[1].name() == "frame");
  CHECK(stack[1]["addr"].as_address().value() == 0x20);
  CHECK(r["ids"].size() == 2);
  CHECK(r["ids"][1].raw() == "2");
  CHECK(r["ids"][1].name().empty());
  CHECK(r["empty"].is_tuple());
  CHECK(r["empty"].size() == 0);
  CHECK(r["none"].is_list());
  CHECK(r["none"].size() == 0);
}

TEST_CASE("duplicate keys in a tuple keep order and all values", "[parser]") {
  // -thread-list-ids, sourceware bug 22217
  const Record r = one("^done,thread-ids={thread-id=\"1\",thread-id=\"2\",thread-id=\"3\"},"
                       "current-thread-id=\"1\",number-of-threads=\"3\"");
  const auto ids = r["thread-ids"].all("thread-id");
  REQUIRE(ids.size() == 3);
  CHECK(ids[0].raw() == "1");
  CHECK(ids[2].raw() == "3");
  CHECK(r["thread-ids"]["thread-id"].raw() == "1"); // first wins for lookup
}

TEST_CASE("legacy shapes: bkpt={..},{..} and +download,{..}", "[parser]") {
  const Record r = one("^done,bkpt={number=\"1\",addr=\"<MULTIPLE>\"},{number=\"1.1\",addr="
                       "\"0x4005\"},{number=\"1.2\",addr=\"0x4009\"}");
  const Value root = r.results();
  REQUIRE(root.size() == 3);
  CHECK(root[0].name() == "bkpt");
  CHECK(root[1].name().empty());
  CHECK(root[2]["number"].raw() == "1.2");
  const Record d = one("+download,{section=\".interp\",section-size=\"28\"}");
  CHECK(d.results()[0]["section"].raw() == ".interp");
}

TEST_CASE("mixed lists of values and results", "[parser]") {
  const Record r = one("^done,x=[a=\"1\",\"2\",{b=\"3\"}]");
  REQUIRE(r["x"].size() == 3);
  CHECK(r["x"][0].name() == "a");
  CHECK(r["x"][1].raw() == "2");
  CHECK(r["x"][2]["b"].raw() == "3");
}

TEST_CASE("c-string escapes decode to exact bytes", "[parser][escape]") {
  struct Row {
    const char* name;
    const char* mi;
    std::string bytes;
  };
  auto row = GENERATE(values<Row>({
      {"empty", R"(~"")", ""},
      {"backslash and quote", R"(~"a\\b\"c")", "a\\b\"c"},
      {"newline tab cr", R"(~"\n\t\r")", "\n\t\r"},
      {"backspace formfeed", R"(~"\b\f")", "\b\f"},
      {"escape bell vtab", R"(~"\e\a\v")", "\x1b\a\v"},
      {"octal UTF-8", R"(~"\346\265\213")", "\346\265\213"},
      {"octal invalid UTF-8 \\376", R"(~"254 '\376'")", "254 '\376'"},
      {"octal NUL", R"(~"a\000b")", std::string("a\0b", 3)},
      {"short octal", R"(~"\7x")", "\ax"},
      {"hex (lldb-mi)", R"(~"\x41\x7f")", "A\x7f"},
      {"unknown escape keeps char", R"(~"\q")", "q"},
      {"escaped quote at end", R"(~"\"")", "\""},
      {"double backslash before quote", R"(~"a\\")", "a\\"},
  }));
  DYNAMIC_SECTION(row.name) {
    const Record r = one(row.mi);
    REQUIRE(r.kind() == RecordKind::Console);
    CHECK(r.stream_text() == row.bytes);
  }
}

TEST_CASE("a UTF-8 prefix never ends inside a character", "[escape]") {
  CHECK(utf8_prefix("caf\xc3\xa9", 4) == "caf");
  CHECK(utf8_prefix("caf\xc3\xa9", 5) == "caf\xc3\xa9");
  CHECK(utf8_prefix("\xe2\x82\xac\xe2\x82\xac", 5) == "\xe2\x82\xac");
  CHECK(utf8_prefix("abc", 2) == "ab");
  CHECK(utf8_prefix("abc", 9) == "abc");
}

TEST_CASE("lossy UTF-8 view replaces only invalid sequences", "[escape]") {
  CHECK(lossy_utf8("caf\xc3\xa9") == "caf\xc3\xa9");
  CHECK(lossy_utf8("\xfe") == "\xef\xbf\xbd");
  CHECK(lossy_utf8("a\xe6\xb5") == "a\xef\xbf\xbd\xef\xbf\xbd");
  CHECK(lossy_utf8("\xed\xa0\x80") == "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"); // surrogate
}

TEST_CASE("escape is the inverse of unescape for every byte", "[escape]") {
  std::string all;
  for (int c = 0; c < 256; ++c) {
    all.push_back(static_cast<char>(c));
  }
  CHECK(unescape(escape(all)) == all);
}

TEST_CASE("zero-copy: values point into the line", "[parser]") {
  NodeTable scratch;
  ParseError error;
  const std::string line = "^done,value=\"abc\"";
  RecordView v = parse_line(line, 1, scratch, error);
  const auto raw = v["value"].raw();
  CHECK(raw.data() >= line.data());
  CHECK(raw.data() < line.data() + line.size());
  CHECK(v["value"].str_or() == "abc");
}

TEST_CASE("one node table for many lines: each view holds only its own nodes", "[parser]") {
  // The table keeps the size the longest line gave it; a shorter line after it must read back
  // exactly its own values, and a record that takes the table must keep only those.
  NodeTable scratch;
  ParseError error;
  std::string longest = "^done,v=[";
  for (int i = 0; i < 500; ++i) {
    longest += (i == 0 ? "" : ",") + std::string("{a=\"") + std::to_string(i) + "\"}";
  }
  longest += "]";
  const RecordView big = parse_line(longest, 1, scratch, error);
  REQUIRE_FALSE(big.is_error());
  CHECK(big.node_count() == 1 + 1 + 500 * 2);
  const std::size_t kept = scratch.size();
  CHECK(kept >= big.node_count());
  const std::string small = "^done,x=\"1\",t={y=\"2\"}";
  const RecordView view = parse_line(small, 2, scratch, error);
  REQUIRE_FALSE(view.is_error());
  CHECK(view.node_count() == 4);
  CHECK(scratch.size() == kept); // not sized down
  CHECK(view.results().size() == 2);
  CHECK(view["t"]["y"].str_or() == "2");
  CHECK(view.results().to_mi() == "{x=\"1\",t={y=\"2\"}}");
  const Record took(view, std::move(scratch));
  CHECK(took.view().node_count() == 4);
  CHECK(took.line() == small);
  CHECK(took["x"].str_or() == "1");
  // A malformed line after them: no nodes, the error, and the table still usable.
  NodeTable again;
  CHECK(parse_line("^done,x=", 3, again, error).is_error());
  CHECK(parse_line(small, 4, again, error)["t"]["y"].str_or() == "2");
}

TEST_CASE("a Record owns its line and nodes through copies and moves", "[parser]") {
  // The line's bytes share one allocation with the nodes; every length of line (not only
  // multiples of a node's size), error records (no nodes) and a record that took the parser's
  // table (its own line buffer) must read back the same after the parser's buffers are gone.
  std::vector<Record> kept;
  std::vector<std::string> lines;
  for (std::size_t pad = 0; pad < 45; ++pad) {
    lines.push_back("12^done,a=\"" + std::string(pad, 'x') + "\",t={b=\"1\",c=[\"2\",\"3\"]}");
  }
  lines.push_back("not mi");
  lines.push_back("~\"console \\\"text\\\"\\n\"");
  {
    NodeTable scratch;
    ParseError error;
    for (const std::string& line : lines) {
      const std::string copy = line; // gone at the end of this iteration
      const RecordView view = parse_line(copy, 1, scratch, error);
      Record rec(view);
      kept.push_back(rec);            // a copy
      kept.push_back(std::move(rec)); // and a move
    }
    const std::string big = "^done,v=[\"a\",\"b\",\"c\"]";
    const RecordView view = parse_line(big, 7, scratch, error);
    kept.emplace_back(view, std::move(scratch)); // takes the table
  }
  for (std::size_t i = 0; i < lines.size(); ++i) {
    for (const Record* r : {&kept[2 * i], &kept[2 * i + 1]}) {
      INFO(lines[i]);
      CHECK(r->line() == lines[i]);
      if (i < 45) {
        CHECK(r->klass() == "done");
        CHECK(r->token() == std::optional<std::uint64_t>(12));
        CHECK(r->results()["a"].str_or() == std::string(i, 'x'));
        CHECK(r->results()["t"]["c"][1].str_or() == "3");
      }
    }
  }
  for (const Record* r : {&kept[2 * 45], &kept[2 * 45 + 1]}) {
    // The error lives behind a pointer (Error records only): copies and moves keep it.
    CHECK(r->is_error());
    CHECK(r->error().errc == Errc::NotMi);
    CHECK(r->error().line == 1);
    CHECK(r->view().error().errc == Errc::NotMi);
  }
  Record assigned;
  assigned = kept[2 * 45]; // copy-assigned over a default record
  CHECK(assigned.error().errc == Errc::NotMi);
  assigned = kept[0]; // and over an error record
  CHECK(assigned.error().errc == Errc::None);
  CHECK(assigned.token() == std::optional<std::uint64_t>(12));
  CHECK(assigned.line() == lines[0]);
  CHECK(kept[2 * 46].stream_text() == "console \"text\"\n");
  const Record& big = kept.back();
  CHECK(big.line() == "^done,v=[\"a\",\"b\",\"c\"]");
  CHECK(big.results()["v"][2].str_or() == "c");
  CHECK(big.line_no() == 7);
}

TEST_CASE("malformed lines give errors with positions and parsing continues", "[parser][errors]") {
  struct Row {
    const char* name;
    const char* line;
    Errc errc;
    std::uint32_t column;
  };
  auto row = GENERATE(values<Row>({
      {"unterminated string", "^done,a=\"abc", Errc::UnterminatedString, 9},
      {"unterminated tuple", "^done,a={b=\"1\"", Errc::UnexpectedEnd, 15},
      {"missing value", "^done,a=", Errc::UnexpectedEnd, 9},
      {"bad char after value", "^done,a=\"1\"x", Errc::UnexpectedChar, 12},
      {"name without =", "^done,abc", Errc::UnexpectedEnd, 10},
      {"no class", "^,a=\"1\"", Errc::BadRecordClass, 2},
      {"not MI", "hello world", Errc::NotMi, 1},
      {"stream without quote", "~hello", Errc::UnexpectedChar, 2},
      {"garbage after stream", "~\"a\"b", Errc::UnexpectedChar, 5},
      {"token only", "123", Errc::NotMi, 1},
      {"short parenthesis (fuzzer find)", "()\241gbdV", Errc::NotMi, 1},
      {"prompt-like without gdb", "(foo)", Errc::NotMi, 1},
      {"list not closed", "^done,a=[\"1\",\"2\"", Errc::UnexpectedEnd, 17},
      {"mismatched close", "^done,a=[\"1\"}", Errc::UnexpectedChar, 13},
  }));
  DYNAMIC_SECTION(row.name) {
    const std::string text = std::string("^done\n") + row.line + "\n~\"after\"\n";
    const auto records = parse_all(text);
    REQUIRE(records.size() == 3);
    CHECK(records[0].kind() == RecordKind::Result);
    REQUIRE(records[1].is_error());
    CHECK(records[1].error().errc == row.errc);
    CHECK(records[1].error().line == 2);
    CHECK(records[1].error().column == row.column);
    CHECK_FALSE(records[1].error().message().empty());
    CHECK(records[2].stream_text() == "after");
  }
}

TEST_CASE("limits: depth, line length, value count, total size", "[parser][limits]") {
  SECTION("depth") {
    Limits limits;
    limits.max_depth = 4;
    const auto ok = parse_all("^done,a={b={c={d=\"1\"}}}", limits);
    CHECK_FALSE(ok[0].is_error());
    const auto deep = parse_all("^done,a={b={c={d={e=\"1\"}}}}", limits);
    REQUIRE(deep[0].is_error());
    CHECK(deep[0].error().errc == Errc::DepthExceeded);
  }
  SECTION("very deep input does not recurse without bound") {
    std::string line = "^done,a=";
    line += std::string(100000, '[');
    const auto records = parse_all(line);
    REQUIRE(records[0].is_error());
    CHECK(records[0].error().errc == Errc::DepthExceeded);
  }
  SECTION("line length, in one buffer and across chunks") {
    Limits limits;
    limits.max_line_bytes = 32;
    const std::string long_line = "~\"" + std::string(100, 'x') + "\"";
    const std::string text = "^done\n" + long_line + "\n^exit\n";
    const auto records = parse_all(text, limits);
    REQUIRE(records.size() == 3);
    CHECK(records[1].error().errc == Errc::LineTooLong);
    CHECK(records[2].klass() == "exit");
    Parser parser(limits);
    std::vector<Record> chunked;
    for (std::size_t i = 0; i < text.size(); i += 7) {
      parser.feed(std::string_view(text).substr(i, 7));
      while (auto r = parser.next()) {
        chunked.emplace_back(*r);
      }
    }
    parser.finish();
    while (auto r = parser.next()) {
      chunked.emplace_back(*r);
    }
    REQUIRE(chunked.size() == 3);
    CHECK(chunked[1].error().errc == Errc::LineTooLong);
    CHECK(chunked[1].error().line == 2);
    CHECK(chunked[2].klass() == "exit");
    // The excerpt does not depend on the split either: found by the fuzzer, a line whose first
    // byte ended one chunk and whose newline was in the next kept only that byte.
    for (std::size_t at : {7, 8, 9, 40}) {
      Parser split(limits);
      split.feed(std::string_view(text).substr(0, at));
      while (split.next()) {
      }
      split.feed(std::string_view(text).substr(at));
      split.finish();
      auto r = split.next();
      REQUIRE(r);
      INFO("split at " << at);
      CHECK(r->error().excerpt == records[1].error().excerpt);
    }
  }
  SECTION("values per record") {
    Limits limits;
    limits.max_values_per_record = 3;
    const auto records = parse_all("^done,a=\"1\",b=\"2\",c=\"3\"", limits);
    REQUIRE(records[0].is_error());
    CHECK(records[0].error().errc == Errc::TooManyValues);
  }
  SECTION("the densest lines fit the node table sized for them") {
    // Every value owns two bytes (its quotes or brackets), so n/2 + 1 nodes is the most a line
    // of n bytes holds; these shapes come closest: empty values, and nesting without commas.
    for (const std::string item : {"\"\"", "[]", "{}", "[[[[[[[[]]]]]]]]"}) {
      std::string line = "^done,a=[" + item;
      for (int i = 0; i < 20000; ++i) {
        line += "," + item;
      }
      line += "]";
      const auto records = parse_all(line);
      REQUIRE_FALSE(records[0].is_error());
      CHECK(records[0]["a"].size() == 20001);
    }
  }
  SECTION("result names longer than 64 KiB are refused, not truncated") {
    const std::string name(70000, 'n');
    const auto records = parse_all("^done," + name + "=\"1\"");
    REQUIRE(records[0].is_error());
    CHECK(records[0].error().errc == Errc::UnexpectedChar);
    CHECK(records[0].error().column == 6 + 65535 + 1); // the name's 65,536th byte
  }
  SECTION("total size") {
    Limits limits;
    limits.max_total_bytes = 10;
    const auto records = parse_all("^done\n^done\n^done\n", limits);
    REQUIRE(records.size() == 2);
    CHECK(records[0].klass() == "done");
    CHECK(records[1].error().errc == Errc::TotalSizeExceeded);
  }
}

TEST_CASE("typed accessors name the path in errors", "[value]") {
  const Record r = one("^done,threads=[{id=\"1\",frame={addr=\"0x10\"}},{id=\"2\"},{id=\"3\"},"
                       "{id=\"4\",frame={addr=\"??\",line=\"x\"}}]");
  const auto addr = r["threads"][3]["frame"]["addr"].as_address();
  REQUIRE_FALSE(addr.ok());
  CHECK(addr.error().what() == "threads[3].frame.addr: expected hex integer, got \"??\"");
  CHECK(r["threads"][0]["frame"]["addr"].as_address().value() == 0x10);
  CHECK(r["threads"][3]["frame"]["line"].as_u64().error().what() ==
        "threads[3].frame.line: expected unsigned integer, got \"x\"");
  CHECK(r["threads"][1]["frame"]["addr"].as_address().error().message == "missing");
  CHECK(r["threads"][0]["id"].as_u64().value() == 1);
  CHECK(r["threads"][0]["id"].as_i64().value() == 1);
  CHECK_FALSE(r["nothing"]["deeper"][7].valid()); // chains on missing values are safe
}

TEST_CASE("numbers are read exactly up to 64 bits and refused past them", "[value]") {
  const Record r =
      one("^done,a=\"0xffffffffffffffff\",b=\"0x10000000000000000\",c=\"0X7fA\","
          "d=\"0x0000000000000000000001\",e=\"0x\",f=\"0x12g\",g=\"18446744073709551615\","
          "h=\"18446744073709551616\",i=\"-1\",j=\"\",k=\"007\",l=\"0x+1\"");
  CHECK(r["a"].as_address().value() == UINT64_MAX);
  CHECK(r["a"].as_u64().value() == UINT64_MAX);
  CHECK_FALSE(r["b"].as_address().ok());
  CHECK(r["c"].as_address().value() == 0x7fa);
  CHECK(r["d"].as_address().value() == 1); // leading zeros past 16 digits
  CHECK_FALSE(r["e"].as_address().ok());
  CHECK_FALSE(r["f"].as_address().ok());
  CHECK_FALSE(r["f"].as_u64().ok());
  CHECK(r["g"].as_u64().value() == UINT64_MAX);
  CHECK_FALSE(r["h"].as_u64().ok());
  CHECK_FALSE(r["i"].as_u64().ok());
  CHECK(r["i"].as_i64().value() == -1);
  CHECK_FALSE(r["j"].as_u64().ok());
  CHECK(r["k"].as_u64().value() == 7);
  CHECK_FALSE(r["l"].as_address().ok());
}

TEST_CASE("MI tables become rows by column name", "[value][table]") {
  const Record r = one(
      "^done,InfoCudaKernelsTable={nr_rows=\"1\",nr_cols=\"3\",hdr=[{width=\"1\",alignment=\"1\","
      "col_name=\"current\",colhdr=\" \"},{width=\"6\",alignment=\"1\",col_name=\"kernel\","
      "colhdr=\"Kernel\"},{width=\"7\",alignment=\"1\",col_name=\"gridDim\",colhdr=\"GridDim\"}],"
      "body=[InfoCudaKernelsRow={current=\"*\",kernel=\"0\",gridDim=\"(4,1,1)\"}]}");
  const auto table = as_table(r["InfoCudaKernelsTable"]);
  REQUIRE(table.ok());
  REQUIRE(table.value().columns.size() == 3);
  CHECK(table.value().columns[2] == "gridDim");
  REQUIRE(table.value().rows.size() == 1);
  CHECK(table.value().rows[0]["gridDim"].raw() == "(4,1,1)");
  CHECK_FALSE(as_table(r["nope"]).ok());
}

TEST_CASE("console records are joined across splits", "[value]") {
  const auto records = parse_all("~\"\\nThread \"\n~\"1 \\\"hang\\\" stopped.\\n\"\n^done\n");
  const auto [text, next] = join_console(records);
  CHECK(text == "\nThread 1 \"hang\" stopped.\n");
  CHECK(next == 2);
}

TEST_CASE("to_mi writes values back", "[value]") {
  const std::string line = "^done,a=[frame={x=\"1\"},\"y\"],b={c=\"q\\\"\"}";
  const Record r = one(line);
  CHECK("^done," + r["a"].to_mi() + "," + r["b"].to_mi() == line);
}
