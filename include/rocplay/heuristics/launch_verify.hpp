// `rocplay launch --verify`: is the kernel at the fault's PC the culprit or a victim? The seeds'
// experiments (the same program with blocking launches, with kernels serialised, with the user's
// own setting), each run under the debugger, compared by where each run faulted. Pure: the runs'
// snapshots in, one finding out (docs/launch.md, "Culprit or victim").
#pragma once

#include "rocplay/core/finding.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::heuristics {

inline constexpr std::string_view kVerifyStatic = "verify-static-fault";
inline constexpr std::string_view kVerifyRace = "verify-async-race";
inline constexpr std::string_view kVerifyMoved = "verify-fault-moved";
inline constexpr std::string_view kVerifyIntermittent = "verify-intermittent";
inline constexpr std::string_view kVerifyNoFault = "verify-no-fault";

// The experiment of the runs that change nothing.
inline constexpr std::string_view kAsGiven = "as given";

// Where one run faulted, as the fault finding names it: the kernel (or host function), the
// source line, the signal. Two runs fault in the same place when their function and line agree
// (the PC where there is no line).
struct FaultSite {
  std::string function; // the kernel on a GPU, else the host function
  Location at;          // the line to read (the user's frame of a host fault)
  bool on_gpu = false;
  std::string signal;
  FaultKind kind = FaultKind::Signal;
  std::string text() const; // `reader at race.cpp:41`
  bool same_place(const FaultSite& other) const;
};

// The fault the snapshot was stopped on, as a site; nullopt when it holds no fault.
std::optional<FaultSite> fault_site(const Snapshot& snapshot);

// The user's line that led to the fault: the faulting thread's innermost Python frame, else the
// first Python frame of any thread (the launching line of a GPU fault), else empty.
std::string launch_line(const Snapshot& snapshot);

// What else was running when it faulted, the racer's candidates: the kernels of the other
// dispatches in flight (GPU), the other threads' innermost frames of user code (host). At most 6.
std::vector<std::string> concurrent_work(const Snapshot& snapshot);

struct VerifyRun {
  LaunchRun run;
  std::optional<FaultSite> fault;
  std::string launch_line;
  std::vector<std::string> concurrent;  // concurrent_work at the fault
  std::string recording;                // the run's transcript, when recorded
  std::vector<LaunchSite> launch_sites; // the run's traced launches (LaunchRun::launch_sites)
};

// Where the runs' kernels were launched, from whichever runs traced their launches (the
// experiments do, when the first fault has no Python line): a faulting run without a launching
// line gets its kernel's, and a kernel in flight at a fault gets its own
// (`kernel produce (in flight; launched from main at race.cu:60)`).
void add_launch_sites(std::vector<VerifyRun>& runs);

// Each kernel's last launching line over the runs that traced their launches, in the order first
// launched.
std::vector<LaunchSite> launch_sites(const std::vector<VerifyRun>& runs);

// The verdict over the runs (the baseline: experiment kAsGiven): a static fault (the same place
// in every run, experiments included), an asynchronous race (an experiment made it go away: the
// kernel at the PC is likely a victim), a fault that moved (an experiment faulted elsewhere: name
// both), intermittent (neither clear), or no fault to verify. Evidence: one line per run.
Finding compare_verify_runs(const std::vector<VerifyRun>& runs);

} // namespace rocplay::heuristics
