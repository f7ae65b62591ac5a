// The session's recording (see session/recorder.hpp).
#include "session/recorder.hpp"

#include <cerrno>
#include <cstring>

namespace rocplay::session::detail {

Recorder::~Recorder() {
  if (writer_) {
    writer_->flush();
    writer_.reset();
  }
  if (file_ != nullptr) {
    std::fclose(file_);
  }
}

void Recorder::enable(std::string path) {
  path_ = std::move(path);
  enabled_ = !path_.empty();
}

void Recorder::record(char dir, double at, std::uint64_t token, std::string_view text) {
  if (!enabled_) {
    return;
  }
  if (!writer_) {
    pending_.push_back(PendingEvent{dir, at, token, std::string(text)});
    return;
  }
  write_event(dir, at, token, text);
}

void Recorder::write_event(char dir, double at, std::uint64_t token, std::string_view text) {
  switch (dir) {
  case '>':
    writer_->sent(at, token, text);
    break;
  case '<':
    writer_->received(at, text);
    break;
  default:
    writer_->note(at, text);
    break;
  }
}

std::optional<std::string> Recorder::open(const std::function<std::string()>& meta_json) {
  if (!enabled_ || writer_) {
    return std::nullopt;
  }
  file_ = std::fopen(path_.c_str(), "w");
  if (file_ == nullptr) {
    enabled_ = false;
    pending_.clear();
    return "could not write the recording to " + path_ + ": " + std::strerror(errno);
  }
  writer_ = std::make_unique<mi::TranscriptWriter>(file_, meta_json());
  for (const auto& e : pending_) {
    write_event(e.dir, e.at, e.token, e.text);
  }
  pending_.clear();
  writer_->flush();
  return std::nullopt;
}

std::optional<std::string> Recorder::close(const std::function<std::string()>& meta_json) {
  std::optional<std::string> warning;
  if (enabled_ && !writer_) {
    warning = open(meta_json);
  }
  if (writer_) {
    writer_->flush();
    writer_.reset();
  }
  if (file_ != nullptr) {
    std::fclose(file_);
    file_ = nullptr;
  }
  enabled_ = false;
  return warning;
}

void Recorder::flush() {
  if (file_ != nullptr) {
    std::fflush(file_);
  }
}

} // namespace rocplay::session::detail
