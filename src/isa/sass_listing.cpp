// Reading nvdisasm listings (see rocplay/isa/sass_listing.hpp).
#include "rocplay/isa/sass_listing.hpp"

#include <fmt/format.h>

#include <cctype>
#include <map>
#include <optional>

namespace rocplay::isa {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) {
    s.remove_prefix(1);
  }
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
    s.remove_suffix(1);
  }
  return s;
}

std::optional<std::uint64_t> parse_hex(std::string_view s) {
  if (s.empty() || s.size() > 16) {
    return std::nullopt;
  }
  std::uint64_t v = 0;
  for (char c : s) {
    const int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                  : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
                  : (c >= 'A' && c <= 'F')                    ? c - 'A' + 10
                                                              : -1;
    if (d < 0) {
      return std::nullopt;
    }
    v = v * 16 + static_cast<std::uint64_t>(d);
  }
  return v;
}

// `//--------------------- .text._Z4spinv --------------------------` -> `.text._Z4spinv`
std::string_view section_header(std::string_view line) {
  if (!line.starts_with("//-")) {
    return {};
  }
  line.remove_prefix(line.find_first_not_of('-', 2) == std::string_view::npos
                         ? line.size()
                         : line.find_first_not_of('-', 2));
  line = trim(line);
  const auto end = line.find(' ');
  return end == std::string_view::npos ? std::string_view{} : line.substr(0, end);
}

// `.L_x_1:` -> `.L_x_1`
std::string_view label_definition(std::string_view line) {
  if (line.size() < 2 || line.front() != '.' || line.back() != ':' ||
      line.find_first_of(" \t") != std::string_view::npos) {
    return {};
  }
  return line.substr(0, line.size() - 1);
}

struct LabelUse {
  std::size_t instruction;
  std::string label;
};

} // namespace

SassListing read_nvdisasm_listing(std::string_view listing, std::string_view function,
                                  std::size_t max_instructions,
                                  std::optional<std::uint64_t> load_address) {
  SassListing out;
  const std::string wanted = function.empty() ? std::string() : ".text." + std::string(function);
  std::string current_section;
  std::map<std::string, std::uint64_t, std::less<>> labels; // of the current section
  std::vector<std::string> pending_labels; // defined, waiting for the next instruction
  std::vector<LabelUse> uses;
  std::optional<std::uint64_t> section_start;
  std::optional<std::uint64_t> shift; // of the section's addresses, to load_address
  std::size_t line_no = 0;
  auto resolve = [&] { // the section ended: its labels are known
    for (const auto& use : uses) {
      auto& text = out.instructions[use.instruction].text;
      const std::string quoted = fmt::format("`({})", use.label);
      if (auto it = labels.find(use.label); it != labels.end()) {
        if (auto at = text.find(quoted); at != std::string::npos) {
          text.replace(at, quoted.size(), fmt::format("{:#x}", it->second));
        }
      }
    }
    uses.clear();
    labels.clear();
    pending_labels.clear();
    section_start.reset();
    shift.reset();
  };
  std::size_t pos = 0;
  while (pos < listing.size() && out.instructions.size() < max_instructions) {
    std::size_t nl = listing.find('\n', pos);
    if (nl == std::string_view::npos) {
      nl = listing.size();
    }
    const std::string_view line = trim(listing.substr(pos, nl - pos));
    pos = nl + 1;
    ++line_no;
    if (auto section = section_header(line); !section.empty()) {
      resolve();
      current_section = std::string(section);
      continue;
    }
    const bool in_code =
        current_section.starts_with(".text.") && (wanted.empty() || current_section == wanted);
    if (!in_code) {
      continue;
    }
    if (auto label = label_definition(line); !label.empty()) {
      pending_labels.emplace_back(label);
      continue;
    }
    if (!line.starts_with("/*")) {
      continue; // directives (.align, .type ...) and the function's own label
    }
    const auto close = line.find("*/");
    auto address =
        close == std::string_view::npos ? std::nullopt : parse_hex(line.substr(2, close - 2));
    if (address && load_address && !wanted.empty()) {
      if (!shift) {
        shift = *load_address - *address; // from the section's first address, modulo 2^64
      }
      *address += *shift;
    }
    std::string_view text = close == std::string_view::npos ? line : trim(line.substr(close + 2));
    // `-hex` appends the encoding as a second comment: `/* 0x000fe20000000f00 */`.
    if (auto comment = text.find("/*"); comment != std::string_view::npos) {
      text = trim(text.substr(0, comment));
    }
    if (!text.empty() && text.back() == ';') {
      text = trim(text.substr(0, text.size() - 1));
    }
    if (!address || text.empty()) {
      if (out.problems.size() < 16) {
        out.problems.push_back(fmt::format("line {}: no address and instruction in `{}`", line_no,
                                           line.substr(0, 120)));
      }
      continue;
    }
    if (!section_start) {
      section_start = *address;
    }
    for (auto& label : pending_labels) {
      labels.emplace(std::move(label), *address);
    }
    pending_labels.clear();
    Instruction in;
    in.address = *address;
    in.text = std::string(text);
    in.function = current_section.substr(6);
    in.offset = *address - *section_start;
    if (auto tick = in.text.find("`("); tick != std::string::npos) {
      if (auto end = in.text.find(')', tick); end != std::string::npos) {
        uses.push_back({out.instructions.size(), in.text.substr(tick + 2, end - tick - 2)});
      }
    }
    if (!out.instructions.empty() && out.instructions.back().function == in.function &&
        in.address > out.instructions.back().address) {
      out.instructions.back().size = static_cast<std::uint32_t>(
          std::min<std::uint64_t>(in.address - out.instructions.back().address, 64));
    }
    out.instructions.push_back(std::move(in));
  }
  resolve();
  return out;
}

} // namespace rocplay::isa
