// A CPU stand-in for a serving process that dies inside a kernel call, for the crash-evidence
// live test:
//
//   api_log_crash LOG_PATH [CALLS=5]
//
// It writes a kernel API-call log the way FlashInfer/SGLang's level-3 logging does (`%i` in
// LOG_PATH becomes the process id; each call's header and inputs are written and flushed before
// the call runs, its output block after it returns), makes CALLS calls that return, then begins
// `fused_moe_kernel` and dies of SIGSEGV inside it, as a host-side fault in a kernel wrapper
// would. Core dumps are turned off so the test leaves nothing behind.
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

namespace {

std::FILE* g_log = nullptr;

std::string now() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

void rule(char c) {
  std::fputs(std::string(80, c).c_str(), g_log);
  std::fputc('\n', g_log);
}

void tensor(const char* indent, const char* shape, const char* stride, const char* dtype) {
  std::fprintf(g_log,
               "%sTensor(\n%s  shape=%s\n%s  stride=%s\n%s  dtype=%s\n%s  device=cuda:0\n"
               "%s  requires_grad=False\n%s  is_contiguous=True\n%s)\n",
               indent, indent, shape, indent, stride, indent, dtype, indent, indent, indent,
               indent);
}

void begin_call(const char* function, const char* shape, const char* stride) {
  rule('=');
  std::fprintf(g_log, "[%s] SGLang Kernel API Call: %s\n", now().c_str(), function);
  rule('-');
  std::fputs("Positional input arguments:\n  arg[0]:\n", g_log);
  tensor("    ", shape, stride, "torch.bfloat16");
  std::fputs("Keyword input arguments:\n  topk=\n    8\n", g_log);
  std::fflush(g_log); // logged before the call runs, so a crash cannot lose it
}

void end_call(const char* shape, const char* stride) {
  std::fputs("Output value:\n", g_log);
  tensor("  ", shape, stride, "torch.bfloat16");
  rule('=');
  std::fflush(g_log);
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: api_log_crash LOG_PATH [CALLS]\n");
    return 64;
  }
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  std::string path = argv[1];
  if (const auto at = path.find("%i"); at != std::string::npos) {
    path.replace(at, 2, std::to_string(::getpid()));
  }
  const int calls = argc > 2 ? std::atoi(argv[2]) : 5;
  g_log = std::fopen(path.c_str(), "w");
  if (g_log == nullptr) {
    std::perror(path.c_str());
    return 66;
  }
  for (int i = 0; i < calls; ++i) {
    begin_call("rmsnorm", "(16, 4096)", "(4096, 1)");
    end_call("(16, 4096)", "(4096, 1)");
  }
  begin_call("fused_moe_kernel", "(16, 7168)", "(7168, 1)");
  volatile int* nowhere = nullptr;
  *nowhere = 1; // SIGSEGV inside the call: no output block is ever written
  return 0;
}
