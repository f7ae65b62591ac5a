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

#include "rocplay/mi/parser.hpp"

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::mi {

struct Exchange {
  std::string command;                // as sent, without the token; empty when unknown
  std::optional<std::uint64_t> token; // the command's token
  std::vector<Record> records;        // everything the debugger wrote for it, in order
  double sent_at = 0;                 // seconds since the session started (recordings)
  double done_at = 0;
  std::vector<std::string> notes; // `!` lines that fell inside this exchange

  // The result record (`^...`) that closed the exchange, or nullptr (truncated transcript).
  const Record* result() const;
  bool complete() const { return result() != nullptr; }
  // `^error,msg=...` text, if the command failed.
  std::optional<std::string> error_message() const;
  // All console (`~`) text, joined.
  std::string console() const;
};

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
  void take_record(const RecordView& rec);
  void close_current();

  Limits limits_;
  LineSplitter lines_;
  TranscriptInfo info_;
  NodeTable scratch_;
  ParseError scratch_error_;
  std::optional<Exchange> current_;
  std::vector<Exchange> ready_;
  std::size_t ready_pos_ = 0;
  std::size_t current_bytes_ = 0;
};

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
