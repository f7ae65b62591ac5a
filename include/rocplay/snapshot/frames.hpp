// Host stack frames: which belong to the system (C library, C++ runtime, GPU runtime and driver
// libraries) and which to the user's own code. Reports collapse the former; findings name the
// innermost frame of the latter as "where the thread waits".
// Layer: src/snapshot/ (library rocplay_snapshot; docs/architecture.md).
#pragma once

#include "rocplay/snapshot/snapshot.hpp"

#include <optional>
#include <string>
#include <vector>

namespace rocplay {

// A frame of the C library, the C++ runtime, the dynamic loader, a GPU runtime/driver or
// collective library (HSA, HIP, CUDA, thunk, DRM, NCCL/RCCL), the Python interpreter (its
// executable or libpython, its C sources, its evaluation loop), or one with no name at all.
bool is_system_frame(const Frame& frame);

// Where a program or a thread began: `_start` (crt1.o, in every executable), the C library's
// `__libc_start_main`, `start_thread`, `clone`; never the user's own source. Every stack ends in
// one, and it names no caller.
bool is_entry_frame(const Frame& frame);

// A frame of the Python interpreter: its executable or libpython, its C sources
// (`../Python/ceval.c`), or, without a file, its C API and evaluation loop names.
bool is_interpreter_frame(const Frame& frame);

// The innermost frame in the user's own code, nullptr when every frame is a system one. A Python
// frame of the standard library (threading.py, queue.py, subprocess.py, `<frozen ...>`) counts
// only when no frame of the user's code is on the stack: the user's line that called it names
// where the thread waits.
const Frame* innermost_user_frame(const HostThread& thread);

// A Python frame of Python's own library (threading.py, queue.py, subprocess.py, `<frozen ...>`),
// not an installed package's.
bool is_python_standard_library_frame(const Frame& frame);

// A Python frame of an installed framework the user's code calls (torch, numpy, triton): never
// the user's own line while one of the user's frames is outside it (`synchronize` in
// torch/cuda/__init__.py is where every `.synchronize()` waits, not where this one was called).
bool is_python_framework_frame(const Frame& frame);

// The thread's Python frames of the user's own code, innermost first: the standard library and
// the frameworks left out. The path by which it made its call.
std::vector<const Frame*> user_python_frames(const HostThread& thread);

// `take_second at deadlock_target.cpp:40` (the file's last component), `ioctl from libc.so.6`.
std::string frame_where(const Frame& frame);

// A launching thread's stack at a kernel launch (session::LaunchSpec::trace_launches), innermost
// first: the kernel, named by the frame outside nvcc's launch stub (`__device_stub__...`), and
// the innermost frame of the user's code outside both. nullopt without a stub (the driver API
// called from a library) or without a frame of the user's.
std::optional<LaunchSite> launch_site(const std::vector<Frame>& frames);

// Adds `site` to `sites`: each kernel once, in the order first launched, with its last launching
// line; at most 64 kernels.
void add_launch_site(std::vector<LaunchSite>& sites, LaunchSite site);

} // namespace rocplay
