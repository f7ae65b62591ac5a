// Live-test target for the symbol-light preload: main calls into liblight_lib.so
// (tests/targets/shared/light_lib.cpp), whose hidden middle function a light copy cannot name.
#include <cstdio>

extern "C" void light_outer(int depth);

int main() {
  std::printf("ready\n");
  std::fflush(stdout);
  light_outer(1);
  return 0;
}
