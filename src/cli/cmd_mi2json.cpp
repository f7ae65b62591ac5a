// `rocplay mi2json [FILE|-]`: GDB/MI records as JSON Lines, one object per record. Reads raw MI
// logs and rocplay's own recordings; the JSON shape is report/mi_json's (docs/mi.md).
#include "cli/commands.hpp"
#include "rocplay/core/error.hpp"
#include "rocplay/mi/parser.hpp"
#include "rocplay/mi/transcript.hpp"
#include "rocplay/report/mi_json.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace rocplay::cli::mi2json_command {
namespace {

constexpr std::string_view kRecordingHeader = "# rocplay-transcript";
// Lines that are not MI are listed on stderr up to this many; the rest are counted. Before the
// first MI line, fewer: a file that is no MI at all should say so, not scroll.
constexpr std::uint64_t kMaxListedErrors = 100;
constexpr std::uint64_t kMaxListedBeforeMi = 10;
constexpr std::size_t kChunkBytes = std::size_t{4} << 20;
constexpr std::size_t kFlushBytes = std::size_t{1} << 20;

struct Options {
  std::string input = "-";
  bool strict = false;
  bool summary = false;
};

class Converter {
public:
  explicit Converter(std::string name) : name_(std::move(name)) {}

  void line(const mi::LineSplitter::Line& line) {
    if (line.error != mi::Errc::None) {
      not_mi(line.number, 1, std::string(mi::to_string(line.error)));
      return;
    }
    const std::string_view text = line.text;
    if (text.empty()) {
      return;
    }
    if (!format_known_) {
      format_known_ = true;
      recording_ = text.rfind(kRecordingHeader, 0) == 0 || mi::parse_event_line(text).has_value();
    }
    if (!recording_) {
      record(text, line.number, 0, {});
      return;
    }
    if (text[0] == '#') {
      return; // the header, `# meta {...}` and comments
    }
    const auto event = mi::parse_event_line(text);
    if (!event) {
      not_mi(line.number, 1, "not a line of a rocplay recording (expected `> `, `< ` or `! `)");
      return;
    }
    switch (event->direction) {
    case '<':
      record(event->payload, line.number, event->payload_column, {"received", event->time});
      break;
    case '>': {
      std::size_t digits = 0;
      while (digits < event->payload.size() && event->payload[digits] >= '0' &&
             event->payload[digits] <= '9') {
        ++digits;
      }
      std::optional<std::uint64_t> token;
      std::uint64_t value = 0;
      if (digits > 0 &&
          std::from_chars(event->payload.data(), event->payload.data() + digits, value).ec ==
              std::errc()) {
        token = value;
      }
      ++counts_["command"];
      ++mi_lines_;
      report::append_sent_command_json(out_, line.number, event->time, token,
                                       event->payload.substr(digits));
      out_.push_back('\n');
      break;
    }
    default:
      ++counts_["note"];
      report::append_note_json(out_, line.number, event->time, event->payload);
      out_.push_back('\n');
    }
    maybe_flush();
  }

  void flush() {
    if (!out_.empty() && std::fwrite(out_.data(), 1, out_.size(), stdout) != out_.size()) {
      throw Error(ExitCode::NoInput,
                  std::string("writing the JSON failed: ") + std::strerror(errno),
                  "check that the output can be written (free space, a closed pipe)");
    }
    out_.clear();
  }

  std::uint64_t mi_lines() const { return mi_lines_; }
  std::uint64_t errors() const { return errors_; }
  // Counts by kind. Records are counted in an array as they come: a map lookup per record
  // costs measurably.
  std::map<std::string, std::uint64_t> all_counts() const {
    auto all = counts_;
    for (std::size_t k = 0; k < kind_counts_.size(); ++k) {
      if (kind_counts_[k] != 0) {
        all[std::string(mi::to_string(static_cast<mi::RecordKind>(k)))] += kind_counts_[k];
      }
    }
    return all;
  }
  bool recording() const { return recording_; }

private:
  void record(std::string_view payload, std::uint64_t line_no, std::size_t column_offset,
              const report::RecordOrigin& origin) {
    const mi::RecordView rec = mi::parse_line(payload, line_no, nodes_, error_);
    if (rec.is_error()) {
      not_mi(line_no, rec.error().column + static_cast<std::uint32_t>(column_offset),
             std::string(mi::to_string(rec.error().errc)) + " near `" + rec.error().excerpt + "`");
      return;
    }
    ++mi_lines_;
    ++kind_counts_[static_cast<std::size_t>(rec.kind())];
    if (rec.kind() == mi::RecordKind::Prompt) {
      return;
    }
    report::append_mi_record_json(out_, rec, origin);
    out_.push_back('\n');
    maybe_flush();
  }

