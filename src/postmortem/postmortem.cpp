#include "rocplay/postmortem/postmortem.hpp"
#include "rocplay/core/source.hpp"

#include "core/read_chunks.hpp"
#include "rocplay/agentlog/agentlog.hpp"
#include "rocplay/case/analyse.hpp"
#include "rocplay/case/join.hpp"
#include "rocplay/collectives/collectives.hpp"
#include "rocplay/collectives/pickle.hpp"
#include "rocplay/core/error.hpp"
#include "rocplay/core/worker_pool.hpp"
#include "rocplay/crash/crash.hpp"
#include "rocplay/kernels/kernel_names.hpp"
#include "rocplay/report/agent_log.hpp"
#include "rocplay/snapshot/console_log.hpp"
#include "rocplay/snapshot/sampling.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>

namespace rocplay::postmortem {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kChunkBytes = std::size_t{1} << 20;
constexpr std::size_t kWholeFileBytes = std::size_t{16} << 20;
constexpr std::size_t kSniffBytes = 64 * 1024;

bool has_glob_chars(const std::string& s) {
  return s.find_first_of("*?[") != std::string::npos;
}

// Content, not the file name, decides the format.
InputKind sniff(std::string_view head, bool* text_fallback = nullptr) {
  std::size_t pos = 0;
  std::size_t mi_lines = 0;
  std::size_t other_lines = 0;
  mi::NodeTable scratch;
  mi::ParseError error;
  while (pos < head.size() && mi_lines + other_lines < 16) {
    std::size_t end = head.find('\n', pos);
    if (end == std::string_view::npos) {
      end = head.size();
    }
    std::string_view line = head.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (line.empty()) {
      continue;
    }
    if (line.rfind("# rocplay-transcript", 0) == 0) {
      return InputKind::Recording;
    }
    if (line[0] == '#') {
      continue; // comments before a recording's header
    }
    if (mi_lines + other_lines == 0 && line[0] == '{') {
      return InputKind::ReportJson;
    }
    const auto rec = mi::parse_line(line, 1, scratch, error);
    if (rec.is_error()) {
      ++other_lines;
    } else {
      ++mi_lines;
    }
  }
  if (mi_lines > 0 && mi_lines >= other_lines) {
    return InputKind::RawMi;
  }
  if (agentlog::looks_like_agent_log(head)) {
    return InputKind::AgentLog;
  }
  if (mi_lines > 0) {
    return InputKind::RawMi; // a log mostly of inferior output, with some MI in it
  }
  // Any other text is read as a server log: rocm-debug-agent dumps can sit anywhere in it, far
  // past the sniffed head. Binary data is not.
  // Binary data shows itself in its first bytes; a later binary stretch is skipped line by line
  // by the reader. (This ran over the whole 64 KiB head of every input of a batch.)
  const std::string_view probe = head.substr(0, 16 * 1024);
  std::size_t printable = 0;
  for (const char ch : probe) {
    const auto c = static_cast<unsigned char>(ch);
    printable += (c >= 0x20 || c == '\n' || c == '\r' || c == '\t') ? 1 : 0;
  }
  if (printable * 100 >= probe.size() * 98) {
    if (text_fallback != nullptr) {
      *text_fallback = true;
    }
    return InputKind::AgentLog;
  }
  return InputKind::Unknown;
}

// MI output records in the head (not just prompts): a raw MI log, not console text.
bool sniff_has_mi_results(std::string_view head) {
  std::size_t pos = 0;
  for (int lines = 0; pos < head.size() && lines < 400; ++lines) {
    std::size_t end = head.find('\n', pos);
    if (end == std::string_view::npos) {
      end = head.size();
    }
    std::string_view line = head.substr(pos, end - pos);
    pos = end + 1;
    while (!line.empty() && line.front() >= '0' && line.front() <= '9') {
      line.remove_prefix(1); // a token
    }
    if (line.starts_with("~\"") || line.starts_with("&\"") || line.starts_with("^done") ||
        line.starts_with("^error") || line.starts_with("*stopped") ||
        line.starts_with("=thread-")) {
      return true;
    }
  }
  return false;
}

bool is_word_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

bool is_digit_at(std::string_view s, std::size_t i) {
  return i < s.size() && s[i] >= '0' && s[i] <= '9';
}

// `12:34:56` anywhere, a log level as a whole word, or a Python traceback.
bool line_looks_logged(std::string_view line) {
  for (std::size_t p = line.find(':', 2); p != std::string_view::npos; p = line.find(':', p + 1)) {
    if (is_digit_at(line, p - 2) && is_digit_at(line, p - 1) && is_digit_at(line, p + 1) &&
        is_digit_at(line, p + 2) && p + 3 < line.size() && line[p + 3] == ':' &&
        is_digit_at(line, p + 4) && is_digit_at(line, p + 5)) {
      return true;
    }
  }
  for (std::string_view level :
       {"INFO", "WARNING", "WARN", "ERROR", "DEBUG", "CRITICAL", "FATAL", "TRACE"}) {
    for (std::size_t p = line.find(level); p != std::string_view::npos;
         p = line.find(level, p + 1)) {
      const std::size_t end = p + level.size();
      if ((p == 0 || !is_word_char(line[p - 1])) &&
          (end == line.size() || !is_word_char(line[end]))) {
        return true;
      }
    }
  }
  return line.find("Traceback (most") != std::string_view::npos;
}

// A server log has timestamps or log levels on its lines; a README or "hello world" has neither.
// Hand-written rather than std::regex: it runs on every text input of a batch.
bool looks_like_log(std::string_view head) {
  std::size_t pos = 0;
  for (int lines = 0; pos < head.size() && lines < 200; ++lines) {
    std::size_t end = head.find('\n', pos);
    if (end == std::string_view::npos) {
      end = head.size();
    }
    const std::string_view line = head.substr(pos, std::min<std::size_t>(end - pos, 512));
    pos = end + 1;
    if (line_looks_logged(line)) {
      return true;
    }
  }
  return false;
}

std::optional<int> rank_from_path(const std::string& path, const std::regex* re) {
  if (re == nullptr) {
    return std::nullopt;
  }
  std::smatch m;
  if (!std::regex_search(path, m, *re) || m.size() < 2 || !m[1].matched) {
    return std::nullopt;
  }
  try {
    return std::stoi(m[1].str());
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The rank in the target environment a recording's meta carries: RANK, LOCAL_RANK,
// OMPI_COMM_WORLD_RANK, SLURM_PROCID, as a live fan-out reads them (source::rank_from_env).
std::optional<int> rank_from_env(const Snapshot& s) {
  return source::rank_from_env(s.env);
}

void finish_result(InputResult& r) {
  if (r.status == InputStatus::Ok && r.skipped_lines > 0) {
    r.status = InputStatus::Partial;
  }
  if (r.rank && r.rank_rule.empty()) {
    r.rank_rule = "meta";
  } else if (!r.rank && r.status != InputStatus::Unreadable && r.kind != InputKind::AgentLog) {
    if (auto env = rank_from_env(r.snapshot)) {
      r.rank = env;
      r.rank_rule = "meta RANK";
      r.snapshot.rank = env;
      for (Finding& f : r.findings) {
        f.rank = f.rank ? f.rank : env;
      }
    }
  }
  for (const Finding& f : r.findings) {
    if (f.severity >= Severity::Warning) {
      r.signatures.push_back(signature_of(f));
    }
  }
}

// `host pid 4242 (python3)` from a recording's meta; empty without a pid. `unix` gets the meta's
// started_at (seconds resolution) when it parses.
std::string process_key_of(const nlohmann::json& j, double& unix) {
  if (!j.is_object()) {
    return {};
  }
  const auto pid = j.find("pid");
  if (pid == j.end() || !pid->is_number_integer()) {
    return {};
  }
  std::string host = "?";
  if (auto h = j.find("host"); h != j.end() && h->is_string()) {
    host = h->get<std::string>();
  }
  std::string comm;
  if (auto t = j.find("target"); t != j.end() && t->is_object()) {
    if (auto c = t->find("comm"); c != t->end() && c->is_string()) {
      comm = c->get<std::string>();
    }
  }
  if (auto at = j.find("started_at"); at != j.end() && at->is_string()) {
    std::tm tm{};
    const std::string text = at->get<std::string>();
    if (strptime(text.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm) != nullptr) {
      unix = static_cast<double>(timegm(&tm));
    }
  }
  return fmt::format("{} pid {}{}", host, pid->get<std::int64_t>(),
                     comm.empty() ? std::string() : " (" + comm + ")");
}

// What the first look at an input's header found, carried with the file to its analysis: the
// process it records (from the meta line) and what the rest of the meta says, so the meta is
// parsed once per input. Only regular files are looked at; the others carry nothing.
struct FirstLook {
  std::string process_key; // `host pid 4242 (python3)`; empty: no meta with a pid
  double started_unix = 0; // the meta's started_at
  heuristics::Context context;
  // The meta line these came from, by size and hash: the reader's meta must be the same text.
  std::size_t meta_size = 0;
  std::size_t meta_hash = 0;
};

constexpr std::size_t kLookBytes = 8 * 1024; // a header and a meta line, usually

// The header and meta line of a recording at `path`: its first 8 KiB, or up to 64 KiB when the
// meta line is longer. Standard input, pipes and FIFOs are not looked at: a pipe or a FIFO would
// block here, and lose what it read.
FirstLook first_look(const std::string& path) {
  FirstLook look;
  struct stat st {};
  if (path == "-" || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return look;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return look;
  }
  std::string head;
  std::size_t n = 0;
  std::size_t meta_at = std::string_view::npos;
  std::size_t meta_end = std::string_view::npos;
  for (std::size_t want = kLookBytes; want <= kSniffBytes; want *= 8) {
    head.resize(want);
    const ssize_t got = ::pread(fd, head.data() + n, want - n, static_cast<off_t>(n));
    if (got <= 0) {
      break;
    }
    n += static_cast<std::size_t>(got);
    const std::string_view text(head.data(), n);
    // Comment lines may come before the header, as the reader allows.
    if (text.front() != '#' || (text.rfind("# rocplay-transcript", 0) != 0 &&
                                text.find("\n# rocplay-transcript") == std::string_view::npos)) {
      if (n < want || text.front() != '#') {
        break; // not a recording, or one whose header lies past what is read
      }
      continue;
    }
    meta_at = text.find("\n# meta ");
    meta_end = meta_at == std::string_view::npos ? meta_at : text.find('\n', meta_at + 8);
    if (meta_end != std::string_view::npos || n < want) {
      break; // the whole meta line, or the whole file
    }
  }
  ::close(fd);
  if (meta_end == std::string_view::npos) {
    return look;
  }
  const std::string_view meta(head.data() + meta_at + 8, meta_end - meta_at - 8);
  const auto j = nlohmann::json::parse(meta, nullptr, /*allow_exceptions=*/false);
  look.process_key = process_key_of(j, look.started_unix);
  look.context = heuristics::context_from_parsed_meta(j);
  look.meta_size = meta.size();
  look.meta_hash = std::hash<std::string_view>{}(meta);
  return look;
}

// The input as the analysis step sees it: its path and the rank --rank-from gave it.
source::Source source_of(const InputResult& r) {
  source::Source src;
  src.path = r.path;
  src.member = r.member;
  src.offer_rank(r.rank, source::RankRule::Pattern);
  return src;
}

// What the analysis step made of the input, onto its result.
void take_case(InputResult& r, Case&& c) {
  r.rank = c.source.rank;
  r.snapshot = std::move(c.snapshot);
  r.findings = std::move(c.findings);
  r.samples = std::move(c.samples);
  r.progress = std::move(c.progress);
  r.graph = std::move(c.graph);
  for (auto& w : c.warnings) {
    r.warnings.push_back(std::move(w));
  }
}

// `whole`: the input's bytes when they are in memory already (a file up to 16 MB, a pipe), parsed
// where they lie, its lines (often one MB-sized -thread-info) never reassembled across chunks;
// empty: `in` is streamed. `look`: what the first look at the file's header found (or nullptr).
void analyse_transcript(std::istream& in, std::string_view whole, InputResult& r,
                        const Options& options, const FirstLook* look) {
  mi::TranscriptReader reader(options.limits);
  std::optional<snapshot::SampleBuilder> builder;
  auto take = [&](mi::Exchange&& ex) {
    if (!builder) {
      snapshot::BuildOptions bo;
      bo.label = r.path;
      bo.meta_json = reader.info().meta_json;
      builder.emplace(bo);
    }
    builder->add(ex);
  };
  if (!whole.empty()) {
    reader.feed(whole);
    while (auto ex = reader.next()) {
      take(std::move(*ex));
    }
  } else {
    std::vector<char, mi::UninitAllocator<char>> buf(kChunkBytes);
    read_chunks(in, buf, [&](std::string_view chunk) {
      reader.feed(chunk);
      while (auto ex = reader.next()) {
        take(std::move(*ex));
      }
    });
  }
  if (whole.empty() && in.bad()) {
    r.warnings.push_back("read error part-way through; what was read is used");
    r.status = InputStatus::Partial;
  }
  reader.finish();
  while (auto ex = reader.next()) {
    take(std::move(*ex));
  }
  const mi::TranscriptInfo& info = reader.info();
  r.kind = info.format == mi::TranscriptFormat::Recording ? InputKind::Recording : InputKind::RawMi;
  r.skipped_lines = info.parse_errors;
  if (info.parse_errors > 0) {
    std::string w = std::to_string(info.parse_errors) + " line(s) were not MI and were skipped";
    if (!info.first_errors.empty()) {
      w += " (first: " + info.first_errors.front().message() + ")";
    }
    r.warnings.push_back(w);
  }
  if (info.truncated) {
    r.warnings.push_back("the transcript ends inside an exchange (debugger killed mid-way?); "
                         "the snapshot is partial");
    r.status = InputStatus::Partial;
  }
  if (!builder) {
    r.status = InputStatus::Unreadable;
    r.error = "no MI records found";
    return;
  }
  std::vector<Sample> samples = builder->finish();
  if (samples.empty()) {
    r.status = InputStatus::Unreadable;
    r.error = "no MI records found";
    return;
  }
  // A recording's meta names the workers rocplay saw (and the TP size): the same context the
  // live run had, so a post-mortem says what the live report said. The process key and the
  // context come from the first look when it read this very meta line; otherwise the meta is
  // parsed here (the builder read its pid, rank, env and times already).
  incident::AnalyseOptions ao;
  const std::string& meta_text = info.meta_json;
  if (look != nullptr && look->meta_size > 0 && look->meta_size == meta_text.size() &&
      look->meta_hash == std::hash<std::string_view>{}(meta_text)) {
    r.process_key = look->process_key;
    r.started_unix = look->started_unix;
    ao.context = look->context;
  } else {
    const auto meta = meta_text.empty() ? nlohmann::json()
                                        : nlohmann::json::parse(meta_text, nullptr,
                                                                /*allow_exceptions=*/false);
    r.process_key = process_key_of(meta, r.started_unix);
    ao.context = heuristics::context_from_parsed_meta(meta);
  }
  if (samples.front().wall_time > 0) {
    r.started_unix = samples.front().wall_time;
  }
  ao.context.details = options.details;
  ao.one_live_sample = ao.context.samples_asked.has_value() && samples.size() < 2;
  r.one_live_sample = ao.one_live_sample;
  take_case(r, incident::analyse(std::move(samples), source_of(r), ao));
}

std::vector<InputResult> analyse_report_json(std::istream& in, InputResult base) {
  std::vector<InputResult> out;
  std::string line;
  std::size_t number = 0;
  std::size_t members = 0;
  auto add = [&](const nlohmann::json& j) {
    const nlohmann::json* snap = nullptr;
    if (j.contains("snapshot") && j["snapshot"].is_object()) {
      snap = &j["snapshot"];
    } else if (j.contains("agents") && j.contains("waves")) {
      snap = &j;
    }
    if (snap == nullptr) {
      return; // a summary line or another object: not a snapshot
    }
    InputResult r = base;
    r.member = "#" + std::to_string(members++);
    try {
      take_case(r, incident::analyse_json(*snap, source_of(r)));
    } catch (const std::exception& e) {
      r.status = InputStatus::Unreadable;
      r.error = std::string("not a rocplay snapshot: ") + e.what();
    }
    out.push_back(std::move(r));
  };
  // A pretty-printed single document or JSON Lines: try the whole file first.
  std::stringstream whole;
  whole << in.rdbuf();
  const std::string text = whole.str();
  auto doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_discarded()) {
    if (doc.is_array()) {
      for (const auto& j : doc) {
        add(j);
      }
    } else {
      add(doc);
    }
  } else {
    std::istringstream lines(text);
    while (std::getline(lines, line)) {
      ++number;
      if (line.empty()) {
        continue;
      }
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded()) {
        base.warnings.push_back("line " + std::to_string(number) + " is not JSON; skipped");
        ++base.skipped_lines;
        continue;
      }
      add(j);
    }
  }
  if (out.empty()) {
    base.status = InputStatus::Unreadable;
    base.error = "JSON without a rocplay snapshot in it";
    out.push_back(std::move(base));
  }
  for (auto& r : out) {
    if (r.status != InputStatus::Unreadable) {
      r.skipped_lines += base.skipped_lines;
      r.warnings.insert(r.warnings.end(), base.warnings.begin(), base.warnings.end());
    }
  }
  return out;
}

void analyse_agent_log(std::istream& in, InputResult& r, bool text_fallback) {
  agentlog::ParseOptions po;
  po.source = r.path;
  po.rank = r.rank;
  std::vector<agentlog::AgentLog> logs;
  logs.push_back(agentlog::parse(in, po));
  const auto report = agentlog::analyze(logs);
  r.findings = report::agent_log_findings(report);
  if (report.groups.empty() && !text_fallback) {
    r.warnings.push_back("no rocm-debug-agent wave dumps found; a silent hang needs "
                         "`rocplay run hang-triage --pid PID` on the live process instead");
  }
  for (const auto& [source, warning] : report.warnings) {
    r.warnings.push_back((warning.line ? "line " + std::to_string(warning.line) + ": " : "") +
                         warning.message);
  }
  if (report.groups.empty() && text_fallback) {
    // Text with neither a dump nor the look of a log (timestamps, levels): plain text ("hello
    // world", a README) is no evidence of anything.
    r.kind = InputKind::Unknown;
    r.status = InputStatus::Unreadable;
    r.error = "plain text: no MI records, no rocplay JSON and no rocm-debug-agent wave dumps in "
              "it";
    r.warnings.clear();
  }
}

// Debugger console text (rocplay/snapshot/console_log.hpp): the same dialects, snapshot and
// heuristics as a transcript; runtime and kernel lines and rocm-debug-agent dumps in the same file
// are read too.
constexpr std::size_t kMaxConsoleBytes = std::size_t{256} << 20;

void take_crash(InputResult& r, std::shared_ptr<crash::Evidence> ev);
crash::ReadOptions crash_options(const InputResult& r);

void analyse_console_log(std::istream& in, InputResult& r) {
  std::string text;
  {
    std::vector<char> buf(kChunkBytes);
    while (in && text.size() < kMaxConsoleBytes) {
      in.read(buf.data(),
              static_cast<std::streamsize>(std::min(buf.size(), kMaxConsoleBytes - text.size())));
      text.append(buf.data(), static_cast<std::size_t>(in.gcount()));
    }
    if (text.size() >= kMaxConsoleBytes && in.peek() != EOF) {
      r.warnings.push_back("console log larger than 256 MiB: the rest is not read");
      r.status = InputStatus::Partial;
    }
  }
  r.kind = InputKind::ConsoleLog;
  console_log::Info info;
  const std::vector<mi::Exchange> exchanges = console_log::to_exchanges(text, &info);
  snapshot::BuildOptions bo;
  bo.label = r.path;
  bo.debugger = info.debugger;
  if (info.pid) {
    bo.meta_json = nlohmann::json{{"pid", *info.pid}}.dump();
  }
  snapshot::Builder builder(bo);
  for (const auto& ex : exchanges) {
    builder.add(ex);
  }
  std::vector<Sample> one(1);
  Snapshot& snap = one.front().snapshot;
  snap = builder.finish();
  if (snap.debugger_version.empty() && !info.banner.empty()) {
    snap.debugger_version = info.banner;
  }
  snap.notes = console_log::unknowns(snap, info);
  take_case(r, incident::analyse(std::move(one), source_of(r)));
  if (info.long_lines > 0) {
    r.warnings.push_back(std::to_string(info.long_lines) + " line(s) longer than 64 KiB were cut");
  }
  // The same file may hold the server's own log: crash lines and wave dumps are read from it too.
  // A debugger's stop line (`Thread 7 "x" received signal SIGSEGV, Segmentation fault.`) is the
  // snapshot's fault, not a process that exited: it is blanked for the crash reader.
  if (info.stops > 0) {
    std::size_t pos = 0;
    while ((pos = text.find(" received signal SIG", pos)) != std::string::npos) {
      const std::size_t begin = text.rfind('\n', pos);
      const std::size_t end = text.find('\n', pos);
      const std::size_t from = begin == std::string::npos ? 0 : begin + 1;
      const std::size_t to = end == std::string::npos ? text.size() : end;
      std::fill(text.begin() + static_cast<std::ptrdiff_t>(from),
                text.begin() + static_cast<std::ptrdiff_t>(to), ' ');
      pos = to;
    }
  }
  std::istringstream again(text);
  auto ev = std::make_shared<crash::Evidence>(
      crash::read_stream(again, crash::Format::Text, crash_options(r)));
  if (ev->has_agent_dumps) {
    again.clear();
    again.seekg(0);
    std::vector<Finding> mine = std::move(r.findings);
    analyse_agent_log(again, r, false);
    mine.insert(mine.end(), std::make_move_iterator(r.findings.begin()),
                std::make_move_iterator(r.findings.end()));
    r.findings = std::move(mine);
  }
  if (!ev->empty()) {
    take_crash(r, std::move(ev));
  }
}

// A pipe, FIFO or standard input, read whole (bounded) from a descriptor opened without blocking:
// a FIFO nobody writes to reads as empty instead of hanging the batch.
constexpr std::size_t kMaxStreamBytes = std::size_t{1} << 30;

bool read_stream(int fd, std::string& data, std::string& error) {
  // Blocking reads from here: a writer that is still writing is waited for; with no writer left
  // read() returns 0 at once.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) {
    ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  }
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      error = std::string("read error: ") + std::strerror(errno);
      return false;
    }
    if (n == 0) {
      return true;
    }
    const std::size_t take =
        std::min<std::size_t>(static_cast<std::size_t>(n), kMaxStreamBytes - data.size());
    data.append(buf, take);
    if (data.size() >= kMaxStreamBytes) {
      error = "more than 1 GiB from a pipe; the first 1 GiB is used";
      return true;
    }
  }
}

