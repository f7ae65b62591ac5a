// Post-mortem throughput and memory over a large batch of transcripts.
//
//   bench_postmortem [--short] [--files N] [--file-kb K] [--runs R] [--jobs J] [--details]
//                    [--corpus DIR]
//
// Builds (once) a corpus of N rocgdb recordings of about K KiB each, grouped in directories of 8
// ranks: the TP=8 sync-spin fixture with its -thread-info inflated to many waves. Then runs the
// batch post-mortem (every input read, snapshot built, all heuristics, cross-rank per directory;
// the findings' structured details only with --details, as for a JSON report)
// in a child process, R times; prints the median wall time, MB/s, the child's peak RSS and its
// median CPU time (user + system) with MB per CPU-second, the figure that a busy machine moves
// least. The corpus lives under $TMPDIR/rocplay-bench-corpus-NxK (or --corpus DIR), made again
// when the marker beside it names another size.
#include "rocplay/postmortem/postmortem.hpp"

#include "rocplay/mi/transcript.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace rocplay;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (std::size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) {
    s.replace(pos, from.size(), to);
  }
}

// The fixture with its -thread-info result grown to about `bytes` and its rank set to `rank`.
std::string make_transcript(const std::string& fixture, std::size_t bytes, int rank, int pid) {
  std::istringstream lines(fixture);
  std::string line;
  std::string out;
  while (std::getline(lines, line)) {
    if (line.rfind("# meta ", 0) == 0) {
      // Each file its own process and rank, as the ranks of a TP job record them.
      for (const char* key : {"\"rank\":", "\"pid\":"}) {
        const auto at = line.find(key);
        if (at != std::string::npos) {
          const auto begin = at + std::string_view(key).size();
          const auto end = line.find_first_not_of("0123456789", begin);
          const int value = key[1] == 'r' ? rank : pid;
          line.replace(begin, end - begin, std::to_string(value));
        }
      }
    }
    const auto pos = line.find("^done,threads=[");
    if (line.rfind("< ", 0) == 0 && pos != std::string::npos) {
      const auto records = mi::parse_all(line.substr(line.find(' ', 2) + 1));
      if (!records.empty() && !records[0].is_error()) {
        const mi::Value threads = records[0]["threads"];
        std::vector<std::string> waves;
        std::string host;
        for (const mi::Value t : threads) {
          const std::string text = t.to_mi();
          if (t["target-id"].raw().rfind("AMDGPU Wave", 0) == 0) {
            waves.push_back(text);
          } else {
            host += (host.empty() ? "" : ",") + text;
          }
        }
        std::string grown = line.substr(0, line.find("threads=[") + 9) + host;
        std::size_t id = 1000;
        for (int group = 1; grown.size() < bytes && !waves.empty(); ++group) {
          for (const std::string& w : waves) {
            std::string copy = w;
            const auto idq = copy.find("id=\"");
            copy.replace(idq + 4, copy.find('"', idq + 4) - idq - 4, std::to_string(id++));
            replace_all(copy, "(0,0,0)/", "(" + std::to_string(group) + ",0,0)/");
            grown += "," + copy;
          }
        }
        grown += "]";
        const std::string tail = line.substr(line.rfind(']') + 1);
        line = grown + tail;
      }
    }
    out += line;
    out += '\n';
  }
  return out;
}

double peak_rss_mb(const rusage& usage) {
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

} // namespace

