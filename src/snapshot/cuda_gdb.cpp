// The cuda-gdb dialect: devices -> agents, kernels -> dispatches, coalesced thread ranges (and,
// without them, the focus SM's warps) -> waves, the focus warp's lanes -> lanes, from the MI
// tables (-cuda-info-devices|kernels|threads|warps|lanes) or, for raw logs, the console tables of
// `info cuda devices|kernels|threads`. The mapping is documented in docs/cuda-gdb.md.
//
// cuda-gdb reports GPU frames (`arch="m68k"`) through the same -stack-list-frames and `bt` as host
// frames, with the host thread that hit the stop as the current thread. Such stacks are filed
// under kFocusThread so the gdb dialect does not give a host thread a GPU stack.
#include "rocplay/kernels/kernel_names.hpp"
#include "snapshot/dialect.hpp"
#include "snapshot/text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <bit>
#include <map>

namespace rocplay::snapshot {
namespace {

constexpr std::string_view kFocusThread = kCudaFocusThread;
constexpr std::string_view kGpuArch = "m68k"; // what cuda-gdb names the GPU frames' arch

using Dim3 = std::array<std::int64_t, 3>;

// `(4,1,1)`; nullopt for anything else.
std::optional<Dim3> parse_dim3(std::string_view s) {
  s = text::trim(s);
  if (s.size() < 7 || s.front() != '(' || s.back() != ')') {
    return std::nullopt;
  }
  s = s.substr(1, s.size() - 2);
  Dim3 d{};
  for (std::size_t i = 0; i < 3; ++i) {
    auto comma = s.find(',');
    if ((i < 2) != (comma != std::string_view::npos)) {
      return std::nullopt;
    }
    auto v = text::parse_i64(text::trim(s.substr(0, comma)));
    if (!v || *v < 0) {
      return std::nullopt;
    }
    d[i] = *v;
    s = comma == std::string_view::npos ? std::string_view{} : s.substr(comma + 1);
  }
  return d;
}

using text::field;

// `allgather_vec(,args=[])`, `spin_kernel(cycles=5)`: the name before the trailing argument list.
std::string strip_arguments(std::string_view s) {
  s = text::trim(s);
  if (s.empty() || s.back() != ')') {
    return std::string(s);
  }
  int depth = 0;
  for (std::size_t i = s.size(); i-- > 0;) {
    if (s[i] == ')') {
      ++depth;
    } else if (s[i] == '(' && --depth == 0) {
      return std::string(text::trim(s.substr(0, i)));
    }
  }
  return std::string(s);
}

// Whitespace-separated tokens.
std::vector<std::string_view> tokens(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) {
      ++i;
    }
    std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') {
      ++i;
    }
    if (i > start) {
      out.push_back(line.substr(start, i - start));
    }
  }
  return out;
}

// The end column of each header in a header line whose cells are right-aligned under their
// headers (cuda-gdb's `info cuda devices`); nullopt when a header is missing.
std::optional<std::vector<std::size_t>> header_ends(std::string_view line,
                                                    const std::vector<std::string_view>& headers) {
  std::vector<std::size_t> ends;
  std::size_t from = 0;
  for (auto h : headers) {
    auto p = line.find(h, from);
    if (p == std::string_view::npos) {
      return std::nullopt;
    }
    ends.push_back(p + h.size());
    from = p + h.size();
  }
  return ends;
}

// The key of a coalesced thread range: kernel, first block, first thread.
std::string range_id(std::string_view kernel, std::string_view block, std::string_view thread) {
  return fmt::format("cuda:{}:{}:{}", kernel, text::trim(block), text::trim(thread));
}

struct Focus {
  std::optional<std::uint32_t> device;
  std::optional<std::uint32_t> sm;
  std::optional<std::uint32_t> warp;
  std::optional<std::uint32_t> lane;
  std::optional<std::uint64_t> kernel;
  std::optional<Dim3> block;
  std::optional<Dim3> thread;
};

// What a coalesced range said in thread coordinates, kept until the block size is known.
struct RangeCoords {
  Dim3 first_thread{};
  Dim3 last_thread{};
};

