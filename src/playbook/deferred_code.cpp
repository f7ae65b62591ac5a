// cuda-gdb's device code, decoded after the detach (see playbook/deferred_code.hpp).
#include "playbook/deferred_code.hpp"

#include "rocplay/codeobj/codeobj.hpp"
#include "rocplay/core/temp_dir.hpp"
#include "rocplay/isa/sass_listing.hpp"
#include "rocplay/session/helper_program.hpp"
#include "rocplay/snapshot/deferred_code.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace rocplay::playbook::detail {

namespace {

namespace fs = std::filesystem;

// Device ELFs of one module are kilobytes to a few MiB; nothing larger is copied in the stop.
constexpr std::uintmax_t kMaxCopyBytes = 64u << 20;
// Whole-module listings (when nvdisasm cannot be given the function) only for modules this small.
constexpr std::uintmax_t kMaxWholeModuleBytes = 16u << 20;
constexpr std::chrono::milliseconds kNvdisasmTimeout{30'000};
constexpr std::size_t kMaxListingBytes = 64u << 20;

std::string first_line(std::string_view text) {
  text = text.substr(0, text.find('\n'));
  return std::string(text.substr(0, 200));
}

std::optional<std::vector<std::uint8_t>> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return std::nullopt;
  }
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {});
}

} // namespace

std::unique_ptr<DeferredCode> DeferredCode::for_debugger(const DebuggerIdentity& debugger) {
  std::vector<std::string> dirs;
  std::error_code ec;
  if (!debugger.path.empty()) {
    const fs::path path(debugger.path);
    dirs.push_back(path.parent_path().string());
    // cuda-gdb is often a link into the toolkit's bin/, where nvdisasm lives.
    if (auto real = fs::canonical(path, ec); !ec) {
      dirs.push_back(real.parent_path().string());
    }
  }
  auto found = session::find_program("nvdisasm", dirs);
  if (!found && session::is_executable_file("/usr/local/cuda/bin/nvdisasm")) {
    found = "/usr/local/cuda/bin/nvdisasm";
  }
  if (!found) {
    return nullptr;
  }
  return std::make_unique<DeferredCode>(std::move(*found));
}

DeferredCode::~DeferredCode() {
  if (!dir_.empty()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

bool DeferredCode::keep(const std::string& subject, std::uint64_t pc, std::uint64_t start,
                        std::uint64_t end, std::string_view info_symbol_answer, std::string& why) {
  for (const auto& w : windows_) {
    if (w.subject == subject && w.pc == pc) {
      return true; // an earlier sample kept it; code does not change
    }
  }
  const auto answer = snapshot::parse_info_symbol(info_symbol_answer);
  if (!answer || !answer->section.starts_with(".text.") || answer->object.empty()) {
    why = fmt::format("`info symbol {:#x}` named no device function in a file", pc);
    return false;
  }
  if (!kept_.contains(answer->object)) {
    if (dir_.empty()) {
      std::string problem;
      auto dir = make_private_temp_dir("rocplay-code", problem);
      if (!dir) {
        why = "no temporary directory to keep device code in: " + problem;
        return false;
      }
      dir_ = std::move(*dir);
    }
    const std::string ours = fmt::format("{}/{}.elf", dir_, kept_.size());
    // A hard link costs nothing in the stop; across file systems, a copy of a small file.
    if (::link(answer->object.c_str(), ours.c_str()) != 0) {
      std::error_code ec;
      const auto size = fs::file_size(answer->object, ec);
      if (ec || size > kMaxCopyBytes || !fs::copy_file(answer->object, ours, ec) || ec) {
        why = fmt::format("could not keep {} ({})", answer->object,
                          ec ? ec.message() : "larger than 64 MiB");
        return false;
      }
    }
    kept_.emplace(answer->object, ours);
  }
  windows_.push_back({subject, pc, start, end, answer->section.substr(6), answer->object});
  return true;
}

std::vector<std::string> DeferredCode::decode(const std::function<void(std::string_view)>& note) {
  std::vector<std::string> problems;
  // One nvdisasm run per function of each file, shared by the windows in it.
  std::map<std::pair<std::string, std::string>, std::optional<isa::SassListing>> listings;
  for (const auto& w : windows_) {
    const std::string& ours = kept_.at(w.object);
    auto [it, fresh] = listings.try_emplace({ours, w.function}); // nullopt: it failed
    if (fresh) {
      const auto bytes = read_file(ours);
      const auto index = bytes ? codeobj::symbol_index(*bytes, w.function) : std::nullopt;
      std::vector<std::string> args{"-c"};
      if (index) {
        args.insert(args.end(), {"-fun", std::to_string(*index)});
      } else if (!bytes || bytes->size() > kMaxWholeModuleBytes) {
        problems.push_back(fmt::format("code at {:#x}: {} not found in {}", w.pc, w.function,
                                       fs::path(w.object).filename().string()));
        continue;
      }
      args.push_back(ours);
      const auto run = session::run_program(nvdisasm_, args, kNvdisasmTimeout, kMaxListingBytes);
      if (run.exit_code != 0) {
        problems.push_back(fmt::format("code at {:#x}: {} {}", w.pc, nvdisasm_,
                                       run.timed_out ? "did not finish in 30 s"
                                       : !run.error.empty()
                                           ? "could not be run: " + run.error
                                           : fmt::format("failed: {}", first_line(run.output))));
        continue;
      }
      it->second = isa::read_nvdisasm_listing(run.output, w.function);
    }
    if (!it->second) {
      continue; // said once, for the first window of the function
    }
    std::vector<const isa::Instruction*> window;
    for (const auto& in : it->second->instructions) {
      if (in.address >= w.start && in.address < w.end) {
        window.push_back(&in);
      }
    }
    if (window.empty()) {
      problems.push_back(fmt::format("code at {:#x}: nvdisasm's listing of {} does not hold it",
                                     w.pc, w.function));
      continue;
    }
    note(snapshot::code_window_note(w.subject, w.pc, "nvdisasm",
                                    fs::path(w.object).filename().string()));
    for (const auto* in : window) {
      note(snapshot::code_instruction_note(*in));
    }
  }
  return problems;
}

} // namespace rocplay::playbook::detail
