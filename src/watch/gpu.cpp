// How busy the workers' GPUs are: AMD's sysfs `gpu_busy_percent`, NVIDIA's nvidia-smi query mode.
// Everything here is a read; nvidia-smi is run without a shell, with a deadline and a bounded
// output, and its absence or failure makes the reading "unknown", never an error.
#include "rocplay/session/helper_program.hpp"
#include "rocplay/watch/watch.hpp"

#include <fmt/format.h>

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

namespace rocplay::watch {

namespace {

// A small sysfs or procfs file, at most 4 KiB of it.
std::optional<std::string> read_small(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return std::nullopt;
  }
  std::string text(4096, '\0');
  const ssize_t n = ::read(fd, text.data(), text.size());
  ::close(fd);
  if (n < 0) {
    return std::nullopt;
  }
  text.resize(static_cast<std::size_t>(n));
  return text;
}

std::string trim_copy(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) {
    s.remove_prefix(1);
  }
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
    s.remove_suffix(1);
  }
  return std::string(s);
}

std::vector<std::string> dir_entries(const std::string& dir, std::string_view prefix) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    return out;
  }
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name(e->d_name);
    if (name.substr(0, prefix.size()) == prefix && name != "." && name != "..") {
      out.emplace_back(name);
    }
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// nvidia-smi's CSV, bounded like every helper rocplay runs (rocplay/session/helper_program.hpp);
// nullopt when it could not run, failed, or ran past `timeout` (then it is killed).
std::optional<std::string> run_bounded(const std::vector<std::string>& argv,
                                       std::chrono::milliseconds timeout, std::string& why) {
  const std::vector<std::string> args(argv.begin() + 1, argv.end());
  const auto run = session::run_program(argv[0], args, timeout, 65536, session::Stderr::Discard);
  if (run.timed_out) {
    why = fmt::format("{} ran past {} ms and was killed", argv[0], timeout.count());
    return std::nullopt;
  }
  if (!run.exit_code) {
    why = fmt::format("{} could not be run", argv[0]);
    return std::nullopt;
  }
  if (*run.exit_code != 0) {
    why = fmt::format("{} failed (status {})", argv[0], *run.exit_code);
    return std::nullopt;
  }
  return run.output;
}

void read_amd(const GpuSet& gpus, const GpuProbeOptions& o, GpuBusy& busy, std::string& why) {
  const std::string drm = o.sysfs_root + "/class/drm";
  std::vector<std::string> nodes = gpus.render_nodes;
  if (gpus.amd_unmapped) {
    // /dev/kfd alone reaches every GPU: read every card that has the counter.
    for (const auto& card : dir_entries(drm, "card")) {
      if (card.find('-') == std::string::npos) { // `card0`, not the connector `card0-DP-1`
        nodes.push_back(card);
      }
    }
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  std::size_t absent = 0;
  for (const auto& node : nodes) {
    const std::string file = drm + "/" + node + "/device/gpu_busy_percent";
    const auto text = read_small(file);
    if (!text) {
      ++absent;
      continue;
    }
    busy.gpus.push_back({node, parse_busy_percent(*text), file});
  }
  if (nodes.empty() && (gpus.amd_unmapped || !gpus.render_nodes.empty())) {
    why = fmt::format("no AMD GPU in {}", drm);
  } else if (absent > 0 && busy.gpus.empty()) {
    why = fmt::format("no gpu_busy_percent under {} (amdgpu too old, or sysfs not mounted)", drm);
  }
}

void read_nvidia(const GpuSet& gpus, const GpuProbeOptions& o, GpuBusy& busy, std::string& why) {
  if (o.nvidia_smi == "none") {
    why = "NVIDIA counters off (--nvidia-smi none)";
    return;
  }
  const std::string smi =
      o.nvidia_smi.empty()
          ? session::find_program("nvidia-smi", std::getenv("PATH") != nullptr
                                                    ? std::vector<std::string>{}
                                                    : session::split_path_var("/usr/bin:/bin"))
                .value_or("")
          : o.nvidia_smi;
  if (smi.empty()) {
    why = "nvidia-smi not found in PATH";
    return;
  }
  std::string failed;
  const auto text =
      run_bounded({smi, "--query-gpu=pci.bus_id,utilization.gpu", "--format=csv,noheader,nounits"},
                  o.nvidia_smi_timeout, failed);
  if (!text) {
    why = failed;
    return;
  }
  // The minors the workers hold, as bus ids (/proc/driver/nvidia/gpus/BUS/information).
  std::map<std::string, int> minor_of_bus;
  const std::string gpus_dir = o.proc_root + "/driver/nvidia/gpus";
  for (const auto& bus : dir_entries(gpus_dir, "")) {
    if (const auto info = read_small(gpus_dir + "/" + bus + "/information")) {
      if (const auto minor = parse_nvidia_minor(*info)) {
        minor_of_bus[normalize_bus_id(bus)] = *minor;
      }
    }
  }
  for (const auto& [bus, percent] : parse_nvidia_smi_csv(*text)) {
    const auto it = minor_of_bus.find(bus);
    const bool held = gpus.nvidia_unmapped || it == minor_of_bus.end() ||
                      std::find(gpus.nvidia_minors.begin(), gpus.nvidia_minors.end(), it->second) !=
                          gpus.nvidia_minors.end();
    if (!held) {
      continue;
    }
    const std::string name =
        it == minor_of_bus.end() ? bus : fmt::format("nvidia{} ({})", it->second, bus);
    busy.gpus.push_back({name, percent, "nvidia-smi"});
  }
  if (busy.gpus.empty()) {
    why = "nvidia-smi listed none of the workers' GPUs";
  }
}

} // namespace