// A cuda-gdb record in a raw log: its focus, its table commands' results, its banner.
constexpr std::array<std::string_view, 3> kCudaResultMarkers = {"CudaFocus=", "InfoCuda",
                                                                "arch=\"m68k\""};
constexpr std::array<std::string_view, 3> kCudaConsoleMarkers = {"No CUDA kernels.", "cuda-gdb",
                                                                 "CUDA-GDB"};
constexpr Markers kCudaMarkers{kCudaResultMarkers, true, kCudaConsoleMarkers};

class CudaGdbDialect final : public Dialect {
public:
  std::string_view name() const override { return "cuda-gdb"; }

  bool recognises(const mi::Exchange& ex) const override {
    if (text::starts_with(text::mi_operation(ex.command), "-cuda-") ||
        text::starts_with(text::cli_command(ex.command), "info cuda")) {
      return true;
    }
    return has_marker(ex, kCudaMarkers);
  }

  bool consume(const mi::Exchange& ex, BuildState& st) override {
    // A GPU stack of the previous exchange borrowed the selection; give it back.
    if (saved_thread_) {
      if (st.current_thread == kFocusThread) {
        st.current_thread = *saved_thread_;
      }
      saved_thread_.reset();
    }
    bool claimed = false;
    for (const auto& rec : ex.records) {
      if (rec.kind() == mi::RecordKind::Exec && rec.klass() == "stopped") {
        claimed |= take_stopped(rec.results());
      }
    }
    const mi::Record* result = ex.result();
    if (result && result->klass() == "done") {
      auto r = result->results();
      for (auto v : r) {
        std::string_view n = v.name();
        if (n == "InfoCudaDevicesTable") {
          take_devices_mi(v, st);
        } else if (n == "InfoCudaKernelsTable") {
          take_kernels_mi(v, st);
        } else if (n == "CoalescedInfoCudaThreadsTable" || n == "InfoCudaThreadsTable") {
          take_threads_mi(v, st);
        } else if (n == "InfoCudaWarpsTable") {
          take_warps_mi(v, st);
        } else if (n == "InfoCudaLanesTable") {
          take_lanes_mi(v, st);
        } else if (text::starts_with(n, "InfoCuda") || text::starts_with(n, "CoalescedInfoCuda")) {
          // blocks, SMs, contexts, launch trace: nothing in the model needs them.
        } else {
          continue;
        }
        claimed = true;
      }
      if (auto stack = r["stack"]; stack.is_list() && is_gpu_stack(stack)) {
        take_gpu_stack(stack);
        borrow_selection(st);
        claimed = true;
      }
    }
    const std::string& console = st.console(ex);
    if (!console.empty()) {
      claimed |= take_console(console, st);
    }
    return claimed;
  }

