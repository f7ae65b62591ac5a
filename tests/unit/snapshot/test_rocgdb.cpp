// The rocgdb dialect on the reconstructed fixtures (fixtures/rocgdb/*) and on inline MI in the
// shapes rocgdb-formats.md quotes. Every snapshot goes through check_invariants().
#include "rocplay/snapshot/grouping.hpp"
#include "snapshot/text.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

using namespace rocplay;
using rocplay::test::check_invariants;
using rocplay::test::has_warning;
using rocplay::test::load;

namespace {

const Wave* wave_by_thread(const Snapshot& s, const std::string& id) {
  for (const auto& w : s.waves) {
    if (w.thread_id == id) {
      return &w;
    }
  }
  return nullptr;
}

// A recording built from MI lines: each `{command, lines}` becomes one exchange.
std::string recording(const std::vector<std::pair<std::string, std::vector<std::string>>>& ex,
                      const std::string& meta = "{}") {
  std::string out = "# rocplay-transcript 1\n# meta " + meta + "\n";
  int token = 1;
  for (const auto& [cmd, lines] : ex) {
    out += "> 0.001 " + std::to_string(token) + cmd + "\n";
    for (const auto& l : lines) {
      out += "< 0.002 " + (l.rfind("^", 0) == 0 ? std::to_string(token) + l : l) + "\n";
    }
    ++token;
  }
  return out;
}

Snapshot build_text(const std::string& text) {
  Snapshot s = snapshot::build_from_transcript(text);
  check_invariants(s);
  return s;
}

} // namespace

