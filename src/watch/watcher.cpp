// The decision: every sign of a hang held for --quiet-for (docs/watch.md, "When it captures").
#include "rocplay/core/error.hpp"
#include "rocplay/core/names.hpp"
#include "rocplay/watch/watch.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <ctime>

namespace rocplay::watch {

namespace {

double secs(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

std::string busiest(const GpuBusy& b) {
  const GpuReading* top = nullptr;
  for (const auto& g : b.gpus) {
    if (g.busy && (top == nullptr || *g.busy > *top->busy)) {
      top = &g;
    }
  }
  return top == nullptr ? std::string() : top->name;
}

} // namespace

constexpr NameTable<Verdict, 5> kVerdictNames{{
    {Verdict::Healthy, "healthy"},
    {Verdict::Quiet, "quiet"},
    {Verdict::Hang, "hang"},
    {Verdict::Waiting, "waiting"},
    {Verdict::Gone, "gone"},
}};
static_assert(names_cover(kVerdictNames, Verdict::Gone));

std::string_view to_string(Verdict verdict) {
  return name_of(kVerdictNames, verdict, "?");
}

void Backoff::captured(Clock::time_point now) {
  current_ = count_ == 0 ? first_ : std::min(cap_, current_ * 2);
  ++count_;
  next_ = now + current_;
}

std::string utc_stamp(std::chrono::system_clock::time_point t) {
  return fmt::format("{:%Y%m%dT%H%M%SZ}", fmt::gmtime(std::chrono::system_clock::to_time_t(t)));
}

Watcher::Watcher(Config config, Targets targets, Clock::time_point now)
    : config_(std::move(config)), targets_(std::move(targets)), since_(now) {
  if (config_.log.empty() && config_.gpu_busy <= 0) {
    throw Error(ExitCode::Usage, "nothing to decide on: no --log and the GPU sign is off",
                "give --log FILE (the server's log), or --gpu-busy PERCENT above 0");
  }
  if (!config_.log.empty()) {
    log_.emplace(config_.log, now);
    since_ = log_->last_activity();
  }
  generation_ = targets_.generation();
}

void Watcher::captured(Clock::time_point now, Clock::duration backoff_first,
                       Clock::duration backoff_cap) {
  if (!backoff_) {
    backoff_.emplace(backoff_first, backoff_cap);
  }
  backoff_->captured(now);
}

CheckResult Watcher::check(Clock::time_point now) {
  CheckResult r;
  targets_.check(r.events);
  if (targets_.gone()) {
    r.verdict = Verdict::Gone;
    r.reason = r.events.empty() ? "what was watched exited" : r.events.back();
    return r;
  }
  if (targets_.generation() != generation_) {
    // New workers: what the old ones did says nothing about them.
    generation_ = targets_.generation();
    since_ = now;
    busy_in_a_row_ = 0;
    if (backoff_) {
      backoff_->reset();
    }
  }
  if (targets_.workers().empty()) {
    r.verdict = Verdict::Waiting;
    r.reason = "no workers to watch";
    return r;
  }
  bool log_grew = false;
  if (log_) {
    log_->check(now, r.events);
    log_grew = log_->grew_at_last_check();
    if (log_->last_activity() > since_) {
      since_ = log_->last_activity();
    }
    if (log_grew && backoff_ && backoff_->captures() > 0) {
      backoff_->reset();
      r.events.push_back("the log grows again: the hang that was captured has cleared");
    }
  }

  // The GPU counters cost more than a stat (nvidia-smi is a process): read only while the log
  // is quiet, or every check when there is no log.
  const bool gpu_sign = config_.gpu_busy > 0;
  std::optional<GpuBusy> busy;
  if (gpu_sign && (!log_ || !log_grew)) {
    if (gpus_generation_ != generation_) {
      std::vector<process::GpuOpen> opens;
      for (const auto& w : targets_.workers()) {
        opens.push_back(w.gpu);
      }
      gpus_ = gpus_of(opens);
      gpus_generation_ = generation_;
    }
    busy = read_gpu_busy(gpus_, config_.gpu);
    r.gpu_read = true;
    r.gpu_max = busy->max_busy;
    const bool known = busy->max_busy.has_value();
    if (!gpu_known_ || *gpu_known_ != known) {
      if (!known) {
        r.events.push_back(
            fmt::format("GPU counters unknown ({}): {}", busy->unknown_why,
                        log_ ? "deciding on the log alone" : "nothing to decide on without --log"));
      } else if (gpu_known_) {
        r.events.push_back("GPU counters readable again");
      }
      gpu_known_ = known;
    }
    if (known && *busy->max_busy >= config_.gpu_busy) {
      if (busy_in_a_row_++ == 0 && !log_) {
        since_ = now; // without a log, the hang's clock starts when the GPUs become busy
      }
    } else {
      busy_in_a_row_ = 0;
    }
  } else if (log_grew) {
    busy_in_a_row_ = 0;
  }

  std::string gpu_text;
  bool gpu_ok = true;
  if (gpu_sign && busy) {
    if (!busy->max_busy) {
      gpu_text = "GPU unknown";
      gpu_ok = log_.has_value();
    } else {
      gpu_text = fmt::format("GPU busy {}% ({})", *busy->max_busy, busiest(*busy));
      gpu_ok = busy_in_a_row_ >= kBusyReadings;
      if (*busy->max_busy < config_.gpu_busy) {
        gpu_text =
            fmt::format("GPUs idle (busiest {}%, below {}%)", *busy->max_busy, config_.gpu_busy);
      }
    }
  }
  if (!log_ && (!busy || !busy->max_busy || busy_in_a_row_ == 0)) {
    since_ = now;
  }
  r.quiet = now - since_;
  if (log_) {
    r.reason = log_grew ? fmt::format("log grew") : fmt::format("log quiet {:.1f}s", secs(r.quiet));
  } else {
    r.reason = fmt::format("busy {:.1f}s", secs(r.quiet));
  }
  if (!gpu_text.empty()) {
    r.reason += ", " + gpu_text;
  }
  if (!log_ && busy && !busy->max_busy) {
    r.verdict = Verdict::Waiting;
    return r;
  }
  const bool long_enough = r.quiet >= config_.quiet_for;
  const bool gpus_idle = busy && busy->max_busy && busy_in_a_row_ == 0;
  if (log_grew || gpus_idle) {
    r.verdict = Verdict::Healthy; // growing, or quiet with idle GPUs: an idle server
  } else if (long_enough && gpu_ok) {
    if (backoff_ && !backoff_->allows(now)) {
      r.verdict = Verdict::Quiet;
      r.reason += fmt::format("; hang persists, next capture after the back-off ({:.0f}s)",
                              secs(backoff_->next() - now));
    } else {
      r.verdict = Verdict::Hang;
    }
  } else {
    r.verdict = Verdict::Quiet;
  }
  return r;
}

} // namespace rocplay::watch