  void finish(BuildState& st) override {
    Snapshot& s = st.snapshot;
    // The GPU focus stack was filed apart; it is not a host thread.
    std::erase_if(s.host_threads, [](const HostThread& t) { return t.id == kFocusThread; });
    st.stacks.erase(std::string(kFocusThread));

    for (auto& d : s.dispatches) {
      if (!d.kernel_address) {
        d.kernel_address = symbol_address(st, d.kernel_name);
      }
    }
    for (auto& w : s.waves) {
      const Dispatch* d = s.dispatch_of(w);
      if (d && !w.agent) {
        w.agent = d->agent;
      }
      if (auto it = coords_.find(w.thread_id); it != coords_.end()) {
        std::optional<Dim3> block_dim;
        if (d && d->workgroup.size() == 3) {
          block_dim = Dim3{static_cast<std::int64_t>(d->workgroup[0]),
                           static_cast<std::int64_t>(d->workgroup[1]),
                           static_cast<std::int64_t>(d->workgroup[2])};
        }
        w.first_work_item = flat_index(it->second.first_thread, block_dim);
        w.last_work_item = flat_index(it->second.last_thread, block_dim);
        // wave_in_group stays unset: a range is not a whole warp (threads 0-7 and 8-31 of one
        // warp are two ranges), and readers take wave_in_group to mean one.
      }
      const SourceLine* line = w.pc ? s.source_line(*w.pc) : nullptr;
      if (w.inline_function.empty() && line && !line->inlined_from.empty()) {
        // `start_sync at line 13 of hang.cu`: the PC is in start_sync, inlined at line 13.
        auto from = std::string_view(line->inlined_from);
        w.inline_function = st.strings.get(text::trim(from.substr(0, from.find(" at line "))));
      }
      if (w.inline_function.empty() && w.pc) {
        if (auto it = inline_at_pc_.find(*w.pc); it != inline_at_pc_.end()) {
          w.inline_function = st.strings.get(it->second);
        }
      }
      if (w.function.empty() && w.pc) {
        if (auto it = function_at_pc_.find(*w.pc); it != function_at_pc_.end()) {
          w.function = st.strings.get(it->second);
        }
      }
      if (w.function.empty() && line && !line->function.empty()) {
        w.function = st.strings.get(strip_arguments(demangle_symbol(line->function)));
      }
      if (w.function.empty() && d) {
        w.function = st.strings.get(d->kernel_name);
      }
      if (!w.file.empty() && !w.line && line) {
        w.line = line->line;
      }
      if (focus_.lane && covers_focus(w)) {
        w.lane = focus_.lane;
      }
    }

    // `info cuda threads` covers the focus kernel only: say which kernels were not listed.
    if (ranges_seen_) {
      std::vector<std::string> missing;
      for (const auto& d : s.dispatches) {
        bool listed = std::any_of(s.waves.begin(), s.waves.end(),
                                  [&](const Wave& w) { return w.dispatch == d.dispatch_no; });
        if (!listed && d.dispatch_no) {
          missing.push_back(std::to_string(*d.dispatch_no));
        }
      }
      if (!missing.empty()) {
        s.warnings.push_back(fmt::format(
            "cuda-gdb: no thread ranges for kernel(s) {}: `info cuda threads` lists the focus "
            "kernel only; ask `-cuda-info-threads kernel N` for each kernel",
            fmt::join(missing, ", ")));
      }
    }
    if (skipped_rows_) {
      s.warnings.push_back(fmt::format(
          "cuda-gdb: {} thread-range row(s) had unreadable coordinates and were skipped",
          skipped_rows_));
    }
    if (!s.dispatches.empty() || s.coverage.dispatches) {
      s.notes.push_back(
          "cuda-gdb has no queue or stream view: dispatches carry no queue, no read/write "
          "indices and no packet fence, so kernels on different streams are told apart by "
          "kernel id and grid id only");
    }
    if (ranges_seen_) {
      s.notes.push_back(
          "waves are cuda-gdb's coalesced thread ranges: each stands for `count` threads from "
          "block `workgroup` thread `first_work_item` to block `workgroup_last` thread "
          "`last_work_item` (flat indices within the block)");
    } else if (warps_seen_) {
      s.notes.push_back("waves are the warps of the focus SM only (-cuda-info-warps); other "
                        "SMs' warps were not asked for");
    }
  }

private:
  static bool is_gpu_stack(const mi::Value& stack) {
    for (auto f : stack) {
      auto frame = f.is_tuple() && f.name() == "frame" ? f : f["frame"];
      if (frame["arch"].str_or() == kGpuArch) {
        return true;
      }
    }
    return false;
  }

  // Files the stack of the current exchange under kFocusThread (see the file comment).
  void borrow_selection(BuildState& st) {
    if (st.current_thread != kFocusThread) {
      saved_thread_ = st.current_thread;
      st.current_thread = std::string(kFocusThread);
    }
  }

  bool take_stopped(const mi::Value& r) {
    auto focus = r["CudaFocus"];
    auto frame = r["frame"];
    bool gpu_frame = frame["arch"].str_or() == kGpuArch;
    if (!focus.is_tuple() && !gpu_frame) {
      return false;
    }
    if (focus.is_tuple()) {
      focus_ = Focus{};
      focus_.device = text::parse_u32(focus["device"].str_or());
      focus_.sm = text::parse_u32(focus["sm"].str_or());
      focus_.warp = text::parse_u32(focus["warp"].str_or());
      focus_.lane = text::parse_u32(focus["lane"].str_or());
      focus_.kernel = text::parse_u64(focus["kernel"].str_or());
      focus_.block = parse_dim3(focus["blockIdx"].str_or());
      focus_.thread = parse_dim3(focus["threadIdx"].str_or());
    }
    if (gpu_frame) {
      take_gpu_frame(frame);
    }
    return true;
  }