TEST_CASE("TP=8 worker: agents, queues, the dispatch and 128 waves", "[snapshot][rocgdb]") {
  mi::TranscriptInfo info;
  Snapshot s = load("rocgdb/tp8-allgather-sync-spin/snapshot.mi", &info);
  CHECK(info.format == mi::TranscriptFormat::Recording);
  CHECK(s.debugger == DebuggerKind::RocGdb);
  CHECK(s.debugger_version == "GNU gdb (rocm-rel-7.2.3) 16.3");
  CHECK(s.pid == 4303);
  CHECK(s.rank == 2);
  CHECK(s.coverage.agents);
  CHECK(s.coverage.queues);
  CHECK(s.coverage.dispatches);
  CHECK(s.coverage.threads);

  REQUIRE(s.agents.size() == 8);
  CHECK(s.agents[0].id == "1.1");
  CHECK(s.agents[0].number == 1u);
  CHECK(s.agents[7].number == 8u);
  CHECK(s.agents[2].gpu_id == 8729u);
  CHECK(s.agents[2].architecture == "gfx942");
  CHECK(s.agents[2].name == "AMD Instinct MI300X");
  CHECK(s.agents[2].cores == 1216u);
  CHECK(s.agents[2].location == "0000:38:00.0");

  REQUIRE(s.queues.size() == 3);
  CHECK(s.queues[1].target_id == "AMDGPU Queue 3:2 (QID 9)");
  CHECK(s.queues[1].agent == 3u);
  CHECK(s.queues[1].queue_no == 2u);
  CHECK(s.queues[1].os_qid == 9u);
  CHECK(s.queues[1].type == QueueType::Hsa);
  CHECK(s.queues[1].read == 411u);
  CHECK(s.queues[1].write == 414u);
  CHECK(s.queues[2].type == QueueType::Dma);

  REQUIRE(s.dispatches.size() == 1);
  const Dispatch& d = s.dispatches[0];
  CHECK(d.agent == 3u);
  CHECK(d.queue == 2u);
  CHECK(d.dispatch_no == 412u);
  CHECK(d.packet_id == 411u);
  CHECK(d.grid == std::vector<std::uint64_t>{8192, 1, 1});
  CHECK(d.workgroup == std::vector<std::uint64_t>{512, 1, 1});
  CHECK(d.fence.full());
  CHECK(d.fence_text == "B|Aa|Ra");
  CHECK(d.address_spaces == "Shared(16384), Private(0)");
  CHECK(d.completion == 0u);
  CHECK(d.kernel_address == 0x7fe8a5e40000u);
  // MI gives only the address; `info symbol` names it.
  CHECK(d.kernel_name ==
        "void aiter::allgather_vec<__hip_bfloat16, 8>(void*, void*, aiter::Signal*, int)");

  REQUIRE(s.waves.size() == 128);
  CHECK(s.host_threads.size() == 4);
  const Wave* w = wave_by_thread(s, "5");
  REQUIRE(w);
  CHECK(w->target_id == "AMDGPU Wave 3:2:412:1 (0,0,0)/0");
  CHECK(w->agent == 3u);
  CHECK(w->queue == 2u);
  CHECK(w->dispatch == 412u);
  CHECK(w->wave_no == 1u);
  CHECK(w->workgroup[0] == 0);
  CHECK(w->wave_in_group == 0u);
  CHECK(w->lane_count == 64u); // gfx942 is wave64
  CHECK(w->pc == 0x7fe8a5e41b3cu);
  CHECK(w->function == "aiter::start_sync<8>");
  CHECK(w->file == "custom_all_reduce.cuh");
  CHECK(w->line == 131u);
  CHECK(w->name == "allgather_vec");
  CHECK(w->lane == 0u); // from -thread-select's lane-id
  CHECK_FALSE(w->unattributed);
  const Wave* last = wave_by_thread(s, "132");
  REQUIRE(last);
  CHECK(last->workgroup[0] == 15);
  CHECK(last->wave_in_group == 7u);

  // `info line` once per unique PC: two PCs, two source lines, symbol offsets per PC.
  REQUIRE(s.source_lines.size() == 2);
  CHECK(s.source_lines[0].pc == 0x7fe8a5e41b3cu);
  CHECK(s.source_lines[0].line == 131u);
  CHECK(s.source_lines[0].offset == 0x1b3cu);
  // Demangled on entry, the linkage name kept beside it.
  CHECK(s.source_lines[0].function ==
        "void aiter::allgather_vec<__hip_bfloat16, 8>(void*, void*, aiter::Signal*, int)");
  CHECK(s.source_lines[0].linkage_name ==
        "_ZN5aiter13allgather_vecI14__hip_bfloat16Li8EEEvPvS2_PNS_6SignalEi");
  CHECK(s.dispatches[0].linkage_name ==
        "_ZN5aiter13allgather_vecI14__hip_bfloat16Li8EEEvPvS2_PNS_6SignalEi");
  CHECK(s.source_lines[1].line == 136u);

  // -lane-info "0-9" on the selected wave: 8 active lanes with a frame, 2 inactive.
  REQUIRE(s.lanes.size() == 10);
  CHECK(s.lanes[0].wave_thread == "5");
  CHECK(s.lanes[0].state == "A");
  CHECK(s.lanes[0].pc == 0x7fe8a5e41b3cu);
  CHECK(s.lanes[9].state == "I");
  CHECK_FALSE(s.lanes[9].pc);
  CHECK(s.lanes[9].work_item[0] == 9);

  REQUIRE(s.wave_counts);
  CHECK(s.wave_counts->total == 128u);
  CHECK(s.wave_counts->stopped == 128u);
  CHECK(s.warnings.empty());
}

