// `${name.field}` references in mi:/cli: commands, and how values are put into commands safely.
#include "playbook/internal.hpp"

#include <fmt/format.h>

namespace rocplay::playbook::detail {

namespace {

bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_name_char(char c) {
  return is_name_start(c) || (c >= '0' && c <= '9') || c == '-';
}

// What a string may hold to go into a console command (or inside an MI c-string) unquoted: the
// console has no quoting rule that every command honours, so only plain words are let through.
bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("_.:/@+,=~%-").find(c) != std::string_view::npos;
}

} // namespace

Template parse_template(std::string_view text, const Position& position) {
  Template t;
  t.text = std::string(text);
  t.position = position;
  std::string literal;
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\n' || c == '\r') {
      throw TextError(static_cast<std::uint32_t>(i), "a command may not contain a line break",
                      "write one command per step; a line break would start another command");
    }
    if (c == '$' && text.substr(i, 3) == "$${") {
      literal += "${";
      i += 3;
      continue;
    }
    if (c == '$' && text.substr(i, 2) == "${") {
      const std::size_t start = i;
      const std::size_t close = text.find('}', i + 2);
      if (close == std::string_view::npos) {
        throw TextError(static_cast<std::uint32_t>(start), "`${` without its closing `}`",
                        "write ${name}, or $${ for a literal `${`");
      }
      const std::string_view inner = text.substr(i + 2, close - i - 2);
      Template::Piece ref;
      ref.literal = false;
      ref.text = std::string(inner);
      std::size_t j = 0;
      while (j <= inner.size()) {
        const std::size_t seg_start = j;
        while (j < inner.size() && is_name_char(inner[j])) {
          ++j;
        }
        const std::string_view seg = inner.substr(seg_start, j - seg_start);
        const bool first = ref.path.empty();
        const bool ok = !seg.empty() && (first ? is_name_start(seg[0]) : true);
        if (!ok || (j < inner.size() && inner[j] != '.')) {
          throw TextError(static_cast<std::uint32_t>(start + 2 + (ok ? j : seg_start)),
                          fmt::format("`${{{}}}` is not a name", inner),
                          "references look like ${pid}, ${thread.pc} or ${name.results.field}");
        }
        ref.path.emplace_back(seg);
        ++j; // past the dot (or the end)
      }
      if (!literal.empty()) {
        t.pieces.push_back({true, std::move(literal), {}});
        literal.clear();
      }
      t.pieces.push_back(std::move(ref));
      i = close + 1;
      continue;
    }
    literal += c;
    ++i;
  }
  if (!literal.empty()) {
    t.pieces.push_back({true, std::move(literal), {}});
  }
  return t;
}

std::string render(const Template& tmpl, const Scope& scope, Quoting quoting) {
  std::string out;
  bool in_quotes = false; // inside an MI c-string of the literal text
  std::uint32_t offset = 0;
  for (const auto& piece : tmpl.pieces) {
    if (piece.literal) {
      for (std::size_t i = 0; i < piece.text.size(); ++i) {
        const char c = piece.text[i];
        if (quoting == Quoting::Mi) {
          if (c == '\\' && in_quotes && i + 1 < piece.text.size()) {
            out += c;
            out += piece.text[++i];
            continue;
          }
          if (c == '"') {
            in_quotes = !in_quotes;
          }
        }
        out += c;
      }
      offset += static_cast<std::uint32_t>(piece.text.size());
      continue;
    }
    const Value* v = resolve(scope, piece.path);
    const std::string ref = "${" + piece.text + "}";
    if (v == nullptr || v->is_null()) {
      throw TextError(offset, fmt::format("{} has no value here", ref),
                      "check the name; a registered result exists only after its step ran");
    }
    switch (v->kind()) {
    case Value::Kind::Int:
      out += std::to_string(v->as_int());
      break;
    case Value::Kind::Address:
      out += fmt::format("{:#x}", v->as_address());
      break;
    case Value::Kind::Bool:
      out += v->as_bool() ? "1" : "0";
      break;
    case Value::Kind::String: {
      const std::string& s = v->as_string();
      for (char c : s) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          throw TextError(offset,
                          fmt::format("{} holds a line break or control character; refused", ref),
                          "values put into commands must be single-line text");
        }
      }
      if (quoting == Quoting::Mi && !in_quotes) {
        out += '"';
        out += mi::escape(s);
        out += '"';
        break;
      }
      for (char c : s) {
        if (!is_word_char(c)) {
          throw TextError(
              offset,
              fmt::format("{} = {} cannot go into a console command safely (`{}`)", ref, v->repr(),
                          std::string(1, c)),
              "console commands take plain words here: letters, digits and _.:/@+,=~%-");
        }
      }
      out += quoting == Quoting::Mi ? mi::escape(s) : s;
      break;
    }
    case Value::Kind::List:
    case Value::Kind::Map:
    case Value::Kind::Null:
      throw TextError(offset, fmt::format("{} is {}, not a single value", ref, v->repr()),
                      "refer to one field, e.g. ${name.results.field}");
    }
    offset += static_cast<std::uint32_t>(ref.size());
  }
  return out;
}

} // namespace rocplay::playbook::detail
