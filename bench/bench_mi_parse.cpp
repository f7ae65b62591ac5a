// MI parse throughput and streaming memory.
//
//   bench_mi_parse [--short] [--corpus-mb N] [--stream-mb N] [--runs N] [--pipe-kb N]
//
// Throughput: the fixtures (fixtures/**/*.mi, *.rocplay) concatenated to at least N MB (default
// 32), parsed single-threaded with every value visited; median over runs. Pipe: the same corpus
// fed to a Parser in --pipe-kb chunks (default 64, what a read of a full pipe returns), so that
// lines cross chunk boundaries as they do from a debugger; median over the same number of runs
// (--pipe-kb 0 leaves the phase out).
// Memory: a transcript of --stream-mb (default 1024) generated chunk by chunk and streamed
// through TranscriptReader; the figure is the process's peak RSS.
#include "rocplay/mi/transcript.hpp"

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace rocplay::mi;
namespace fs = std::filesystem;

namespace {

std::string fixture_corpus() {
  std::vector<fs::path> files;
  for (const auto& e :
       fs::recursive_directory_iterator(fs::path(ROCPLAY_SOURCE_DIR) / "fixtures")) {
    const auto ext = e.path().extension();
    if (e.is_regular_file() && (ext == ".mi" || ext == ".rocplay")) {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  std::string all;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    // Recordings carry a `< T ` prefix per line; the parser benchmark wants MI lines.
    std::string line;
    std::istringstream lines(ss.str());
    while (std::getline(lines, line)) {
      if (line.rfind("< ", 0) == 0) {
        const auto sp = line.find(' ', 2);
        line = sp == std::string::npos ? std::string() : line.substr(sp + 1);
      } else if (line.empty() || line[0] == '#' || line[0] == '>' || line[0] == '!') {
        continue;
      }
      all += line;
      all += '\n';
    }
  }
  return all;
}

std::size_t visit(const Value& v) {
  std::size_t n = 1;
  if (v.is_string()) {
    return n + v.raw().size();
  }
  for (const Value c : v) {
    n += visit(c);
  }
  return n;
}

// CPU time of this thread: on a shared machine wall time measures the neighbours too.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

} // namespace

int main(int argc, char** argv) {
  std::size_t corpus_mb = 32;
  std::size_t stream_mb = 1024;
  int runs = 7;
  std::size_t pipe_kb = 64;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--short") {
      corpus_mb = 4;
      stream_mb = 64;
      runs = 1;
    } else if (a == "--corpus-mb" && i + 1 < argc) {
      corpus_mb = std::stoul(argv[++i]);
    } else if (a == "--stream-mb" && i + 1 < argc) {
      stream_mb = std::stoul(argv[++i]);
    } else if (a == "--runs" && i + 1 < argc) {
      runs = std::stoi(argv[++i]);
    } else if (a == "--pipe-kb" && i + 1 < argc) {
      pipe_kb = std::stoul(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--short] [--corpus-mb N] [--stream-mb N] [--runs N] "
                   "[--pipe-kb N]\n",
                   argv[0]);
      return 64;
    }
  }

  const std::string unit = fixture_corpus();
  if (unit.empty()) {
    std::fprintf(stderr, "bench_mi_parse: no fixtures found under %s/fixtures\n",
                 ROCPLAY_SOURCE_DIR);
    return 66;
  }
  std::string corpus;
  corpus.reserve(corpus_mb << 20);
  while (corpus.size() < (corpus_mb << 20)) {
    corpus += unit;
  }

  std::vector<double> rates;
  std::vector<double> cpu_rates;
  std::uint64_t records = 0;
  std::uint64_t errors = 0;
  for (int r = 0; r < runs; ++r) {
    Parser parser;
    std::size_t sink = 0;
    records = 0;
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = thread_cpu_seconds();
    parser.feed(corpus);
    parser.finish();
    while (auto rec = parser.next()) {
      ++records;
      sink += visit(rec->results());
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = thread_cpu_seconds() - c0;
    errors = parser.errors();
    rates.push_back(static_cast<double>(corpus.size()) / (1 << 20) / secs);
    cpu_rates.push_back(static_cast<double>(corpus.size()) / (1 << 20) / cpu);
    if (sink == 0) {
      std::puts("");
    }
  }
  std::sort(rates.begin(), rates.end());
  std::sort(cpu_rates.begin(), cpu_rates.end());
  const double median = rates[rates.size() / 2];
  std::printf("parse: corpus %.1f MB (%zu fixture bytes repeated), %llu records, %llu errors, "
              "%d runs: median %.0f MB/s wall (min %.0f, max %.0f), %.0f MB/s per CPU-second\n",
              static_cast<double>(corpus.size()) / (1 << 20), unit.size(),
              static_cast<unsigned long long>(records), static_cast<unsigned long long>(errors),
              runs, median, rates.front(), rates.back(), cpu_rates[cpu_rates.size() / 2]);

  // The same corpus as a debugger's pipe delivers it: chunks of --pipe-kb, each handed to the
  // parser and drained before the next (a line that spans chunks is assembled by the parser).
  std::vector<double> pipe_rates;
  std::vector<double> pipe_cpu_rates;
  std::uint64_t pipe_records = 0;
  const std::size_t pipe_bytes = pipe_kb << 10;
  for (int r = 0; r < runs && pipe_bytes != 0; ++r) {
    Parser parser;
    std::size_t sink = 0;
    pipe_records = 0;
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = thread_cpu_seconds();
    for (std::size_t at = 0; at < corpus.size(); at += pipe_bytes) {
      parser.feed(std::string_view(corpus).substr(at, pipe_bytes));
      while (auto rec = parser.next()) {
        ++pipe_records;
        sink += visit(rec->results());
      }
    }
    parser.finish();
    while (auto rec = parser.next()) {
      ++pipe_records;
      sink += visit(rec->results());
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = thread_cpu_seconds() - c0;
    pipe_rates.push_back(static_cast<double>(corpus.size()) / (1 << 20) / secs);
    pipe_cpu_rates.push_back(static_cast<double>(corpus.size()) / (1 << 20) / cpu);
    if (sink == 0) {
      std::puts("");
    }
  }
  std::sort(pipe_rates.begin(), pipe_rates.end());
  std::sort(pipe_cpu_rates.begin(), pipe_cpu_rates.end());
  if (pipe_bytes != 0) {
    std::printf("pipe: the corpus in %zu KB chunks, %llu records, %d runs: median %.0f MB/s wall "
                "(min %.0f, max %.0f), %.0f MB/s per CPU-second\n",
                pipe_kb, static_cast<unsigned long long>(pipe_records), runs,
                pipe_rates[pipe_rates.size() / 2], pipe_rates.front(), pipe_rates.back(),
                pipe_cpu_rates[pipe_cpu_rates.size() / 2]);
  }
  if (pipe_bytes != 0 && pipe_records != records) {
    std::fprintf(stderr, "bench_mi_parse: %llu records in chunks, %llu in one piece\n",
                 static_cast<unsigned long long>(pipe_records),
                 static_cast<unsigned long long>(records));
    return 70;
  }
  const double rss_before_stream = peak_rss_mb();
  corpus.clear();
  corpus.shrink_to_fit();

  // Streaming: a recording-shaped transcript generated 1 MB at a time; only the reader's state
  // and one chunk are ever in memory.
  std::string chunk;
  {
    std::string block;
    std::istringstream lines(unit);
    std::string line;
    std::uint64_t token = 1;
    while (std::getline(lines, line)) {
      if (!line.empty() && line[0] == '^') {
        block += "> 0.5 " + std::to_string(token) + "-thread-info\n";
        block += "< 0.6 " + std::to_string(token++) + line + "\n";
      } else {
        block += "< 0.6 " + line + "\n";
      }
    }
    while (chunk.size() < (1u << 20)) {
      chunk += block;
    }
  }
  TranscriptReader reader;
  std::uint64_t exchanges = 0;
  std::uint64_t streamed = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = thread_cpu_seconds();
  while (streamed < (stream_mb << 20)) {
    reader.feed(chunk);
    while (auto ex = reader.next()) {
      ++exchanges;
    }
    streamed += chunk.size();
  }
  reader.finish();
  while (auto ex = reader.next()) {
    ++exchanges;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = thread_cpu_seconds() - c0;
  std::printf("stream: %.0f MB transcript in 1 MB chunks, %llu exchanges, %.0f MB/s wall, %.0f "
              "MB/s per CPU-second, peak RSS %.1f MB (%.1f MB before streaming)\n",
              static_cast<double>(streamed) / (1 << 20), static_cast<unsigned long long>(exchanges),
              static_cast<double>(streamed) / (1 << 20) / secs,
              static_cast<double>(streamed) / (1 << 20) / cpu, peak_rss_mb(), rss_before_stream);
  return 0;
}