TEST_CASE("a raw MI log without commands gives the same GPU state", "[snapshot][rocgdb]") {
  // Strip the recording to the debugger's own lines: what `rocgdb -i=mi3 > log` would hold.
  std::string rec =
      test::read_file(test::fixture_path("rocgdb/tp8-allgather-sync-spin/snapshot.mi"));
  std::string raw;
  for (auto line : snapshot::text::split_lines(rec)) {
    if (line.rfind("< ", 0) == 0) {
      auto sp = line.find(' ', 2);
      raw += std::string(line.substr(sp + 1)) + "\n";
    }
  }
  mi::TranscriptInfo info;
  Snapshot s = snapshot::build_from_transcript(raw, {}, &info);
  check_invariants(s);
  CHECK(info.format == mi::TranscriptFormat::RawMi);
  Snapshot r = load("rocgdb/tp8-allgather-sync-spin/snapshot.mi");
  CHECK(s.debugger == DebuggerKind::RocGdb);
  CHECK(s.agents == r.agents);
  CHECK(s.queues == r.queues);
  CHECK(s.waves.size() == r.waves.size());
  CHECK(s.source_lines == r.source_lines);
  REQUIRE(s.dispatches.size() == 1);
  // Without the `info symbol` command the address is not known, but the `info line` symbol
  // (`<_ZN5aiter13allgather_vec...+6960>`) still names the kernel at the dispatch's address.
  CHECK(s.dispatches[0].kernel_name == r.dispatches[0].kernel_name);
}

TEST_CASE("ROCm 5.x rocgdb: console tables, 29:00.0, AMDGPU Thread ids", "[snapshot][rocgdb]") {
  Snapshot s = load("rocgdb/rocm5-old-format/snapshot.mi");
  CHECK(s.debugger == DebuggerKind::RocGdb);
  CHECK(s.debugger_version == "GNU gdb (rocm-rel-5.7.1-8) 13.2");
  REQUIRE(s.agents.size() == 2);
  CHECK(s.agents[0].id == "1");
  CHECK(s.agents[0].current);
  CHECK(s.agents[0].location == "29:00.0");
  CHECK(s.agents[0].name == "Aldebaran/MI200 [Instinct MI250X/MI250]");
  CHECK(s.agents[0].threads == 3328u);
  CHECK(s.agents[1].location == "2c:00.0");
  REQUIRE(s.queues.size() == 2);
  CHECK(s.queues[0].read == 14u);
  CHECK(s.queues[0].write == 15u);
  CHECK(s.queues[0].size == 16777216u);
  CHECK(s.queues[1].current);
  CHECK_FALSE(s.queues[1].read); // blank cell: not supported
  CHECK_FALSE(s.queues[1].write);
  CHECK(s.queues[1].address == 0x00007fc9a0e00000u);
  REQUIRE(s.dispatches.size() == 1);
  // The CLI prints the demangled name, not an address.
  CHECK(s.dispatches[0].kernel_name == "saxpy(int, float const*, int, float*, int)");
  CHECK_FALSE(s.dispatches[0].kernel_address);
  CHECK(s.dispatches[0].dispatch_no == 15u);
  CHECK(s.dispatches[0].fence.full());
  // Waves from -thread-info (with PCs); `info threads` does not add them twice.
  REQUIRE(s.waves.size() == 4);
  CHECK(s.waves[0].target_id == "AMDGPU Thread 1:1:15:1 (0,0,0)/0");
  CHECK(s.waves[0].name == "saxpy"); // the process name in old builds
  CHECK(s.waves[0].lane_count == 64u);
  CHECK(s.waves[1].pc == 0x7fc9a440106cu);
  CHECK(s.host_threads.size() == 2);
  CHECK(s.host_threads[0].lwp == 3314u);
}