  void take_gpu_stack(const mi::Value& stack) {
    for (auto f : stack) {
      auto frame = f.is_tuple() && f.name() == "frame" ? f : f["frame"];
      take_gpu_frame(frame);
    }
  }

  void take_gpu_frame(const mi::Value& frame) {
    auto pc = frame["addr"].as_address();
    if (!pc) {
      return;
    }
    if (auto inl = field(frame["inline_function"]); !inl.empty()) {
      inline_at_pc_[*pc] = inl;
    }
    if (auto fn = field(frame["func"]); !fn.empty() && fn != "??") {
      function_at_pc_[*pc] = strip_arguments(fn);
    }
  }

  bool covers_focus(const Wave& w) const {
    if (!focus_.kernel || !focus_.block || !focus_.thread || w.dispatch != focus_.kernel) {
      return false;
    }
    auto it = coords_.find(w.thread_id);
    if (it == coords_.end() || !w.workgroup[0] || !w.workgroup_last[0]) {
      return false;
    }
    // Ranges are contiguous in (block, thread) order with x fastest.
    auto key = [](const Dim3& b, const Dim3& t) {
      return std::array<std::int64_t, 6>{b[2], b[1], b[0], t[2], t[1], t[0]};
    };
    Dim3 first_block{*w.workgroup[0], w.workgroup[1].value_or(0), w.workgroup[2].value_or(0)};
    Dim3 last_block{*w.workgroup_last[0], w.workgroup_last[1].value_or(0),
                    w.workgroup_last[2].value_or(0)};
    auto f = key(*focus_.block, *focus_.thread);
    return key(first_block, it->second.first_thread) <= f &&
           f <= key(last_block, it->second.last_thread);
  }

  static std::optional<std::uint32_t> flat_index(const Dim3& t, const std::optional<Dim3>& dim) {
    std::int64_t v = 0;
    if (dim) {
      v = t[0] + t[1] * (*dim)[0] + t[2] * (*dim)[0] * (*dim)[1];
    } else if (t[1] == 0 && t[2] == 0) {
      v = t[0];
    } else {
      return std::nullopt;
    }
    if (v < 0 || v > static_cast<std::int64_t>(UINT32_MAX)) {
      return std::nullopt;
    }
    return static_cast<std::uint32_t>(v);
  }

  static std::optional<std::uint64_t> symbol_address(const BuildState& st,
                                                     const std::string& kernel) {
    if (kernel.empty()) {
      return std::nullopt;
    }
    for (const auto& [address, symbol] : st.symbols) {
      if (symbol == kernel || strip_arguments(demangle_symbol(symbol)) == kernel) {
        return address;
      }
    }
    return std::nullopt;
  }

  // ---- agents -------------------------------------------------------------------------------

  static Agent& agent_slot(Snapshot& s, std::uint32_t device) {
    for (auto& a : s.agents) {
      if (a.number == device) {
        return a;
      }
    }
    s.agents.emplace_back();
    s.agents.back().number = device;
    s.agents.back().id = std::to_string(device);
    return s.agents.back();
  }

  static void fill_agent(Agent& a, std::uint32_t device, std::string_view name,
                         std::string_view description, std::string_view sm_type,
                         std::optional<std::uint32_t> sms, std::optional<std::uint32_t> warps,
                         std::string_view pci, bool current) {
    a.gpu_id = device;
    a.state = "A";
    a.name = std::string(name);
    a.target_id = description.empty() ? a.name : fmt::format("{} ({})", name, description);
    a.architecture = std::string(sm_type);
    a.cores = sms;
    // Warp slots of the whole device, like an AMD agent's wave slots.
    a.threads = sms && warps ? std::optional<std::uint32_t>(*sms * *warps) : warps;
    a.location = std::string(pci);
    a.current = current;
  }