// An istream over bytes already in memory (no copy, unlike std::istringstream).
class MemoryBuf : public std::streambuf {
public:
  MemoryBuf(char* data, std::size_t size) { setg(data, data, data + size); }

protected:
  pos_type seekoff(off_type off, std::ios_base::seekdir dir, std::ios_base::openmode) override {
    const off_type size = egptr() - eback();
    const off_type target = dir == std::ios_base::beg   ? off
                            : dir == std::ios_base::cur ? (gptr() - eback()) + off
                                                        : size + off;
    if (target < 0 || target > size) {
      return pos_type(off_type(-1));
    }
    setg(eback(), eback() + target, egptr());
    return pos_type(target);
  }
  pos_type seekpos(pos_type pos, std::ios_base::openmode mode) override {
    return seekoff(off_type(pos), std::ios_base::beg, mode);
  }
};

std::string special_file_kind(mode_t mode) {
  if (S_ISFIFO(mode)) {
    return "a FIFO (named pipe)";
  }
  if (S_ISSOCK(mode)) {
    return "a socket";
  }
  if (S_ISCHR(mode)) {
    return "a character device";
  }
  if (S_ISBLK(mode)) {
    return "a block device";
  }
  return "not a regular file";
}

bool is_crash_kind(InputKind kind) {
  return kind == InputKind::CrashLog || kind == InputKind::CrashDump ||
         kind == InputKind::CrashDiagnostics;
}

