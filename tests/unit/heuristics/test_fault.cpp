// The fault model and the gpu-fault / host-fault finding: the reconstructed rocgdb fault stops,
// a cuda-gdb exception stop, a host signal, a catchpoint, and stops that are no fault.
#include "../snapshot/support.hpp"
#include "rocplay/heuristics/heuristics.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

using namespace rocplay;

namespace {

mi::Exchange exchange_of(std::string_view command, const std::vector<std::string>& lines) {
  std::string text = "# rocplay-transcript 1\n# meta {}\n";
  double t = 0.001;
  if (!command.empty()) {
    text += fmt::format("> {:.3f} 1{}\n", t, command);
  }
  for (const auto& l : lines) {
    t += 0.001;
    text += fmt::format("< {:.3f} {}\n", t, l);
  }
  mi::TranscriptReader reader;
  reader.feed(text);
  reader.finish();
  mi::Exchange out;
  while (auto ex = reader.next()) {
    for (const auto& r : ex->records) {
      out.records.push_back(r);
    }
    if (!ex->command.empty()) {
      out.command = ex->command;
    }
  }
  return out;
}

Snapshot build_of(const std::vector<mi::Exchange>& exchanges, DebuggerKind kind) {
  snapshot::BuildOptions bo;
  bo.debugger = kind;
  return snapshot::build(exchanges, bo);
}

} // namespace

TEST_CASE("fault kinds from signal names, GDB's and cuda-gdb's") {
  CHECK(fault_kind_of_signal("SIGSEGV") == FaultKind::MemoryViolation);
  CHECK(fault_kind_of_signal("SIGABRT") == FaultKind::Assert);
  CHECK(fault_kind_of_signal("SIGFPE") == FaultKind::Arithmetic);
  CHECK(fault_kind_of_signal("SIGILL") == FaultKind::IllegalInstruction);
  CHECK(fault_kind_of_signal("SIGBUS") == FaultKind::BusError);
  CHECK(fault_kind_of_signal("CUDA_EXCEPTION_14", "Warp Illegal Address") ==
        FaultKind::MemoryViolation);
  CHECK(fault_kind_of_signal("CUDA_EXCEPTION_12", "Warp Assert") == FaultKind::Assert);
  CHECK(fault_kind_of_signal("CUDA_EXCEPTION_6", "Warp Misaligned Address") == FaultKind::BusError);
  CHECK_FALSE(fault_kind_of_signal("SIGINT"));
  CHECK_FALSE(fault_kind_of_signal("SIGUSR1"));
  CHECK_FALSE(fault_kind_of_signal("0"));
  for (auto k : {FaultKind::MemoryViolation, FaultKind::Assert, FaultKind::IllegalInstruction,
                 FaultKind::Arithmetic, FaultKind::BusError, FaultKind::Trap, FaultKind::Exception,
                 FaultKind::Signal}) {
    CHECK(fault_kind_from_string(to_string(k)) == k);
  }
}

TEST_CASE("rocgdb wave memory violation (reconstructed): gpu-fault names the wave, kernel, line") {
  const Snapshot s = test::load("rocgdb/wave-memory-violation/snapshot.mi");
  REQUIRE(s.fault);
  CHECK(s.fault->kind == FaultKind::MemoryViolation);
  CHECK(s.fault->signal == "SIGSEGV");
  CHECK(s.fault->on_gpu);
  CHECK(s.fault->thread_id == "7");
  CHECK(s.fault->lane == 0u);
  CHECK(s.fault->line == 15u);
  CHECK(s.fault->detail.find("precise memory violation") != std::string::npos);
  const auto findings = heuristics::run(s);
  REQUIRE_FALSE(findings.empty());
  const Finding& f = findings.front();
  CHECK(f.id == "gpu-fault");
  CHECK(f.severity == Severity::Critical);
  CHECK(f.title.find("saxpy_kernel") != std::string::npos);
  CHECK(f.title.find("memory violation") != std::string::npos);
  bool wave = false;
  bool dispatch = false;
  for (const auto& e : f.evidence) {
    wave |=
        e.find("AMDGPU Wave 1:2:1:1") != std::string::npos && e.find("lane 0") != std::string::npos;
    dispatch |= e.find("AMDGPU Dispatch 1:2:1") != std::string::npos;
  }
  CHECK(wave);
  CHECK(dispatch);
  REQUIRE_FALSE(f.locations.empty());
  CHECK(f.locations.front().line == 15u);
  CHECK(f.details["dispatch"]["kernel"].get<std::string>().find("saxpy_kernel") !=
        std::string::npos);
}

