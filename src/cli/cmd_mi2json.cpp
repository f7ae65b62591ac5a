// `rocplay mi2json [FILE|-]`: GDB/MI records as JSON Lines, one object per record.
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "rocplay/error.hpp"
#include "rocplay/mi/parser.hpp"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

namespace rocplay::cli::mi2json_command {
namespace {

std::string base64(std::string_view bytes) {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const auto n = (static_cast<unsigned char>(bytes[i]) << 16) |
                   (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                   static_cast<unsigned char>(bytes[i + 2]);
    out += {kAlphabet[(n >> 18) & 63], kAlphabet[(n >> 12) & 63], kAlphabet[(n >> 6) & 63],
            kAlphabet[n & 63]};
  }
  if (i + 1 == bytes.size()) {
    const auto n = static_cast<unsigned char>(bytes[i]) << 16;
    out += {kAlphabet[(n >> 18) & 63], kAlphabet[(n >> 12) & 63], '=', '='};
  } else if (i + 2 == bytes.size()) {
    const auto n = (static_cast<unsigned char>(bytes[i]) << 16) |
                   (static_cast<unsigned char>(bytes[i + 1]) << 8);
    out += {kAlphabet[(n >> 18) & 63], kAlphabet[(n >> 12) & 63], kAlphabet[(n >> 6) & 63], '='};
  }
  return out;
}

// Strings that are not valid UTF-8 keep their exact bytes beside a display form.
nlohmann::json string_json(const mi::Value& v) {
  const std::string bytes = v.bytes();
  const std::string text = mi::lossy_utf8(bytes);
  if (text == bytes) {
    return text;
  }
  return {{"utf8_lossy", text}, {"base64", base64(bytes)}};
}

// Tuples become objects (a repeated name collects its values in an array, bare legacy values go
// under ""); lists stay arrays, and a list of results keeps each name as a one-key object.
nlohmann::json value_json(const mi::Value& v) {
  if (v.is_string()) {
    return string_json(v);
  }
  if (v.is_list()) {
    auto out = nlohmann::json::array();
    for (const mi::Value child : v) {
      if (child.name().empty()) {
        out.push_back(value_json(child));
      } else {
        out.push_back({{std::string(child.name()), value_json(child)}});
      }
    }
    return out;
  }
  auto out = nlohmann::json::object();
  std::map<std::string, int> seen;
  for (const mi::Value child : v) {
    const std::string key(child.name());
    auto value = value_json(child);
    if (++seen[key] == 1) {
      out[key] = std::move(value);
    } else if (seen[key] == 2) {
      out[key] = nlohmann::json::array({std::move(out[key]), std::move(value)});
    } else {
      out[key].push_back(std::move(value));
    }
  }
  return out;
}

struct Options {
  std::string input = "-";
  bool strict = false;
  bool summary = false;
};

int run_mi2json(const Options& options) {
  std::FILE* in = stdin;
  if (options.input != "-") {
    in = std::fopen(options.input.c_str(), "rb");
    if (in == nullptr) {
      throw Error(ExitCode::NoInput, "cannot open " + options.input + ": " + std::strerror(errno),
                  "check the path; use - to read standard input");
    }
  }
  mi::Parser parser;
  std::map<std::string, std::uint64_t> counts;
  std::uint64_t errors = 0;
  std::string out;
  std::vector<char> buf(1 << 20);
  const std::string name = options.input == "-" ? "<stdin>" : options.input;
  auto drain = [&] {
    while (auto rec = parser.next()) {
      if (rec->is_error()) {
        ++errors;
        std::fprintf(stderr, "%s:%llu:%u: %s\n", name.c_str(),
                     static_cast<unsigned long long>(rec->error().line), rec->error().column,
                     rec->error().message().c_str());
        continue;
      }
      ++counts[std::string(mi::to_string(rec->kind()))];
      if (rec->kind() == mi::RecordKind::Prompt) {
        continue;
      }
      nlohmann::json j;
      j["line"] = rec->line_no();
      j["kind"] = mi::to_string(rec->kind());
      if (!rec->klass().empty()) {
        j["class"] = rec->klass();
      }
      if (rec->token()) {
        j["token"] = *rec->token();
      }
      if (rec->kind() == mi::RecordKind::Console || rec->kind() == mi::RecordKind::Target ||
          rec->kind() == mi::RecordKind::Log) {
        j["text"] = string_json(rec->results());
      } else {
        j["values"] = value_json(rec->results());
      }
      out += json_text(j);
      out += '\n';
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    out.clear();
  };
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), in)) > 0) {
    parser.feed(std::string_view(buf.data(), n));
    drain();
  }
  const bool read_error = std::ferror(in) != 0;
  if (in != stdin) {
    std::fclose(in);
  }
  parser.finish();
  drain();
  std::fflush(stdout);
  if (read_error) {
    throw Error(ExitCode::NoInput, "reading " + name + " failed", "check the file is readable");
  }
  if (options.summary) {
    std::fprintf(stderr, "%s: %llu lines, %llu bytes", name.c_str(),
                 static_cast<unsigned long long>(parser.lines()),
                 static_cast<unsigned long long>(parser.bytes()));
    for (const auto& [kind, count] : counts) {
      std::fprintf(stderr, ", %llu %s", static_cast<unsigned long long>(count), kind.c_str());
    }
    std::fprintf(stderr, ", %llu not MI\n", static_cast<unsigned long long>(errors));
  }
  if (errors > 0 && options.strict) {
    print_error(std::to_string(errors) + " line(s) of " + name + " are not valid MI",
                "positions are listed above; drop --strict to skip such lines");
    return static_cast<int>(ExitCode::DataError);
  }
  return 0;
}

Action add_mi2json(CLI::App& app) {
  auto options = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "mi2json", "Convert GDB/MI output (a raw debugger log) to JSON Lines, one object per record");
  cmd->add_option("file", options->input, "MI log to read; - for standard input")->default_val("-");
  cmd->add_flag("--strict", options->strict, "Exit 65 when any line is not valid MI");
  cmd->add_flag("--summary", options->summary, "Print record counts to stderr at the end");
  cmd->footer("Each line: {\"line\",\"kind\",\"class\",\"token\",\"values\"|\"text\"}. Strings "
              "that are not UTF-8 become {\"utf8_lossy\",\"base64\"}. Lines that are not MI are "
              "reported on stderr as FILE:LINE:COLUMN and skipped.");
  return [options] { return run_mi2json(*options); };
}

const bool kRegistered = register_command({"mi2json", 90, &add_mi2json});

} // namespace
} // namespace rocplay::cli::mi2json_command
