// A thread spinning on a flag that only a thread blocked in read() on an unwritten pipe would set
// (issue 41's fifth host shape): the reader waits for a line on a pipe whose write end only this
// process holds and no thread of it writes, so the flag never comes. The wait-for graph's root:
// the reader's read() (load_config's line); the chain: the spinner (main's loop) behind it.
// Prints `ready` once the reader has started.
#include <cstdio>
#include <thread>

#include <unistd.h>

namespace {

// A builtin, not std::atomic: at -O0 std::atomic's load is a call, and the loop's frame 0 would
// move between samples.
bool config_loaded = false;
int fds[2] = {-1, -1};

void load_config() {
  char line[64];
  const ssize_t n = ::read(fds[0], line, sizeof line); // rocplay-test: reader line
  __atomic_store_n(&config_loaded, n >= 0, __ATOMIC_RELEASE);
}

} // namespace

int main() {
  if (::pipe(fds) != 0) {
    return 1;
  }
  std::thread reader(load_config);
  std::printf("ready\n");
  std::fflush(stdout);
  while (!__atomic_load_n(&config_loaded, __ATOMIC_ACQUIRE)) { // rocplay-test: spin line
  }
  reader.join();
  return 0;
}
