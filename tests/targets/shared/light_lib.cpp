// The shared library of light_target: an exported function calls a hidden one, which calls an
// exported one that waits. A symbol-light copy (src/session/light_symbols.hpp) keeps the names
// of the two exported functions only, so a backtrace through it reads `??` for the middle frame.
#include <unistd.h>

extern "C" {

__attribute__((visibility("default"), noinline)) void light_wait() {
  for (;;) {
    ::pause();
  }
}

__attribute__((visibility("hidden"), noinline)) void light_hidden_middle(int depth) {
  if (depth > 0) {
    light_wait();
  }
  asm volatile(""); // not a tail call: the frame stays on the stack
}

__attribute__((visibility("default"), noinline)) void light_outer(int depth) {
  light_hidden_middle(depth);
  asm volatile("");
}

} // extern "C"