  void take_devices_mi(const mi::Value& v, BuildState& st) {
    st.snapshot.coverage.agents = true;
    auto table = mi::as_table(v);
    if (!table) {
      st.snapshot.warnings.push_back("-cuda-info-devices: " + table.error().what());
      return;
    }
    for (const auto& row : table.value().rows) {
      auto device = text::parse_u32(row["device"].str_or());
      if (!device) {
        continue;
      }
      if (auto lanes = text::parse_u32(row["num_lanes"].str_or())) {
        lanes_per_warp_ = *lanes;
      }
      fill_agent(agent_slot(st.snapshot, *device), *device, field(row["name"]),
                 field(row["description"]), field(row["sm_type"]),
                 text::parse_u32(row["num_sms"].str_or()),
                 text::parse_u32(row["num_warps"].str_or()), field(row["pci_bus"]),
                 row["current"].str_or() == "*");
    }
  }

  // `  Dev PCI Bus/Dev ID        Name Description SM Type SMs Warps/SM Lanes/Warp ...`: cells are
  // right-aligned under their headers and Name may hold blanks, so split by header ends.
  bool take_devices_console(const std::vector<std::string_view>& lines, std::size_t& i,
                            BuildState& st) {
    static const std::vector<std::string_view> kHeaders = {
        "Dev", "PCI Bus/Dev ID", "Name", "Description", "SM Type", "SMs", "Warps/SM", "Lanes/Warp"};
    auto ends = header_ends(lines[i], kHeaders);
    if (!ends) {
      return false;
    }
    st.snapshot.coverage.agents = true;
    for (++i; i < lines.size(); ++i) {
      auto line = lines[i];
      if (line.size() < ends->back() || text::trim(line).empty()) {
        break;
      }
      std::vector<std::string_view> cells;
      std::size_t start = 1; // column 0 holds the `*` of the current device
      for (auto end : *ends) {
        end = std::max(start, text::char_boundary(line, end)); // never half a character
        cells.push_back(text::trim(line.substr(start, end - start)));
        start = end;
      }
      auto device = text::parse_u32(cells[0]);
      if (!device) {
        break;
      }
      if (auto lanes = text::parse_u32(cells[7])) {
        lanes_per_warp_ = *lanes;
      }
      fill_agent(agent_slot(st.snapshot, *device), *device, cells[2], cells[3], cells[4],
                 text::parse_u32(cells[5]), text::parse_u32(cells[6]), cells[1],
                 line.front() == '*');
    }
    return true;
  }

  // ---- dispatches ---------------------------------------------------------------------------

  static Dispatch& dispatch_slot(Snapshot& s, std::uint64_t kernel) {
    for (auto& d : s.dispatches) {
      if (d.dispatch_no == kernel) {
        return d;
      }
    }
    s.dispatches.emplace_back();
    s.dispatches.back().dispatch_no = kernel;
    s.dispatches.back().id = std::to_string(kernel);
    return s.dispatches.back();
  }

  static void fill_dispatch(Dispatch& d, std::uint64_t kernel, std::optional<std::uint32_t> device,
                            std::optional<std::uint64_t> grid_id, std::string_view status,
                            std::string_view grid_dim, std::string_view block_dim,
                            std::string_view invocation, bool current) {
    d.agent = device;
    d.packet_id = grid_id;
    d.target_id = fmt::format("CUDA kernel {} (device {}, grid {})", kernel,
                              device ? std::to_string(*device) : "?",
                              grid_id ? std::to_string(*grid_id) : "?");
    d.status = std::string(status);
    d.grid.clear();
    d.workgroup.clear();
    if (auto g = parse_dim3(grid_dim)) {
      d.grid.assign(g->begin(), g->end());
    }
    if (auto b = parse_dim3(block_dim)) {
      d.workgroup.assign(b->begin(), b->end());
    }
    d.kernel_name = strip_arguments(invocation);
    d.current = current;
  }

  static void take_kernels_mi(const mi::Value& v, BuildState& st) {
    st.snapshot.coverage.dispatches = true;
    auto table = mi::as_table(v);
    if (!table) {
      st.snapshot.warnings.push_back("-cuda-info-kernels: " + table.error().what());
      return;
    }
    for (const auto& row : table.value().rows) {
      auto kernel = text::parse_u64(row["kernel"].str_or());
      if (!kernel) {
        continue;
      }
      fill_dispatch(dispatch_slot(st.snapshot, *kernel), *kernel,
                    text::parse_u32(row["device"].str_or()), text::parse_u64(row["grid"].str_or()),
                    field(row["status"]), row["gridDim"].str_or(), row["blockDim"].str_or(),
                    field(row["invocation"]), row["current"].str_or() == "*");
    }
  }

