// Transcripts: what a debugger said, split into exchanges (a command and the records it caused).
//
// Two input formats, told apart by the first line:
//  * a raw MI log: a debugger's stdout as saved. Commands are unknown; each result record closes
//    an exchange, and the records before it belong to it.
//  * a rocplay recording (docs/transcript-format.md): a `# rocplay-transcript 1` header, a
//    `# meta {json}` line, then one line per event:
//        > 0.012 12-thread-info            (a command sent, with its token)
//        < 0.031 12^done,threads=[...]      (a line the debugger wrote, bytes exact)
//        ! 0.040 timeout: ...               (a note from rocplay: timeout, signal, detach)
//    Seconds are since the session started. Exchanges are matched to commands by token.
#pragma once

#include "rocplay/mi/exchange.hpp"
#include "rocplay/mi/parser.hpp"

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::mi {

enum class TranscriptFormat : std::uint8_t { Unknown, RawMi, Recording };

struct TranscriptInfo {
  TranscriptFormat format = TranscriptFormat::Unknown;
  std::string meta_json; // the recording's `# meta` object, as written
  std::uint64_t lines = 0;
  std::uint64_t bytes = 0;
  std::uint64_t records = 0;
  std::uint64_t exchanges = 0;
  std::uint64_t parse_errors = 0;       // lines that were not MI (counted, skipped)
  std::vector<ParseError> first_errors; // the first kMaxKeptErrors of them, with positions
  bool truncated = false;               // input ended inside an exchange
  static constexpr std::size_t kMaxKeptErrors = 64;
};

// Streams a transcript into exchanges with bounded memory: only the exchange being assembled is
// held. Feed chunks, pull exchanges.
class TranscriptReader {
public:
  explicit TranscriptReader(Limits limits = {});
  void feed(std::string_view chunk);
  void finish();
  std::optional<Exchange> next();
  const TranscriptInfo& info() const { return info_; }

private:
  void take_line(const LineSplitter::Line& line);
  void take_record(const RecordView& rec, double at);
  void take_closed();

  Limits limits_;
  LineSplitter lines_;
  TranscriptInfo info_;
  NodeTable scratch_;
  ParseError scratch_error_;
  ExchangeAssembler assembler_;
  std::vector<Exchange> ready_;
  std::size_t ready_pos_ = 0;
};

// One event line of a recording: `D SECONDS PAYLOAD`, D being `>` (sent), `<` (received) or `!`
// (a note); nullopt for any other line.
struct EventLine {
  char direction = 0;
  std::string_view time;         // as written, at most 32 characters
  std::string_view payload;      // the rest of the line after one space
  std::size_t payload_column{0}; // 0-based column of the payload in the line
  double seconds() const;
};
std::optional<EventLine> parse_event_line(std::string_view line);
// The same, written into `out`; false where the other returns nullopt.
bool parse_event_line(std::string_view line, EventLine& out);

// Reads a whole transcript held in memory.
std::vector<Exchange> read_transcript(std::string_view text, TranscriptInfo* info = nullptr,
                                      const Limits& limits = {});

// Writes a rocplay recording. Not thread-safe; one writer per session.
class TranscriptWriter {
public:
  // `meta_json` must be a single-line JSON object.
  TranscriptWriter(std::FILE* out, std::string_view meta_json);
  void sent(double at, std::uint64_t token, std::string_view command);
  void received(double at, std::string_view line);
  void note(double at, std::string_view text);
  void flush();

private:
  std::FILE* out_;
};

} // namespace rocplay::mi
