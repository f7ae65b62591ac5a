// A program for `rocplay launch` tests: it faults, exits or runs on, as its first argument says.
//
//   fault_target segv | raise-segv | abort | fpe | throw | exit N | sleep S | signal-then-exit |
//                args FILE
//
// `args FILE` writes its arguments to FILE, one per record (length, then the bytes), and copies
// stdin to stdout, so a test can check that every byte arrived as given. Each fault sits on a line
// marked `FAULT:` so a test can find it.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <unistd.h>

namespace {

volatile int g_zero = 0;
int* volatile g_null = nullptr;

[[gnu::noinline]] void write_through_null(int value) {
  *g_null = value; // FAULT: segv
}

// A SIGSEGV the program sends itself, as a crash handler re-raising one does: no access faulted.
[[gnu::noinline]] void raise_segv() {
  std::raise(SIGSEGV); // FAULT: raise-segv
  g_zero = 0;          // not a tail call: this frame stays on the stack
}

[[gnu::noinline]] int divide(int a) {
  return a / g_zero; // FAULT: fpe
}

[[gnu::noinline]] void check_config(const char* what) {
  if (std::strcmp(what, "abort") == 0) {
    std::fprintf(stderr, "fault_target: bad config, aborting\n");
    std::abort(); // FAULT: abort
  }
}

[[gnu::noinline]] void load_model(const std::string& path) {
  throw std::runtime_error("cannot open " + path); // FAULT: throw
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: fault_target segv|raise-segv|abort|fpe|throw|exit N|sleep S|...\n");
    return 2;
  }
  const std::string mode = argv[1];
  std::printf("fault_target %s: pid %d\n", mode.c_str(), static_cast<int>(getpid()));
  std::fflush(stdout);
  if (mode == "segv") {
    write_through_null(42);
  } else if (mode == "raise-segv") {
    raise_segv();
  } else if (mode == "abort") {
    check_config("abort");
  } else if (mode == "fpe") {
    std::printf("%d\n", divide(7));
  } else if (mode == "throw") {
    try {
      load_model("/nonexistent/model.bin");
    } catch (const std::exception& e) {
      std::printf("caught: %s\n", e.what());
      return 5;
    }
  } else if (mode == "exit") {
    return argc > 2 ? std::atoi(argv[2]) : 0;
  } else if (mode == "sleep") {
    const int seconds = argc > 2 ? std::atoi(argv[2]) : 60;
    std::fprintf(stderr, "fault_target sleeping: pid %d\n", static_cast<int>(getpid()));
    for (int i = 0; i < seconds * 10; ++i) {
      usleep(100 * 1000);
    }
    return 0;
  } else if (mode == "signal-then-exit") {
    // Signals that are no fault: the debugger stops on SIGUSR1; rocplay passes it on.
    std::signal(SIGUSR1, [](int) {});
    raise(SIGUSR1);
    return 3;
  } else if (mode == "args" && argc > 2) {
    std::FILE* f = std::fopen(argv[2], "wb");
    if (f == nullptr) {
      return 4;
    }
    for (int i = 0; i < argc; ++i) {
      std::fprintf(f, "%zu:", std::strlen(argv[i]));
      std::fwrite(argv[i], 1, std::strlen(argv[i]), f);
      std::fputc('\n', f);
    }
    const char* lc = std::getenv("LC_ALL");
    std::fprintf(f, "LC_ALL=%s\n", lc != nullptr ? lc : "(unset)");
    std::fclose(f);
    char buf[4096];
    std::size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, stdin)) > 0) {
      std::fwrite(buf, 1, n, stdout);
    }
    std::fprintf(stderr, "fault_target: to stderr\n");
    return 0;
  }
  return 0;
}