TEST_CASE("`info threads` alone gives waves and host threads", "[snapshot][rocgdb]") {
  std::string text = recording({
      {"-interpreter-exec console \"info threads\"",
       {"~\"  Id   Target Id                                     Frame \\n\"",
        "~\"  1    Thread 0x7ffff6288180 (LWP 645917) \\\"nosimple\\\" 0x00007ffff207d586 in ?? () "
        "from /opt/rocm-7.1.0/lib/libhsa-runtime64.so.1\\n\"",
        "~\"* 7    AMDGPU Wave 1:2:1:1 (0,0,0)/0 \\\"saxpy\\\"             kern () at "
        "/home/user/saxpy.cpp:7\\n\"",
        "^done"}},
  });
  Snapshot s = build_text(text);
  CHECK(s.debugger == DebuggerKind::RocGdb);
  REQUIRE(s.waves.size() == 1);
  CHECK(s.waves[0].thread_id == "7");
  CHECK(s.waves[0].name == "saxpy");
  CHECK(s.waves[0].function == "kern");
  CHECK(s.waves[0].line == 7u);
  CHECK(s.waves[0].dispatch == 1u);
  CHECK(s.waves[0].unattributed); // no dispatch list was taken
  CHECK(has_warning(s, "no dispatch list was taken"));
  REQUIRE(s.host_threads.size() == 1);
  CHECK(s.host_threads[0].name == "nosimple");
  CHECK(s.host_threads[0].lwp == 645917u);
  REQUIRE(s.host_threads[0].frames.size() == 1);
  CHECK(s.host_threads[0].frames[0].from == "/opt/rocm-7.1.0/lib/libhsa-runtime64.so.1");
}

TEST_CASE("late attach: `?` coordinates kept, flagged unattributed", "[snapshot][rocgdb]") {
  Snapshot s = load("rocgdb/late-attach-unknown-coordinates/snapshot.mi");
  REQUIRE(s.waves.size() == 11);
  std::size_t unattributed = 0;
  for (const auto& w : s.waves) {
    unattributed += w.unattributed ? 1 : 0;
  }
  CHECK(unattributed == 7);
  const Wave& first = s.waves[0];
  CHECK(first.agent == 1u);
  CHECK_FALSE(first.dispatch);
  CHECK_FALSE(first.workgroup[0]);
  CHECK_FALSE(first.wave_in_group);
  CHECK(first.pc.has_value());
  const Wave& no_agent = s.waves[6];
  CHECK_FALSE(no_agent.agent);
  CHECK(has_warning(s, "7 wave(s) are unattributed"));
  // Waves launched after the attach are attributed.
  CHECK_FALSE(s.waves[7].unattributed);
  CHECK(s.waves[7].dispatch == 4u);
}

TEST_CASE("nothing active: empty MI lists and CLI messages count as asked", "[snapshot][rocgdb]") {
  Snapshot d = load("rocgdb/dispatcher-nothing-active/snapshot.mi");
  CHECK(d.debugger == DebuggerKind::RocGdb);
  CHECK(d.agents.empty());
  CHECK(d.coverage.agents);
  CHECK(d.coverage.dispatches);
  CHECK(d.host_threads.size() == 3);

  std::string text = recording({
      {"-interpreter-exec console \"info agents\"",
       {"~\"No agents are currently active.\\n\"", "^done"}},
      {"-interpreter-exec console \"info queues 9\"",
       {"~\"No active queues match '9'.\\n\"", "^done"}},
  });
  Snapshot s = build_text(text);
  CHECK(s.debugger == DebuggerKind::RocGdb);
  CHECK(s.coverage.agents);
  // A filtered query that matched nothing says nothing about all queues.
  CHECK_FALSE(s.coverage.queues);
}

TEST_CASE("debug agent fixture: agents but no queues, env from meta", "[snapshot][rocgdb]") {
  Snapshot s = load("rocgdb/debug-agent-holds-hook/snapshot.mi");
  CHECK(s.agents.size() == 8);
  CHECK(s.queues.empty());
  CHECK(s.coverage.queues);
  CHECK(s.env.at("HSA_TOOLS_LIB") == "/opt/rocm/lib/librocm-debug-agent.so.2");
}

