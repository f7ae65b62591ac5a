// The words of CPython's _Py_DebugOffsets_INIT from `version` through the str object's group, as
// gcc compiles them over Debian unstable's libpython3.14-dev 3.14.10 and libpython3.15-dev 3.15.2
// headers (Include/internal/pycore_debug_offsets.h, Py_BUILD_CORE; the `t` tables with
// Py_GIL_DISABLED) on x86-64, printed by debug_offsets_dump.c beside this file. Word 0 of
// _Py_DebugOffsets, the cookie, is not here. Checked against the live interpreters (read from
// /proc/PID/mem at _PyRuntime): Debian's python3.14 publishes k314 word for word; python3.15
// publishes k315 with sizes of _PyRuntimeState and PyInterpreterState (words 3 and 6) 8 bytes
// larger, from its build's configuration, and every offset the same. Used by debug_offsets.cpp
// and tests/fuzz/fuzz_pyframes.cpp.
#pragma once

#include <cstdint>

namespace rocplay::testing {

constexpr std::uint64_t k314[] = {
    51251952, 0,    316616, 784,  808,  225864, 7280, 7272, 7344, 7360, 7408, 7688, 7672, 7680,
    16,       7784, 0,      7800, 7792, 7992,   0,    832,  0,    8,    16,   72,   152,  160,
    232,      32,   88,     8,    0,    56,     80,   74,   64,   0,    216,  112,  120,  128,
    136,      68,   52,     96,   104,  208,    0,    16,   8,    416,  24,   88,   168,  40,
    32,       16,   40,     24,   16,   200,    24,   40,   32,   48,   32,   40,   24,   16,
    32,       16,   24,     40,   16,   32,     64,   32,   16,   40};
constexpr std::uint64_t k314t[] = {
    51251952, 1,    365624, 784,  808,  249976, 7280,  7272, 7344, 7360, 7408, 7712, 7696, 7704,
    16,       7808, 0,      7832, 7824, 8024,   17300, 832,  0,    8,    16,   72,   152,  160,
    232,      32,   88,     8,    0,    56,     80,    78,   64,   72,   240,  128,  136,  144,
    152,      84,   68,     112,  120,  232,    224,   32,   24,   432,  40,   104,  184,  56,
    48,       32,   56,     40,   32,   216,    40,    56,   48,   64,   48,   56,   40,   32,
    48,       32,   40,     56,   32,   48,     80,    48,   32,   56};
constexpr std::uint64_t k315[] = {
    51315440, 0,    346560, 912,  936,  226232, 7272, 7264, 7336, 7352, 7400, 7592, 7576, 7584,
    16,       7736, 0,      7752, 7744, 7944,   0,    888,  0,    8,    16,   72,   80,   88,
    96,       176,  184,    256,  32,   36,     40,   136,  288,  0,    88,   8,    0,    56,
    80,       74,   64,     0,    216,  112,    120,  128,  136,  68,   52,   96,   104,  208,
    0,        16,   8,      424,  24,   88,     168,  32,   288,  944,  888,  40,   32,   16,
    40,       24,   16,     200,  24,   40,     32,   48,   32,   40,   24,   16,   32,   16,
    24,       40,   16,     32,   64,   32,     16,   40,   56};
constexpr std::uint64_t k315t[] = {
    51315440, 1,    409296, 912,  936,  250328, 7272,  7264, 7336, 7352, 7400, 7592, 7576, 7584,
    16,       7736, 0,      7760, 7752, 7952,   17252, 888,  0,    8,    16,   72,   80,   88,
    96,       176,  184,    256,  32,   36,     40,    136,  288,  0,    88,   8,    0,    56,
    80,       78,   64,     72,   240,  128,    136,   144,  152,  84,   68,   112,  120,  232,
    224,      32,   24,     440,  40,   104,    184,   48,   304,  968,  904,  56,   48,   32,
    56,       40,   32,     216,  40,   56,     48,    64,   48,   56,   40,   32,   48,   32,
    40,       56,   32,     48,   80,   48,     32,    56,   72};

} // namespace rocplay::testing
