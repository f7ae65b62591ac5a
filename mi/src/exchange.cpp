#include "rocplay/mi/exchange.hpp"

#include <iterator>

namespace rocplay::mi {

const Record* Exchange::result() const {
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    if (it->kind() == RecordKind::Result) {
      return &*it;
    }
  }
  return nullptr;
}

std::optional<std::string> Exchange::error_message() const {
  const Record* r = result();
  if (r == nullptr || r->klass() != "error") {
    return std::nullopt;
  }
  return r->results()["msg"].text();
}

std::string Exchange::console() const {
  return console_text(records);
}

void ExchangeAssembler::command(std::string command, std::optional<std::uint64_t> token,
                                double at) {
  close();
  Exchange ex;
  ex.command = std::move(command);
  ex.token = token;
  ex.sent_at = at;
  exchanges_.push_back(std::move(ex));
  open_ = true;
}

void ExchangeAssembler::prompt(double at) {
  if (!open_ && !prompt_at_) {
    prompt_at_ = at;
  }
}

void ExchangeAssembler::note(std::string text, double at) {
  current(at).notes.push_back(std::move(text));
}

Exchange& ExchangeAssembler::current(double at) {
  if (!open_) {
    Exchange ex;
    ex.sent_at = prompt_at_.value_or(at);
    prompt_at_.reset();
    exchanges_.push_back(std::move(ex));
    open_ = true;
  }
  return exchanges_.back();
}

bool ExchangeAssembler::closes(const RecordView& record) const {
  const Exchange& ex = exchanges_.back();
  return record.kind() == RecordKind::Result &&
         (!ex.token || !record.token() || *record.token() == *ex.token);
}

bool ExchangeAssembler::add(const RecordView& record, double at) {
  Exchange& ex = current(at);
  const bool closes_it = closes(record);
  reserve_records(ex);
  ex.records.emplace_back(record);
  return added(record, closes_it, at);
}

bool ExchangeAssembler::add(const RecordView& record, NodeTable&& nodes, double at) {
  Exchange& ex = current(at);
  const bool closes_it = closes(record);
  reserve_records(ex);
  ex.records.emplace_back(record, std::move(nodes));
  return added(record, closes_it, at);
}

void ExchangeAssembler::reserve_records(Exchange& ex) {
  // An exchange's first record reserves room for several: growing one at a time (1, 2, 4, 8)
  // moved every record three times in a typical exchange of 4-8.
  constexpr std::size_t kFirstRecords = 4;
  if (ex.records.capacity() == 0) {
    ex.records.reserve(kFirstRecords);
  }
}

bool ExchangeAssembler::added(const RecordView& record, bool closes_it, double at) {
  if (record.kind() == RecordKind::Result) {
    exchanges_.back().done_at = at;
  }
  open_bytes_ += record.line().size();
  if (closes_it || open_bytes_ > max_exchange_bytes_) {
    close();
  }
  return closes_it;
}

void ExchangeAssembler::close() {
  open_ = false;
  open_bytes_ = 0;
  prompt_at_.reset();
}

std::size_t ExchangeAssembler::take_closed(std::vector<Exchange>& out) {
  const std::size_t n = exchanges_.size() - (open_ ? 1 : 0);
  if (n == 0) {
    return 0;
  }
  out.insert(out.end(), std::make_move_iterator(exchanges_.begin()),
             std::make_move_iterator(exchanges_.begin() + static_cast<std::ptrdiff_t>(n)));
  exchanges_.erase(exchanges_.begin(), exchanges_.begin() + static_cast<std::ptrdiff_t>(n));
  return n;
}

} // namespace rocplay::mi