TEST_CASE("the manual's schema: fences and address-spaces as lists, device-name, queue-id",
          "[snapshot][rocgdb]") {
  std::string text = recording({
      {"-agent-info",
       {"^done,agents=[{id=\"1.1\",state=\"A\",target-id=\"AMDGPU Agent (GPUID 45151)\","
        "architecture=\"gfx906\",device-name=\"vega20\",cores=\"240\",threads=\"2400\","
        "location=\"0a:00.0\"},{id=\"1.2\",state=\"A\",target-id=\"AMDGPU Agent (GPUID 45152)\","
        "architecture=\"gfx906\",name=\"vega20\",cores=\"240\",threads=\"2400\","
        "location=\"44:00.0\"}],current-agent-id=\"1.1\""}},
      {"-dispatch-info",
       {"^done,dispatches=[{id=\"1.1\",target-id=\"AMDGPU Dispatch 1:1:1 (PKID 0)\","
        "queue-id=\"1.1\",grid=\"[256]\",workgroup=\"[64]\","
        "fences=[{name=\"barrier\",value=\"present\",abbrev=\"B\"},{name=\"acquire\","
        "value=\"agent\",abbrev=\"Aa\"},{name=\"release\",value=\"system\",abbrev=\"Rs\"}],"
        "address-spaces=[{name=\"Shared\",size=\"1024\",abbrev=\"S\"},{name=\"Private\","
        "size=\"0\",abbrev=\"P\"}],kernel-desc=\"0x00007ffff5dd8740\","
        "kernel-function=\"0x00007ffff608e300\",unknown-new-field=\"x\"}],"
        "current-dispatch-id=\"1\""}},
  });
  Snapshot s = build_text(text);
  REQUIRE(s.agents.size() == 2);
  CHECK(s.agents[0].name == "vega20");
  CHECK(s.agents[0].current); // current-agent-id="1.1" (manual) matches the list id
  CHECK_FALSE(s.agents[1].current);
  CHECK(s.agents[0].location == "0a:00.0");
  REQUIRE(s.dispatches.size() == 1);
  const Dispatch& d = s.dispatches[0];
  CHECK(d.current); // current-dispatch-id="1" (code): the bare handle
  CHECK(d.grid == std::vector<std::uint64_t>{256});
  CHECK(d.fence_text == "B|Aa|Rs");
  CHECK(d.fence.release == FenceScope::System);
  CHECK(d.fence.full());
  CHECK(d.address_spaces == "Shared(1024), Private(0)");
  CHECK(d.kernel_address == 0x7ffff608e300u);
  CHECK(d.queue == 1u);
}

TEST_CASE("kernel name from a wave's stack when no symbol is known", "[snapshot][rocgdb]") {
  std::string frame0 = "{level=\"0\",addr=\"0x00007ffff608e3a8\",func=\"helper\",file=\"k.cpp\","
                       "fullname=\"/src/k.cpp\",line=\"5\",arch=\"amdgcn:gfx90a\"}";
  std::string frame1 = "{level=\"1\",addr=\"0x00007ffff608e3a8\",func=\"my_kernel\",file=\"k.cpp\","
                       "fullname=\"/src/k.cpp\",line=\"12\",arch=\"amdgcn:gfx90a\"}";
  std::string text = recording({
      {"-dispatch-info",
       {"^done,dispatches=[{id=\"1.1\",target-id=\"AMDGPU Dispatch 1:1:1 (PKID 0)\","
        "grid=\"[64,1,1]\",workgroup=\"[64,1,1]\",fence=\"B|Aa|Ra\",kernel-function="
        "\"0x00007ffff608e300\"}]"}},
      {"-thread-info",
       {"^done,threads=[{id=\"3\",target-id=\"AMDGPU Wave 1:1:1:1 (0,0,0)/0\",frame=" + frame0 +
        ",state=\"stopped\"}],current-thread-id=\"3\""}},
      {"-stack-list-frames", {"^done,stack=[frame=" + frame0 + ",frame=" + frame1 + "]"}},
  });
  Snapshot s = build_text(text);
  REQUIRE(s.dispatches.size() == 1);
  CHECK(s.dispatches[0].kernel_name == "my_kernel");
  // The wave's stack does not become a host thread.
  CHECK(s.host_threads.empty());
}