int main(int argc, char** argv) {
  std::size_t files = 1000;
  std::size_t file_kb = 1100;
  int runs = 3;
  unsigned jobs = 0;
  fs::path corpus = fs::temp_directory_path() / "rocplay-bench-corpus";
  bool corpus_given = false;
  bool details = false; // as `rocplay postmortem` writing text (its default format)
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--short") {
      files = 16;
      file_kb = 256;
      runs = 1;
      corpus = fs::temp_directory_path() / "rocplay-bench-corpus-short";
      corpus_given = true;
    } else if (a == "--files" && i + 1 < argc) {
      files = std::stoul(argv[++i]);
    } else if (a == "--file-kb" && i + 1 < argc) {
      file_kb = std::stoul(argv[++i]);
    } else if (a == "--runs" && i + 1 < argc) {
      runs = std::stoi(argv[++i]);
    } else if (a == "--jobs" && i + 1 < argc) {
      jobs = static_cast<unsigned>(std::stoul(argv[++i]));
    } else if (a == "--details") {
      details = true; // as a JSON, JSON Lines or SARIF report
    } else if (a == "--corpus" && i + 1 < argc) {
      corpus = argv[++i];
      corpus_given = true;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--short] [--files N] [--file-kb K] [--runs R] [--jobs J] "
                   "[--details] [--corpus DIR]\n",
                   argv[0]);
      return 64;
    }
  }

  const fs::path fixture_path =
      fs::path(ROCPLAY_SOURCE_DIR) / "fixtures/rocgdb/tp8-allgather-sync-spin/snapshot.mi";
  const std::string fixture = slurp(fixture_path);
  if (fixture.empty()) {
    std::fprintf(stderr, "bench_postmortem: cannot read %s\n", fixture_path.c_str());
    return 66;
  }
  // The size is in the default directory's name, so corpora of several sizes live side by side;
  // the marker beside the directory (not in it: the post-mortem reads every file there) names the
  // size it holds, so a directory made for another size (a --corpus passed before with other
  // sizes) is made again instead of being reused under the wrong name.
  if (!corpus_given) {
    corpus += "-" + std::to_string(files) + "x" + std::to_string(file_kb);
  }
  const fs::path stamp = corpus.string() + ".corpus";
  const std::string made = std::to_string(files) + "x" + std::to_string(file_kb) + "-v3\n";
  if (slurp(stamp) != made || !fs::is_directory(corpus)) {
    fs::remove(stamp);
    fs::remove_all(corpus);
    for (std::size_t f = 0; f < files; ++f) {
      const int rank = static_cast<int>(f % 8);
      const fs::path dir = corpus / ("event" + std::to_string(1000 + f / 8));
      fs::create_directories(dir);
      std::ofstream(dir / ("rank" + std::to_string(rank) + ".mi"), std::ios::binary)
          << make_transcript(fixture, file_kb * 1024, rank, 4300 + static_cast<int>(f));
    }
    std::ofstream(stamp) << made;
  }
  std::uint64_t total = 0;
  for (const auto& e : fs::recursive_directory_iterator(corpus)) {
    if (e.is_regular_file() && e.path().extension() == ".mi") {
      total += e.file_size();
    }
  }

  std::vector<double> seconds;
  std::vector<double>
      cpu; // the child's user + system time: the figure the builder's load moves least
  double rss = 0;
  std::size_t findings = 0;
  std::size_t events = 0;
  for (int r = 0; r < runs; ++r) {
    int pipe_fds[2];
    if (::pipe(pipe_fds) != 0) {
      return 71;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const pid_t child = ::fork();
    if (child == 0) {
      ::close(pipe_fds[0]);
      postmortem::Options options;
      options.paths = {corpus.string()};
      options.jobs = jobs;
      options.details = details;
      std::size_t n = 0;
      const auto summary = postmortem::run(
          options, [&](const postmortem::InputResult& result) { n += result.findings.size(); });
      const std::size_t out[2] = {n, summary.events.size()};
      (void)!::write(pipe_fds[1], out, sizeof out);
      ::_exit(summary.unreadable == 0 ? 0 : 1);
    }
    ::close(pipe_fds[1]);
    std::size_t in[2] = {0, 0};
    (void)!::read(pipe_fds[0], in, sizeof in);
    ::close(pipe_fds[0]);
    int status = 0;
    rusage usage{};
    ::wait4(child, &status, 0, &usage);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    rss = std::max(rss, peak_rss_mb(usage));
    cpu.push_back(static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                  static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6);
    findings = in[0];
    events = in[1];
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "bench_postmortem: the batch failed (status %d)\n", status);
      return 1;
    }
  }
  std::sort(seconds.begin(), seconds.end());
  std::sort(cpu.begin(), cpu.end());
  const double median = seconds[seconds.size() / 2];
  const double mb = static_cast<double>(total) / (1 << 20);
  const double cpu_median = cpu[cpu.size() / 2];
  std::printf("postmortem: %zu transcripts, %.0f MB, %u jobs (0 = all cores), %d runs: median "
              "%.2f s = %.0f MB/s; %zu findings, %zu events; peak RSS %.0f MB; CPU median %.3f "
              "s, %.0f MB per CPU-second\n",
              files, mb, jobs, runs, median, mb / median, findings, events, rss, cpu_median,
              cpu_median > 0 ? mb / cpu_median : 0.0);
  return 0;
}