TEST_CASE("rocgdb device assert (reconstructed): the faulting wave, not the first, is named") {
  const Snapshot s = test::load("rocgdb/wave-device-assert/snapshot.mi");
  REQUIRE(s.fault);
  CHECK(s.fault->kind == FaultKind::Assert);
  CHECK(s.fault->thread_id == "9");
  CHECK(s.fault->lane == 5u);
  const auto findings = heuristics::run(s);
  REQUIRE_FALSE(findings.empty());
  CHECK(findings.front().id == "gpu-fault");
  CHECK(findings.front().title.find("check_kernel") != std::string::npos);
  CHECK(findings.front().locations.front().line == 22u);
  // The wave stopped in its own code: that frame is the one location, and its .hip file makes the
  // kernel C++, not a Triton guess from the plain name.
  REQUIRE(s.fault->frames.size() == 1);
  CHECK(findings.front().locations.size() == 1);
  CHECK(findings.front().details["dispatch"]["kernel_info"]["family"] == "hip_cpp");
}

TEST_CASE("cuda-gdb exception stop: the focus is the faulting thread, a SIGINT stop is no fault") {
  const auto stop = exchange_of(
      "",
      {R"MI(~"\nCUDA Exception: Warp Illegal Address\nThe exception was triggered at PC 0x7f9cbf7ac2d0 (oob.cu:9)\n")MI",
       R"MI(*stopped,reason="signal-received",signal-name="CUDA_EXCEPTION_14",signal-meaning="Warp Illegal Address",CudaFocus={device="0",sm="0",warp="1",lane="3",kernel="0",grid="1",blockIdx="(2,0,0)",threadIdx="(35,0,0)"},frame={addr="0x00007f9cbf7ac2d0",func="oob_store",args=[],file="/home/dev/oob.cu",fullname="/home/dev/oob.cu",line="9",arch="m68k"},thread-id="1",stopped-threads="all")MI"});
  const Snapshot s = build_of({stop}, DebuggerKind::CudaGdb);
  REQUIRE(s.fault);
  CHECK(s.fault->kind == FaultKind::MemoryViolation);
  CHECK(s.fault->on_gpu);
  CHECK(s.fault->kernel == 0u);
  CHECK(s.fault->block == "(2,0,0)");
  CHECK(s.fault->thread == "(35,0,0)");
  CHECK(s.fault->detail.find("CUDA Exception: Warp Illegal Address") != std::string::npos);
  const auto findings = heuristics::run(s);
  REQUIRE_FALSE(findings.empty());
  CHECK(findings.front().id == "gpu-fault");

  const auto interrupt = exchange_of(
      "",
      {R"MI(*stopped,reason="signal-received",signal-name="SIGINT",signal-meaning="Interrupt",frame={addr="0x00007f9cbf7ac2c0",func="main",args=[]},thread-id="1",stopped-threads="all")MI"});
  CHECK_FALSE(build_of({interrupt}, DebuggerKind::Gdb).fault);
}