  // `*      0      -   0    1 Active 0x0550... (4,1,1) (256,1,1) allgather_vec(,args=[]) `
  static bool take_kernels_console(const std::vector<std::string_view>& lines, std::size_t& i,
                                   BuildState& st) {
    if (!header_ends(lines[i], {"Kernel", "Parent", "Dev", "Grid", "Status", "GridDim", "BlockDim",
                                "Invocation"})) {
      return false;
    }
    st.snapshot.coverage.dispatches = true;
    for (++i; i < lines.size(); ++i) {
      auto line = lines[i];
      bool current = !line.empty() && line.front() == '*';
      auto t = tokens(current ? line.substr(1) : line);
      if (t.size() < 9) {
        break;
      }
      auto kernel = text::parse_u64(t[0]);
      if (!kernel || !parse_dim3(t[6]) || !parse_dim3(t[7])) {
        break;
      }
      // The invocation is the rest of the line (it may hold blanks).
      auto inv_start = static_cast<std::size_t>(t[8].data() - line.data());
      fill_dispatch(dispatch_slot(st.snapshot, *kernel), *kernel, text::parse_u32(t[2]),
                    text::parse_u64(t[3]), t[4], t[6], t[7], line.substr(inv_start), current);
    }
    return true;
  }

  // ---- waves --------------------------------------------------------------------------------

  // Thread ranges replace warp-derived waves: they cover every SM, warps only the focus SM.
  void drop_warp_waves(Snapshot& s) {
    if (!warps_seen_ || ranges_seen_) {
      return;
    }
    std::erase_if(s.waves,
                  [](const Wave& w) { return text::starts_with(w.thread_id, "cuda-warp:"); });
  }

  Wave& wave_slot(BuildState& st, const std::string& id) {
    if (auto it = st.wave_index.find(id); it != st.wave_index.end()) {
      auto& w = st.snapshot.waves[it->second];
      w = Wave{};
      w.thread_id = id;
      return w;
    }
    st.wave_index[id] = st.snapshot.waves.size();
    st.snapshot.waves.emplace_back();
    st.snapshot.waves.back().thread_id = id;
    return st.snapshot.waves.back();
  }

  void add_range(BuildState& st, std::string_view kernel, std::string_view from_block,
                 std::string_view from_thread, std::string_view to_block,
                 std::string_view to_thread, std::string_view count, std::string_view pc,
                 std::string_view file, std::string_view line) {
    auto k = text::parse_u64(kernel);
    auto fb = parse_dim3(from_block);
    auto ft = parse_dim3(from_thread);
    auto tb = parse_dim3(to_block);
    auto tt = parse_dim3(to_thread);
    if (!k || !fb || !ft || !tb || !tt) {
      ++skipped_rows_;
      return;
    }
    if (!ranges_seen_) {
      drop_warp_waves(st.snapshot);
      st.wave_index.clear();
      for (std::size_t i = 0; i < st.snapshot.waves.size(); ++i) {
        st.wave_index[st.snapshot.waves[i].thread_id] = i;
      }
      ranges_seen_ = true;
    }
    std::string id = range_id(kernel, from_block, from_thread);
    Wave& w = wave_slot(st, id);
    w.target_id = fmt::format("CUDA kernel {} block {} thread {} to block {} thread {}", *k,
                              text::trim(from_block), text::trim(from_thread), text::trim(to_block),
                              text::trim(to_thread));
    w.dispatch = k;
    for (std::size_t i = 0; i < 3; ++i) {
      w.workgroup[i] = (*fb)[i];
      w.workgroup_last[i] = (*tb)[i];
    }
    w.count = text::parse_u64(text::trim(count)).value_or(0);
    w.pc = text::parse_hex(text::trim(pc));
    w.file = st.strings.get(text::trim(file));
    // Line 0 is what cuda-gdb prints for a PC without line information.
    if (auto l = text::parse_u32(line); l && *l > 0) {
      w.line = l;
    }
    w.lane_count = lanes_per_warp_;
    w.state = "stopped";
    // Flat indices until the block size is known (finish() recomputes them).
    w.first_work_item = flat_index(*ft, std::nullopt);
    w.last_work_item = flat_index(*tt, std::nullopt);
    coords_[id] = RangeCoords{*ft, *tt};
  }

