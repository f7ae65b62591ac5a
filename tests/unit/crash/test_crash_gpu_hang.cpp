// GPU hangs, CLR queue aborts, KFD/MES failures and dbgapi diagnostics as crash evidence
// (fixtures/crash/gpu-hang/, docs/crash-evidence.md).
#include "rocplay/crash/crash.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace rocplay;
namespace fs = std::filesystem;

namespace gpu_hang_test {

const fs::path kHangDir = fs::path(ROCPLAY_SOURCE_DIR) / "fixtures" / "crash" / "gpu-hang";

crash::Evidence hang_read(const std::string& name) {
  std::ifstream in(kHangDir / name, std::ios::binary);
  REQUIRE(in);
  crash::ReadOptions o;
  o.source = (kHangDir / name).string();
  return crash::read_stream(in, crash::Format::Text, o);
}

std::vector<const crash::Event*> hang_of(const crash::Evidence& ev, crash::EventKind kind) {
  std::vector<const crash::Event*> out;
  for (const auto& e : ev.events) {
    if (e.kind == kind) {
      out.push_back(&e);
    }
  }
  return out;
}

bool hang_has_finding(const std::vector<Finding>& fs, std::string_view id) {
  return std::any_of(fs.begin(), fs.end(), [&](const Finding& f) { return f.id == id; });
}

} // namespace gpu_hang_test

TEST_CASE("HW Exception GPU Hang lines: glued to a progress bar, once per process") {
  const auto ev = gpu_hang_test::hang_read("hw-exception-glued.log");
  const auto hangs = gpu_hang_test::hang_of(ev, crash::EventKind::GpuHang);
  REQUIRE(hangs.size() == 3);
  for (const auto* e : hangs) {
    CHECK(e->device == "node-4");
    CHECK(e->reason == "GPU Hang");
    CHECK(e->name == "GPU hang");
  }
  CHECK(hangs.front()->text.rfind("HW Exception", 0) == 0); // the progress bar is not the text
  const auto fs = crash::findings(ev);
  REQUIRE(gpu_hang_test::hang_has_finding(fs, crash::kGpuHang));
  // The joined verdict is the hang itself: which node, and what to collect next.
  crash::Joiner j;
  j.add(ev);
  const auto v = j.verdict();
  REQUIRE(!v.empty());
  CHECK(v.front().id == crash::kCrashVerdict);
  CHECK(v.front().title.find("GPU hung") != std::string::npos);
  CHECK(v.front().title.find("node-4") != std::string::npos);
  CHECK(v.front().next_step.find("hang-triage") != std::string::npos);
}

TEST_CASE("KFD preemption time-outs repeating every few seconds are one event each, counted") {
  const auto ev = gpu_hang_test::hang_read("kfd-preemption-loop.txt");
  const auto evict = gpu_hang_test::hang_of(ev, crash::EventKind::QueueEvictFailure);
  // time-out (device 0000:43:00.0), evict, quiesce, restore (no device): one event per message.
  REQUIRE(evict.size() == 4);
  const auto timeout = std::find_if(evict.begin(), evict.end(), [](const crash::Event* e) {
    return e->name == "queue preemption time out";
  });
  REQUIRE(timeout != evict.end());
  CHECK((*timeout)->device == "0000:43:00.0");
  CHECK((*timeout)->number == 3);
  CHECK(gpu_hang_test::hang_has_finding(crash::findings(ev), crash::kGpuHang));
}

TEST_CASE("MES REMOVE_QUEUE failures and the GPU reset after them") {
  const auto ev = gpu_hang_test::hang_read("mes-remove-queue-reset.txt");
  const auto mes = gpu_hang_test::hang_of(ev, crash::EventKind::MesFailure);
  REQUIRE(mes.size() == 2);
  CHECK(mes[0]->name == "MES did not respond to REMOVE_QUEUE");
  CHECK(mes[0]->number == 2);
  CHECK(mes[0]->device == "0000:c1:00.0");
  CHECK(gpu_hang_test::hang_of(ev, crash::EventKind::GpuReset).size() == 2);
  CHECK(gpu_hang_test::hang_of(ev, crash::EventKind::RingTimeout).size() == 1);
  CHECK(gpu_hang_test::hang_has_finding(crash::findings(ev), crash::kGpuHang));
}

TEST_CASE("CLR queue aborts of both generations, a cut line, and ROCm 4's status form") {
  const auto ev = gpu_hang_test::hang_read("clr-abort-generations.log");
  const auto aborts = gpu_hang_test::hang_of(ev, crash::EventKind::QueueAbort);
  REQUIRE(aborts.size() == 3);
  CHECK(aborts[0]->pid == 7711);
  CHECK(aborts[0]->name == "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION");
  CHECK(aborts[0]->number == 0x29);
  CHECK(aborts[1]->pid == 7712);
  CHECK(aborts[1]->device == "queue 0x7f0a18200000");
  CHECK(aborts[1]->name == "HSA_STATUS_ERROR_EXCEPTION"); // from the line after the cut
  CHECK(aborts[1]->number == 0x1016);
  CHECK(aborts[2]->number == 0x100f);
  CHECK(gpu_hang_test::hang_of(ev, crash::EventKind::CoreDump).size() == 1);
  CHECK(gpu_hang_test::hang_has_finding(crash::findings(ev), crash::kQueueAbort));
}

TEST_CASE("libomptarget OFFLOAD ERROR is a memory access fault with its address") {
  const auto ev = gpu_hang_test::hang_read("offload-error.log");
  const auto faults = gpu_hang_test::hang_of(ev, crash::EventKind::MemoryAccessFault);
  REQUIRE(faults.size() == 1);
  CHECK(faults[0]->device == "GPU 4");
  CHECK(faults[0]->address == 0x7f1c44a21000ULL);
  CHECK(gpu_hang_test::hang_has_finding(crash::findings(ev), crash::kGpuFault));
}

TEST_CASE("dbgapi and ROCgdb diagnostics, whatever their prefix") {
  const auto ev = gpu_hang_test::hang_read("dbgapi-diagnostics.log");
  const auto d = gpu_hang_test::hang_of(ev, crash::EventKind::DebuggerDiagnostic);
  REQUIRE(d.size() == 4);
  CHECK(d[0]->name == "agent busy");
  CHECK(d[1]->name == "per-queue memory missing");
  CHECK(d[2]->name == "could not attach");
  CHECK(d[2]->pid == 7711);
  CHECK(d[3]->name == "queue snapshot failed");
  const auto fs = crash::findings(ev);
  REQUIRE(gpu_hang_test::hang_has_finding(fs, crash::kDebuggerDiagnostic));
  for (const auto& f : fs) {
    if (f.id == crash::kDebuggerDiagnostic) {
      CHECK(f.next_step.find("debugger hook") != std::string::npos);
    }
  }
}