  void not_mi(std::uint64_t line_no, std::uint32_t column, const std::string& why) {
    ++errors_;
    if (listing_closed_) {
      return;
    }
    if (errors_ <= (mi_lines_ == 0 ? kMaxListedBeforeMi : kMaxListedErrors)) {
      std::fprintf(stderr, "%s:%llu:%u: not MI: %s\n", name_.c_str(),
                   static_cast<unsigned long long>(line_no), column, why.c_str());
    } else {
      listing_closed_ = true;
      std::fprintf(stderr, "%s: further lines that are not MI are counted, not listed\n",
                   name_.c_str());
    }
  }

  void maybe_flush() {
    if (out_.size() >= kFlushBytes) {
      flush();
    }
  }

  std::string name_;
  report::JsonBuffer out_;
  mi::NodeTable nodes_;
  mi::ParseError error_;
  bool format_known_ = false;
  bool recording_ = false;
  std::uint64_t mi_lines_ = 0;
  std::uint64_t errors_ = 0;
  bool listing_closed_ = false; // the "further lines" note is out: list no more
  std::map<std::string, std::uint64_t> counts_;
  std::array<std::uint64_t, 16> kind_counts_{};
};

int run_mi2json(const Options& options) {
  int fd = STDIN_FILENO;
  const std::string name = options.input == "-" ? "<stdin>" : options.input;
  if (options.input != "-") {
    fd = ::open(options.input.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      throw Error(ExitCode::NoInput, "cannot open " + options.input + ": " + std::strerror(errno),
                  "check the path; use - to read standard input");
    }
  }
  struct Closer {
    int fd;
    ~Closer() {
      if (fd != STDIN_FILENO) {
        ::close(fd);
      }
    }
  } closer{fd};

  mi::LineSplitter lines;
  Converter converter(name);
  auto drain = [&] {
    while (auto line = lines.next()) {
      converter.line(*line);
    }
  };
  std::unique_ptr<char[]> buf(new char[kChunkBytes]);
  for (;;) {
    const ssize_t n = ::read(fd, buf.get(), kChunkBytes);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      throw Error(ExitCode::NoInput, "reading " + name + " failed: " + std::strerror(errno),
                  "check that the file is readable (a directory or a device cannot be read)");
    }
    if (n == 0) {
      break;
    }
    lines.feed(std::string_view(buf.get(), static_cast<std::size_t>(n)));
    drain();
  }
  lines.finish();
  drain();
  converter.flush();
  std::fflush(stdout);

  if (options.summary) {
    std::fprintf(stderr, "%s: %s, %llu lines, %llu bytes", name.c_str(),
                 converter.recording() ? "rocplay recording" : "raw MI log",
                 static_cast<unsigned long long>(lines.lines()),
                 static_cast<unsigned long long>(lines.bytes()));
    for (const auto& [kind, count] : converter.all_counts()) {
      std::fprintf(stderr, ", %llu %s", static_cast<unsigned long long>(count), kind.c_str());
    }
    std::fprintf(stderr, ", %llu not MI\n", static_cast<unsigned long long>(converter.errors()));
  }
  if (converter.mi_lines() == 0) {
    print_error(name + (lines.bytes() == 0
                            ? " is empty: it holds no GDB/MI"
                            : " holds no GDB/MI: none of its " + std::to_string(lines.lines()) +
                                  " line(s) is an MI record"),
                "give a debugger's MI output (gdb --interpreter=mi3) or a recording made with "
                "`rocplay run --record FILE`");
    return static_cast<int>(ExitCode::DataError);
  }
  if (converter.errors() > 0 && options.strict) {
    print_error(std::to_string(converter.errors()) + " line(s) of " + name + " are not valid MI",
                "positions are listed above; drop --strict to skip such lines");
    return static_cast<int>(ExitCode::DataError);
  }
  return 0;
}

Action add_mi2json(CLI::App& app) {
  auto options = std::make_shared<Options>();
  auto* cmd =
      app.add_subcommand("mi2json", "Convert GDB/MI output (a raw debugger log or a rocplay "
                                    "recording) to JSON Lines, one object per record");
  cmd->add_option("file", options->input, "MI log or recording to read; - for standard input")
      ->default_val("-");
  cmd->add_flag("--strict", options->strict, "Exit 65 when any line is not valid MI");
  cmd->add_flag("--summary", options->summary, "Print record counts to stderr at the end");
  cmd->footer(
      "Each line: {\"line\",\"kind\",\"class\",\"token\",\"values\"|\"text\"}; recordings add\n"
      "\"dir\" and \"time\", and their commands and notes are objects of kind \"command\" and\n"
      "\"note\". The shape is lossless (docs/mi.md). Lines that are not MI are reported on\n"
      "stderr as FILE:LINE:COLUMN and skipped. Exit 65 when nothing in the input is MI.");
  return [options] { return run_mi2json(*options); };
}

const bool kRegistered = register_command({"mi2json", 90, &add_mi2json});

} // namespace
} // namespace rocplay::cli::mi2json_command
