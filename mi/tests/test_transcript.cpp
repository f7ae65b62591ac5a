#include "rocplay/mi/transcript.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace rocplay::mi;

TEST_CASE("raw MI logs split into exchanges at result records", "[transcript]") {
  const std::string log = "=thread-group-added,id=\"i1\"\n(gdb) \n^done\n(gdb) \n"
                          "~\"line 1\\n\"\n~\"line 2\\n\"\n^done\n(gdb) \n"
                          "&\"oops\\n\"\n^error,msg=\"No symbol \\\"x\\\" in current context.\"\n";
  TranscriptInfo info;
  const auto exchanges = read_transcript(log, &info);
  REQUIRE(exchanges.size() == 3);
  CHECK(info.format == TranscriptFormat::RawMi);
  CHECK(info.parse_errors == 0);
  CHECK_FALSE(info.truncated);
  CHECK(exchanges[0].records.size() == 2); // the notify belongs to the first exchange
  CHECK(exchanges[1].console() == "line 1\nline 2\n");
  CHECK(exchanges[2].error_message() == "No symbol \"x\" in current context.");
  CHECK_FALSE(exchanges[1].error_message());
}

TEST_CASE("a transcript cut off mid-exchange is flagged truncated", "[transcript]") {
  TranscriptInfo info;
  const auto exchanges = read_transcript("^done\n~\"partial\"\n=thread-exited,id=\"1\"\n", &info);
  REQUIRE(exchanges.size() == 2);
  CHECK(info.truncated);
  CHECK_FALSE(exchanges[1].complete());
}

TEST_CASE("a last line cut mid-record marks the transcript truncated", "[transcript]") {
  TranscriptInfo info;
  read_transcript("^done\n=thread-created,id=\"1\"\n^done,threads=[{id=\"1\",na", &info);
  CHECK(info.truncated);
  CHECK(info.parse_errors == 1);
  TranscriptInfo whole;
  read_transcript("^done\n^done,x=\"1\"", &whole); // no newline, but complete
  CHECK_FALSE(whole.truncated);
}

TEST_CASE("non-MI lines are counted with positions and skipped", "[transcript]") {
  TranscriptInfo info;
  const auto exchanges =
      read_transcript("^done\nlaunched pid=4242\n\x01\x02\xff junk\n^done,x=\"1\"\n", &info);
  CHECK(exchanges.size() == 2);
  CHECK(info.parse_errors == 2);
  REQUIRE(info.first_errors.size() == 2);
  CHECK(info.first_errors[0].line == 2);
  CHECK(info.first_errors[1].errc == Errc::NotMi);
}

TEST_CASE("a rocplay recording round-trips through writer and reader", "[transcript]") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  {
    TranscriptWriter writer(f, R"({"debugger":"gdb","pid":4242})");
    writer.sent(0.001, 1, "-gdb-set pagination off");
    writer.received(0.002, "1^done");
    writer.received(0.003, "(gdb) ");
    writer.sent(0.010, 2, "-target-attach 4242");
    writer.received(0.020, "=thread-group-started,id=\"i1\",pid=\"4242\"");
    writer.note(0.025, "a note\nwith a newline");
    writer.received(0.030, "*stopped,reason=\"signal-received\"");
    writer.received(0.040, "2^done");
    writer.sent(0.050, 3, "-thread-info");
    writer.flush();
  }
  std::rewind(f);
  std::string text;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    text.append(buf, n);
  }
  std::fclose(f);
  TranscriptInfo info;
  const auto exchanges = read_transcript(text, &info);
  CHECK(info.format == TranscriptFormat::Recording);
  CHECK(info.meta_json == R"({"debugger":"gdb","pid":4242})");
  CHECK(info.truncated); // the last command never got its answer
  REQUIRE(exchanges.size() == 3);
  CHECK(exchanges[0].command == "-gdb-set pagination off");
  CHECK(exchanges[0].token == 1u);
  CHECK(exchanges[1].command == "-target-attach 4242");
  CHECK(exchanges[1].records.size() == 3);
  CHECK(exchanges[1].notes.size() == 1);
  CHECK(exchanges[1].notes[0] == "a note with a newline");
  CHECK(exchanges[1].sent_at == Approx(0.010));
  CHECK(exchanges[1].done_at == Approx(0.040));
  CHECK(exchanges[2].command == "-thread-info");
  CHECK_FALSE(exchanges[2].complete());
}