// Crash evidence is read by src/crash; this only routes it and files the result.
void take_crash(InputResult& r, std::shared_ptr<crash::Evidence> ev) {
  for (auto& f : crash::findings(*ev)) {
    r.findings.push_back(std::move(f));
  }
  r.warnings.insert(r.warnings.end(), ev->warnings.begin(), ev->warnings.end());
  r.skipped_lines += ev->counters.binary_lines;
  if (ev->truncated) {
    r.status = InputStatus::Partial;
  }
  if (!r.rank) {
    r.rank = ev->rank;
  }
  if (!ev->empty()) {
    r.crash = std::move(ev);
  }
}

crash::ReadOptions crash_options(const InputResult& r) {
  crash::ReadOptions o;
  o.source = r.path;
  o.rank = r.rank;
  return o;
}

// True when the input was crash evidence (and is now read). Plain text is read by the crash
// reader straight away (one pass, no sniffing of the head); `text_read` says it found nothing, so
// the agent-log path need not read it for crash evidence again.
bool analyse_crash(std::istream& in, std::string_view head, InputResult& r, bool& text_read) {
  if (r.kind == InputKind::Recording || r.kind == InputKind::RawMi ||
      (r.kind == InputKind::AgentLog && agentlog::looks_like_agent_log(head))) {
    return false;
  }
  const auto format = r.kind == InputKind::AgentLog ? std::optional(crash::Format::Text)
                                                    : crash::detect(head, r.path);
  if (!format) {
    return false;
  }
  auto ev = std::make_shared<crash::Evidence>(crash::read_stream(in, *format, crash_options(r)));
  if (*format == crash::Format::Text && ev->empty() && !ev->has_agent_dumps) {
    in.clear();
    in.seekg(0);
    text_read = true;
    return false;
  }
  r.kind = *format == crash::Format::Text          ? InputKind::CrashLog
           : *format == crash::Format::Diagnostics ? InputKind::CrashDiagnostics
                                                   : InputKind::CrashDump;
  if (ev->has_agent_dumps) { // rocm-debug-agent dumps further down the same log
    in.clear();
    in.seekg(0);
    analyse_agent_log(in, r, false);
  }
  take_crash(r, std::move(ev));
  return true;
}

// A server log read for agent dumps may hold crash evidence past its first bytes too.
void add_crash_pass(std::istream& in, InputResult& r) {
  in.clear();
  in.seekg(0);
  auto ev = std::make_shared<crash::Evidence>(
      crash::read_stream(in, crash::Format::Text, crash_options(r)));
  if (ev->empty()) {
    return;
  }
  if (r.findings.empty()) { // no wave dumps: it is a crash log, not an agent log
    r.kind = InputKind::CrashLog;
    std::erase_if(r.warnings,
                  [](const std::string& w) { return w.starts_with("no rocm-debug-agent"); });
  }
  take_crash(r, std::move(ev));
}

} // namespace

