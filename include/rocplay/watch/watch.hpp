// `rocplay watch`: the signs of a hang, read without ptrace (docs/watch.md).
//
// A Watcher looks, once per check, at the server's log (did it grow?), the workers (still the
// same processes?) and the workers' GPUs (busy?), and says Healthy, Quiet (the log stopped but
// not for long enough yet), Hang, Waiting (no workers to watch) or Gone (what was watched
// exited). It never attaches to anything: the caller captures when it says Hang.
//
// Cost while healthy: a stat and two fstat of the log, one /proc/PID/stat per worker; the GPU
// counters are read only while the log is quiet, the process tree is scanned only when a worker
// vanished (docs/benchmarks.md, "Watch").
#pragma once

#include "rocplay/session/process.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::watch {

using Clock = std::chrono::steady_clock;

// ---- The log: growth, rotation (rename + new file), truncation (copytruncate).

class LogWatch {
public:
  // Opens `path` (it must exist: a mistyped --log fails at once, not at 3 a.m.). The log's age
  // (its mtime) counts as quiet time already spent. Throws Error(NoInput).
  LogWatch(std::string path, Clock::time_point now);
  ~LogWatch();
  LogWatch(const LogWatch&) = delete;
  LogWatch& operator=(const LogWatch&) = delete;

  // Looks once: the file open now (fstat), the one it replaced after a rotation (fstat), and
  // the path (stat). A rotation, a truncation, the path vanishing or coming back are appended
  // to `events`, once each. Growth of either open file, or a truncation, counts as activity.
  void check(Clock::time_point now, std::vector<std::string>& events);
  Clock::time_point last_activity() const { return last_activity_; }
  bool grew_at_last_check() const { return grew_; }
  const std::string& path() const { return path_; }

private:
  struct Open {
    int fd = -1;
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    std::int64_t mtime_ns = 0;
    Clock::time_point since; // last growth of this file
  };
  bool look(Open& f, Clock::time_point now); // true when it grew
  void close(Open& f);

  std::string path_;
  Open current_;
  Open previous_; // the file before the last rotation, while the server may still write it
  bool path_missing_ = false;
  bool grew_ = false;
  Clock::time_point last_activity_;
};

// ---- The workers' GPUs: how busy, from counters the driver exports.

struct GpuReading {
  std::string name;        // `renderD128`, `card0`, `nvidia3 (0000:3b:00.0)`
  std::optional<int> busy; // percent; nullopt: unreadable
  std::string source;      // the sysfs file or `nvidia-smi`
};

struct GpuBusy {
  std::vector<GpuReading> gpus;
  std::optional<int> max_busy; // the busiest readable GPU; nullopt when none could be read
  std::string unknown_why;     // when max_busy is nullopt: why, in a phrase
};

struct GpuProbeOptions {
  std::string sysfs_root = "/sys";
  std::string proc_root = "/proc";
  // nvidia-smi to run for NVIDIA workers: empty searches PATH, `none` never runs one.
  std::string nvidia_smi;
  std::chrono::milliseconds nvidia_smi_timeout{5000};
};

// The GPUs a set of workers holds, from their open device files: AMD render nodes
// (`/dev/dri/renderD128`), NVIDIA minors (`/dev/nvidia3`), and whether any holds only /dev/kfd
// or only NVIDIA control devices (then every GPU of that vendor on the node is read).
struct GpuSet {
  std::vector<std::string> render_nodes; // `renderD128`
  std::vector<int> nvidia_minors;
  bool amd_unmapped = false;    // a worker holds /dev/kfd but no render node
  bool nvidia_unmapped = false; // a worker holds /dev/nvidia* but no /dev/nvidiaN
  bool empty() const {
    return render_nodes.empty() && nvidia_minors.empty() && !amd_unmapped && !nvidia_unmapped;
  }
};
GpuSet gpus_of(const std::vector<process::GpuOpen>& opens);

// Reads the counters: AMD from sysfs `gpu_busy_percent`, NVIDIA from `nvidia-smi --query-gpu`
// (bus ids matched to minors through /proc/driver/nvidia/gpus/*/information). Never throws: an
// unreadable counter is a reading without a value, and no reading at all is "unknown".
GpuBusy read_gpu_busy(const GpuSet& gpus, const GpuProbeOptions& options);

// Pure parsers, for the tests. `gpu_busy_percent`'s text; nullopt when not 0..100.
std::optional<int> parse_busy_percent(std::string_view text);
// `nvidia-smi --query-gpu=pci.bus_id,utilization.gpu --format=csv,noheader,nounits` lines:
// bus id (normalized) and percent; lines that do not parse (`[N/A]`) are left out.
std::vector<std::pair<std::string, int>> parse_nvidia_smi_csv(std::string_view text);
// /proc/driver/nvidia/gpus/BUS/information's `Device Minor:`; nullopt when absent.
std::optional<int> parse_nvidia_minor(std::string_view information);
// `00000000:3B:00.0` and `0000:3b:00.0` both become `0000:3b:00.0`.
std::string normalize_bus_id(std::string_view bus_id);

