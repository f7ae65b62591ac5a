// The fault kinds and the signals they stand for (rocplay/core/fault.hpp): vocabulary shared by the
// session (which stops are faults while a launched program runs) and the snapshot model.
#include "rocplay/core/fault.hpp"

#include "rocplay/core/names.hpp"

namespace rocplay {

namespace {
constexpr NameTable<FaultKind, 8> kFaultIds{{
    {FaultKind::MemoryViolation, "memory-violation"},
    {FaultKind::Assert, "assert"},
    {FaultKind::IllegalInstruction, "illegal-instruction"},
    {FaultKind::Arithmetic, "arithmetic"},
    {FaultKind::BusError, "bus-error"},
    {FaultKind::Trap, "trap"},
    {FaultKind::Exception, "exception"},
    {FaultKind::Signal, "signal"},
}};
static_assert(names_cover(kFaultIds, FaultKind::Signal));

bool fault_text_has(std::string_view hay, std::string_view needle) {
  return hay.find(needle) != std::string_view::npos;
}
} // namespace

std::string_view to_string(FaultKind kind) {
  return name_of(kFaultIds, kind, "signal");
}

std::optional<FaultKind> fault_kind_from_string(std::string_view id) {
  return value_of(kFaultIds, id);
}

std::optional<FaultKind> fault_kind_of_signal(std::string_view name, std::string_view meaning) {
  if (name == "SIGSEGV") {
    return FaultKind::MemoryViolation;
  }
  if (name == "SIGABRT") {
    return FaultKind::Assert;
  }
  if (name == "SIGILL") {
    return FaultKind::IllegalInstruction;
  }
  if (name == "SIGFPE") {
    return FaultKind::Arithmetic;
  }
  if (name == "SIGBUS") {
    return FaultKind::BusError;
  }
  if (name == "SIGTRAP") {
    return FaultKind::Trap;
  }
  if (name == "SIGSYS") {
    return FaultKind::Signal;
  }
  if (name.starts_with("CUDA_EXCEPTION")) {
    // cuda-gdb names its exceptions by number; the meaning says which.
    if (fault_text_has(meaning, "Assert")) {
      return FaultKind::Assert;
    }
    if (fault_text_has(meaning, "Misaligned")) {
      return FaultKind::BusError;
    }
    if (fault_text_has(meaning, "Illegal Address") || fault_text_has(meaning, "Out-of-range") ||
        fault_text_has(meaning, "Out-of-Range") || fault_text_has(meaning, "Address") ||
        fault_text_has(meaning, "Memory")) {
      return FaultKind::MemoryViolation;
    }
    if (fault_text_has(meaning, "Illegal Instruction") || fault_text_has(meaning, "Invalid PC")) {
      return FaultKind::IllegalInstruction;
    }
    return FaultKind::Exception;
  }
  return std::nullopt;
}

} // namespace rocplay
