// cuda-gdb's device code, decoded after the detach (see playbook/deferred_code.hpp).
#include "playbook/deferred_code.hpp"

#include "rocplay/codeobj/codeobj.hpp"
#include "rocplay/codeobj/cuda_fatbin.hpp"
#include "rocplay/codeobj/listing_cache.hpp"
#include "rocplay/core/mapped_objects.hpp"
#include "rocplay/core/temp_dir.hpp"
#include "rocplay/core/unique_fd.hpp"
#include "rocplay/isa/sass_listing.hpp"
#include "rocplay/session/helper_program.hpp"
#include "rocplay/snapshot/deferred_code.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>

namespace rocplay::playbook::detail {

namespace {

namespace fs = std::filesystem;

// Device ELFs of one module are kilobytes to a few MiB; nothing larger is copied in the stop.
constexpr std::uintmax_t kMaxCopyBytes = 64u << 20;
// Whole-module listings (when nvdisasm cannot be given the function) only for modules this small.
constexpr std::uintmax_t kMaxWholeModuleBytes = 16u << 20;
constexpr std::chrono::milliseconds kNvdisasmTimeout{30'000};
constexpr std::size_t kMaxListingBytes = 64u << 20;
// start_early decodes whole modules beside cuda-gdb's start: only a few small ones (a PyTorch
// library's fatbin is hundreds of MiB; its kernels are left to the kept ELF after the detach).
constexpr std::uint64_t kMaxEarlyFatbinBytes = 8u << 20;
constexpr std::size_t kMaxEarlyBytes = 4u << 20;
constexpr std::size_t kMaxEarlyModules = 4;
constexpr std::size_t kMaxEarlyFiles = 64;

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

// The window [start, end) around pc of a listing, as notes: a header, then its instructions.
void note_window(std::string_view subject, std::uint64_t pc, std::uint64_t start, std::uint64_t end,
                 std::string_view function, const std::string& object,
                 const isa::SassListing& listing, const std::function<void(std::string_view)>& note,
                 std::vector<std::string>& problems) {
  std::vector<const isa::Instruction*> window;
  for (const auto& in : listing.instructions) {
    if (in.address >= start && in.address < end) {
      window.push_back(&in);
    }
  }
  if (window.empty()) {
    problems.push_back(
        fmt::format("code at {:#x}: nvdisasm's listing of {} does not hold it", pc, function));
    return;
  }
  note(snapshot::code_window_note(subject, pc, "nvdisasm", fs::path(object).filename().string()));
  for (const auto* in : window) {
    note(snapshot::code_instruction_note(*in));
  }
}

bool has_code(std::span<const std::uint8_t> cubin) {
  const auto sections = codeobj::elf_sections(cubin);
  return std::any_of(sections.begin(), sections.end(),
                     [](const auto& s) { return s.name.starts_with(".text."); });
}

bool in_system_directory(std::string_view path) {
  for (std::string_view dir : {"/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/usr/libexec/"}) {
    if (path.starts_with(dir)) {
      return true;
    }
  }
  return false;
}

// nvdisasm's arguments before the function and the file. `-ndf`: no dataflow analysis after the
// disassembly. The listings are the same on every cubin tried (the hardware scenarios' and
// PyTorch's, up to 1.3 million instructions) and a small one decodes in 375 ms rather than 526
// (tests/hardware/nvdisasm_ab.sh, nvdisasm_ndf.sh).
std::vector<std::string> nvdisasm_arguments() {
  return {"-c", "-ndf"};
}

// The listing cache's key: the arguments without our file's name, which differs every look.
std::string cache_key(const std::vector<std::string>& arguments) {
  return fmt::format("{}", fmt::join(arguments, " "));
}

} // namespace

struct DeferredCode::Early {
  struct Module {
    std::vector<std::uint8_t> cubin;
    std::string path; // ours, given to nvdisasm
    session::ProgramRun run;
    bool kept = false; // the listing came from the cache
  };
  std::atomic<bool> cancel{false};
  std::mutex mutex;
  std::condition_variable found_cv;
  bool found = false;          // `modules` is final (their decoding may still run)
  std::vector<Module> modules; // written by the thread until `found`
  std::string dir;
  std::optional<codeobj::ListingCache> cache;
  std::thread thread;

