#include "cli/output.hpp"

#include "rocplay/core/error.hpp"

#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace rocplay::cli {

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
  if (path_.empty() || path_ == "-") {
    return;
  }
  struct stat st {};
  const bool in_place = ::lstat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
  if (!in_place) {
    temp_ = path_ + ".tmp." + std::to_string(::getpid());
  }
  file_.open(in_place ? path_ : temp_, std::ios::binary | std::ios::trunc);
  if (!file_) {
    throw Error(ExitCode::NoInput, "cannot write " + path_ + ": " + std::strerror(errno),
                "check that the directory exists and is writable");
  }
}

OutputFile::~OutputFile() {
  if (file_.is_open() && !committed_) {
    file_.close();
    if (!temp_.empty()) {
      std::remove(temp_.c_str());
    }
  }
}

void OutputFile::commit() {
  if (!file_.is_open()) {
    std::cout.flush();
    return;
  }
  file_.flush();
  const bool ok = static_cast<bool>(file_);
  file_.close();
  if (temp_.empty()) {
    if (!ok) {
      throw Error(ExitCode::NoInput, "writing " + path_ + " failed: " + std::strerror(errno),
                  "check free space and permissions");
    }
    committed_ = true;
    return;
  }
  if (!ok || std::rename(temp_.c_str(), path_.c_str()) != 0) {
    std::remove(temp_.c_str());
    throw Error(ExitCode::NoInput, "writing " + path_ + " failed: " + std::strerror(errno),
                "check free space and permissions");
  }
  committed_ = true;
}

std::string json_text(const nlohmann::json& json, int indent) {
  return json.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace rocplay::cli