TEST_CASE("kernel name from the frames all its waves share, when they can only be the kernel",
          "[snapshot][rocgdb]") {
  auto wave = [](int id, const char* func, const char* name) {
    return "{id=\"" + std::to_string(id) +
           "\",target-id=\"AMDGPU Wave 1:1:1:" + std::to_string(id) + " (0,0,0)/" +
           std::to_string(id - 1) + "\",name=\"" + name +
           "\",frame={level=\"0\",addr=\"0x00007ffff608e3a8\",func=\"" + func +
           "\",file=\"k.cpp\",line=\"5\"},state=\"stopped\"}";
  };
  auto with = [&](const char* func, const char* name) {
    return recording({
        {"-dispatch-info",
         {"^done,dispatches=[{id=\"1.1\",target-id=\"AMDGPU Dispatch 1:1:1 (PKID 0)\","
          "kernel-function=\"0x00007ffff608e300\"}]"}},
        {"-thread-info",
         {"^done,threads=[" + wave(1, func, name) + "," + wave(2, func, name) + "]"}},
    });
  };
  Snapshot ok = build_text(with("saxpy_kernel", "saxpy_kernel"));
  CHECK(ok.dispatches[0].kernel_name == "saxpy_kernel");
  REQUIRE(ok.notes.size() == 1);
  CHECK_THAT(ok.notes[0], Catch::Contains("inferred from its waves' frames"));
  // A long kernel name as new rocgdb caps it: 11 characters and a hash.
  Snapshot capped = build_text(with("my::long_kernel_name<int>", "long_kernel-0245"));
  CHECK(capped.dispatches[0].kernel_name == "my::long_kernel_name<int>");
  // An inlined barrier routine in the frame, the kernel in the thread name: not taken.
  Snapshot inl = build_text(with("aiter::start_sync<8>", "allgather_vec"));
  CHECK(inl.dispatches[0].kernel_name.empty());
  CHECK_THAT(inl.notes[0], Catch::Contains("not resolved"));
}

TEST_CASE("an unresolved kernel address leaves a note, not a guess", "[snapshot][rocgdb]") {
  std::string text = recording({
      {"-dispatch-info",
       {"^done,dispatches=[{id=\"1.1\",target-id=\"AMDGPU Dispatch 1:1:1 (PKID 0)\","
        "grid=\"[64,1,1]\",workgroup=\"[64,1,1]\",fence=\"B|Aa|Ra\",kernel-function="
        "\"0x00007ffff608e300\"}]"}},
  });
  Snapshot s = build_text(text);
  REQUIRE(s.dispatches.size() == 1);
  CHECK(s.dispatches[0].kernel_name.empty());
  REQUIRE(s.notes.size() == 1);
  CHECK(s.notes[0].find("info symbol 0x7ffff608e300") != std::string::npos);
}

TEST_CASE("wave counts from -wave-info or info waves, and failed commands", "[snapshot][rocgdb]") {
  std::string text = recording({
      {"-interpreter-exec console \"info waves\"",
       {"~\"2 waves (0 running, 1 single-stepping, 1 stopped)\\n\"", "^done"}},
      {"-lane-info -1", {"^error,msg=\"negative value\""}},
  });
  Snapshot s = build_text(text);
  REQUIRE(s.wave_counts);
  CHECK(s.wave_counts->total == 2u);
  CHECK(s.wave_counts->single_stepping == 1u);
  CHECK(has_warning(s, "`-lane-info -1` failed: negative value"));
}