std::vector<std::string> expand_inputs(const std::vector<std::string>& paths,
                                       std::vector<std::string>& missing) {
  std::vector<std::pair<std::string, std::string>> rejected;
  auto out = expand_inputs(paths, missing, rejected);
  for (auto& [path, why] : rejected) {
    missing.push_back(std::move(path));
  }
  return out;
}

std::optional<std::string> documentation_kind(const std::string& path) {
  const fs::path p(path);
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static constexpr std::pair<std::string_view, std::string_view> kExtensions[] = {
      {".md", "Markdown"},   {".markdown", "Markdown"}, {".rst", "reStructuredText"},
      {".html", "HTML"},     {".htm", "HTML"},          {".xhtml", "HTML"},
      {".adoc", "AsciiDoc"}, {".asciidoc", "AsciiDoc"}, {".tex", "TeX"},
      {".pdf", "PDF"},       {".css", "a style sheet"}, {".svg", "an image"},
      {".png", "an image"},  {".jpg", "an image"},      {".jpeg", "an image"},
      {".gif", "an image"}};
  for (const auto& [e, kind] : kExtensions) {
    if (ext == e) {
      return std::string(kind);
    }
  }
  // README, LICENSE, CHANGELOG, ... with or without an extension (README.txt, COPYING).
  std::string stem = p.stem().string();
  std::transform(stem.begin(), stem.end(), stem.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  static constexpr std::string_view kNames[] = {"README",  "LICENSE",   "LICENCE",
                                                "COPYING", "CHANGELOG", "CHANGES",
                                                "AUTHORS", "NOTICE",    "CONTRIBUTING"};
  for (std::string_view name : kNames) {
    if (stem == name) {
      return "a " + std::string(name) + " file";
    }
  }
  return std::nullopt;
}

std::optional<std::string> source_kind(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static constexpr std::pair<std::string_view, std::string_view> kExtensions[] = {
      {".py", "Python"}, {".pyi", "Python"}, {".c", "C"},          {".h", "C"},
      {".cc", "C++"},    {".cpp", "C++"},    {".cxx", "C++"},      {".hh", "C++"},
      {".hpp", "C++"},   {".cu", "CUDA"},    {".cuh", "CUDA"},     {".hip", "HIP"},
      {".sh", "shell"},  {".bash", "shell"}, {".cmake", "CMake"},  {".rs", "Rust"},
      {".go", "Go"},     {".java", "Java"},  {".js", "JavaScript"}};
  for (const auto& [e, kind] : kExtensions) {
    if (ext == e) {
      return std::string(kind);
    }
  }
  return std::nullopt;
}

std::vector<std::string> expand_inputs(const std::vector<std::string>& paths,
                                       std::vector<std::string>& missing,
                                       std::vector<std::pair<std::string, std::string>>& rejected) {
  std::vector<std::pair<std::string, std::string>> skipped;
  return expand_inputs(paths, missing, rejected, skipped);
}

std::vector<std::string> expand_inputs(const std::vector<std::string>& paths,
                                       std::vector<std::string>& missing,
                                       std::vector<std::pair<std::string, std::string>>& rejected,
                                       std::vector<std::pair<std::string, std::string>>& skipped) {
  std::vector<std::string> out;
  auto dangling = [](const fs::path& p) {
    std::error_code ec;
    const auto target = fs::read_symlink(p, ec);
    return "a dangling symbolic link (to " + (ec ? std::string("?") : target.string()) +
           ", which does not exist)";
  };
  auto add_path = [&](const std::string& p) {
    std::error_code ec;
    if (p == "-") {
      out.push_back(p); // standard input
      return;
    }
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> files;
      std::vector<std::pair<std::string, std::string>> odd;
      std::vector<std::pair<std::string, std::string>> docs;
      for (auto it = fs::recursive_directory_iterator(
               p, fs::directory_options::skip_permission_denied, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        std::error_code sec;
        const auto link = it->symlink_status(sec);
        const auto st = it->status(sec);
        if (fs::is_regular_file(st)) {
          // Documentation beside the logs (a README, installed docs) holds example lines that
          // read like evidence: a walk leaves it out; named on the command line, it is read.
          if (auto doc = documentation_kind(it->path().string())) {
            docs.emplace_back(it->path().string(), "documentation (" + *doc + ")");
          } else if (auto source = source_kind(it->path().string())) {
            // The job's own program beside its logs: its text (a `raise`, an error string) is
            // no event either.
            docs.emplace_back(it->path().string(), "a program's source (" + *source + ")");
          } else if (fs::is_empty(it->path(), sec) && !sec) {
            docs.emplace_back(it->path().string(), "an empty file");
          } else {
            files.push_back(it->path().string());
          }
        } else if (fs::is_symlink(link) && !fs::exists(st)) {
          odd.emplace_back(it->path().string(), dangling(it->path()));
        } else if (!fs::is_directory(st) && fs::exists(st)) {
          struct stat raw {};
          const bool known = ::stat(it->path().c_str(), &raw) == 0;
          odd.emplace_back(
              it->path().string(),
              (known ? special_file_kind(raw.st_mode) : std::string("a special file")) +
                  " inside a directory: not read (it may block or never end); name "
                  "it on the command line to read it");
        }
      }
      std::sort(files.begin(), files.end());
      std::sort(odd.begin(), odd.end());
      std::sort(docs.begin(), docs.end());
      out.insert(out.end(), files.begin(), files.end());
      skipped.insert(skipped.end(), docs.begin(), docs.end());
      rejected.insert(rejected.end(), odd.begin(), odd.end());
    } else if (fs::exists(p, ec)) {
      out.push_back(p);
    } else if (fs::is_symlink(fs::symlink_status(p, ec))) {
      rejected.emplace_back(p, dangling(p));
    } else {
      missing.push_back(p);
    }
  };
  for (const std::string& p : paths) {
    std::error_code ec;
    if (has_glob_chars(p) && !fs::exists(p, ec)) {
      glob_t g{};
      if (::glob(p.c_str(), GLOB_NOSORT, nullptr, &g) == 0) {
        std::vector<std::string> matches(g.gl_pathv, g.gl_pathv + g.gl_pathc);
        std::sort(matches.begin(), matches.end());
        for (const auto& m : matches) {
          add_path(m);
        }
      } else {
        missing.push_back(p);
      }
      ::globfree(&g);
    } else {
      add_path(p);
    }
  }
  return out;
}

namespace {
// Every input allocates and frees the same few MB (its line, node table and waves). By default
// glibc hands such blocks back to the kernel (munmap, heap trim), so each input faulted its
// pages in again, zeroed; keeping them for reuse made the batch about 10% faster. Memory stays
// bounded by the jobs' working sets either way.
void keep_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
#endif
}

// `return {r}` would copy the result, snapshot and all, out of an initializer list.
std::vector<InputResult> just(InputResult&& r) {
  std::vector<InputResult> out;
  out.push_back(std::move(r));
  return out;
}
} // namespace

namespace {

// Where an input's case comes from: its path, pid and rank with the rule that gave it.
source::Source source_for(const InputResult& r) {
  source::Source src;
  src.path = r.path;
  src.member = r.member;
  src.pid = r.snapshot.pid;
  src.rank = r.rank;
  if (r.rank) {
    src.rank_rule = r.rank_rule == "--rank-from"   ? source::RankRule::Pattern
                    : r.rank_rule == "meta RANK"   ? source::RankRule::Environment
                    : r.rank_rule == "file name"   ? source::RankRule::FileName
                    : r.rank_rule == "input order" ? source::RankRule::Order
                                                   : source::RankRule::Meta;
  }
  return src;
}

} // namespace

namespace {

// Where a rank stands by its own records: the collective it waits in (the last one not
// completed), else the last it completed.
incident::Whereabouts collective_whereabouts(const collectives::Input& in) {
  incident::Whereabouts at;
  const collectives::Record* last = nullptr;
  const collectives::Record* waiting = nullptr;
  for (const auto& rec : in.records) {
    if (rec.p2p) {
      continue;
    }
    last = &rec;
    if (rec.state != collectives::State::Completed) {
      waiting = &rec;
    }
  }
  const collectives::Record* r = waiting ? waiting : last;
  if (!r) {
    at.verdict = in.ras.empty() ? "no collective recorded" : "NCCL RAS answer";
    at.where = at.verdict;
    at.key = at.where;
    return at;
  }
  at.verdict = waiting ? "waits in a collective" : "every recorded collective completed";
  at.where = fmt::format("{} group {} seq {} {} ({})",
                         waiting ? "in" : "last:", r->group.name.empty() ? "?" : r->group.name,
                         r->seq, r->op_name(), collectives::to_string(r->state));
  at.key = at.where; // a rank's pickle and JSON dumps stand together (only one has frames)
  if (const auto* f = r->call_site()) {
    at.where += fmt::format(" at {}:{}", fs::path(f->file).filename().string(), f->line);
  }
  return at;
}

} // namespace

