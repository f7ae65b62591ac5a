// Which host frames are the system's and which the user's (include/rocplay/snapshot/frames.hpp).
#include "rocplay/snapshot/frames.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string_view>
#include <utility>

namespace rocplay {
namespace {

bool contains(std::string_view s, std::string_view needle) {
  return s.find(needle) != std::string_view::npos;
}

std::string_view base_name(std::string_view path) {
  auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Shared objects of the system and of the GPU runtimes and drivers (matched on the file name).
constexpr std::array<std::string_view, 24> kSystemObjects = {
    "libc.so",      "libc-",        "libpthread", "ld-linux",       "libstdc++",  "libgcc_s",
    "libm.so",      "libdl.so",     "librt.so",   "libhsa-runtime", "libamdhip",  "libhsakmt",
    "libdrm",       "libcuda.so",   "libcudart",  "libnvidia",      "librocprof", "libamd_comgr",
    "librocm-core", "libroctracer", "vdso",       "libgomp",        "libnccl",    "librccl"};

// Source paths of system code (glibc's own build paths, system headers), at the start of a
// path or after a slash.
constexpr std::array<std::pair<std::string_view, std::string_view>, 8> kSystemPaths = {{
    {"./nptl/", "/./nptl/"},
    {"../sysdeps/", "/../sysdeps/"},
    {"../csu/", "/../csu/"}, // the C start-up: __libc_start_main
    {"./misc/", "/./misc/"},
    {"/usr/include/", "//usr/include/"},
    {"/usr/lib/gcc/", "//usr/lib/gcc/"},
    {"/usr/src/debug/", "//usr/src/debug/"},
    {"libio/", "/libio/"},
}};

bool in_system_path(std::string_view file) {
  return std::any_of(kSystemPaths.begin(), kSystemPaths.end(), [&](const auto& p) {
    return file.starts_with(p.first) || contains(file, p.second);
  });
}

// Function names of the C library and the runtime that carry no user meaning.
constexpr std::array<std::string_view, 22> kSystemFunctions = {
    "futex_wait", "__futex",         "lll_",    "pthread_",      "___pthread",
    "__GI_",      "__libc_",         "syscall", "ioctl",         "__ioctl",
    "poll",       "__poll",          "ppoll",   "epoll_wait",    "select",
    "nanosleep",  "clock_nanosleep", "sem_",    "do_futex_wait", "start_thread",
    "clone",      "__clone"};

// The CUDA runtime as nvcc links it by default (statically, into the program: no shared object
// names it) and the launch stubs nvcc writes: `libcudart_static_<hash>`, `cudaLaunchKernel`,
// `__cudaLaunchKernel_helper` (crt/device_functions.h), `__device_stub__...` (*.cudafe1.stub.c).
bool is_cuda_runtime_frame(const Frame& f) {
  if (f.function.starts_with("libcudart_static_") || f.function.starts_with("__cuda") ||
      f.function.starts_with("__device_stub__") || contains(f.file, ".cudafe1.stub.c") ||
      contains(f.file, "/include/crt/")) {
    return true;
  }
  return f.file.empty() && f.function.starts_with("cuda") && f.function.size() > 4 &&
         f.function[4] >= 'A' && f.function[4] <= 'Z'; // cudaLaunchKernel, not cudaify_grid
}

} // namespace

bool is_interpreter_frame(const Frame& f) {
  if (!f.from.empty()) {
    const auto object = base_name(f.from);
    if (object.starts_with("python") || object.starts_with("libpython")) {
      return true;
    }
  }
  if (!f.file.empty()) {
    if (!f.file.ends_with(".c") && !f.file.ends_with(".h")) {
      return false;
    }
    // Each directory at the start of the path or after a slash.
    constexpr std::array<std::pair<std::string_view, std::string_view>, 4> kDirs = {{
        {"Python/", "/Python/"},
        {"Objects/", "/Objects/"},
        {"Modules/", "/Modules/"},
        {"Include/", "/Include/"},
    }};
    for (const auto& [dir, inside] : kDirs) {
      if (f.file.starts_with(dir) || contains(f.file, inside)) {
        return true;
      }
    }
    return false;
  }
  for (std::string_view fn : {"_Py", "Py", "cfunction_", "method_vectorcall", "slot_tp_",
                              "vectorcall_", "pymain_", "pysleep", "time_sleep"}) {
    if (f.function.starts_with(fn)) {
      return true;
    }
  }
  return false;
}

bool is_entry_frame(const Frame& f) {
  constexpr std::array<std::string_view, 9> kEntries = {"_start",
                                                        "__libc_start_main",
                                                        "__libc_start_main_impl",
                                                        "__libc_start_call_main",
                                                        "start_thread",
                                                        "clone",
                                                        "clone3",
                                                        "__clone",
                                                        "__clone3"};
  if (f.python || std::find(kEntries.begin(), kEntries.end(), f.function) == kEntries.end()) {
    return false;
  }
  return f.file.empty() || in_system_path(f.file);
}

bool is_system_frame(const Frame& f) {
  if (f.python) {
    return false; // the user's code, or the standard library's: either says where it is
  }
  if (is_interpreter_frame(f) || is_cuda_runtime_frame(f)) {
    return true;
  }
  if (f.function.empty() && f.file.empty()) {
    return true;
  }
  if (!f.from.empty()) {
    auto object = base_name(f.from);
    for (auto s : kSystemObjects) {
      if (contains(object, s)) {
        return true;
      }
    }
  }
  if (in_system_path(f.file) || is_entry_frame(f)) {
    return true;
  }
  if (f.file.empty()) {
    for (auto fn : kSystemFunctions) {
      if (f.function.starts_with(fn)) {
        return true;
      }
    }
    if (f.function.starts_with("std::") || f.function.starts_with("__gnu_cxx::") ||
        f.function.starts_with("__gthread")) {
      return true;
    }
  }
  return false;
}

bool is_python_standard_library_frame(const Frame& f) {
  return f.python && ((contains(f.file, "/lib/python3") && !contains(f.file, "-packages/")) ||
                      f.file.starts_with("<frozen "));
}

bool is_python_framework_frame(const Frame& f) {
  static constexpr std::string_view kFrameworks[] = {"-packages/torch/", "-packages/numpy/",
                                                     "-packages/triton/"};
  if (!f.python) {
    return false;
  }
  for (auto framework : kFrameworks) {
    if (contains(f.file, framework)) {
      return true;
    }
  }
  return false;
}

std::vector<const Frame*> user_python_frames(const HostThread& t) {
  std::vector<const Frame*> out;
  for (const auto& f : t.frames) {
    if (f.python && !is_python_standard_library_frame(f) && !is_python_framework_frame(f)) {
      out.push_back(&f);
    }
  }
  return out;
}

const Frame* innermost_user_frame(const HostThread& t) {
  // A frame of Python's standard library names where the user's code called it only when no
  // frame of the user's own code is on the stack (a pool's idle worker, Thread.run).
  const Frame* standard = nullptr;
  std::string_view stub; // the launch stub just inside: the frame outside it is nvcc's wrapper
  for (const auto& f : t.frames) {
    const bool wrapper = !stub.empty() && !f.function.empty() && contains(stub, f.function);
    stub = f.function.starts_with("__device_stub__") ? std::string_view(f.function) : "";
    if (is_system_frame(f) || wrapper) {
      continue;
    }
    if (!is_python_standard_library_frame(f)) {
      return &f;
    }
    if (standard == nullptr) {
      standard = &f;
    }
  }
  return standard;
}

std::string frame_where(const Frame& f) {
  if (f.python) { // `decode_step (model_runner.py:412)`
    return fmt::format("{} ({}{})", f.function.empty() ? std::string("??") : f.function,
                       base_name(f.file), f.line ? fmt::format(":{}", *f.line) : "");
  }
  std::string out = f.function.empty() ? std::string("??") : short_function_name(f.function);
  if (out.empty()) {
    out = f.function;
  }
  if (!f.file.empty()) {
    out += fmt::format(" at {}{}", base_name(f.file), f.line ? fmt::format(":{}", *f.line) : "");
  } else if (!f.from.empty()) {
    out += fmt::format(" from {}", base_name(f.from));
  }
  return out;
}

std::optional<LaunchSite> launch_site(const std::vector<Frame>& frames) {
  const auto stub = std::find_if(frames.begin(), frames.end(), [](const Frame& f) {
    return f.function.starts_with("__device_stub__");
  });
  if (stub == frames.end() || stub + 1 == frames.end() || (stub + 1)->function.empty()) {
    return std::nullopt;
  }
  HostThread launcher; // outside the wrapper: everything inside it is the runtime's
  launcher.frames.assign(stub + 2, frames.end());
  const Frame* user = innermost_user_frame(launcher);
  if (user == nullptr) {
    return std::nullopt;
  }
  std::string kernel = short_function_name((stub + 1)->function);
  return LaunchSite{kernel.empty() ? (stub + 1)->function : std::move(kernel), frame_where(*user)};
}

void add_launch_site(std::vector<LaunchSite>& sites, LaunchSite site) {
  constexpr std::size_t kMostKernels = 64;
  const auto known = std::find_if(sites.begin(), sites.end(),
                                  [&](const LaunchSite& s) { return s.kernel == site.kernel; });
  if (known != sites.end()) {
    known->where = std::move(site.where);
  } else if (sites.size() < kMostKernels) {
    sites.push_back(std::move(site));
  }
}

} // namespace rocplay
