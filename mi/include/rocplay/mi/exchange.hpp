// Exchanges: a command and the records it caused, and the one rule that groups records into them.
//
// The rule: a command's exchange holds what the debugger wrote after the command was sent, up to
// and including the result record that carries its token (or any result, when either side has no
// token). Records that arrive after a result and before the next command (the `*stopped` that
// follows `-target-attach`'s `^done`, a late `=library-loaded`, notes) form an exchange of their
// own with an empty command. An exchange that grows past Limits::max_exchange_bytes is closed
// early. session::Session applies it live and TranscriptReader to a recording of that session
// (or a raw MI log, where every command is unknown), through ExchangeAssembler, so a recording
// replays into the same exchanges.
#pragma once

#include "rocplay/mi/parser.hpp"

#include <cstdint>
#include <optional>
#include <string>
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

// Applies the rule above to a stream of commands, records, prompts and notes. Exchanges stay in
// exchanges() in order (the last one may still be open) until take_closed() moves them out.
class ExchangeAssembler {
public:
  explicit ExchangeAssembler(std::size_t max_exchange_bytes = Limits{}.max_exchange_bytes)
      : max_exchange_bytes_(max_exchange_bytes) {}

  // A command was sent at `at`: the open exchange ends and the command's begins.
  void command(std::string command, std::optional<std::uint64_t> token, double at);
  // A prompt at `at`: no record, but after a result it dates the anonymous exchange that the
  // next record or note opens.
  void prompt(double at);
  void note(std::string text, double at);
  // Adds a record (not a prompt) that arrived at `at`. True when its result closed the exchange.
  bool add(const RecordView& record, double at);
  // The same, taking the node table the record points into (a big record: no copy).
  bool add(const RecordView& record, NodeTable&& nodes, double at);
  // Ends the open exchange (the input ended).
  void close();

  const std::vector<Exchange>& exchanges() const { return exchanges_; }
  // The last exchange is still being assembled.
  bool open() const { return open_; }
  // Moves every exchange but an open last one to the end of `out`; returns how many.
  std::size_t take_closed(std::vector<Exchange>& out);

private:
  Exchange& current(double at);
  bool closes(const RecordView& record) const;
  bool added(const RecordView& record, bool closes_it, double at);
  static void reserve_records(Exchange& ex);

  std::size_t max_exchange_bytes_;
  std::vector<Exchange> exchanges_;
  bool open_ = false;
  std::optional<double> prompt_at_; // a prompt after the last close: when it came
  std::size_t open_bytes_ = 0;
};

} // namespace rocplay::mi