TEST_CASE("host signal and catchpoint stops: host-fault, address from $_siginfo, JSON round trip") {
  const auto stop = exchange_of(
      "",
      {R"MI(*stopped,reason="signal-received",signal-name="SIGSEGV",signal-meaning="Segmentation fault",frame={addr="0x0000555555555169",func="write_through_null",args=[],file="fault_target.cpp",fullname="/src/fault_target.cpp",line="21",arch="i386:x86-64"},thread-id="1",stopped-threads="all",core="0")MI"});
  const auto addr =
      exchange_of("-data-evaluate-expression \"$_siginfo._sifields._sigfault.si_addr\"",
                  {R"MI(1^done,value="(void *) 0x10")MI"});
  const Snapshot s = build_of({stop, addr}, DebuggerKind::Gdb);
  REQUIRE(s.fault);
  CHECK_FALSE(s.fault->on_gpu);
  CHECK(s.fault->address == 0x10u);
  const Snapshot back = snapshot_from_json(to_json(s));
  CHECK(back == s);
  const auto findings = heuristics::program_fault(s);
  REQUIRE(findings.size() == 1);
  CHECK(findings.front().id == "host-fault");
  CHECK(findings.front().title.find("write_through_null") != std::string::npos);

  const auto created = exchange_of(
      "-interpreter-exec console \"catch throw\"",
      {R"MI(=breakpoint-created,bkpt={number="1",type="catchpoint",disp="keep",enabled="y",what="exception throw",catch-type="throw",thread-groups=["i1"],times="0"})MI",
       R"MI(1^done)MI"});
  const auto hit = exchange_of(
      "",
      {R"MI(*stopped,bkptno="1",reason="breakpoint-hit",disp="keep",frame={addr="0x00007ffff7e4a672",func="__cxa_throw",args=[],from="/lib/x86_64-linux-gnu/libstdc++.so.6",arch="i386:x86-64"},thread-id="1",stopped-threads="all",core="1")MI"});
  const Snapshot c = build_of({created, hit}, DebuggerKind::Gdb);
  REQUIRE(c.fault);
  CHECK(c.fault->kind == FaultKind::Exception);
  // A breakpoint that is not the catchpoint is no fault.
  const auto other = exchange_of(
      "",
      {R"MI(*stopped,bkptno="2",reason="breakpoint-hit",disp="keep",frame={addr="0x1",func="f",args=[]},thread-id="1",stopped-threads="all")MI"});
  CHECK_FALSE(build_of({created, other}, DebuggerKind::Gdb).fault);
}