bool gave_evidence(const InputResult& r) {
  if (r.status == InputStatus::Unreadable || r.status == InputStatus::Empty) {
    return false;
  }
  if (r.crash || !r.findings.empty()) {
    return true;
  }
  switch (r.kind) {
  case InputKind::Recording:
  case InputKind::RawMi:
  case InputKind::ReportJson:
  case InputKind::ConsoleLog:
  case InputKind::AgentLog:
  case InputKind::CollectiveRecord:
    return true;
  default:
    return false;
  }
}

Case case_of(const InputResult& r) {
  Case c;
  c.source = source_for(r);
  switch (r.status) {
  case InputStatus::Ok:
    c.status = CaseStatus::Examined;
    break;
  case InputStatus::Empty: // nothing in it could be read: as unreadable as garbage
    c.status = CaseStatus::Unreadable;
    break;
  case InputStatus::Partial:
    c.status = CaseStatus::Partial;
    break;
  case InputStatus::Unreadable:
    c.status = CaseStatus::Unreadable;
    break;
  }
  c.error = r.status == InputStatus::Empty && r.error.empty() ? "empty: nothing to read" : r.error;
  c.warnings = r.warnings;
  // An unreadable input makes the batch partial; one with a stuck signature, a finding.
  c.exit_code = c.status == CaseStatus::Unreadable ? ExitCode::PartialInput
                : r.signatures.empty()             ? ExitCode::Ok
                                                   : ExitCode::Findings;
  if (c.examined() && r.kind == InputKind::CollectiveRecord && r.collectives) {
    c.at = collective_whereabouts(*r.collectives);
  } else if (c.examined()) {
    c.at = incident::whereabouts(r.snapshot, r.findings);
    c.graph = r.graph; // small (threads, groups of lanes): the incident's graph joins them
  }
  return c;
}

std::optional<std::pair<std::string, int>> rank_in_file_name(const std::string& path) {
  return source::rank_in_file_name(path);
}

namespace {

// A regular file of at most kWholeFileBytes, read whole into `data` from `fd` (to its end, should
// it have grown since fstat). False with errno set on a read error.
bool read_file(int fd, std::size_t size, std::vector<char, mi::UninitAllocator<char>>& data) {
  data.resize(size + 1); // one more: a file that grew is read to its end
  std::size_t n = 0;
  for (;;) {
    if (n == data.size()) {
      data.resize(data.size() * 2);
    }
    const ssize_t got = ::read(fd, data.data() + n, data.size() - n);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got < 0) {
      return false;
    }
    if (got == 0) {
      data.resize(n);
      return true;
    }
    n += static_cast<std::size_t>(got);
  }
}

// A Flight Recorder dump or RAS answer read: its records, and a note per problem as warnings.
void take_collectives(InputResult& r, std::shared_ptr<collectives::Input> read) {
  r.kind = InputKind::CollectiveRecord;
  std::size_t first_note = 0;
  if (read->damaged && read->empty()) {
    r.status = InputStatus::Unreadable;
    r.error = read->notes.empty() ? "a damaged collective record" : read->notes.front();
    first_note = 1; // said as the error
  } else if (read->damaged) {
    r.status = InputStatus::Partial;
  }
  for (std::size_t i = first_note; i < read->notes.size(); ++i) {
    r.warnings.push_back(read->notes[i]);
  }
  if (!r.rank && read->rank) {
    r.rank = read->rank;
    r.rank_rule = "file name";
  }
  r.collectives = std::move(read);
}

// An NCCL log's records, beside whatever its text was read as.
void attach_collectives(InputResult& r, std::shared_ptr<const collectives::Input> read) {
  for (const auto& note : read->notes) {
    r.warnings.push_back(note);
  }
  if (!read->empty()) {
    if (r.status == InputStatus::Unreadable && r.kind == InputKind::Unknown) {
      r.status = InputStatus::Ok;
      r.error.clear();
    }
    if (r.kind == InputKind::Unknown || r.status == InputStatus::Empty) {
      r.kind = InputKind::CollectiveRecord;
    }
  }
  r.collectives = std::move(read);
}

// `rank_regex`: --rank-from, compiled once for the whole batch (nullptr: none). `look`: what the
// first look at the file's header found (nullptr: not looked at).
std::vector<InputResult> analyse_input(const std::string& path, const Options& options,
                                       const std::regex* rank_regex, const FirstLook* look) {
  InputResult r;
  r.path = path;
  r.rank = rank_from_path(path, rank_regex);
  if (r.rank) {
    r.rank_rule = "--rank-from";
  }
  // Opened without blocking: open() of a FIFO with no writer would wait forever.
  const bool from_stdin = path == "-";
  const int fd =
      from_stdin ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    r.status = InputStatus::Unreadable;
    r.error = std::string("cannot open: ") + std::strerror(errno);
    return just(std::move(r));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    r.status = InputStatus::Unreadable;
    r.error = std::string("cannot stat: ") + std::strerror(errno);
    if (!from_stdin) {
      ::close(fd);
    }
    return just(std::move(r));
  }
  std::string data; // a pipe's whole content
  // A regular file of up to 16 MB, read whole once: sniffed, then parsed where it lies.
  std::vector<char, mi::UninitAllocator<char>> file_data;
  std::ifstream file; // a larger one, streamed
  std::unique_ptr<MemoryBuf> membuf_owner;
  std::unique_ptr<std::istream> stream_owner;
  std::string_view whole; // the bytes in memory, if they are
  if (S_ISREG(st.st_mode) && !from_stdin &&
      static_cast<std::uint64_t>(st.st_size) <= kWholeFileBytes) {
    const bool ok = read_file(fd, static_cast<std::size_t>(st.st_size), file_data);
    const int read_errno = errno;
    ::close(fd);
    if (!ok) {
      r.status = InputStatus::Unreadable;
      r.error = std::string("cannot read: ") + std::strerror(read_errno);
      return just(std::move(r));
    }
    r.bytes = static_cast<std::uint64_t>(st.st_size);
    whole = std::string_view(file_data.data(), file_data.size());
    membuf_owner = std::make_unique<MemoryBuf>(file_data.data(), file_data.size());
    stream_owner = std::make_unique<std::istream>(membuf_owner.get());
  } else if (S_ISREG(st.st_mode)) {
    if (!from_stdin) {
      ::close(fd);
      file.open(path, std::ios::binary);
      if (!file) {
        r.status = InputStatus::Unreadable;
        r.error = std::string("cannot open: ") + std::strerror(errno);
        return just(std::move(r));
      }
      r.bytes = static_cast<std::uint64_t>(st.st_size);
    }
  } else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISSOCK(st.st_mode)) {
    if (!from_stdin) {
      ::close(fd);
    }
    r.status = InputStatus::Unreadable;
    r.error = special_file_kind(st.st_mode) +
              (from_stdin && ::isatty(STDIN_FILENO) == 1 ? " (a terminal)" : "") +
              ", not a file: nothing to read a transcript from";
    return just(std::move(r));
  }
  if (!file.is_open() && !stream_owner) {
    // A pipe, FIFO, `<(...)`, or standard input: read whole, the size is what was read.
    std::string error;
    const bool ok = read_stream(fd, data, error);
    if (!from_stdin) {
      ::close(fd);
    }
    if (!ok && data.empty()) {
      r.status = InputStatus::Unreadable;
      r.error = error;
      return just(std::move(r));
    }
    if (!error.empty()) {
      r.warnings.push_back(error);
    }
    r.bytes = data.size();
    whole = data;
    membuf_owner = std::make_unique<MemoryBuf>(data.data(), data.size());
    stream_owner = std::make_unique<std::istream>(membuf_owner.get());
  }
  std::istream& in = file.is_open() ? static_cast<std::istream&>(file) : *stream_owner;
  std::string head_copy; // a streamed file's first bytes
  std::string_view head = whole.substr(0, kSniffBytes);
  if (file.is_open()) {
    head_copy.resize(kSniffBytes);
    in.read(head_copy.data(), static_cast<std::streamsize>(head_copy.size()));
    head_copy.resize(static_cast<std::size_t>(in.gcount()));
    head = head_copy;
  }
  if (head.empty()) {
    r.status = InputStatus::Empty;
    r.error = S_ISFIFO(st.st_mode) ? "empty (a pipe or FIFO that nobody wrote to)" : "empty file";
    return just(std::move(r));
  }
  bool text_fallback = false;
  r.kind = sniff(head, &text_fallback);
  text_fallback = text_fallback && !looks_like_log(head);
  in.clear();
  in.seekg(0);
  // The job's own collective records (rocplay/collectives): a Flight Recorder dump or a saved
  // ncclras answer is read here and is nothing else; an NCCL_DEBUG or watchdog log gives its
  // records and still goes on to the text readers (its watchdog lines are crash evidence too).
  std::shared_ptr<const collectives::Input> collective_records;
  // Not looked for in debugger transcripts (the bulk of a batch): their text is MI, never a job's
  // own records, and the look would scan each head again.
  const bool transcript = r.kind == InputKind::Recording || r.kind == InputKind::RawMi;
  if (const auto source = transcript ? std::nullopt : collectives::detect(head)) {
    const bool log = *source == collectives::Source::NcclLog;
    std::string streamed;
    std::string_view bytes = whole;
    constexpr std::uint64_t kMaxDumpBytes = collectives::pickle::Limits{}.max_input_bytes;
    if (file.is_open() && !log && r.bytes > kMaxDumpBytes) {
      r.kind = InputKind::CollectiveRecord;
      r.status = InputStatus::Unreadable;
      r.error = fmt::format("a collective record of {} MB: more than the {} MB rocplay reads; "
                            "dump fewer entries (TORCH_NCCL_TRACE_BUFFER_SIZE)",
                            r.bytes >> 20, kMaxDumpBytes >> 20);
      finish_result(r);
      return just(std::move(r));
    }
    if (file.is_open() && !log) { // over 16 MB: a big dump, read whole (bounded above)
      streamed.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      bytes = streamed;
      in.clear();
      in.seekg(0);
    }
    if (!file.is_open() || !log) {
      auto read =
          std::make_shared<collectives::Input>(collectives::read(bytes, *source, path, r.rank));
      if (!log) {
        take_collectives(r, std::move(read));
        finish_result(r);
        return just(std::move(r));
      }
      if (!read->empty() || !read->notes.empty()) {
        collective_records = std::move(read);
      }
    } else {
      r.warnings.push_back("an NCCL log over 16 MB: its collective records were not read");
    }
  }
  auto finish = [&collective_records](InputResult& result) {
    finish_result(result);
    if (collective_records) {
      attach_collectives(result, collective_records);
    }
  };
  try {
    // Console text: not a rocm-debug-agent log (its own reader), not MI with console records.
    if ((r.kind == InputKind::AgentLog || r.kind == InputKind::RawMi) &&
        !agentlog::looks_like_agent_log(head) && console_log::looks_like_console_log(head) &&
        (r.kind == InputKind::AgentLog || !sniff_has_mi_results(head))) {
      analyse_console_log(in, r);
      finish(r);
      return just(std::move(r));
    }
    bool text_read = false;
    if (analyse_crash(in, head, r, text_read)) {
      finish(r);
      return just(std::move(r));
    }
    switch (r.kind) {
    case InputKind::Recording:
    case InputKind::RawMi:
      analyse_transcript(in, whole, r, options, look);
      break;
    case InputKind::ReportJson: {
      auto results = analyse_report_json(in, r);
      for (auto& each : results) {
        finish(each);
      }
      return results;
    }
    case InputKind::AgentLog:
      analyse_agent_log(in, r, text_fallback && text_read);
      if (!text_read) {
        add_crash_pass(in, r);
      }
      break;
    case InputKind::CrashLog:
    case InputKind::CrashDump:
    case InputKind::CrashDiagnostics:
    case InputKind::ConsoleLog:
    case InputKind::CollectiveRecord:
      break; // analyse_crash, analyse_console_log or the collective readers read it
    case InputKind::Unknown:
      r.status = InputStatus::Unreadable;
      r.error = "binary data: not a transcript, rocplay JSON or server log";
      break;
    }
  } catch (const std::exception& e) {
    // Bad input must not end the batch; anything thrown is a reason this input is unreadable.
    r.status = InputStatus::Unreadable;
    r.error = e.what();
  }
  finish(r);
  return just(std::move(r));
}

