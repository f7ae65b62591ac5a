// The session's recording (docs/transcript.md): every command, record and note, with its time.
// Events are held until the `# meta` line can be written (attach knows the pid and the target's
// environment), then written as they come. Internal to src/session.
#pragma once

#include "rocplay/mi/transcript.hpp"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::session::detail {

class Recorder {
public:
  Recorder() = default;
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;
  ~Recorder();

  // Records into `path` from now on; an empty path records nothing.
  void enable(std::string path);
  // dir: '>' a command sent (with its token), '<' a line received, '!' a note.
  void record(char dir, double at, std::uint64_t token, std::string_view text);
  // Creates the file and writes `meta_json()` and the held events. When the file cannot be
  // created, recording stops and the returned warning says why.
  std::optional<std::string> open(const std::function<std::string()>& meta_json);
  // Opens (if it never was) and closes the file.
  std::optional<std::string> close(const std::function<std::string()>& meta_json);
  void flush();

private:
  struct PendingEvent {
    char dir;
    double at;
    std::uint64_t token;
    std::string text;
  };
  void write_event(char dir, double at, std::uint64_t token, std::string_view text);

  std::string path_;
  bool enabled_ = false;
  std::FILE* file_ = nullptr;
  std::unique_ptr<mi::TranscriptWriter> writer_;
  std::vector<PendingEvent> pending_;
};

} // namespace rocplay::session::detail
