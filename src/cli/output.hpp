// Where a report goes: stdout, or a file written whole (temporary file, then rename) so that an
// interrupted run never leaves half a report behind under the real name. A path that exists and
// is not a regular file (/dev/null, a FIFO, /dev/stdout, a symlink) is written in place: renaming
// over it would replace the device or the link with a plain file.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <fstream>
#include <iostream>
#include <string>

namespace rocplay::cli {

class OutputFile {
public:
  // Empty path or "-": stdout. Throws Error(NoInput) when the file cannot be created.
  explicit OutputFile(std::string path);
  ~OutputFile(); // removes the temporary file unless commit() ran
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::ostream& stream() { return file_.is_open() ? static_cast<std::ostream&>(file_) : std::cout; }
  // Flushes and moves the file into place. Throws Error on a write failure.
  void commit();

private:
  std::string path_;
  std::string temp_; // empty when writing in place
  std::ofstream file_;
  bool committed_ = false;
};

// A report's JSON text (indent < 0: one line). Bytes that are not UTF-8 (an MI c-string may
// carry any) become U+FFFD rather than an exception that would lose the whole report.
std::string json_text(const nlohmann::json& json, int indent = -1);

} // namespace rocplay::cli
