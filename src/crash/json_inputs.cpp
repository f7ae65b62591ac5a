// Routing by content, streaming, and the JSON inputs: a level-10 dump's metadata.json and the
// crash seed's crash_diagnostics.json.
#include "rocplay/crash/crash.hpp"

#include "core/read_chunks.hpp"
#include "crash/util.hpp"
#include "rocplay/mi/value.hpp"

#include <algorithm>
#include <filesystem>
#include <istream>
#include <vector>

namespace rocplay::crash {

namespace fs = std::filesystem;
using detail::sanitize;

namespace {

constexpr std::size_t kChunkBytes = std::size_t{1} << 20;

std::string_view first_non_space(std::string_view s) {
  while (!s.empty() && (detail::is_space(s.front()) || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  return s;
}

const nlohmann::json* member(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) {
    return nullptr;
  }
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

std::string string_member(const nlohmann::json& j, const char* key, std::size_t max = 256) {
  const auto* m = member(j, key);
  if (m == nullptr) {
    return {};
  }
  if (m->is_string()) {
    return sanitize(m->get_ref<const std::string&>(), max);
  }
  if (m->is_number()) {
    return m->dump();
  }
  return {};
}

std::optional<std::int64_t> int_member(const nlohmann::json& j, const char* key) {
  const auto* m = member(j, key);
  if (m == nullptr) {
    return std::nullopt;
  }
  if (m->is_number_integer()) {
    return m->get<std::int64_t>();
  }
  if (m->is_string()) {
    if (auto v = detail::parse_dec(m->get_ref<const std::string&>())) {
      return static_cast<std::int64_t>(*v);
    }
  }
  return std::nullopt;
}

Evidence base_evidence(const ReadOptions& options, Format format) {
  Evidence ev;
  ev.source = mi::lossy_utf8(options.source); // a path may hold any bytes
  ev.rank = options.rank;
  ev.formats.push_back(format);
  return ev;
}

} // namespace

std::optional<Format> detect(std::string_view head, std::string_view path) {
  const bool tensor_name = path.ends_with(".pt") || path.ends_with(".pth");
  if (tensor_name && (head.starts_with("PK\x03\x04") || head.starts_with("\x80"))) {
    return Format::DumpTensors; // torch.save: a zip archive, or a legacy pickle
  }
  const auto body = first_non_space(head);
  if (body.starts_with("{")) {
    const auto has = [&](std::string_view key) { return head.find(key) != std::string_view::npos; };
    if (has("\"execution_status\"") ||
        (has("\"function_name\"") &&
         (has("\"call_sequence\"") || has("\"module\"") || has("\"process_id\"")))) {
      return Format::DumpMetadata;
    }
    if (head.find("\"last_kernel_boundary\"") != std::string_view::npos ||
        head.find("\"kernel_api_log\"") != std::string_view::npos ||
        (head.find("\"exit_code\"") != std::string_view::npos &&
         head.find("\"gpu_arch\"") != std::string_view::npos)) {
      return Format::Diagnostics;
    }
    return std::nullopt;
  }
  if (detail::looks_binary(head)) {
    return std::nullopt;
  }
  ReadOptions probe;
  probe.source = std::string(path);
  const Evidence ev = read_text(head, probe);
  if (!ev.empty()) {
    return Format::Text;
  }
  return std::nullopt;
}

Evidence read_stream(std::istream& in, Format format, const ReadOptions& options) {
  if (format == Format::Text) {
    TextReader reader(options);
    // Not zeroed: a batch of small logs would clear a megabyte per file for nothing.
    std::vector<char, mi::UninitAllocator<char>> buf(kChunkBytes);
    read_chunks(in, buf, [&](std::string_view chunk) { reader.feed(chunk); });
    Evidence ev = reader.finish();
    if (in.bad()) {
      ev.warnings.push_back("read error part-way through; what was read is used");
      ev.truncated = true;
    }
    return ev;
  }
  if (format == Format::DumpTensors) {
    return base_evidence(options, format);
  }
  // Read in pieces up to the cap (one past it says "too large") rather than zeroing the cap.
  std::string text;
  std::vector<char, mi::UninitAllocator<char>> piece(
      std::min(kChunkBytes, options.limits.max_json_bytes + 1));
  while (in && text.size() <= options.limits.max_json_bytes) {
    const std::size_t want =
        std::min(piece.size(), options.limits.max_json_bytes + 1 - text.size());
    in.read(piece.data(), static_cast<std::streamsize>(want));
    text.append(piece.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (text.size() > options.limits.max_json_bytes) {
    Evidence ev = base_evidence(options, format);
    ev.truncated = true;
    ++ev.counters.malformed;
    ev.warnings.push_back("JSON larger than " + std::to_string(options.limits.max_json_bytes) +
                          " bytes; not read");
    return ev;
  }
  return format == Format::DumpMetadata ? read_dump_metadata(text, options)
                                        : read_diagnostics(text, options);
}

Evidence read_dump_metadata(std::string_view json_text, const ReadOptions& options,
                            bool look_beside) {
  Evidence ev = base_evidence(options, Format::DumpMetadata);
  ev.counters.bytes = json_text.size();
  const auto j = nlohmann::json::parse(json_text, nullptr, false);
  DumpCall d;
  d.directory = mi::lossy_utf8(fs::path(options.source).parent_path().string());
  if (j.is_discarded() || !j.is_object()) {
    // Cut off mid-write (the process died while dumping): what the directory name says is kept.
    ev.truncated = true;
    ++ev.counters.malformed;
    ev.warnings.push_back("metadata.json is not complete JSON (cut off while the process died?); "
                          "the dump directory's name is used");
    d.status = "unknown";
  } else {
    d.function = string_member(j, "function_name");
    d.module = string_member(j, "module");
    if (auto seq = int_member(j, "call_sequence"); seq && *seq >= 0) {
      d.call_sequence = static_cast<std::uint64_t>(*seq);
    }
    d.timestamp = string_member(j, "timestamp", 64);
    d.pid = int_member(j, "process_id");
    d.status = string_member(j, "execution_status", 64);
    if (const auto* im = member(j, "input_metadata"); im != nullptr) {
      d.input_metadata = sanitize(im->dump(), 600);
    }
    if (const auto* ti = member(j, "tensor_info"); ti != nullptr && ti->is_object()) {
      if (const auto* keys = member(*ti, "input_tensor_keys"); keys && keys->is_array()) {
        for (const auto& k : *keys) {
          if (k.is_string() && d.input_tensor_keys.size() < 64) {
            d.input_tensor_keys.push_back(sanitize(k.get_ref<const std::string&>(), 64));
          }
        }
      }
      if (auto bytes = int_member(*ti, "input_size_bytes"); bytes && *bytes >= 0) {
        d.input_size_bytes = static_cast<std::uint64_t>(*bytes);
      }
    }
    if (d.function.empty() || d.status.empty()) {
      ++ev.counters.malformed;
      ev.warnings.push_back(std::string("metadata.json lacks ") +
                            (d.function.empty() ? "function_name" : "execution_status"));
    }
  }
  if (d.function.empty()) {
    // `YYYYmmdd_HHMMSS_mmm_<function>_call<NNNN>`
    const std::string name = fs::path(d.directory).filename().string();
    const auto call = name.rfind("_call");
    if (name.size() > 20 && call != std::string::npos && call > 20) {
      d.function = sanitize(name.substr(20, call - 20), 128);
      if (!d.call_sequence) {
        if (auto seq = detail::parse_dec(std::string_view(name).substr(call + 5))) {
          d.call_sequence = *seq;
        }
      }
    }
  }
  if (look_beside && !d.directory.empty()) {
    std::error_code ec;
    d.inputs_file = fs::exists(fs::path(d.directory) / "inputs.pt", ec);
    d.outputs_file = fs::exists(fs::path(d.directory) / "outputs.pt", ec);
    if (!d.inputs_file) {
      ev.truncated = true;
      ev.warnings.push_back("the dump directory has no inputs.pt (cut off while saving?)");
    }
  }
  ev.pid = d.pid;
  ev.dumps.push_back(std::move(d));
  return ev;
}

Evidence read_diagnostics(std::string_view json_text, const ReadOptions& options) {
  Evidence ev = base_evidence(options, Format::Diagnostics);
  ev.counters.bytes = json_text.size();
  const auto j = nlohmann::json::parse(json_text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    ev.truncated = true;
    ++ev.counters.malformed;
    ev.warnings.push_back("the diagnostics JSON is not complete JSON; nothing read from it");
    return ev;
  }
  // The embedded API log (its last 50 lines) is read like any other.
  if (const auto* log = member(j, "kernel_api_log"); log && log->is_string()) {
    ReadOptions o = options;
    Evidence inner = read_text(log->get_ref<const std::string&>(), o);
    ev.api = std::move(inner.api);
    ev.events = std::move(inner.events);
    ev.gpu = inner.gpu;
    ev.counters = inner.counters;
    if (ev.api.suspect) {
      ev.api.suspect->line = 0; // a line of the embedded tail, not of this file
    }
  }
  ev.counters.bytes = json_text.size();
  ev.last_kernel_boundary = string_member(j, "last_kernel_boundary", 400);
  if (ev.api.calls == 0 && !ev.last_kernel_boundary.empty()) {
    Evidence inner = read_text(ev.last_kernel_boundary, options);
    ev.api = std::move(inner.api);
  }
  ev.gpu_arch = string_member(j, "gpu_arch", 32);
  if (auto code = int_member(j, "exit_code")) {
    if (*code != 0 && *code > -256 && *code < 512) {
      // A negative code is a signal number (Python's returncode): -9 is 137.
      ev.exit_code = static_cast<int>(*code < 0 ? 128 - *code : *code);
    }
  }
  if (const auto* oom = member(j, "oom_killed"); oom && oom->is_boolean() && oom->get<bool>()) {
    ev.exit_code = ev.exit_code.value_or(137);
  }
  if (ev.exit_code) {
    Event e;
    e.kind = EventKind::ExitStatus;
    e.number = *ev.exit_code;
    e.name = "exit " + std::to_string(*ev.exit_code);
    e.text = "exit_code " + std::to_string(*ev.exit_code) + " (diagnostics JSON)";
    e.meaning = std::string(explain_exit_status(*ev.exit_code));
    ev.events.push_back(std::move(e));
  }
  if (const auto* dumps = member(j, "crash_dumps"); dumps && dumps->is_array()) {
    for (const auto& p : *dumps) {
      if (p.is_string() && ev.dumps.size() < 16) {
        DumpCall d;
        d.directory = sanitize(fs::path(p.get<std::string>()).parent_path().string(), 400);
        d.status = "listed";
        const std::string name = fs::path(d.directory).filename().string();
        const auto call = name.rfind("_call");
        if (name.size() > 20 && call != std::string::npos && call > 20) {
          d.function = name.substr(20, call - 20);
        }
        ev.dumps.push_back(std::move(d));
      }
    }
  }
  return ev;
}

} // namespace rocplay::crash