TEST_CASE("recordings may start with comment lines and keep parse positions", "[transcript]") {
  const std::string text = "# reconstructed from the documented formats\n"
                           "# rocplay-transcript 1\n"
                           "# meta {}\n"
                           "> 0.1 5-agent-info\n"
                           "< 0.2 5^done,agents=[\n";
  TranscriptInfo info;
  read_transcript(text, &info);
  CHECK(info.format == TranscriptFormat::Recording);
  REQUIRE(info.first_errors.size() == 1);
  CHECK(info.first_errors[0].line == 5);
  CHECK(info.first_errors[0].column == 22); // "< 0.2 " + position inside the payload
}

TEST_CASE("streaming a transcript in small chunks gives the same exchanges", "[transcript]") {
  std::string text;
  for (int i = 0; i < 50; ++i) {
    text += "> " + std::to_string(i) + ".5 " + std::to_string(i) + "-thread-info\n";
    text += "< " + std::to_string(i) + ".6 " + std::to_string(i) +
            "^done,threads=[{id=\"1\",name=\"x\\303\\251\"}]\n";
  }
  const auto whole = read_transcript(text);
  TranscriptReader reader;
  std::vector<Exchange> chunked;
  for (std::size_t i = 0; i < text.size(); i += 13) {
    reader.feed(std::string_view(text).substr(i, 13));
    while (auto ex = reader.next()) {
      chunked.push_back(std::move(*ex));
    }
  }
  reader.finish();
  while (auto ex = reader.next()) {
    chunked.push_back(std::move(*ex));
  }
  REQUIRE(chunked.size() == whole.size());
  REQUIRE(whole.size() == 50);
  for (std::size_t i = 0; i < whole.size(); ++i) {
    CHECK(chunked[i].command == whole[i].command);
    REQUIRE(chunked[i].records.size() == 1);
    CHECK(chunked[i].records[0].line() == whole[i].records[0].line());
    CHECK(chunked[i].records[0]["threads"][0]["name"].bytes() == "x\303\251");
  }
}

TEST_CASE("event times read exactly as strtod reads them", "[transcript]") {
  // seconds() reads the writer's `%.6f` without strtod; every time must still be the same double.
  std::vector<std::string> times = {"0",
                                    "0.5",
                                    "5.",
                                    ".5",
                                    "1.000001",
                                    "0.000001",
                                    "123456789.123456",
                                    "999999999.999999",
                                    "1234567890.1234567",
                                    "1e3",
                                    "-1.5",
                                    "+2.25",
                                    "1.2.3",
                                    "00000000000000012.5",
                                    "0.1",
                                    "0.3",
                                    "2.675"};
  std::uint64_t x = 88172645463325252u; // xorshift: writer-shaped times of every magnitude
  for (int i = 0; i < 20000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6f",
                  static_cast<double>(x % 100000000000u) / static_cast<double>(1u << (x % 20)));
    times.emplace_back(buf);
  }
  for (const std::string& t : times) {
    const std::string line = "< " + t + " ^done";
    const auto event = parse_event_line(line);
    if (!event) {
      continue; // not a time the reader accepts ("1.2.3" passes its check; "-1.5" too)
    }
    INFO(t);
    CHECK(event->seconds() == std::strtod(t.c_str(), nullptr));
  }
}

TEST_CASE("event lines: direction, time of at most 32 bytes, payload after one space",
          "[transcript]") {
  const std::string t32(32, '1');
  const std::string line = "< " + t32 + " ^done"; // the views point into it
  auto ok = parse_event_line(line);
  REQUIRE(ok);
  CHECK(ok->direction == '<');
  CHECK(ok->time == t32);
  CHECK(ok->payload == "^done");
  CHECK(ok->payload_column == 35);
  CHECK_FALSE(parse_event_line("< " + t32 + "1 ^done")); // 33 bytes of time
  CHECK_FALSE(parse_event_line("< " + t32 + "1"));       // the same, at the end of the line
  auto bare = parse_event_line("! 1.5");                 // a time and no payload
  REQUIRE(bare);
  CHECK(bare->time == "1.5");
  CHECK(bare->payload.empty());
  CHECK(bare->payload_column == 5);
  auto empty = parse_event_line("> 2.0 "); // an empty payload after the space
  REQUIRE(empty);
  CHECK(empty->payload.empty());
  CHECK(empty->payload_column == 6);
  CHECK_FALSE(parse_event_line("< 1x5 ^done")); // not a time
  CHECK_FALSE(parse_event_line("<  ^done"));    // no time
  CHECK_FALSE(parse_event_line("? 1.0 x"));     // no direction
  CHECK_FALSE(parse_event_line("<1.0 x"));      // no space after it
  CHECK_FALSE(parse_event_line("< "));          // too short
}
