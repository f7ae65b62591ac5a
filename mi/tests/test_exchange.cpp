// The one exchange rule (mi/exchange.hpp): what a live session assembles from the debugger's
// output is what TranscriptReader assembles from the recording of it.
#include "rocplay/mi/exchange.hpp"
#include "rocplay/mi/transcript.hpp"
#include "same_exchanges.hpp"

#include <catch2/catch.hpp>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace rocplay::mi;

namespace exchange_test {

// One event of a session: a command sent (`>`), a line received (`<`), a note (`!`).
struct Event {
  char dir;
  double at;
  std::optional<std::uint64_t> token; // `>` only
  std::string text;
};

// What session::Session does with each event, and the recording it writes beside.
struct Live {
  ExchangeAssembler assembler;
  std::string recording;

  void play(const std::vector<Event>& events) {
    std::FILE* f = std::tmpfile();
    REQUIRE(f != nullptr);
    {
      TranscriptWriter writer(f, R"({"debugger":"gdb"})");
      NodeTable table;
      ParseError error;
      for (const Event& e : events) {
        if (e.dir == '>') {
          writer.sent(e.at, e.token.value_or(0), e.text);
          assembler.command(e.text, e.token, e.at);
        } else if (e.dir == '!') {
          writer.note(e.at, e.text);
          assembler.note(e.text, e.at);
        } else {
          writer.received(e.at, e.text);
          const RecordView rec = parse_line(e.text, 0, table, error);
          if (rec.is_error()) {
            continue;
          }
          if (rec.kind() == RecordKind::Prompt) {
            assembler.prompt(e.at);
          } else {
            assembler.add(rec, e.at);
          }
        }
      }
      writer.flush();
    }
    std::rewind(f);
    char buf[4096];
    std::size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
      recording.append(buf, n);
    }
    std::fclose(f);
  }
};

void check_same(const std::vector<Exchange>& live, const std::vector<Exchange>& replay) {
  REQUIRE(replay.size() == live.size());
  rocplay::mi::testing::check_same_exchanges(live, replay, live.size());
}

// The events of a recording, read back as a session would have met them.
std::vector<Event> events_of(const std::string& text) {
  std::vector<Event> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto event = parse_event_line(line);
    if (!event) {
      continue;
    }
    Event e{event->direction, event->seconds(), std::nullopt, std::string(event->payload)};
    if (e.dir == '>') {
      std::size_t digits = 0;
      while (digits < e.text.size() && e.text[digits] >= '0' && e.text[digits] <= '9') {
        ++digits;
      }
      if (digits > 0) {
        std::uint64_t token = 0;
        std::from_chars(e.text.data(), e.text.data() + digits, token);
        e.token = token;
      }
      e.text.erase(0, digits);
    }
    out.push_back(std::move(e));
  }
  return out;
}

} // namespace exchange_test

using exchange_test::Event;

TEST_CASE("a session's exchanges and its recording's are the same", "[exchange]") {
  const std::vector<Event> events = {
      {'<', 0.001, 0, "=thread-group-added,id=\"i1\""}, // before any command: anonymous
      {'<', 0.002, 0, "(gdb) "},
      {'>', 0.010, 1, "-gdb-set pagination off"},
      {'<', 0.011, 0, "1^done"},
      {'<', 0.012, 0, "(gdb) "}, // dates the late records' exchange
      {'>', 0.020, 2, "-target-attach 4242"},
      {'<', 0.021, 0, "=thread-group-started,id=\"i1\",pid=\"4242\""},
      {'!', 0.022, 0, "a note inside the attach"},
      {'<', 0.023, 0, "7^done"}, // another token's result does not close it
      {'<', 0.030, 0, "2^done"},
      {'<', 0.031, 0, "(gdb) "},
      {'<', 0.040, 0, "*stopped,reason=\"signal-received\""}, // after the result: its own
      {'<', 0.041, 0, "=library-loaded,id=\"/lib/x.so\""},
      {'<', 0.042, 0, "not MI at all"},
      {'>', 0.050, 3, "-thread-info"},
      {'<', 0.051, 0, "^done,threads=[]"}, // no token: closes any exchange
      {'!', 0.060, 0, "detached"},
      {'>', 0.070, 4, "-gdb-exit"}, // never answered
  };
  exchange_test::Live live;
  live.play(events);
  TranscriptInfo info;
  const auto replay = read_transcript(live.recording, &info);
  CHECK(info.truncated);
  CHECK(info.parse_errors == 1);
  exchange_test::check_same(live.assembler.exchanges(), replay);
  REQUIRE(replay.size() == 7);
  CHECK(replay[0].command.empty());
  CHECK(replay[2].records.size() == 3);
  CHECK(replay[2].notes.size() == 1);
  CHECK(replay[3].command.empty());
  CHECK(replay[3].sent_at == 0.031); // the prompt's time
  CHECK(replay[3].records.size() == 2);
  CHECK(replay[5].notes == std::vector<std::string>{"detached"});
  CHECK(replay[5].sent_at == 0.060);
}

TEST_CASE("an exchange over the byte limit closes early, live and replayed alike", "[exchange]") {
  Limits limits;
  limits.max_exchange_bytes = 40;
  std::vector<Event> events = {{'>', 0.1, 1, "-thread-info"}};
  for (int i = 0; i < 6; ++i) {
    events.push_back({'<', 0.2 + i, 0, "~\"twenty bytes of text\""});
  }
  events.push_back({'<', 0.9, 0, "1^done"});
  exchange_test::Live live{ExchangeAssembler(limits.max_exchange_bytes), {}};
  live.play(events);
  const auto replay = read_transcript(live.recording, nullptr, limits);
  exchange_test::check_same(live.assembler.exchanges(), replay);
  CHECK(replay.size() > 2);
}

TEST_CASE("the fixture recordings replay into the exchanges their events make", "[exchange]") {
  const std::filesystem::path root = std::filesystem::path(ROCPLAY_SOURCE_DIR) / "fixtures";
  std::size_t recordings = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.path().extension() != ".rec") {
      continue;
    }
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    INFO(entry.path().string());
    exchange_test::Live live;
    live.play(exchange_test::events_of(text.str()));
    exchange_test::check_same(live.assembler.exchanges(), read_transcript(text.str()));
    ++recordings;
  }
  CHECK(recordings >= 3);
}
