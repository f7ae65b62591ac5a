// Crash evidence names (rocplay/core/names.hpp tables): an input's `formats` and an event's
// `kind` in crash JSON, written out so a changed name fails.
#include "rocplay/core/names.hpp"
#include "rocplay/crash/crash.hpp"

#include <catch2/catch.hpp>

using namespace rocplay;

TEST_CASE("crash input formats keep their names", "[crash][names]") {
  constexpr NameTable<crash::Format, 4> expected{{
      {crash::Format::Text, "text"},
      {crash::Format::DumpMetadata, "dump-metadata"},
      {crash::Format::Diagnostics, "diagnostics"},
      {crash::Format::DumpTensors, "dump-tensors"},
  }};
  static_assert(names_cover(expected, crash::Format::DumpTensors));
  for (const auto& [value, name] : expected) {
    CHECK(crash::to_string(value) == name);
    CHECK(value_of(expected, crash::to_string(value)) == value);
  }
}

TEST_CASE("crash event kinds keep their names", "[crash][names]") {
  constexpr NameTable<crash::EventKind, 15> expected{{
      {crash::EventKind::PageFault, "page-fault"},
      {crash::EventKind::RingTimeout, "ring-timeout"},
      {crash::EventKind::GpuReset, "gpu-reset"},
      {crash::EventKind::Xid, "xid"},
      {crash::EventKind::MemoryAccessFault, "memory-access-fault"},
      {crash::EventKind::CoreDump, "core-dump"},
      {crash::EventKind::GpuError, "gpu-error"},
      {crash::EventKind::OutOfMemory, "out-of-memory"},
      {crash::EventKind::CollectiveTimeout, "collective-timeout"},
      {crash::EventKind::ExitStatus, "exit-status"},
      {crash::EventKind::GpuHang, "gpu-hang"},
      {crash::EventKind::QueueAbort, "queue-abort"},
      {crash::EventKind::QueueEvictFailure, "queue-evict-failure"},
      {crash::EventKind::MesFailure, "mes-failure"},
      {crash::EventKind::DebuggerDiagnostic, "debugger-diagnostic"},
  }};
  static_assert(names_cover(expected, crash::EventKind::DebuggerDiagnostic));
  for (const auto& [value, name] : expected) {
    CHECK(crash::to_string(value) == name);
    CHECK(value_of(expected, crash::to_string(value)) == value);
  }
}
