// Code objects: kernel-info over one object with 1,000 kernels (the bound: 100 ms), and
// the two ways to disassemble a window around a PC (docs/code-objects.md says which was chosen).
//
//   bench_codeobj [--short] [--runs R] [--objdump PATH]
//
// 1. read + fit + text report of tests/codeobj/many_kernels-gfx90a.elf, in process, R runs.
// 2. a 33-instruction window around a PC in spin_kernel: the LLVM C API (dlopen'd libLLVM-14,
//    first call and warm calls) against running llvm-objdump with --start/--stop-address.
#include "rocplay/codeobj/disasm.hpp"
#include "rocplay/codeobj/kernel_info.hpp"
#include "rocplay/report/kernel_report.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

using namespace rocplay;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
  int runs = 20;
  std::string objdump = "llvm-objdump-14";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--short") == 0) {
      runs = 5;
    } else if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--objdump") == 0 && i + 1 < argc) {
      objdump = argv[++i];
    }
  }
  const std::string dir = std::string(ROCPLAY_SOURCE_DIR) + "/tests/codeobj/";

  // 1. kernel-info over 1,000 kernels.
  std::vector<double> times;
  std::size_t kernels = 0;
  std::size_t bytes = 0;
  for (int r = 0; r < runs; ++r) {
    const auto t = Clock::now();
    codeobj::KernelInfoRequest req;
    req.inputs = {dir + "many_kernels-gfx90a.elf"};
    const auto info = codeobj::kernel_info(req);
    std::ostringstream out;
    report::write_kernel_info_text(out, info, false);
    times.push_back(ms_since(t));
    kernels = info.kernels.size();
    bytes = out.str().size();
  }
  std::printf("kernel-info, %zu kernels, read + fit + text (%zu KB): median %.2f ms over %d runs "
              "(bound: 100 ms)\n",
              kernels, bytes / 1024, median(times), runs);
  times.clear();
  for (int r = 0; r < runs; ++r) {
    const auto t = Clock::now();
    codeobj::KernelInfoRequest req;
    req.inputs = {dir + "many_kernels-gfx90a.elf"};
    const auto info = codeobj::kernel_info(req);
    std::ostringstream out;
    report::write_kernel_info_json(out, info);
    times.push_back(ms_since(t));
    bytes = out.str().size();
  }
  std::printf("kernel-info, %zu kernels, read + fit + JSON (%zu KB): median %.2f ms\n", kernels,
              bytes / 1024, median(times));

  // 2. A window around a PC.
  const auto objects = codeobj::read_input(dir + "kernels-gfx90a.elf");
  if (objects.objects.empty()) {
    std::printf("cannot read kernels-gfx90a.elf\n");
    return 1;
  }
  const auto& co = objects.objects.front();
  const auto* spin = co.find_kernel("spin_kernel");
  const std::uint64_t pc = *spin->code_address + 0x40;
  auto t = Clock::now();
  auto first = codeobj::window_at(co, pc, 16, 16);
  const double first_ms = ms_since(t);
  if (first.error) {
    std::printf("LLVM C API: %s\n", first.error->message.c_str());
    return 1;
  }
  times.clear();
  for (int r = 0; r < runs * 10; ++r) {
    t = Clock::now();
    auto w = codeobj::window_at(co, pc, 16, 16);
    times.push_back(ms_since(t));
  }
  std::printf("window of %zu instructions, LLVM C API: first call %.2f ms (dlopen + target "
              "init), then median %.3f ms\n",
              first.instructions.size(), first_ms, median(times));
  times.clear();
  char start[32], stop[32];
  std::snprintf(start, sizeof start, "--start-address=0x%llx",
                static_cast<unsigned long long>(*spin->code_address));
  std::snprintf(stop, sizeof stop, "--stop-address=0x%llx",
                static_cast<unsigned long long>(pc + 16 * 8));
  const std::string path = dir + "kernels-gfx90a.elf";
  for (int r = 0; r < runs; ++r) {
    t = Clock::now();
    const pid_t child = ::fork();
    if (child == 0) {
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 1);
      ::execlp(objdump.c_str(), objdump.c_str(), "-d", "--mcpu=gfx90a", start, stop, path.c_str(),
               static_cast<char*>(nullptr));
      ::_exit(127);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::printf("%s failed (status %d); skipped\n", objdump.c_str(), status);
      return 0;
    }
    times.push_back(ms_since(t));
  }
  std::printf("same window, %s as a child process: median %.2f ms (plus parsing its text)\n",
              objdump.c_str(), median(times));
  return 0;
}