  void take_threads_mi(const mi::Value& v, BuildState& st) {
    st.snapshot.coverage.threads = true;
    auto table = mi::as_table(v);
    if (!table) {
      st.snapshot.warnings.push_back("-cuda-info-threads: " + table.error().what());
      return;
    }
    for (const auto& row : table.value().rows) {
      add_range(st, row["kernel"].str_or(), row["from_blockIdx"].str_or(),
                row["from_threadIdx"].str_or(), row["to_blockIdx"].str_or(),
                row["to_threadIdx"].str_or(), row["count"].str_or(),
                row["virtual_pc"] ? row["virtual_pc"].str_or() : row["pc"].str_or(),
                field(row["filename"]), row["line"].str_or());
    }
  }

  // `  BlockIdx ThreadIdx To BlockIdx ThreadIdx Count    PC   Filename  Line` then `Kernel N`
  // lines, each followed by its ranges. Older cuda-gdb heads the PC column `Virtual PC`.
  bool take_threads_console(const std::vector<std::string_view>& lines, std::size_t& i,
                            BuildState& st) {
    if (!header_ends(lines[i], {"BlockIdx", "ThreadIdx", "To BlockIdx", "ThreadIdx", "Count", "PC",
                                "Filename", "Line"})) {
      return false;
    }
    st.snapshot.coverage.threads = true;
    std::string kernel;
    for (++i; i < lines.size(); ++i) {
      auto line = text::trim(lines[i]);
      if (text::starts_with(line, "Kernel ")) {
        kernel = std::string(text::trim(line.substr(7)));
        continue;
      }
      if (!line.empty() && line.front() == '*') {
        line = line.substr(1);
      }
      auto t = tokens(line);
      // A row starts with a block index; one whose numbers do not read is counted and skipped.
      if (t.size() < 6 || !text::starts_with(t[0], "(")) {
        break;
      }
      // Filename may be absent (no line info) or hold blanks: it is what lies between the PC
      // and a trailing line number.
      std::string_view file;
      std::string_view line_no;
      if (t.size() >= 7 && text::parse_u64(t.back())) {
        line_no = t.back();
        auto a = static_cast<std::size_t>(t[5].data() + t[5].size() - line.data());
        auto b = static_cast<std::size_t>(t.back().data() - line.data());
        file = text::trim(line.substr(a, b - a));
      } else if (t.size() >= 7) {
        auto a = static_cast<std::size_t>(t[6].data() - line.data());
        file = text::trim(line.substr(a));
      }
      add_range(st, kernel, t[0], t[1], t[2], t[3], t[4], t[5], file, line_no);
    }
    return true;
  }

  // Warps of the focus SM; they become waves only when no thread ranges were taken.
  void take_warps_mi(const mi::Value& v, BuildState& st) {
    auto table = mi::as_table(v);
    if (!table) {
      st.snapshot.warnings.push_back("-cuda-info-warps: " + table.error().what());
      return;
    }
    warps_seen_ = true;
    if (ranges_seen_) {
      return;
    }
    for (const auto& row : table.value().rows) {
      auto warp = text::parse_u32(row["warp"].str_or());
      auto mask = text::parse_hex(row["active_lanes_mask"].str_or());
      if (!warp) {
        continue;
      }
      std::string id = fmt::format("cuda-warp:{}:{}:{}", focus_.device.value_or(0),
                                   focus_.sm.value_or(0), *warp);
      Wave& w = wave_slot(st, id);
      w.target_id = fmt::format("CUDA warp {} of device {} SM {}", *warp,
                                focus_.device ? std::to_string(*focus_.device) : "?",
                                focus_.sm ? std::to_string(*focus_.sm) : "?");
      w.agent = focus_.device;
      w.dispatch = text::parse_u64(row["kernel"].str_or());
      w.wave_no = *warp;
      w.lane_count = lanes_per_warp_;
      w.count = mask ? static_cast<std::uint64_t>(std::popcount(*mask)) : 0;
      w.pc = text::parse_hex(row["active_physical_pc"].str_or());
      w.state = "stopped";
      if (auto b = parse_dim3(row["blockIdx"].str_or())) {
        for (std::size_t i = 0; i < 3; ++i) {
          w.workgroup[i] = (*b)[i];
          w.workgroup_last[i] = (*b)[i];
        }
      }
      if (auto t = parse_dim3(row["threadIdx"].str_or())) {
        coords_[id] = RangeCoords{*t, *t};
        w.first_work_item = flat_index(*t, std::nullopt);
      }
      if (focus_.warp == *warp) {
        w.lane = focus_.lane;
      }
    }
  }