// ---- What is watched: a server's GPU workers, or given pids.

struct Worker {
  std::int64_t pid = 0;
  std::uint64_t starttime = 0; // with the pid, the process's identity (pids are reused)
  std::string comm;
  process::GpuOpen gpu;
};

class Targets {
public:
  // `--workers-of SERVER`: its GPU workers, found again whenever one vanishes. `device_prefixes`
  // adds device paths that mark a worker to /dev/kfd and /dev/nvidia*. Throws
  // Error(NoSuchProcess) when the server does not exist.
  static Targets workers_of(std::int64_t server, std::vector<std::string> device_prefixes);
  // `--pid`/`--pids`: these processes, whatever they hold. Throws Error(NoSuchProcess) when none
  // exists.
  static Targets fixed(const std::vector<std::int64_t>& pids);

  // Checks that the server and every worker are still the processes they were; finds the
  // workers again when one is gone (or none is known yet). Changes go to `events`.
  void check(std::vector<std::string>& events);
  // The server exited, or (fixed pids) every pid did.
  bool gone() const { return gone_; }
  const std::vector<Worker>& workers() const { return workers_; }
  std::vector<std::int64_t> pids() const;
  // Goes up by one whenever the set of workers changes (a restart).
  std::uint64_t generation() const { return generation_; }
  std::int64_t server() const { return server_; }
  std::string describe() const; // `server 4300 (vllm), workers 4301,4302`

private:
  Targets() = default;
  void rescan(std::vector<std::string>& events);

  std::int64_t server_ = 0;
  std::uint64_t server_start_ = 0;
  std::string server_comm_;
  std::vector<std::string> device_prefixes_;
  std::vector<Worker> workers_;
  bool gone_ = false;
  bool said_no_workers_ = false;
  std::uint64_t generation_ = 0;
};

// ---- Back-off between captures of one hang that does not clear.

class Backoff {
public:
  Backoff(Clock::duration first, Clock::duration cap) : first_(first), cap_(cap) {}
  // A capture ended now: the next one waits first, 2x first, 4x first ... up to cap.
  void captured(Clock::time_point now);
  // The hang cleared (the log grew) or the workers changed: the next capture may come at once.
  void reset() { count_ = 0; }
  bool allows(Clock::time_point now) const { return count_ == 0 || now >= next_; }
  Clock::time_point next() const { return next_; }
  Clock::duration current() const { return current_; }
  unsigned captures() const { return count_; }

private:
  Clock::duration first_;
  Clock::duration cap_;
  Clock::duration current_{0};
  Clock::time_point next_{};
  unsigned count_ = 0;
};

// ---- The decision.

struct Config {
  std::string log; // empty: no log (GPUs busy alone decide)
  Clock::duration quiet_for = std::chrono::seconds(60);
  int gpu_busy = 90; // percent; 0 turns the GPU sign off
  GpuProbeOptions gpu;
};

enum class Verdict {
  Healthy, // the log grows (or, without a log, no GPU is busy)
  Quiet,   // the signs point to a hang, not for --quiet-for yet
  Hang,    // every sign held for --quiet-for: capture
  Waiting, // nothing to watch now (no workers yet, or between a restart's old and new)
  Gone,    // what was watched exited
};
std::string_view to_string(Verdict verdict);

struct CheckResult {
  Verdict verdict = Verdict::Healthy;
  std::vector<std::string> events; // to say once each (rotation, restart, counters unreadable)
  std::string reason;              // the signs, one phrase: `log quiet 62s, GPU busy 100% (...)`
  Clock::duration quiet{0};        // since the log's last activity (0 without a log)
  std::optional<int> gpu_max;      // nullopt: not read this check, or unknown
  bool gpu_read = false;           // the counters were read this check
};

class Watcher {
public:
  // Throws Error(NoInput) for a log that does not exist, Error(Usage) with neither a log nor a
  // GPU sign to decide on.
  Watcher(Config config, Targets targets, Clock::time_point now);
  CheckResult check(Clock::time_point now);
  Targets& targets() { return targets_; }
  const Config& config() const { return config_; }
  // After a capture: the hang must outlast the back-off, or clear, before the next one.
  void captured(Clock::time_point now, Clock::duration backoff_first, Clock::duration backoff_cap);
  const std::optional<Backoff>& backoff() const { return backoff_; }
  // The busy readings in a row the GPU sign needs (one counter reading may be a spike).
  static constexpr int kBusyReadings = 3;

private:
  Config config_;
  Targets targets_;
  std::optional<LogWatch> log_;
  std::optional<Backoff> backoff_;
  Clock::time_point since_; // the log's last activity, or (no log) when the GPUs became busy
  std::uint64_t generation_ = 0;
  int busy_in_a_row_ = 0;
  std::optional<bool> gpu_known_; // last said: counters readable or not
  GpuSet gpus_;
  std::uint64_t gpus_generation_ = ~0ull;
};

// `20261124T031500Z` for file names.
std::string utc_stamp(std::chrono::system_clock::time_point t);

} // namespace rocplay::watch