std::optional<int> parse_busy_percent(std::string_view text) {
  const std::string t = trim_copy(text);
  if (t.empty() || t.size() > 3 || !std::all_of(t.begin(), t.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      })) {
    return std::nullopt;
  }
  const int v = std::stoi(t);
  return v <= 100 ? std::optional<int>(v) : std::nullopt;
}

std::string normalize_bus_id(std::string_view bus_id) {
  std::string s = trim_copy(bus_id);
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const auto colon = s.find(':');
  if (colon != std::string::npos && colon > 4) {
    s.erase(0, colon - 4); // the 8-digit domain nvidia-smi prints, as the 4 digits /proc uses
  }
  return s;
}

std::vector<std::pair<std::string, int>> parse_nvidia_smi_csv(std::string_view text) {
  std::vector<std::pair<std::string, int>> out;
  std::size_t pos = 0;
  while (pos < text.size() && out.size() < 1024) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    const auto comma = line.find(',');
    if (comma == std::string_view::npos) {
      continue;
    }
    const auto percent = parse_busy_percent(line.substr(comma + 1));
    const std::string bus = normalize_bus_id(line.substr(0, comma));
    if (percent && !bus.empty()) {
      out.emplace_back(bus, *percent);
    }
  }
  return out;
}

std::optional<int> parse_nvidia_minor(std::string_view information) {
  constexpr std::string_view kKey = "Device Minor:";
  const auto at = information.find(kKey);
  if (at == std::string_view::npos) {
    return std::nullopt;
  }
  const std::size_t eol = information.find('\n', at);
  const std::string value = trim_copy(
      information.substr(at + kKey.size(), eol == std::string_view::npos ? std::string_view::npos
                                                                         : eol - at - kKey.size()));
  if (value.empty() || value.size() > 4 || !std::all_of(value.begin(), value.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      })) {
    return std::nullopt;
  }
  return std::stoi(value);
}

GpuSet gpus_of(const std::vector<process::GpuOpen>& opens) {
  GpuSet set;
  for (const auto& g : opens) {
    bool render = false;
    bool minor = false;
    for (const auto& dev : g.devices) {
      if (dev.rfind("/dev/dri/renderD", 0) == 0) {
        set.render_nodes.push_back(dev.substr(9));
        render = true;
      } else if (dev.rfind("/dev/nvidia", 0) == 0 && dev.size() > 11 &&
                 std::all_of(dev.begin() + 11, dev.end(),
                             [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }) &&
                 dev.size() <= 15) {
        set.nvidia_minors.push_back(std::stoi(dev.substr(11)));
        minor = true;
      }
    }
    set.amd_unmapped = set.amd_unmapped || (g.kfd && !render);
    set.nvidia_unmapped = set.nvidia_unmapped || (g.nvidia && !minor);
  }
  std::sort(set.render_nodes.begin(), set.render_nodes.end());
  set.render_nodes.erase(std::unique(set.render_nodes.begin(), set.render_nodes.end()),
                         set.render_nodes.end());
  std::sort(set.nvidia_minors.begin(), set.nvidia_minors.end());
  set.nvidia_minors.erase(std::unique(set.nvidia_minors.begin(), set.nvidia_minors.end()),
                          set.nvidia_minors.end());
  return set;
}

GpuBusy read_gpu_busy(const GpuSet& gpus, const GpuProbeOptions& options) {
  GpuBusy busy;
  std::vector<std::string> why;
  if (!gpus.render_nodes.empty() || gpus.amd_unmapped) {
    std::string w;
    read_amd(gpus, options, busy, w);
    if (!w.empty()) {
      why.push_back(w);
    }
  }
  if (!gpus.nvidia_minors.empty() || gpus.nvidia_unmapped) {
    std::string w;
    read_nvidia(gpus, options, busy, w);
    if (!w.empty()) {
      why.push_back(w);
    }
  }
  for (const auto& g : busy.gpus) {
    if (g.busy && (!busy.max_busy || *g.busy > *busy.max_busy)) {
      busy.max_busy = g.busy;
    }
  }
  if (!busy.max_busy) {
    if (gpus.empty()) {
      why.insert(why.begin(), "the workers hold no GPU device");
    } else if (why.empty()) {
      why.push_back("no counter could be read");
    }
    std::string text;
    for (const auto& w : why) {
      text += (text.empty() ? "" : "; ") + w;
    }
    busy.unknown_why = text;
  }
  return busy;
}

} // namespace rocplay::watch
