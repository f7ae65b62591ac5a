// Code-object URIs (`file://PATH#offset=N&size=N`, `memory://PID#offset=N&size=N`, AMDGPUUsage
// "Loaded Code Object Path Uniform Resource Identifier") and reading what a path or URI names.
#include "rocplay/codeobj/codeobj.hpp"

#include "core/text_scan.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

namespace rocplay::codeobj {

namespace {

// Reads [offset, offset + size) of a file (all of it when size is empty), bounded by the limit.
bool read_range(const std::string& path, std::uint64_t offset, std::optional<std::uint64_t> size,
                const Limits& limits, std::vector<std::uint8_t>& out, Problem& problem) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    problem = {path + " is a directory", "pass the code object files in it, e.g. " + path + "/*"};
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    problem = {"cannot open " + path + ": " + std::strerror(errno),
               "check the path and permissions"};
    return false;
  }
  in.seekg(0, std::ios::end);
  const auto end = in.tellg();
  const std::uint64_t file_size = end < 0 ? 0 : static_cast<std::uint64_t>(end);
  if (offset > file_size) {
    problem = {path + " has " + std::to_string(file_size) + " bytes; the URI's offset " +
                   std::to_string(offset) + " is past its end",
               "the file changed since the URI was printed; use the saved code object instead"};
    return false;
  }
  std::uint64_t n = size.value_or(file_size - offset);
  if (n > file_size - offset) {
    problem = {path + ": the URI asks for " + std::to_string(n) + " bytes at offset " +
                   std::to_string(offset) + ", the file has " + std::to_string(file_size),
               "the file changed since the URI was printed; use the saved code object instead"};
    return false;
  }
  if (n > limits.max_file_bytes) {
    problem = {path + " is " + std::to_string(n) + " bytes, over the limit of " +
                   std::to_string(limits.max_file_bytes),
               "extract the code object first (clang-offload-bundler --unbundle)"};
    return false;
  }
  out.resize(static_cast<std::size_t>(n));
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(n));
  if (static_cast<std::uint64_t>(in.gcount()) != n) {
    problem = {"reading " + path + " stopped after " + std::to_string(in.gcount()) + " of " +
                   std::to_string(n) + " bytes",
               "check the file is not being written"};
    return false;
  }
  return true;
}

// The saved object for a URI in dir: its saved name, or `N_` + its saved name.
std::string find_saved(const std::string& dir, const std::string& saved_name) {
  std::error_code ec;
  const auto exact = std::filesystem::path(dir) / saved_name;
  if (std::filesystem::is_regular_file(exact, ec)) {
    return exact.string();
  }
  std::filesystem::directory_iterator it(dir, ec);
  std::size_t seen = 0;
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (++seen > 200000) {
      break;
    }
    const auto name = it->path().filename().string();
    if (name.size() > saved_name.size() + 1 && name.ends_with(saved_name) &&
        name[name.size() - saved_name.size() - 1] == '_') {
      const auto prefix = std::string_view(name).substr(0, name.size() - saved_name.size() - 1);
      bool digits = !prefix.empty();
      for (char c : prefix) {
        digits = digits && c >= '0' && c <= '9';
      }
      if (digits) {
        return it->path().string();
      }
    }
  }
  return {};
}

} // namespace

std::optional<UriParts> split_uri(std::string_view text) {
  const auto sep = text.find("://");
  if (sep == std::string_view::npos || sep == 0 || text.size() > 8192) {
    return std::nullopt;
  }
  UriParts parts;
  parts.protocol = text_scan::lower(text.substr(0, sep));
  const auto rest = text.substr(sep + 3);
  const auto path_end = rest.find_first_of("#?");
  parts.path = rest.substr(0, path_end);
  if (path_end != std::string_view::npos) {
    auto params = rest.substr(path_end + 1);
    while (!params.empty()) {
      const auto amp = params.find('&');
      const auto token = params.substr(0, amp);
      const auto eq = token.find('=');
      if (eq != std::string_view::npos) {
        const auto key = token.substr(0, eq);
        const auto value = text_scan::parse_number(token.substr(eq + 1));
        if (key == "offset" && value) {
          parts.offset = *value;
        } else if (key == "size" && value) {
          parts.size = *value;
        }
      }
      if (amp == std::string_view::npos) {
        break;
      }
      params.remove_prefix(amp + 1);
    }
  }
  parts.saved_name = std::string(text);
  for (char& c : parts.saved_name) {
    if (c == ':' || c == '/' || c == '#' || c == '?' || c == '&' || c == '=') {
      c = '_';
    }
  }
  return parts;
}

std::string percent_decode(std::string_view path) {
  std::string out;
  out.reserve(path.size());
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '%' && i + 2 < path.size() && text_scan::is_hex(path[i + 1]) &&
        text_scan::is_hex(path[i + 2])) {
      out.push_back(static_cast<char>(*text_scan::parse_hex(path.substr(i + 1, 2))));
      i += 2;
    } else {
      out.push_back(path[i]);
    }
  }
  return out;
}

std::optional<Uri> parse_uri(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
    text.remove_prefix(1);
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r' ||
                           text.back() == '\n')) {
    text.remove_suffix(1);
  }
  auto parts = split_uri(text);
  if (!parts || (parts->protocol != "file" && parts->protocol != "memory")) {
    return std::nullopt;
  }
  Uri uri;
  uri.text = std::string(text);
  uri.protocol = std::move(parts->protocol);
  if (uri.protocol == "memory") {
    auto pid = text_scan::parse_number(parts->path);
    if (!pid || *pid > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return std::nullopt;
    }
    uri.pid = static_cast<std::int64_t>(*pid);
  } else {
    uri.path = percent_decode(parts->path);
  }
  uri.offset = parts->offset.value_or(0);
  uri.size = parts->size;
  uri.saved_name = std::move(parts->saved_name);
  return uri;
}

ReadResult read_input(const std::string& path_or_uri, const std::string& saved_dir,
                      const Limits& limits) {
  ReadResult result;
  std::vector<std::uint8_t> bytes;
  Problem problem;
  if (auto uri = parse_uri(path_or_uri)) {
    std::string saved;
    if (!saved_dir.empty()) {
      saved = find_saved(saved_dir, uri->saved_name);
    }
    if (!saved.empty()) {
      if (!read_range(saved, 0, std::nullopt, limits, bytes, problem)) {
        result.problems.push_back(problem);
        return result;
      }
      return read_bytes(bytes, saved, limits);
    }
    if (uri->protocol == "memory") {
      result.problems.push_back(
          {uri->text + ": a memory:// code object lives only in process " +
               std::to_string(uri->pid.value_or(0)) +
               (saved_dir.empty()
                    ? std::string()
                    : " and no saved copy named " + uri->saved_name + " is in " + saved_dir),
           "save it while the process runs: rocm-debug-agent --save-code-objects=DIR (then pass "
           "--code-objects DIR), or in rocgdb `dump binary memory FILE START END` over its "
           "offset and size"});
      return result;
    }
    if (!read_range(uri->path, uri->offset, uri->size, limits, bytes, problem)) {
      result.problems.push_back(problem);
      return result;
    }
    return read_bytes(bytes, uri->text, limits);
  }
  if (!read_range(path_or_uri, 0, std::nullopt, limits, bytes, problem)) {
    result.problems.push_back(problem);
    return result;
  }
  return read_bytes(bytes, path_or_uri, limits);
}

} // namespace rocplay::codeobj
