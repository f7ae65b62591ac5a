// What every analysis ends in: a finding (heuristics over snapshots, the crash verdict, agent-log
// faults, the progress analysis), its severity and source locations, and the signature that
// groups like findings across inputs. Implemented in src/core/ (library rocplay_core), below
// every layer that makes or renders findings.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay {

enum class Severity : std::uint8_t { Info, Warning, Error, Critical };
std::string_view to_string(Severity severity);
// `info`, `warning`, `error`, `critical`; nullopt otherwise.
std::optional<Severity> severity_from_string(std::string_view name);

struct Location {
  std::string file;
  std::optional<std::uint32_t> line;
  std::string function;
  std::optional<std::uint64_t> pc;
  bool operator==(const Location&) const = default;
};

// A dispatch a finding is about, as its report names it: `kernel (dispatch id)`.
struct DispatchRef {
  std::string id;
  std::string kernel;
  bool operator==(const DispatchRef&) const = default;
};

struct Finding {
  std::string id;    // stable, e.g. `sync-lane-barrier-spin`
  std::string title; // one line
  Severity severity = Severity::Warning;
  double confidence = 0.5;           // 0..1
  std::string summary;               // what it means, in a sentence or three
  std::vector<std::string> evidence; // human lines: wave classes, PCs, dispatch ids
  nlohmann::json details;            // the same evidence, structured
  std::string next_step;             // what to do now
  std::vector<Location> locations;
  std::optional<int> rank; // for per-rank findings in multi-rank runs
  // The kernel the finding is about, as its report names it; empty when it names none (then
  // the first location's function stands for it in a signature).
  std::string kernel;
  // The dispatches it is about, the one it leads with first; the report reads these, never
  // `details` (which only the JSON carries, and is trimmed when no format prints it).
  std::vector<DispatchRef> dispatches;
};

// What one stuck pattern looks like, so inputs can be grouped: heuristic + kernel + source line.
struct Signature {
  std::string heuristic;
  std::string kernel;
  std::string location; // `hang.cu:8`, a host function, or `pc 0x7fa6e37a00c0`
  std::string key() const { return heuristic + "|" + kernel + "|" + location; }
  bool operator==(const Signature&) const = default;
};

// The finding's signature: its id, its kernel (else its first location's function), and where
// it stands: file name and line, else a host function (its address differs per process), else
// the PC.
Signature signature_of(const Finding& finding);

} // namespace rocplay
