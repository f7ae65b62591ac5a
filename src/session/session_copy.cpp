// Stops by copy: rocplay holds the target itself for as long as the copy takes, and the debugger
// reads the copy as a core file (rocplay/capture/capture.hpp; docs/session.md, "Stops by copy").
#include "rocplay/capture/capture.hpp"
#include "rocplay/core/temp_dir.hpp"
#include "session/session_impl.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <future>
#include <system_error>
#include <utility>

namespace rocplay::session {

namespace {

// The threads' names, which a core file does not carry, as notes the snapshot builder reads
// (src/snapshot/builder.cpp): `thread names: {"TID":"NAME",...}`, a few hundred per note.
std::vector<std::string> thread_name_notes(const capture::Capture& c) {
  constexpr std::size_t kNoteBytes = 3'000;
  std::vector<std::string> notes;
  nlohmann::json names = nlohmann::json::object();
  auto flush = [&] {
    if (!names.empty()) {
      notes.push_back("thread names: " +
                      names.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      names = nlohmann::json::object();
    }
  };
  std::size_t bytes = 0;
  for (const auto& t : c.threads) {
    if (t.name.empty()) {
      continue;
    }
    names[std::to_string(t.tid)] = t.name;
    bytes += t.name.size() + 16;
    if (bytes > kNoteBytes) {
      flush();
      bytes = 0;
    }
  }
  flush();
  return notes;
}

} // namespace

void Session::Impl::start_copy(std::int64_t target_pid, milliseconds timeout,
                               bool walk_kernel_waits) {
  if (copy_dir.empty()) {
    std::string why;
    auto dir = make_private_temp_dir("rocplay-copy", why);
    if (!dir) {
      throw Error(ExitCode::NoInput,
                  "no place for the copy of pid " + std::to_string(target_pid) + ": " + why,
                  "set TMPDIR to a writable directory, or attach the debugger (--stop attach)");
    }
    copy_dir = *dir;
  }
  capture::Options co;
  co.while_stopped = copy_while_stopped;
  co.timeout = timeout;
  PendingCopy& pending = copy_in_flight.emplace();
  pending.asked_at = now();
  const auto take = [this, target_pid, co, walk_kernel_waits] {
    TakenCopy taken;
    if (walk_kernel_waits) {
      taken.waits = process::read_kernel_waits(target_pid);
    }
    taken.asked_at = now(); // the session's clock: read-only here
    taken.capture = capture::take(target_pid, co);
    taken.released_at = now();
    return taken;
  };
  try {
    pending.capture = std::async(std::launch::async, take);
  } catch (const std::system_error&) {
    pending.capture = std::async(std::launch::deferred, take); // no thread to be had
  }
}

double Session::Impl::take_copy(std::int64_t target_pid, milliseconds timeout) {
  start_copy(target_pid, timeout, false);
  return finish_copy(target_pid);
}

double Session::Impl::finish_copy(std::int64_t target_pid) {
  const double held_from = account_copy(target_pid);
  const std::string path = fmt::format("{}/core.{}", copy_dir, copies);
  capture::write_core(last_capture, path);
  last_capture = {};
  close_core(); // the last copy's, when still open
  const auto ex = command("-target-select core " + path, options.command_timeout);
  if (const auto msg = ex.error_message()) {
    throw Error(ExitCode::StepFailed,
                "the debugger could not read the copy of pid " + std::to_string(target_pid) + ": " +
                    *msg,
                "the target runs; attach the debugger instead (--stop attach)");
  }
  core_loaded = path;
  return held_from;
}

void Session::Impl::settle_copy() noexcept {
  if (copy_in_flight && pid) {
    try {
      account_copy(*pid);
    } catch (...) {
    }
  }
  copy_in_flight.reset();
  last_capture = {};
}

double Session::Impl::account_copy(std::int64_t target_pid) {
  PendingCopy pending = std::move(*copy_in_flight);
  copy_in_flight.reset();
  const double asked_at_first = pending.asked_at;
  TakenCopy taken;
  try {
    taken = pending.capture.get();
  } catch (const Error& e) {
    if (copies == 0 &&
        (e.code() == ExitCode::PtraceDenied || e.code() == ExitCode::NoSuchProcess)) {
      // Refused before anything was held.
      attach_sent = false;
      times.attach_sent = false;
    } else {
      times.stop_seconds = times.stop_seconds.value_or(0) + (now() - asked_at_first);
      times.detached = true;
    }
    check_target_state();
    throw;
  }
  if (taken.waits) {
    note_kernel_waits(*taken.waits);
  }
  const capture::Capture& c = taken.capture;
  const double asked_at = taken.asked_at;
  const double released_at = taken.released_at;
  const double held_from = std::max(asked_at, released_at - c.stop_seconds);
  copy_prep_seconds = held_from - asked_at;
  ++copies;
  times.copied = true;
  times.detached = true; // every thread was let go: nothing is held between copies
  times.stop_seconds = times.stop_seconds.value_or(0) + c.stop_seconds;
  if (copies == 1) {
    times.attach_seconds = c.seize_seconds;
  }
  times.total_seconds = released_at;
  std::map<std::int64_t, std::uint64_t> now_fingerprints;
  unchanged_stacks.clear();
  for (const auto& t : c.threads) {
    const std::uint64_t f = capture::stack_fingerprint(c, t);
    if (f == 0) {
      continue;
    }
    now_fingerprints.emplace(t.tid, f);
    if (const auto it = fingerprints.find(t.tid); it != fingerprints.end() && it->second == f) {
      unchanged_stacks.push_back(t.tid);
    }
  }
  fingerprints = std::move(now_fingerprints);
  // The format snapshot::parse_copy_note reads.
  // Threads in an uninterruptible wait are in the copy but were never held (their own warning).
  const auto held = std::count_if(c.threads.begin(), c.threads.end(),
                                  [](const capture::Thread& t) { return t.held; });
  on_note(
      fmt::format("copy: held {} threads of pid {} from {:.6f} s to {:.6f} s, then let them go; "
                  "the debugger reads the copy",
                  held, target_pid, held_from, released_at));
  for (const auto& n : thread_name_notes(c)) {
    on_note(n);
  }
  for (auto& w : c.warnings) {
    warn("copy: " + w);
  }
  check_target_state();
  last_capture = std::move(taken.capture);
  return held_from;
}

void Session::Impl::close_core() {
  if (core_loaded.empty()) {
    return;
  }
  command(console_command("core-file"), options.command_timeout);
  std::error_code ignored;
  std::filesystem::remove(core_loaded, ignored);
  core_loaded.clear();
}

void Session::Impl::remove_copies() noexcept {
  if (copy_dir.empty()) {
    return;
  }
  std::error_code ignored;
  std::filesystem::remove_all(copy_dir, ignored);
  copy_dir.clear();
}

const std::vector<std::int64_t>& Session::unchanged_stacks() const {
  return impl_->unchanged_stacks;
}

bool Session::stop_by_copy(std::function<void()> while_stopped) {
  Impl& s = *impl_;
  if (s.attach_sent || s.debugger.kind != DebuggerKind::Gdb || !capture::supported()) {
    return false;
  }
  s.copy_stop = true;
  s.copy_while_stopped = std::move(while_stopped);
  return true;
}

} // namespace rocplay::session