// --rank-from compiled, or a usage error saying what is wrong with it.
std::optional<std::regex> compile_rank_pattern(const Options& options) {
  if (!options.rank_pattern) {
    return std::nullopt;
  }
  try {
    std::regex re(*options.rank_pattern, std::regex::ECMAScript);
    if (re.mark_count() < 1) {
      throw Error(ExitCode::Usage, "--rank-from needs a capture group for the rank number",
                  "for example --rank-from 'rank(\\d+)'");
    }
    return re;
  } catch (const std::regex_error& e) {
    throw Error(ExitCode::Usage, std::string("--rank-from is not a valid regex: ") + e.what(),
                "for example --rank-from 'rank(\\d+)'");
  }
}

} // namespace

std::vector<InputResult> analyse_file(const std::string& path, const Options& options) {
  const std::optional<std::regex> rank_regex = compile_rank_pattern(options);
  return analyse_input(path, options, rank_regex ? &*rank_regex : nullptr, nullptr);
}

namespace {

// What a debugger recording of one rank shows, to join with the collective records.
struct RankRecording {
  std::string path;
  std::optional<std::int64_t> pid;
  std::vector<std::string> collective_kernels; // NCCL/RCCL kernels in flight
};

RankRecording recording_of(const InputResult& r) {
  RankRecording v;
  v.path = r.path + r.member;
  v.pid = r.snapshot.pid;
  for (const auto& d : r.snapshot.dispatches) {
    if (!d.kernel_name.empty() && v.collective_kernels.size() < 4 &&
        classify_kernel(d.kernel_name).category == KernelCategory::Collective &&
        std::find(v.collective_kernels.begin(), v.collective_kernels.end(), d.kernel_name) ==
            v.collective_kernels.end()) {
      v.collective_kernels.push_back(d.kernel_name);
    }
  }
  return v;
}

// The collective records of the batch, matched across ranks, as one event; each divergence's
// ranks joined with their recordings (by rank, else by the pid an NCCL log gives the rank).
Event collective_event(const std::vector<std::shared_ptr<const collectives::Input>>& collected,
                       std::map<int, std::vector<RankRecording>> by_rank,
                       const std::vector<RankRecording>& unranked,
                       std::vector<std::string>& notes) {
  std::vector<collectives::Input> inputs;
  inputs.reserve(collected.size());
  std::map<std::int64_t, std::pair<int, int>> rank_of_pid; // pid -> (rank, nranks of its comm)
  // The processes recorded beside the records: a live run's `ncclras.txt` was asked while
  // rocplay's debuggers held them stopped, so their silence there is no evidence.
  std::vector<std::int64_t> recorded;
  for (const auto& [rank, views] : by_rank) {
    for (const auto& v : views) {
      if (v.pid) {
        recorded.push_back(*v.pid);
      }
    }
  }
  for (const auto& v : unranked) {
    if (v.pid) {
      recorded.push_back(*v.pid);
    }
  }
  for (const auto& in : collected) {
    inputs.push_back(*in);
    const bool asked_live = (in->source == collectives::Source::RasText ||
                             in->source == collectives::Source::RasJson) &&
                            fs::path(in->file).filename() == "ncclras.txt";
    if (asked_live && !recorded.empty()) {
      for (auto& line : collectives::set_aside_unanswered(inputs.back(), recorded)) {
        notes.push_back(fmt::format("{}: {}", in->file, line));
      }
    }
    for (const auto& c : in->communicators) {
      if (c.pid && c.rank >= 0) {
        auto [it, fresh] = rank_of_pid.try_emplace(*c.pid, c.rank, c.nranks);
        if (!fresh && c.nranks > it->second.second) {
          it->second = {c.rank, c.nranks}; // the widest communicator: the world's ranks
        }
      }
    }
  }
  for (const auto& v : unranked) {
    if (v.pid) {
      if (auto it = rank_of_pid.find(*v.pid); it != rank_of_pid.end()) {
        by_rank[it->second.first].push_back(v);
      }
    }
  }
  const auto matched = collectives::match(inputs);
  Event ev;
  ev.key = "collective records";
  ev.ranks = matched.ranks;
  ev.rule = "the records themselves (Flight Recorder file names, NCCL and watchdog lines, RAS)";
  ev.findings = collectives::findings(matched);
  for (std::size_t i = 0; i < ev.findings.size() && i < matched.divergences.size(); ++i) {
    for (const auto& side : matched.divergences[i].sides) {
      auto it = by_rank.find(side.rank);
      if (it == by_rank.end()) {
        continue;
      }
      for (const auto& v : it->second) {
        std::string line = fmt::format("joined: rank {}'s recording {}", side.rank,
                                       fs::path(v.path).filename().string());
        if (v.pid) {
          line += fmt::format(" (pid {})", *v.pid);
        }
        if (v.collective_kernels.empty()) {
          line += " shows no collective kernel in flight";
        } else if (side.entered) {
          line += fmt::format(" has {} in flight: that is {} seq {} {} ({})",
                              v.collective_kernels.front(),
                              side.group.name.empty() ? "its group" : "group " + side.group.name,
                              side.seq, side.op, collectives::to_string(side.source));
        } else {
          line += fmt::format(" has {} in flight: not this group's seq {} (it never entered it)",
                              v.collective_kernels.front(), matched.divergences[i].seq);
        }
        ev.findings[i].evidence.push_back(std::move(line));
      }
    }
  }
  return ev;
}

} // namespace

