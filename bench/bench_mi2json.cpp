// `rocplay mi2json` end to end: the binary, reading a file, writing JSON Lines to /dev/null.
//
//   bench_mi2json [--short] [--corpus-mb N] [--runs N] [--rocplay PATH]
//
// The corpus: every MI line of the fixtures (fixtures/**/*.mi, and the `< ` lines of *.rec
// recordings) concatenated and repeated to at least N MB (default 33), written to a temporary
// file. Each run is `rocplay mi2json FILE > /dev/null` as its own process; the figure is the
// median wall-clock MB/s of the input (docs/benchmarks.md). A second pass converts the same
// lines as a rocplay recording (`< 0.000001 LINE`), the form `rocplay run --record` writes.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

std::string fixture_lines() {
  std::vector<fs::path> files;
  for (const auto& e :
       fs::recursive_directory_iterator(fs::path(ROCPLAY_SOURCE_DIR) / "fixtures")) {
    const auto ext = e.path().extension();
    if (e.is_regular_file() && (ext == ".mi" || ext == ".rec")) {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  std::string all;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    std::istringstream lines(ss.str());
    for (std::string line; std::getline(lines, line);) {
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

struct Timing {
  double wall = -1; // seconds; -1 when the run failed
  double cpu = 0;   // the child's user + system seconds
};

// How long `rocplay mi2json path > /dev/null` took.
Timing run_once(const std::string& rocplay, const std::string& path) {
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::FILE* null = std::fopen("/dev/null", "w");
    if (null != nullptr) {
      ::dup2(fileno(null), STDOUT_FILENO);
      ::dup2(fileno(null), STDERR_FILENO); // the corpus has a few lines that are not MI
    }
    ::execl(rocplay.c_str(), rocplay.c_str(), "mi2json", path.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  rusage usage{};
  ::wait4(pid, &status, 0, &usage);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto seconds = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
  };
  Timing t;
  t.cpu = seconds(usage.ru_utime) + seconds(usage.ru_stime);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    t.wall = secs;
  }
  return t;
}

void measure(const char* what, const std::string& rocplay, const std::string& path,
             std::size_t bytes, int runs) {
  std::vector<double> rates;
  std::vector<double> cpu_rates;
  const double mb = static_cast<double>(bytes) / (1 << 20);
  for (int r = 0; r < runs; ++r) {
    const Timing t = run_once(rocplay, path);
    if (t.wall < 0) {
      std::fprintf(stderr, "bench_mi2json: `%s mi2json %s` failed\n", rocplay.c_str(),
                   path.c_str());
      std::exit(1);
    }
    rates.push_back(mb / t.wall);
    cpu_rates.push_back(mb / std::max(t.cpu, 1e-6));
  }
  std::sort(rates.begin(), rates.end());
  std::sort(cpu_rates.begin(), cpu_rates.end());
  std::printf("mi2json %s: %.1f MB, %d runs: median %.0f MB/s wall (min %.0f, max %.0f), %.0f MB "
              "per CPU-second\n",
              what, mb, runs, rates[rates.size() / 2], rates.front(), rates.back(),
              cpu_rates[cpu_rates.size() / 2]);
}

} // namespace

int main(int argc, char** argv) {
  std::size_t corpus_mb = 33;
  int runs = 7;
  std::string rocplay = (fs::path(argv[0]).parent_path() / ".." / "rocplay").string();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--short") {
      corpus_mb = 2;
      runs = 1;
    } else if (a == "--corpus-mb" && i + 1 < argc) {
      corpus_mb = std::stoul(argv[++i]);
    } else if (a == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::stoi(argv[++i]));
    } else if (a == "--rocplay" && i + 1 < argc) {
      rocplay = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--short] [--corpus-mb N] [--runs N] [--rocplay PATH]\n",
                   argv[0]);
      return 64;
    }
  }
  if (!fs::exists(rocplay)) {
    std::fprintf(stderr, "bench_mi2json: no rocplay binary at %s (build it, or --rocplay PATH)\n",
                 rocplay.c_str());
    return 66;
  }
  const std::string unit = fixture_lines();
  if (unit.empty()) {
    std::fprintf(stderr, "bench_mi2json: no fixtures under %s/fixtures\n", ROCPLAY_SOURCE_DIR);
    return 66;
  }
  std::string corpus;
  while (corpus.size() < (corpus_mb << 20)) {
    corpus += unit;
  }
  const char* tmp = std::getenv("TMPDIR");
  const fs::path dir = fs::path(tmp != nullptr ? tmp : "/tmp");
  const std::string raw_path = (dir / ("bench-mi2json-" + std::to_string(::getpid()) + ".mi"));
  const std::string rec_path = (dir / ("bench-mi2json-" + std::to_string(::getpid()) + ".rec"));
  std::ofstream(raw_path, std::ios::binary) << corpus;
  std::string recording = "# rocplay-transcript 1\n";
  std::istringstream lines(corpus);
  for (std::string line; std::getline(lines, line);) {
    recording += "< 0.000001 " + line + "\n";
  }
  std::ofstream(rec_path, std::ios::binary) << recording;
  measure("raw MI", rocplay, raw_path, corpus.size(), runs);
  measure("recording", rocplay, rec_path, recording.size(), runs);
  fs::remove(raw_path);
  fs::remove(rec_path);
  return 0;
}