TEST_CASE("plain gdb: host threads and stacks, no GPU", "[snapshot][gdb]") {
  std::string text = recording({
      {"-gdb-version", {"~\"GNU gdb (Debian 13.1-3) 13.1\\n\"", "^done"}},
      {"-thread-info",
       {"^done,threads=[{id=\"1\",target-id=\"Thread 0x7ffff7d8a740 (LWP 12345)\",name=\"app\","
        "frame={level=\"0\",addr=\"0x00007ffff7e9a7e0\",func=\"__GI___clock_nanosleep\",args=[],"
        "from=\"/lib/x86_64-linux-gnu/libc.so.6\",arch=\"i386:x86-64\"},state=\"stopped\","
        "core=\"1\"}],current-thread-id=\"1\""}},
      {"-interpreter-exec console \"thread apply all bt\"",
       {"~\"\\nThread 1 (Thread 0x7ffff7d8a740 (LWP 12345) \\\"app\\\"):\\n\"",
        "~\"#0  0x00007ffff7e9a7e0 in __GI___clock_nanosleep () from /lib/libc.so.6\\n\"",
        "~\"#1  0x0000555555555189 in wait_forever () at app.c:9\\n\"",
        "~\"#2  0x00005555555551b0 in main () at app.c:14\\n\"", "^done"}},
  });
  Snapshot s = build_text(text);
  CHECK(s.debugger == DebuggerKind::Gdb);
  CHECK(s.debugger_version == "GNU gdb (Debian 13.1-3) 13.1");
  REQUIRE(s.host_threads.size() == 1);
  REQUIRE(s.host_threads[0].frames.size() == 3);
  CHECK(s.host_threads[0].frames[2].function == "main");
  CHECK(s.host_threads[0].frames[2].file == "app.c");
  CHECK(s.host_threads[0].frames[2].line == 14u);
  CHECK(s.waves.empty());
}

TEST_CASE("bounded input: junk lines are warnings, never a crash", "[snapshot][rocgdb]") {
  std::string text =
      "this is not MI\n^done,agents=[{id=\"1.1\",state=\"A\"\n"
      "^done,agents=[{id=\"1.1\",state=\"A\",target-id=\"AMDGPU Agent (GPUID 1)\"}]\n"
      "^done,threads=[{id=\"2\",target-id=\"AMDGPU Wave 1:1:1:1 (0,0,0\"}]\n";
  Snapshot s = build_text(text);
  CHECK(s.agents.size() == 1);
  CHECK(has_warning(s, "were not MI"));
  CHECK(has_warning(s, "1 wave target id(s) not understood, kept without coordinates (first: "
                       "thread 2: `AMDGPU Wave 1:1:1:1 (0,0,0`)"));
}

TEST_CASE("recording meta: the session's schema, older shapes, wrong types", "[snapshot][meta]") {
  Snapshot s;
  snapshot::apply_meta(
      s, R"({"tool":"rocplay","debugger":{"kind":"rocgdb","path":"/opt/rocm/bin/rocgdb",)"
         R"("version":"GNU gdb (rocm-rel-7.2.3) 16.3","mi":3},"pid":4242,"rank":3,)"
         R"("started_at":"2025-01-31T09:12:44Z","env":{"HSA_TOOLS_LIB":"x.so"},"new_key":[1]})");
  CHECK(s.debugger == DebuggerKind::RocGdb);
  CHECK(s.debugger_version == "GNU gdb (rocm-rel-7.2.3) 16.3");
  CHECK(s.pid == 4242);
  CHECK(s.rank == 3);
  CHECK(s.taken_at == "2025-01-31T09:12:44Z");
  CHECK(s.env.at("HSA_TOOLS_LIB") == "x.so");
  CHECK(s.warnings.empty());

  Snapshot path_only;
  snapshot::apply_meta(path_only, R"({"debugger":"/usr/local/cuda/bin/cuda-gdb","pid":"17"})");
  CHECK(path_only.debugger == DebuggerKind::CudaGdb);
  CHECK(path_only.pid == 17);

  Snapshot bad;
  snapshot::apply_meta(bad, R"({"pid":[1],"rank":-2,"env":{"A":1},"debugger":7})");
  CHECK_FALSE(bad.pid);
  CHECK_FALSE(bad.rank);
  CHECK(bad.warnings.size() == 4);
  Snapshot junk;
  snapshot::apply_meta(junk, "{not json");
  CHECK(junk.warnings.size() == 1);
}
