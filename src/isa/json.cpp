// Instructions and loops as JSON (see rocplay/isa/instructions.hpp).
#include "rocplay/isa/instructions.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace rocplay::isa {

namespace {
std::string hex_text(std::uint64_t v) {
  return fmt::format("{:#x}", v);
}
} // namespace

nlohmann::json to_json(const Instruction& in) {
  nlohmann::json j = {{"address", hex_text(in.address)}, {"text", in.text}};
  if (in.size > 0) {
    j["size"] = in.size;
  }
  if (!in.bytes.empty()) {
    j["bytes"] = in.bytes;
  }
  if (!in.function.empty()) {
    j["function"] = in.function;
  }
  if (in.offset) {
    j["offset"] = *in.offset;
  }
  if (!in.file.empty()) {
    j["file"] = in.file;
  }
  if (in.line) {
    j["line"] = *in.line;
  }
  if (in.branch_target) {
    j["branch_target"] = hex_text(*in.branch_target);
    j["conditional"] = in.conditional;
  }
  return j;
}

nlohmann::json to_json(const Loop& loop) {
  return {{"start", hex_text(loop.start)}, {"branch", hex_text(loop.branch)},
          {"instructions", loop.count},    {"spin", loop.spin},
          {"clock_wait", loop.clock_wait}, {"mnemonics", loop.mnemonics},
          {"summary", loop.describe()}};
}

} // namespace rocplay::isa