  ~Early() {
    cancel = true;
    if (thread.joinable()) {
      thread.join();
    }
    if (!dir.empty()) {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  }

  void wait_found() {
    std::unique_lock lock(mutex);
    found_cv.wait(lock, [this] { return found; });
  }

  void find_and_decode(std::int64_t pid, const std::string& nvdisasm) {
    std::vector<Module> found_modules;
    try {
      std::size_t total = 0;
      for (const auto& file : target_files(pid)) {
        if (cancel) {
          break;
        }
        std::string why;
        const auto fatbin =
            codeobj::read_elf_file_section(file, ".nv_fatbin", kMaxEarlyFatbinBytes, why);
        if (!fatbin) {
          continue; // no device code, or too much to decode beside the start
        }
        for (const auto cubin : codeobj::fatbin_cubins(*fatbin)) {
          if (found_modules.size() < kMaxEarlyModules && total + cubin.size() <= kMaxEarlyBytes &&
              has_code(cubin)) {
            found_modules.push_back({{cubin.begin(), cubin.end()}, {}, {}});
            total += cubin.size();
          }
        }
      }
      std::string problem;
      if (auto made = found_modules.empty() ? std::nullopt
                                            : make_private_temp_dir("rocplay-code", problem)) {
        dir = std::move(*made);
        for (std::size_t i = 0; i < found_modules.size(); ++i) {
          auto& m = found_modules[i];
          m.path = fmt::format("{}/early-{}.cubin", dir, i);
          std::ofstream(m.path, std::ios::binary)
              .write(reinterpret_cast<const char*>(m.cubin.data()),
                     static_cast<std::streamsize>(m.cubin.size()));
        }
      }
    } catch (const std::exception&) {
      found_modules.clear(); // out of memory or a file system fault: the kept ELFs do it all
    }
    {
      std::lock_guard lock(mutex);
      modules = dir.empty() ? std::vector<Module>() : std::move(found_modules);
      found = true;
    }
    found_cv.notify_all();
    // One nvdisasm per module, side by side: each spends its start-up on its own CPU; none for
    // a module an earlier look decoded, or that another look at the same program (a rank of the
    // same job) decodes now.
    std::vector<std::thread> decoders;
    for (auto& m : modules) {
      auto decode = [&m, &nvdisasm, this] {
        auto args = nvdisasm_arguments();
        const std::string key = cache_key(args);
        UniqueFd turn;
        if (auto listing = cache ? cache->find_or_take_turn(m.cubin, key, kMaxListingBytes, cancel,
                                                            kNvdisasmTimeout, turn)
                                 : std::nullopt) {
          m.run.exit_code = 0;
          m.run.output = std::move(*listing);
          m.kept = true;
          return;
        }
        args.push_back(m.path);
        m.run = session::run_program(nvdisasm, args, kNvdisasmTimeout, kMaxListingBytes,
                                     session::Stderr::Merge, std::chrono::milliseconds(0), &cancel);
        if (cache && m.run.exit_code == 0 && !m.run.truncated) {
          cache->store(m.cubin, key, m.run.output);
        }
      };
      try {
        decoders.emplace_back(decode);
      } catch (const std::system_error&) {
        decode(); // no thread to spare: one after the other
      }
    }
    for (auto& d : decoders) {
      d.join();
    }
  }
};

struct DeferredCode::Late {
  std::atomic<bool> cancel{false};
  std::thread thread;
  std::string problem; // why there is no listing, once the thread has ended
  std::optional<isa::SassListing> listing;
  bool kept = false; // the listing came from the cache