  void take_lanes_mi(const mi::Value& v, BuildState& st) {
    auto table = mi::as_table(v);
    if (!table) {
      st.snapshot.warnings.push_back("-cuda-info-lanes: " + table.error().what());
      return;
    }
    std::string warp_id;
    if (focus_.warp) {
      warp_id = fmt::format("cuda-warp:{}:{}:{}", focus_.device.value_or(0), focus_.sm.value_or(0),
                            *focus_.warp);
    }
    st.snapshot.lanes.clear(); // a later -cuda-info-lanes describes the focus warp now
    for (const auto& row : table.value().rows) {
      auto id = text::parse_u32(row["lane"].str_or());
      if (!id) {
        continue;
      }
      Lane l;
      l.id = *id;
      l.state = field(row["state"]); // active / divergent / ...
      l.pc = text::parse_hex(row["physical_pc"].str_or());
      if (auto t = parse_dim3(row["threadIdx"].str_or())) {
        for (std::size_t i = 0; i < 3; ++i) {
          l.work_item[i] = (*t)[i];
        }
      }
      l.target_id = fmt::format("CUDA lane {} of warp {} (device {}, SM {})", *id,
                                focus_.warp ? std::to_string(*focus_.warp) : "?",
                                focus_.device ? std::to_string(*focus_.device) : "?",
                                focus_.sm ? std::to_string(*focus_.sm) : "?");
      if (!ranges_seen_) {
        l.wave_thread = warp_id;
      }
      st.snapshot.lanes.push_back(std::move(l));
    }
  }

  // ---- console ------------------------------------------------------------------------------

  bool take_console(const std::string& console, BuildState& st) {
    bool claimed = false;
    auto lines = text::split_lines(console);
    for (std::size_t i = 0; i < lines.size();) {
      auto t = text::trim(lines[i]);
      if (t == "No CUDA kernels.") {
        st.snapshot.coverage.dispatches = true;
        claimed = true;
      } else if (t == "No CUDA threads.") {
        st.snapshot.coverage.threads = true;
        claimed = true;
      } else if (text::starts_with(t, "#0 ") && t.find(">>>") != std::string_view::npos) {
        // `#0  kern<<<(3,1,1),(128,1,1)>>> () at f.cu:10 ...`: a GPU backtrace.
        borrow_selection(st);
        claimed = true;
      }
      std::size_t at = i;
      if (take_threads_console(lines, i, st) || take_kernels_console(lines, i, st) ||
          take_devices_console(lines, i, st)) {
        claimed = true;
        if (i == at) {
          ++i;
        }
        continue;
      }
      ++i;
    }
    return claimed;
  }

  Focus focus_;
  std::optional<std::string> saved_thread_;
  std::map<std::uint64_t, std::string> inline_at_pc_;
  std::map<std::uint64_t, std::string> function_at_pc_;
  std::map<std::string, RangeCoords> coords_;
  std::uint32_t lanes_per_warp_ = 32;
  std::uint64_t skipped_rows_ = 0;
  bool ranges_seen_ = false;
  bool warps_seen_ = false;
};

} // namespace

std::unique_ptr<Dialect> make_cuda_gdb_dialect() {
  return std::make_unique<CudaGdbDialect>();
}

} // namespace rocplay::snapshot
