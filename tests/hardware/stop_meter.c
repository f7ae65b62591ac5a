/* How long a process was stopped, by its own clock: preloaded (LD_PRELOAD) with HW_STOP_LOG=FILE,
 * a thread that wakes every millisecond appends `GAP_MS END_S` to FILE whenever it woke more than
 * 5 ms late, the process having been stopped (by a debugger) that long; END_S is when it woke, in
 * CLOCK_MONOTONIC seconds, the clock of gdb's `set debug timestamp` (stop_pieces.sh). The lines a
 * look added, summed, are how long that look stopped the process, measured the same way for every
 * tool (verdict_cuda.sh). Built there with `gcc -O2 -shared -fPIC -pthread`. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void* meter(void* file) {
  const struct timespec period = {0, 1000000};
  double last = now_ms();
  for (;;) {
    nanosleep(&period, NULL);
    const double now = now_ms();
    if (now - last > 5.0) {
      FILE* f = fopen((const char*)file, "a");
      if (f != NULL) {
        fprintf(f, "%.1f %.6f\n", now - last, now / 1e3);
        fclose(f);
      }
    }
    last = now_ms();
  }
  return NULL;
}

__attribute__((constructor)) static void start_meter(void) {
  const char* file = getenv("HW_STOP_LOG");
  pthread_t thread;
  if (file != NULL && pthread_create(&thread, NULL, meter, (void*)file) == 0) {
    pthread_setname_np(thread, "stop-meter");
    pthread_detach(thread);
  }
  unsetenv("LD_PRELOAD"); /* the worker's children are not metered */
}