TEST_CASE("a host signal a process sent (si_code 0 and below) is named with its sender, not as a "
          "fault") {
  auto stop_on = [](std::string_view signal, std::string_view meaning) {
    return exchange_of(
        "",
        {fmt::format(
            R"MI(*stopped,reason="signal-received",signal-name="{}",signal-meaning="{}",frame={{addr="0x0000555555555169",func="main",args=[],file="app.cpp",fullname="/src/app.cpp",line="12",arch="i386:x86-64"}},thread-id="1",stopped-threads="all",core="0")MI",
            signal, meaning)});
  };
  auto evaluated = [](std::string_view expression, std::string_view value) {
    return exchange_of(fmt::format("-data-evaluate-expression \"{}\"", expression),
                       {fmt::format(R"MI(1^done,value="{}")MI", value)});
  };
  const auto addr = evaluated("$_siginfo._sifields._sigfault.si_addr", "(void *) 0x3e8000010a2");
  const auto sender = evaluated("$_siginfo._sifields._kill.si_pid", "4258");

  // kill -SEGV from process 4258: the pid bytes that si_addr read are no address.
  Snapshot s = build_of(
      {stop_on("SIGSEGV", "Segmentation fault"), addr, evaluated("$_siginfo.si_code", "0"), sender},
      DebuggerKind::Gdb);
  s.pid = 4242;
  REQUIRE(s.fault);
  CHECK(s.fault->signal_code == 0);
  CHECK(s.fault->sender_pid == 4258);
  CHECK(s.fault->sent_by_process());
  CHECK_FALSE(s.fault->address);
  CHECK(snapshot_from_json(to_json(s)) == s);
  auto f = heuristics::program_fault(s);
  REQUIRE(f.size() == 1);
  CHECK(f[0].id == "host-fault");
  CHECK(f[0].title == "Host signal: SIGSEGV (Segmentation fault) sent by process 4258, in main "
                      "at /src/app.cpp:12");
  CHECK(f[0].next_step.find("ps -o pid,ppid,user,args -p 4258") != std::string::npos);
  CHECK(f[0].next_step.find("kill -SEGV") != std::string::npos);
  CHECK(f[0].details["fault"]["sent_by"] == "process");
  CHECK(f[0].details["fault"]["sender_pid"] == 4258);
  REQUIRE_FALSE(f[0].evidence.empty());
  CHECK(f[0].evidence[0] == "stopped on SIGSEGV (Segmentation fault) at pc 0x555555555169");

  // The kernel's SIGSEGV (SEGV_MAPERR) keeps its address and its wording.
  s = build_of(
      {stop_on("SIGSEGV", "Segmentation fault"), addr, evaluated("$_siginfo.si_code", "1")},
      DebuggerKind::Gdb);
  REQUIRE(s.fault);
  CHECK(s.fault->address == 0x3e8000010a2u);
  CHECK_FALSE(s.fault->sent_by_process());
  f = heuristics::program_fault(s);
  CHECK(f[0].title.rfind("Host fault: memory violation (SIGSEGV", 0) == 0);
  CHECK(f[0].details["fault"]["sent_by"] == "kernel");

  // The program's own abort() sends SIGABRT with tgkill: still its assert. Another process's
  // SIGABRT is not.
  s = build_of({stop_on("SIGABRT", "Aborted"), evaluated("$_siginfo.si_code", "-6"),
                evaluated("$_siginfo._sifields._kill.si_pid", "4242")},
               DebuggerKind::Gdb);
  s.pid = 4242;
  f = heuristics::program_fault(s);
  CHECK(f[0].title.rfind("Host fault: assert (SIGABRT, Aborted)", 0) == 0);
  bool said = false;
  for (const auto& e : f[0].evidence) {
    said |= e == "SIGABRT sent by the program itself (pid 4242) with tgkill() (raise(), abort(), "
                 "pthread_kill()), not raised by a faulting instruction";
  }
  CHECK(said);
  s.pid = 7;
  f = heuristics::program_fault(s);
  CHECK(f[0].title.rfind("Host signal: SIGABRT (Aborted) sent by process 4242", 0) == 0);

  // Bad values are not read: a pid of 0, a code past 32 bits, text.
  s = build_of({stop_on("SIGSEGV", "Segmentation fault"),
                evaluated("$_siginfo.si_code", "9999999999"),
                evaluated("$_siginfo._sifields._kill.si_pid", "0")},
               DebuggerKind::Gdb);
  CHECK_FALSE(s.fault->signal_code);
  CHECK_FALSE(s.fault->sender_pid);
  s = build_of({stop_on("SIGSEGV", "Segmentation fault"),
                evaluated("$_siginfo.si_code", "<error: no siginfo>")},
               DebuggerKind::Gdb);
  CHECK_FALSE(s.fault->signal_code);
}