Summary run(const Options& options, const std::function<void(const InputResult&)>& on_result,
            const std::function<void(const Progress&)>& on_progress) {
  const auto t0 = std::chrono::steady_clock::now();
  keep_freed_memory();
  const std::optional<std::regex> rank_regex = compile_rank_pattern(options);
  std::vector<std::string> missing;
  std::vector<std::pair<std::string, std::string>> rejected;
  std::vector<std::pair<std::string, std::string>> skipped;
  const std::vector<std::string> files = expand_inputs(options.paths, missing, rejected, skipped);
  if (std::count(files.begin(), files.end(), std::string("-")) > 1) {
    throw Error(ExitCode::Usage, "`-` (standard input) is named more than once",
                "standard input can be read only once; name it once");
  }
  Summary summary;
  summary.inputs = files.size() + missing.size() + rejected.size();
  for (auto& [path, why] : skipped) {
    summary.skipped.push_back({std::move(path), std::move(why)});
  }
  // The first look at every input's header, in parallel: which process each records. Only a
  // process recorded more than once can form a series, so only such recordings keep their
  // samples to the end of the batch; the others are let go as they are read, and memory stays
  // per-event however many inputs there are. What the look read is carried to the file's
  // analysis, which does not parse that meta again.
  const unsigned jobs =
      std::max(1u, options.jobs ? options.jobs : std::thread::hardware_concurrency());
  std::vector<FirstLook> looks(files.size());
  {
    WorkerPool lookers(files.size(), jobs, [&](std::size_t i) { looks[i] = first_look(files[i]); });
    lookers.join();
  }
  std::map<std::string, std::size_t> recordings; // inputs per process key
  for (const FirstLook& look : looks) {
    if (!look.process_key.empty()) {
      ++recordings[look.process_key];
    }
  }

  // Workers analyse files; the caller's thread hands results out in input order. A bounded
  // window of finished-but-not-yet-emitted results keeps memory flat however many files there are.
  const std::size_t window = std::size_t{4} * jobs;
  std::mutex mutex;
  std::condition_variable ready_cv;
  std::condition_variable space_cv;
  std::map<std::size_t, std::vector<InputResult>> done;
  std::size_t next_to_emit = 0;
  std::atomic<bool> stop{false};
  WorkerPool workers(files.size(), jobs, [&](std::size_t i) {
    {
      std::unique_lock lock(mutex);
      space_cv.wait(lock, [&] { return i < next_to_emit + window || stop; });
    }
    std::vector<InputResult> results =
        analyse_input(files[i], options, rank_regex ? &*rank_regex : nullptr, &looks[i]);
    std::lock_guard lock(mutex);
    done.emplace(i, std::move(results));
    ready_cv.notify_one();
  });

  std::map<std::string, SignatureClass> classes;
  // Ranked snapshots wait in their event until every file of its directory has been read; then
  // the cross-rank heuristics run and the snapshots are dropped, so memory stays per-event.
  struct Ranked {
    Snapshot snapshot;
    std::string rule;
    std::string path;
    std::string process_key; // host, pid and command of a recording; empty when not known
    double started_unix = 0;
    heuristics::RankHistory history;
  };
  // An input as one rank of an event: its last sample, as a live run judges the ranks (the
  // samples of a fan-out are taken in lockstep), and what its first sample adds.
  const auto ranked_of = [](InputResult& r, std::string path) {
    Ranked out{{}, r.rank_rule, std::move(path), r.process_key, r.started_unix, {}};
    if (r.samples.size() >= 2) {
      out.snapshot = r.samples.back().snapshot;
      out.snapshot.rank = r.rank;
      out.history = heuristics::rank_history(r.samples);
    } else {
      out.snapshot = std::move(r.snapshot);
      // 0: a snapshot without its samples, judged as any single snapshot.
      out.history.samples = r.one_live_sample ? 1 : r.samples.size();
    }
    return out;
  };
  std::map<std::string, std::vector<Ranked>> ranked;
  // Unranked snapshots whose file names hold a rank, by directory and then by the name with the
  // number taken out: files that differ only in that number are one event.
  std::map<std::string, std::map<std::string, std::vector<Ranked>>> by_name;
  std::map<std::string, std::size_t> files_left;
  for (const std::string& f : files) {
    ++files_left[fs::path(f).parent_path().string()];
  }
  const std::string kOneEvent = "(the inputs, --one-event)";
  std::size_t ranked_count = 0;
  // Recordings of one process (meta host, pid, command name), for the progress analysis.
  struct SeriesMember {
    std::string path;
    double unix = 0;
    std::vector<Sample> samples;
  };
  std::map<std::string, std::vector<SeriesMember>> by_process;
  std::size_t series_count = 0;
  // A rank recorded twice from the same process (the workers, then rank 0 alone a minute later)
  // is one rank, not two hangs: the event takes the recording made nearest the other ranks' (the
  // series compares them all). `members` is sorted by rank.
  auto keep_one_recording_per_process = [&](std::vector<Ranked>& members) {
    std::vector<double> times;
    for (const auto& m : members) {
      if (m.started_unix > 0) {
        times.push_back(m.started_unix);
      }
    }
    if (times.empty()) {
      return;
    }
    std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2),
                     times.end());
    const double middle = times[times.size() / 2];
    std::vector<Ranked> kept;
    for (auto& m : members) {
      Ranked* same = kept.empty() ? nullptr : &kept.back();
      if (same == nullptr || same->snapshot.rank != m.snapshot.rank || m.process_key.empty() ||
          same->process_key != m.process_key || m.started_unix <= 0 || same->started_unix <= 0) {
        kept.push_back(std::move(m));
        continue;
      }
      const bool nearer = std::abs(m.started_unix - middle) < std::abs(same->started_unix - middle);
      summary.warnings.push_back(fmt::format(
          "{} and {} are recordings of one process (rank {}, {}); the cross-rank event takes {}, "
          "made with the other ranks' (the series below compares both)",
          same->path, m.path, *m.snapshot.rank, m.process_key, nearer ? m.path : same->path));
      if (nearer) {
        *same = std::move(m);
      }
    }
    members = std::move(kept);
  };
  // By value: callers pass a key that lives in `ranked`, and the node is erased below.
  auto close_event = [&](std::string key) {
    auto it = ranked.find(key);
    if (it == ranked.end()) {
      return;
    }
    std::vector<Ranked> members = std::move(it->second);
    ranked.erase(it);
    if (members.size() < 2) {
      return;
    }
    std::stable_sort(members.begin(), members.end(), [](const Ranked& a, const Ranked& b) {
      return a.snapshot.rank < b.snapshot.rank;
    });
    keep_one_recording_per_process(members);
    // Two inputs claiming one rank are not one event (two hangs recorded into one directory):
    // joining them would make up a cross-rank finding.
    for (std::size_t i = 1; i < members.size(); ++i) {
      if (members[i].snapshot.rank == members[i - 1].snapshot.rank) {
        summary.warnings.push_back(fmt::format(
            "{}: {} and {} both are rank {}: not joined into one event (put each hang in its own "
            "directory, or pass the files of one hang with --one-event)",
            key.empty() ? "." : key, members[i - 1].path, members[i].path,
            *members[i].snapshot.rank));
        return;
      }
    }
    Event event;
    event.key = key.empty() ? "." : key;
    std::vector<std::string> rules;
    std::vector<Snapshot> snapshots;
    std::vector<heuristics::RankHistory> history;
    for (auto& m : members) {
      event.ranks.push_back(*m.snapshot.rank);
      history.push_back(std::move(m.history));
      if (std::find(rules.begin(), rules.end(), m.rule) == rules.end()) {
        rules.push_back(m.rule);
      }
      snapshots.push_back(std::move(m.snapshot));
    }
    event.rule = fmt::format("{}", fmt::join(rules, ", "));
    try {
      event.findings = heuristics::run_ranks(snapshots, history);
    } catch (const std::exception& e) {
      // A bug of ours must not cost the report: the inputs' own findings still stand.
      summary.warnings.push_back(fmt::format(
          "{}: the cross-rank analysis failed ({}): a bug in rocplay, please report it with these "
          "inputs; each input's own findings below still stand",
          event.key, e.what()));
    }
    summary.events.push_back(std::move(event));
  };
  crash::Joiner crash_joiner;       // bounded summaries per process, joined at the end
  incident::ProcessIndex processes; // which process each input speaks of (the one join)
  // A directory is done: its files named alike (differing only in a rank number) become events.
  auto close_names = [&](std::string dir) { // by value: the key lives in `by_name`
    auto it = by_name.find(dir);
    if (it == by_name.end()) {
      return;
    }
    auto groups = std::move(it->second);
    by_name.erase(it);
    for (auto& [name_template, members] : groups) {
      if (members.size() < 2) {
        continue; // one file named rank3 is not an event
      }
      ranked[name_template] = std::move(members);
      close_event(name_template);
    }
  };
  Progress progress;
  progress.total = files.size();
  // Collective records (Flight Recorder, NCCL logs, RAS) of every input, matched across ranks at
  // the end; and what each rank's recording shows in flight, to join with them.
  std::vector<std::shared_ptr<const collectives::Input>> collected;
  std::map<int, std::vector<RankRecording>> recordings_by_rank;
  std::vector<RankRecording> unranked_recordings;
  auto account = [&](InputResult& r) {
    if (r.collectives) {
      collected.push_back(r.collectives);
    }
    if (r.status != InputStatus::Unreadable && r.kind != InputKind::CollectiveRecord &&
        r.kind != InputKind::AgentLog && !is_crash_kind(r.kind) && r.snapshot.pid) {
      RankRecording v = recording_of(r);
      auto rank = r.rank;
      if (!rank) {
        if (auto named = rank_in_file_name(r.path)) {
          rank = named->second;
        }
      }
      if (rank && recordings_by_rank[*rank].size() < 4) {
        recordings_by_rank[*rank].push_back(std::move(v));
      } else if (!rank && unranked_recordings.size() < 64) {
        unranked_recordings.push_back(std::move(v));
      }
    }
    switch (r.status) {
    case InputStatus::Ok:
      ++summary.ok;
      break;
    case InputStatus::Partial:
      ++summary.partial;
      break;
    case InputStatus::Empty:
      ++summary.empty;
      break;
    case InputStatus::Unreadable:
      ++summary.unreadable;
      break;
    }
    if (!r.signatures.empty()) {
      ++summary.with_findings;
    }
    if (gave_evidence(r)) {
      summary.evidence.push_back(r.path + r.member);
    }
    for (const Signature& s : r.signatures) {
      auto& c = classes[s.key()];
      c.signature = s;
      const std::string member = r.path + r.member;
      if (c.members.empty() || c.members.back() != member) {
        c.members.push_back(member);
      }
    }
    // The one join: the input's process by (host, pid, rank), whatever kind of input it is, so a
    // rank's crash log and its recording are one process to the crash verdict.
    if (r.crash || (r.status != InputStatus::Unreadable && r.status != InputStatus::Empty)) {
      const auto key = processes.add(source_for(r), r.crash.get(), &r.snapshot);
      if (r.crash) {
        crash_joiner.add(*r.crash, key);
        r.crash.reset();
      }
    }
    // A process seen in one recording only has no series: its samples are not kept. A key the
    // look at the headers missed (standard input, a meta past 64 KiB) is kept, as before.
    const auto seen = recordings.find(r.process_key);
    if (!r.process_key.empty() && r.status != InputStatus::Unreadable &&
        (seen == recordings.end() || seen->second >= 2) &&
        series_count < options.max_ranked_snapshots) {
      ++series_count;
      SeriesMember m;
      m.path = r.path;
      m.unix = r.started_unix;
      if (r.samples.empty()) {
        Sample one;
        one.snapshot = r.snapshot;
        m.samples.push_back(std::move(one));
      } else {
        m.samples = r.samples;
      }
      by_process[r.process_key].push_back(std::move(m));
    }
    const bool usable = r.status != InputStatus::Unreadable && r.status != InputStatus::Empty &&
                        r.kind != InputKind::AgentLog && !is_crash_kind(r.kind) &&
                        r.kind != InputKind::CollectiveRecord;
    if (usable && options.one_event && ranked_count < options.max_ranked_snapshots) {
      if (!r.rank) {
        r.rank = static_cast<int>(r.index); // the order the inputs were given in
        r.rank_rule = "input order";
        r.snapshot.rank = r.rank;
      }
      ranked[kOneEvent].push_back(ranked_of(r, r.path + r.member));
      ++ranked_count;
      return;
    }
    if (usable && !r.rank && r.member.empty()) {
      if (auto named = rank_in_file_name(r.path)) {
        r.rank = named->second;
        r.rank_rule = "file name";
        r.snapshot.rank = r.rank;
        by_name[fs::path(r.path).parent_path().string()][named->first].push_back(
            ranked_of(r, r.path));
        return;
      }
    }
    if (r.rank && usable) {
      if (ranked_count < options.max_ranked_snapshots) {
        const std::string key = r.member.empty() ? fs::path(r.path).parent_path().string() : r.path;
        ranked[key].push_back(ranked_of(r, r.path + r.member));
        ++ranked_count;
      } else if (ranked_count++ == options.max_ranked_snapshots) {
        summary.warnings.push_back("more than " + std::to_string(options.max_ranked_snapshots) +
                                   " ranked snapshots in one event; later ones are left out of "
                                   "the cross-rank analysis");
      }
    }
  };

  try {
    for (const std::string& m : missing) {
      InputResult r;
      r.index = 0;
      r.path = m;
      r.status = InputStatus::Unreadable;
      r.error = "no such file or directory (or the glob matched nothing)";
      on_result(r);
      account(r);
    }
    for (const auto& [path, why] : rejected) {
      InputResult r;
      r.path = path;
      r.status = InputStatus::Unreadable;
      r.error = why;
      on_result(r);
      account(r);
    }
    while (next_to_emit < files.size()) {
      std::vector<InputResult> results;
      {
        std::unique_lock lock(mutex);
        ready_cv.wait(lock, [&] { return done.count(next_to_emit) > 0; });
        results = std::move(done[next_to_emit]);
        done.erase(next_to_emit);
        ++next_to_emit;
        space_cv.notify_all();
      }
      for (InputResult& r : results) {
        r.index = next_to_emit - 1;
        on_result(r);
        account(r); // after on_result: it may move the snapshot into an event
      }
      const std::string& file = files[next_to_emit - 1];
      progress.bytes += results.empty() ? 0 : results.front().bytes;
      if (results.size() > 1 || (!results.empty() && !results.front().member.empty())) {
        close_event(file); // a JSON Lines file with several snapshots is its own event
      }
      const std::string dir = fs::path(file).parent_path().string();
      if (--files_left[dir] == 0 && !options.one_event) {
        close_event(dir);
        close_names(dir);
        ranked_count = 0;
      }
      ++progress.done;
      if (on_progress) {
        on_progress(progress);
      }
    }
  } catch (...) {
    stop = true;
    workers.cancel();
    space_cv.notify_all();
    workers.join();
    throw;
  }
  workers.join();

  for (auto& [key, c] : classes) {
    summary.classes.push_back(std::move(c));
  }
  std::stable_sort(
      summary.classes.begin(), summary.classes.end(),
      [](const auto& a, const auto& b) { return a.members.size() > b.members.size(); });
  while (!by_name.empty()) {
    close_names(by_name.begin()->first);
  }
  while (!ranked.empty()) {
    close_event(ranked.begin()->first);
  }
  // One job's records per directory (a batch over several runs must not match one run's rank 0
  // with another's rank 1), each joined with the recordings in or right beside its directory.
  std::map<std::string, std::vector<std::shared_ptr<const collectives::Input>>> by_dir;
  for (auto& in : collected) {
    by_dir[fs::path(in->file).parent_path().string()].push_back(std::move(in));
  }
  std::vector<Event> collective_events;
  for (const auto& [dir, inputs] : by_dir) {
    auto near = [&dir](const RankRecording& v) {
      const fs::path d = fs::path(v.path).parent_path();
      return d == dir || d.parent_path() == dir || fs::path(dir).parent_path() == d;
    };
    std::map<int, std::vector<RankRecording>> ranked_here;
    for (const auto& [rank, views] : recordings_by_rank) {
      for (const auto& v : views) {
        if (near(v)) {
          ranked_here[rank].push_back(v);
        }
      }
    }
    std::vector<RankRecording> unranked_here;
    std::copy_if(unranked_recordings.begin(), unranked_recordings.end(),
                 std::back_inserter(unranked_here), near);
    auto ev = collective_event(inputs, ranked_here, unranked_here, summary.warnings);
    ev.key = "collective records in " + dir;
    // Shown when it found something, or when a dump or RAS answer was given (a clean one says
    // so); a log whose watchdog lines agree across ranks adds nothing to its crash reading.
    const bool dumps = std::any_of(inputs.begin(), inputs.end(), [](const auto& in) {
      return in->source != collectives::Source::NcclLog;
    });
    if (!ev.findings.empty() || dumps) {
      collective_events.push_back(std::move(ev));
    }
  }
  // Events with findings first, so the incident leads with what the records say.
  std::stable_partition(collective_events.begin(), collective_events.end(),
                        [](const Event& e) { return !e.findings.empty(); });
  summary.events.insert(summary.events.begin(), std::make_move_iterator(collective_events.begin()),
                        std::make_move_iterator(collective_events.end()));
  summary.crash = crash_joiner.verdict();
  for (auto& [key, members] : by_process) {
    std::stable_sort(members.begin(), members.end(),
                     [](const SeriesMember& a, const SeriesMember& b) { return a.unix < b.unix; });
    constexpr double kSameEventSeconds = 3600; // a pid reused later is another process
    std::size_t begin = 0;
    while (begin < members.size()) {
      std::size_t end = begin + 1;
      while (end < members.size() && members[end].unix > 0 && members[end - 1].unix > 0 &&
             members[end].unix - members[end - 1].unix <= kSameEventSeconds) {
        ++end;
      }
      if (end - begin >= 2) {
        Series series;
        series.key = key;
        std::vector<Sample> samples;
        for (std::size_t i = begin; i < end; ++i) {
          series.members.push_back(members[i].path);
          const double offset = members[i].unix - members[begin].unix;
          series.at.push_back(offset);
          for (auto& sm : members[i].samples) {
            sm.at += offset;
            sm.index = static_cast<std::uint32_t>(samples.size() + 1);
            samples.push_back(std::move(sm));
          }
        }
        auto sampled = heuristics::run_samples(samples, {});
        series.progress = std::move(sampled.progress);
        series.findings = std::move(sampled.findings);
        summary.series.push_back(std::move(series));
      }
      begin = end;
    }
  }
  summary.bytes = progress.bytes;
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return summary;
}

} // namespace rocplay::postmortem
