/* Prints the words of CPython's _Py_DebugOffsets_INIT as tests/unit/pyframes/debug_offsets.cpp
 * holds them (version onwards, through the str object's group: 80 words for 3.14, 93 for 3.15),
 * compiled over a CPython's own internal headers. Not part of the build. For Debian's:
 *   apt-get download libpython3.14-dev && dpkg -x libpython3.14-dev_*.deb root
 *   I=root/usr/include; gcc -std=c11 [-DPy_GIL_DISABLED=1] -I$I -I$I/python3.14 \
 *     -I$I/python3.14/internal -DWORDS=80 debug_offsets_dump.c -o dump && ./dump
 * (3.15: python3.15, -DWORDS=93). */
#define Py_BUILD_CORE 1
#include "Python.h"
#include "internal/pycore_runtime.h"
#include "internal/pycore_debug_offsets.h"

#include <stdio.h>
#include <string.h>

static const _Py_DebugOffsets offsets = _Py_DebugOffsets_INIT(_Py_Debug_Cookie);

int main(void) {
  uint64_t words[WORDS];
  memcpy(words, (const char*)&offsets + 8, sizeof words);
  printf("free_threaded=%d: {", (int)offsets.free_threaded);
  for (int i = 0; i < WORDS; ++i) {
    printf("%s%llu", i ? ", " : "", (unsigned long long)words[i]);
  }
  printf("}\n");
  return 0;
}
