// The fault stop: which `*stopped` records are faults, and what the model keeps of them.
#include "snapshot/fault.hpp"
#include "rocplay/snapshot/console_log.hpp"
#include "snapshot/dialect.hpp"
#include "snapshot/text.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace rocplay {

namespace {
bool fault_text_has(std::string_view hay, std::string_view needle) {
  return hay.find(needle) != std::string_view::npos;
}
} // namespace

namespace snapshot {

namespace {

// What the debugger prints beside a fault stop that a person needs: cuda-gdb's exception lines,
// rocgdb's "the reported location may not be accurate".
bool fault_detail_line(std::string_view line) {
  line = console_log::strip_emoji_prefix(line); // GDB 17+ under a UTF-8 locale
  return text::starts_with(line, "CUDA Exception") ||
         text::starts_with(line, "The exception was triggered") ||
         (text::starts_with(line, "Warning: precise ") && fault_text_has(line, "not enabled")) ||
         text::starts_with(line, "location may not be accurate") ||
         text::starts_with(line, "may not be accurate");
}

void take_catchpoint(const mi::Value& bkpt, std::set<std::string>& out) {
  if (bkpt["type"].str_or() == "catchpoint" && fault_text_has(bkpt["what"].str_or(), "exception")) {
    out.insert(std::string(bkpt["number"].str_or()));
  }
}

} // namespace

void FaultReader::add(const mi::Exchange& ex) {
  take_stop(ex);
  for (const auto& rec : ex.records) {
    const auto kind = rec.kind();
    if (kind == mi::RecordKind::Notify && rec.klass() == "breakpoint-created") {
      take_catchpoint(rec.results()["bkpt"], catchpoints_);
      continue;
    }
    if (kind == mi::RecordKind::Result && rec.klass() == "done") {
      if (auto bkpt = rec.results()["bkpt"]; bkpt.is_tuple()) {
        take_catchpoint(bkpt, catchpoints_);
      }
      // `-data-evaluate-expression $_siginfo._sifields._sigfault.si_addr`: `(void *) 0x10`.
      // si_addr is the faulting data address for SIGSEGV and SIGBUS only (another signal's
      // siginfo holds the sender's pid there).
      if (fault_ && !fault_->address && !fault_->sent_by_process() &&
          fault_text_has(ex.command, "_sigfault.si_addr") &&
          (fault_->kind == FaultKind::MemoryViolation || fault_->kind == FaultKind::BusError)) {
        const std::string value = rec.results()["value"].text();
        const auto at = value.rfind("0x");
        if (at != std::string::npos) {
          auto end = value.find_first_not_of("0123456789abcdefABCDEFx", at);
          fault_->address = text::parse_u64(
              value.substr(at, end == std::string::npos ? std::string::npos : end - at));
        }
      }
      // `$_siginfo.si_code` and `$_siginfo._sifields._kill.si_pid`: who raised the signal.
      if (fault_ && !fault_->signal.empty()) {
        const std::string value = rec.results()["value"].text();
        if (fault_text_has(ex.command, "$_siginfo.si_code")) {
          if (auto code = text::parse_i64(value);
              code && *code >= INT32_MIN && *code <= INT32_MAX) {
            fault_->signal_code = static_cast<std::int32_t>(*code);
            if (fault_->sent_by_process()) { // si_addr shares its bytes with the sender's pid
              fault_->address.reset();
            }
          }
        } else if (fault_text_has(ex.command, "_kill.si_pid")) {
          if (auto pid = text::parse_i64(value); pid && *pid > 0) {
            fault_->sender_pid = *pid;
          }
        }
      }
      continue;
    }
    if ((kind == mi::RecordKind::Console || kind == mi::RecordKind::Log) && fault_) {
      const std::string stream = rec.stream_text();
      std::size_t pos = 0;
      while (pos < stream.size() && fault_->detail.size() < 1024) {
        auto nl = stream.find('\n', pos);
        auto line = text::trim(std::string_view(stream).substr(
            pos, nl == std::string::npos ? std::string::npos : nl - pos));
        pos = nl == std::string::npos ? stream.size() : nl + 1;
        line = console_log::strip_emoji_prefix(line);
        if (fault_detail_line(line)) {
          if (!fault_->detail.empty()) {
            fault_->detail += '\n';
          }
          fault_->detail += mi::lossy_utf8(line);
        }
      }
      continue;
    }
  }
}

void FaultReader::take_stop(const mi::Exchange& ex) {
  for (const auto& rec : ex.records) {
    const auto kind = rec.kind();
    if (kind != mi::RecordKind::Exec || rec.klass() != "stopped" || fault_) {
      continue;
    }
    const auto r = rec.results();
    const auto reason = r["reason"].str_or();
    Fault f;
    if (reason == "signal-received") {
      const auto name = r["signal-name"].str_or();
      const auto meaning = r["signal-meaning"].str_or();
      const auto k = fault_kind_of_signal(name, meaning);
      if (!k) {
        continue;
      }
      f.kind = *k;
      f.signal = mi::lossy_utf8(name);
      f.meaning = mi::lossy_utf8(meaning);
    } else if (reason == "breakpoint-hit" &&
               catchpoints_.count(std::string(r["bkptno"].str_or()))) {
      f.kind = FaultKind::Exception;
      f.meaning = "C++ exception thrown";
    } else {
      continue;
    }
    f.thread_id = mi::lossy_utf8(r["thread-id"].str_or());
    f.lane = text::parse_u32(r["lane-id"].str_or());
    const auto frame = r["frame"];
    f.pc = frame["addr"].as_address() ? std::optional<std::uint64_t>(*frame["addr"].as_address())
                                      : std::nullopt;
    f.function = mi::lossy_utf8(frame["func"].str_or());
    if (f.function == "??") {
      f.function.clear();
    }
    f.file = mi::lossy_utf8(frame["fullname"].str_or(frame["file"].str_or()));
    f.line = text::parse_u32(frame["line"].str_or());
    // cuda-gdb's exception stop names the faulting instruction itself (`exception_name`, `pc`,
    // `filename`, `line`); the frame's PC can lie past it, at a later line.
    if (const auto epc = r["pc"].as_address(); epc && r["exception_name"].is_string()) {
      f.pc = *epc;
      if (const auto line = text::parse_u32(r["line"].str_or())) {
        f.line = line;
        const auto name = r["filename"].str_or();
        if (!name.empty() && !f.file.ends_with(name)) {
          f.file = mi::lossy_utf8(name);
        }
      }
    }
    const auto arch = frame["arch"].str_or();
    gpu_frame_ = text::starts_with(arch, "amdgcn");
    if (auto focus = r["CudaFocus"]; focus.is_tuple()) {
      cuda_focus_ = true;
      f.on_gpu = true;
      f.kernel = text::parse_u64(focus["kernel"].str_or());
      f.block = mi::lossy_utf8(focus["blockIdx"].str_or());
      f.thread = mi::lossy_utf8(focus["threadIdx"].str_or());
      f.lane = text::parse_u32(focus["lane"].str_or());
    }
    fault_ = std::move(f);
  }
}

void FaultReader::take_frames(const std::map<std::string, std::vector<Frame>>& stacks) {
  if (!fault_) {
    return;
  }
  const auto it = stacks.find(cuda_focus_ ? std::string(kCudaFocusThread) : fault_->thread_id);
  if (it == stacks.end()) {
    return;
  }
  const auto& frames = it->second;
  fault_->frames.assign(frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                             frames.size(), kMaxFaultFrames)));
}

void FaultReader::finish(Snapshot& s) {
  if (!fault_) {
    return;
  }
  Fault& f = *fault_;
  f.on_gpu = f.on_gpu || gpu_frame_;
  for (const auto& w : s.waves) {
    if (!f.thread_id.empty() && w.thread_id == f.thread_id && !f.kernel) {
      f.on_gpu = true;
      if (f.function.empty()) {
        f.function = w.function.str();
      }
      if (!f.pc) {
        f.pc = w.pc;
      }
      break;
    }
  }
  if (!f.on_gpu) {
    f.frames.clear(); // a host thread's frames are its HostThread's
  }
  s.fault = std::move(fault_);
}

} // namespace snapshot
} // namespace rocplay