TEST_CASE(
    "cuda-gdb on an H100 (real recording): the failed CUDA calls of a kernel fault it did not "
    "stop on are the verdict, live or replayed") {
  const Snapshot s = test::load("cuda-gdb/h100-launch/oob_store.rec");
  CHECK_FALSE(s.fault);
  REQUIRE(s.api_errors.size() == 2);
  CHECK(s.api_errors[0] ==
        "Returning 715 (CUDA_ERROR_ILLEGAL_INSTRUCTION) from cuCtxSynchronize_v2");
  CHECK(s.api_errors[1] == "cudaDeviceSynchronize returned cudaErrorIllegalInstruction(CUresult="
                           "715): an illegal instruction was encountered");
  CHECK(snapshot_from_json(to_json(s)) == s);
  const auto findings = heuristics::run(s);
  REQUIRE_FALSE(findings.empty());
  const Finding& v = findings.front();
  CHECK(v.id == "cuda-api-error");
  CHECK(v.severity == Severity::Critical);
  CHECK(v.title == "CUDA call failed: cudaDeviceSynchronize returned "
                   "cudaErrorIllegalInstruction(CUresult=715)");
  CHECK(v.evidence.size() == 2);
  CHECK(v.next_step.find("api_failures stop") != std::string::npos);
  CHECK(v.details["api_errors"].size() == 2);

  // At most kMaxApiErrors, each once; the fault stop of the same program under `api_failures
  // stop` leads, the calls (if any) follow as an error.
  const auto transcript = test::read_file(test::fixture_path("cuda-gdb/h100-launch/oob_store.rec"));
  const auto exchanges = mi::read_transcript(transcript);
  CHECK(snapshot::cuda_api_errors(exchanges, 1).size() == 1);
  CHECK(snapshot::cuda_api_errors(exchanges).size() == 2);
  Snapshot faulted = test::load("cuda-gdb/h100-launch/device_assert.rec");
  CHECK(faulted.api_errors.empty());
  faulted.api_errors = s.api_errors;
  const auto both = heuristics::run(faulted);
  REQUIRE(both.size() >= 2);
  CHECK(both[0].id == "gpu-fault");
  bool echoed = false;
  for (const auto& f : both) {
    echoed |= f.id == "cuda-api-error" && f.severity == Severity::Error;
  }
  CHECK(echoed);
}

TEST_CASE("cuda-gdb on an H100 (real recording): a device assert launched with rocplay launch") {
  const Snapshot s = test::load("cuda-gdb/h100-launch/device_assert.rec");
  REQUIRE(s.fault);
  CHECK(s.fault->kind == FaultKind::Assert);
  CHECK(s.fault->signal == "CUDA_EXCEPTION_12");
  CHECK(s.fault->on_gpu);
  CHECK(s.fault->thread == "(77,0,0)"); // the element that failed its assert
  // The focus's GPU stack (fault-triage's `-stack-list-frames 0 30`): the runtime's assert, then
  // the kernel's line. The host threads' stacks stay apart.
  REQUIRE(s.fault->frames.size() == 2);
  CHECK(s.fault->frames[0].function == "__assert_fail");
  CHECK(s.fault->frames[1].function == "check_values");
  CHECK(s.fault->frames[1].line == 9u);
  for (const auto& t : s.host_threads) {
    for (const auto& f : t.frames) {
      CHECK(f.function != "check_values");
    }
  }
  const auto findings = heuristics::run(s);
  REQUIRE_FALSE(findings.empty());
  const Finding& v = findings.front();
  CHECK(v.id == "gpu-fault");
  CHECK(v.title.find("check_values") != std::string::npos);
  // Where to read: the kernel's assert line, not __assert_fail; the stop's frame comes second.
  REQUIRE(v.locations.size() == 2);
  CHECK(v.locations[0].function == "check_values");
  CHECK(v.locations[0].file == "device_assert.cu");
  CHECK(v.locations[0].line == 9u);
  CHECK(v.locations[1].function == "__assert_fail");
  CHECK(v.summary.find("at device_assert.cu:9") != std::string::npos);
  CHECK(v.next_step.find("device_assert.cu:9") != std::string::npos);
  // check_values is a plain name, which alone reads as Triton; its source file is CUDA C++.
  CHECK(v.details["dispatch"]["kernel_info"]["family"] == "hip_cpp");
  CHECK(v.details["dispatch"]["kernel_info"]["source"] == "device_assert.cu");
  bool kernel_line = false;
  for (const auto& e : v.evidence) {
    kernel_line |= e.find("kernel check_values: hip_cpp") != std::string::npos;
    CHECK(e.find("triton") == std::string::npos);
  }
  CHECK(kernel_line);
}

TEST_CASE("cuda-gdb on an H100 (real recording): an illegal access cuda-gdb did not stop on") {
  // The kernel's fault reached the host as a CUDA API error, and cuda-gdb reported a stop with
  // no reason: no fault in the model (launch_faults.sh's oob_store; docs/launch.md).
  const Snapshot s = test::load("cuda-gdb/h100-launch/oob_store.rec");
  CHECK_FALSE(s.fault);
}