  ~Late() {
    cancel = true;
    if (thread.joinable()) {
      thread.join();
    }
  }
};

std::vector<std::string> DeferredCode::target_files(std::int64_t pid) {
  std::vector<std::string> files{fmt::format("/proc/{}/exe", pid)};
  std::error_code ec;
  const auto exe = fs::read_symlink(files.front(), ec).string();
  const auto objects =
      process::read_mapped_objects(pid).value_or(std::vector<process::MappedObject>());
  for (const auto& object : objects) {
    if (files.size() >= kMaxEarlyFiles) {
      break;
    }
    if (object.path != exe && !in_system_directory(object.path)) {
      files.push_back(fmt::format("/proc/{}/root{}", pid, object.path)); // its mount namespace
    }
  }
  return files;
}

void DeferredCode::start_early(std::int64_t pid) {
  if (early_) {
    return;
  }
  auto early = std::make_unique<Early>();
  early->cache = cache_;
  try {
    early->thread = std::thread(
        [e = early.get(), pid, nvdisasm = nvdisasm_] { e->find_and_decode(pid, nvdisasm); });
  } catch (const std::system_error&) {
    return; // no thread: the kept ELFs are decoded after the detach, as without it
  }
  early_ = std::move(early);
}

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
  auto cache = codeobj::ListingCache::default_dir();
  return std::make_unique<DeferredCode>(std::move(*found), std::move(cache));
}

DeferredCode::DeferredCode(std::string nvdisasm, std::optional<std::string> cache_dir)
    : nvdisasm_(std::move(nvdisasm)) {
  if (cache_dir) {
    cache_.emplace(std::move(*cache_dir), codeobj::decoder_identity(nvdisasm_));
  }
}

DeferredCode::~DeferredCode() {
  late_.clear(); // their nvdisasm stopped before the files it reads go
  early_.reset();
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
  windows_.push_back({subject, pc, start, end, answer->section.substr(6), answer->object, {}});
  // Decoded from now on, beside the rest of the stop and the detach, unless the program's own
  // cubin (start_early) holds the same code.
  Window& w = windows_.back();
  w.early = early_match(w);
  const auto key = std::pair(kept_.at(w.object), w.function);
  if (!w.early && !late_.contains(key)) {
    late_.emplace(key, start_late(w));
  }
  return true;
}

std::unique_ptr<DeferredCode::Late> DeferredCode::start_late(const Window& w) {
  auto late = std::make_unique<Late>();
  auto work = [l = late.get(), ours = kept_.at(w.object), w, nvdisasm = nvdisasm_, cache = cache_] {
    const auto bytes = read_file(ours);
    const auto index = bytes ? codeobj::symbol_index(*bytes, w.function) : std::nullopt;
    auto args = nvdisasm_arguments();
    if (index) {
      args.insert(args.end(), {"-fun", std::to_string(*index)});
    } else if (!bytes || bytes->size() > kMaxWholeModuleBytes) {
      l->problem = fmt::format("code at {:#x}: {} not found in {}", w.pc, w.function,
                               fs::path(w.object).filename().string());
      return;
    }
    const std::string asked = cache_key(args);
    UniqueFd turn;
    if (auto listing = cache ? cache->find_or_take_turn(*bytes, asked, kMaxListingBytes, l->cancel,
                                                        kNvdisasmTimeout, turn)
                             : std::nullopt) {
      l->listing = isa::read_nvdisasm_listing(*listing, w.function);
      l->kept = true;
      return;
    }
    args.push_back(ours);
    const auto run =
        session::run_program(nvdisasm, args, kNvdisasmTimeout, kMaxListingBytes,
                             session::Stderr::Merge, std::chrono::milliseconds(0), &l->cancel);
    if (cache && run.exit_code == 0 && !run.truncated) {
      cache->store(*bytes, asked, run.output);
    }
    if (run.exit_code != 0) {
      l->problem =
          fmt::format("code at {:#x}: {} {}", w.pc, nvdisasm,
                      run.timed_out        ? "did not finish in 30 s"
                      : !run.error.empty() ? "could not be run: " + run.error
                                           : fmt::format("failed: {}", first_line(run.output)));
      return;
    }
    l->listing = isa::read_nvdisasm_listing(run.output, w.function);
  };
  try {
    late->thread = std::thread(work);
  } catch (const std::system_error&) {
    work(); // no thread to spare: now
  }
  return late;
}

std::optional<std::pair<std::size_t, std::uint64_t>>
DeferredCode::early_match(const Window& w) const {
  if (!early_) {
    return std::nullopt;
  }
  // Reading the program's files began before the debugger started: long done by the stop.
  early_->wait_found();
  std::error_code ec;
  if (early_->modules.empty() || fs::file_size(kept_.at(w.object), ec) > 2 * kMaxEarlyBytes) {
    return std::nullopt; // larger than any module start_early decodes
  }
  const auto kept = read_file(kept_.at(w.object));
  const auto section = kept ? codeobj::elf_section(*kept, ".text." + w.function) : std::nullopt;
  if (!section || section->contents.empty()) {
    return std::nullopt;
  }
  for (std::size_t i = 0; i < early_->modules.size(); ++i) {
    const auto theirs = codeobj::elf_section(early_->modules[i].cubin, section->name);
    if (theirs && std::equal(theirs->contents.begin(), theirs->contents.end(),
                             section->contents.begin(), section->contents.end())) {
      return std::pair(i, section->address);
    }
  }
  return std::nullopt;
}

std::vector<std::string> DeferredCode::decode(const std::function<void(std::string_view)>& note) {
  std::vector<std::string> problems;
  // Without a window whose code start_early decoded, its nvdisasm is stopped.
  if (early_) {
    early_->cancel = std::none_of(windows_.begin(), windows_.end(),
                                  [](const Window& w) { return w.early.has_value(); });
    if (early_->thread.joinable()) {
      early_->thread.join();
    }
  }
  // One listing per function of each module (an early module's moved to where the kept one
  // runs), shared by the windows in it; the kept files' are the late decoders'.
  std::map<std::pair<std::size_t, std::string>, isa::SassListing> early_listings;
  std::set<std::pair<std::string, std::string>> said; // a late decoder's problem, once
  std::set<std::string> kept_said;                    // where a cached listing came from, once
  auto say_kept = [&](const std::string& what) {
    if (cache_ && kept_said.insert(what).second) {
      note(fmt::format("nvdisasm's listing of {} kept from an earlier look, in {}", what,
                       cache_->dir()));
    }
  };
  for (std::size_t i = 0; i < windows_.size(); ++i) {
    const auto& w = windows_[i];
    const auto& early = w.early;
    const auto* module = early ? &early_->modules[early->first] : nullptr;
    if (module && module->run.exit_code == 0) {
      auto [it, fresh] = early_listings.try_emplace({early->first, w.function});
      if (fresh) {
        it->second =
            isa::read_nvdisasm_listing(module->run.output, w.function, 100'000, early->second);
      }
      if (module->kept) {
        say_kept(w.function + " (the program's own cubin)");
      }
      note_window(w.subject, w.pc, w.start, w.end, w.function, w.object, it->second, note,
                  problems);
      continue;
    }
    const auto key = std::pair(kept_.at(w.object), w.function);
    auto& late = late_[key];
    if (!late) {
      late = start_late(w); // it matched an early module whose decoding failed
    }
    if (late->thread.joinable()) {
      late->thread.join();
    }
    if (!late->problem.empty() && said.insert(key).second) {
      problems.push_back(late->problem);
    }
    if (late->listing && late->kept) {
      say_kept(w.function + " (cuda-gdb's copy of the module)");
    }
    if (late->listing) {
      note_window(w.subject, w.pc, w.start, w.end, w.function, w.object, *late->listing, note,
                  problems);
    }
  }
  late_.clear(); // stops any no window needed
  return problems;
}

} // namespace rocplay::playbook::detail
