// The condition language of `when:`, `where:`, `expect:` and `fail_when:`.
//
//   expr    := or
//   or      := and ('or' and)*
//   and     := not ('and' not)*
//   not     := 'not' not | compare
//   compare := primary [('=='|'!='|'<'|'<='|'>'|'>='|'contains'|'startswith'|'endswith') primary]
//   primary := INT | HEX | STRING | true | false | null | NAME('.'FIELD)* | CALL | '(' expr ')'
//
// Nothing here calls the debugger or anything else: a condition reads values and compares them.
#include "core/text_scan.hpp"
#include "playbook/internal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstring>

namespace rocplay::playbook::detail {

std::optional<std::string> nearest(std::string_view word,
                                   const std::vector<std::string_view>& candidates) {
  std::optional<std::string> best;
  std::size_t best_distance = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (auto candidate : candidates) {
    const std::size_t d = text_scan::edit_distance(word, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = std::string(candidate);
    }
  }
  return best;
}

namespace {

using Op = ExprNode::Op;

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_ident_char(char c) {
  return is_ident_start(c) || (c >= '0' && c <= '9') || c == '-';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

const std::vector<std::string_view> kFunctions = {"has_mi_command", "defined", "len"};
const std::vector<std::string_view> kKeywords = {
    "and", "or", "not", "true", "false", "null", "contains", "startswith", "endswith"};

class ExprParser {
public:
  explicit ExprParser(std::string_view text) : text_(text) {}

  std::shared_ptr<const ExprNode> parse() {
    if (text_.size() > kMaxExprLength) {
      throw TextError(0, fmt::format("condition is {} bytes long; the limit is {}", text_.size(),
                                     kMaxExprLength));
    }
    skip_space();
    if (pos_ == text_.size()) {
      throw TextError(0, "empty condition",
                      "write a condition such as `thread.function == \"main\"`");
    }
    auto node = parse_or();
    skip_space();
    if (pos_ != text_.size()) {
      throw TextError(static_cast<std::uint32_t>(pos_),
                      fmt::format("unexpected `{}` after a complete condition", rest_excerpt()),
                      "join conditions with `and` / `or`; compare with `==`");
    }
    return node;
  }

private:
  struct DepthGuard {
    explicit DepthGuard(ExprParser& p) : parser(p) {
      if (++parser.depth_ > kMaxExprDepth) {
        throw TextError(static_cast<std::uint32_t>(parser.pos_),
                        fmt::format("condition nests deeper than {} levels", kMaxExprDepth));
      }
    }
    ~DepthGuard() { --parser.depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;
    ExprParser& parser;
  };

  std::string rest_excerpt() const {
    std::string out(text_.substr(pos_, 16));
    return out;
  }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) {
      ++pos_;
    }
  }

  // A keyword at pos_ followed by a non-identifier character.
  bool peek_word(std::string_view word) {
    skip_space();
    if (text_.substr(pos_, word.size()) != word) {
      return false;
    }
    const std::size_t end = pos_ + word.size();
    return end == text_.size() || !is_ident_char(text_[end]);
  }

  bool accept_word(std::string_view word) {
    if (!peek_word(word)) {
      return false;
    }
    pos_ += word.size();
    return true;
  }

  bool accept(std::string_view symbol) {
    skip_space();
    if (text_.substr(pos_, symbol.size()) == symbol) {
      pos_ += symbol.size();
      return true;
    }
    return false;
  }

  static std::shared_ptr<ExprNode> make(Op op, std::size_t offset) {
    auto n = std::make_shared<ExprNode>();
    n->op = op;
    n->offset = static_cast<std::uint32_t>(offset);
    return n;
  }

  std::shared_ptr<const ExprNode> parse_or() {
    DepthGuard guard(*this);
    auto left = parse_and();
    while (true) {
      const std::size_t at = (skip_space(), pos_);
      if (!accept_word("or") && !accept("||")) {
        return left;
      }
      auto n = make(Op::Or, at);
      n->args = {left, parse_and()};
      left = n;
    }
  }

  std::shared_ptr<const ExprNode> parse_and() {
    auto left = parse_not();
    while (true) {
      const std::size_t at = (skip_space(), pos_);
      if (!accept_word("and") && !accept("&&")) {
        return left;
      }
      auto n = make(Op::And, at);
      n->args = {left, parse_not()};
      left = n;
    }
  }

  std::shared_ptr<const ExprNode> parse_not() {
    DepthGuard guard(*this);
    const std::size_t at = (skip_space(), pos_);
    if (accept_word("not") || (text_.substr(pos_, 2) != "!=" && accept("!"))) {
      auto n = make(Op::Not, at);
      n->args = {parse_not()};
      return n;
    }
    return parse_compare();
  }

  std::shared_ptr<const ExprNode> parse_compare() {
    auto left = parse_primary();
    static const std::array<std::pair<std::string_view, Op>, 6> kSymbols = {{
        {"==", Op::Eq},
        {"!=", Op::Ne},
        {"<=", Op::Le},
        {">=", Op::Ge},
        {"<", Op::Lt},
        {">", Op::Gt},
    }};
    static const std::array<std::pair<std::string_view, Op>, 3> kWords = {{
        {"contains", Op::Contains},
        {"startswith", Op::StartsWith},
        {"endswith", Op::EndsWith},
    }};
    skip_space();
    const std::size_t at = pos_;
    for (const auto& [sym, op] : kSymbols) {
      if (accept(sym)) {
        auto n = make(op, at);
        n->args = {left, parse_primary()};
        return n;
      }
    }
    for (const auto& [word, op] : kWords) {
      if (accept_word(word)) {
        auto n = make(op, at);
        n->args = {left, parse_primary()};
        return n;
      }
    }
    if (pos_ < text_.size() && text_[pos_] == '=') {
      throw TextError(static_cast<std::uint32_t>(pos_), "`=` is not a comparison",
                      "compare with `==`");
    }
    return left;
  }

  std::shared_ptr<const ExprNode> parse_primary() {
    DepthGuard guard(*this);
    skip_space();
    const std::size_t at = pos_;
    if (pos_ == text_.size()) {
      throw TextError(static_cast<std::uint32_t>(pos_), "condition ends where a value is expected");
    }
    const char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      auto inner = parse_or();
      if (!accept(")")) {
        throw TextError(static_cast<std::uint32_t>(pos_), "missing `)`");
      }
      return inner;
    }
    if (c == '"' || c == '\'') {
      auto n = make(Op::Literal, at);
      n->literal = Value::string(parse_string());
      return n;
    }
    if (is_digit(c) || (c == '-' && pos_ + 1 < text_.size() && is_digit(text_[pos_ + 1]))) {
      auto n = make(Op::Literal, at);
      n->literal = parse_number();
      return n;
    }
    if (is_ident_start(c)) {
      const std::string word = read_ident();
      if (word == "true" || word == "false") {
        auto n = make(Op::Literal, at);
        n->literal = Value::boolean(word == "true");
        return n;
      }
      if (word == "null") {
        return make(Op::Literal, at);
      }
      if (std::find(kKeywords.begin(), kKeywords.end(), word) != kKeywords.end()) {
        throw TextError(static_cast<std::uint32_t>(at),
                        fmt::format("`{}` where a value is expected", word));
      }
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == '(') {
        return parse_call(word, at);
      }
      auto n = make(Op::Name, at);
      n->path.push_back(word);
      while (pos_ < text_.size() && text_[pos_] == '.') {
        ++pos_;
        if (pos_ < text_.size() && is_digit(text_[pos_])) {
          std::string digits;
          while (pos_ < text_.size() && is_digit(text_[pos_])) {
            digits += text_[pos_++];
          }
          n->path.push_back(digits);
        } else if (pos_ < text_.size() && is_ident_start(text_[pos_])) {
          n->path.push_back(read_ident());
        } else {
          throw TextError(static_cast<std::uint32_t>(pos_), "a field name must follow `.`");
        }
      }
      return n;
    }
    throw TextError(static_cast<std::uint32_t>(at),
                    fmt::format("unexpected `{}` where a value is expected", rest_excerpt()),
                    "values are numbers, \"strings\", true/false/null, names such as "
                    "`thread.function`, or has_mi_command(NAME), defined(NAME), len(VALUE)");
  }

  std::shared_ptr<const ExprNode> parse_call(const std::string& name, std::size_t at) {
    ++pos_; // (
    skip_space();
    std::shared_ptr<ExprNode> n;
    if (name == "has_mi_command") {
      n = make(Op::HasMiCommand, at);
      std::string arg;
      if (pos_ < text_.size() && (text_[pos_] == '"' || text_[pos_] == '\'')) {
        arg = parse_string();
      } else {
        while (pos_ < text_.size() && (is_ident_char(text_[pos_]))) {
          arg += text_[pos_++];
        }
      }
      if (!arg.empty() && arg[0] == '-') {
        arg.erase(0, 1);
      }
      if (arg.empty()) {
        throw TextError(static_cast<std::uint32_t>(pos_),
                        "has_mi_command() needs an MI command name",
                        "e.g. has_mi_command(agent-info)");
      }
      n->literal = Value::string(arg);
    } else if (name == "defined") {
      n = make(Op::Defined, at);
      auto arg = parse_primary();
      if (arg->op != Op::Name) {
        throw TextError(arg->offset, "defined() takes a name", "e.g. defined(agents.results)");
      }
      n->args = {arg};
    } else if (name == "len") {
      n = make(Op::Len, at);
      n->args = {parse_or()};
    } else {
      auto guess = nearest(name, kFunctions);
      throw TextError(static_cast<std::uint32_t>(at), fmt::format("unknown function `{}`", name),
                      guess ? fmt::format("did you mean `{}`?", *guess)
                            : "functions: has_mi_command(NAME), defined(NAME), len(VALUE)");
    }
    if (!accept(")")) {
      throw TextError(static_cast<std::uint32_t>(pos_),
                      fmt::format("missing `)` after the argument of {}()", name));
    }
    return n;
  }

  std::string read_ident() {
    std::string word;
    while (pos_ < text_.size() && is_ident_char(text_[pos_])) {
      word += text_[pos_++];
    }
    return word;
  }

  std::string parse_string() {
    const char quote = text_[pos_];
    const std::size_t start = pos_++;
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      char c = text_[pos_++];
      if (c == '\\' && pos_ < text_.size()) {
        const char e = text_[pos_++];
        switch (e) {
        case 'n':
          c = '\n';
          break;
        case 't':
          c = '\t';
          break;
        default:
          c = e;
          break;
        }
      }
      out += c;
    }
    if (pos_ == text_.size()) {
      throw TextError(static_cast<std::uint32_t>(start), "string without its closing quote");
    }
    ++pos_;
    return out;
  }

  Value parse_number() {
    const std::size_t start = pos_;
    bool negative = false;
    if (text_[pos_] == '-') {
      negative = true;
      ++pos_;
    }
    if (!negative && text_.substr(pos_, 2) == "0x") {
      pos_ += 2;
      const std::size_t digits = pos_;
      while (pos_ < text_.size() && std::isxdigit(static_cast<unsigned char>(text_[pos_])) != 0) {
        ++pos_;
      }
      std::uint64_t v = 0;
      auto [p, ec] = std::from_chars(text_.data() + digits, text_.data() + pos_, v, 16);
      if (ec != std::errc() || digits == pos_) {
        throw TextError(static_cast<std::uint32_t>(start), "bad hexadecimal number");
      }
      return Value::address(v);
    }
    while (pos_ < text_.size() && is_digit(text_[pos_])) {
      ++pos_;
    }
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(text_.data() + start, text_.data() + pos_, v);
    if (ec != std::errc()) {
      throw TextError(static_cast<std::uint32_t>(start), "number out of range");
    }
    if (pos_ < text_.size() && is_ident_char(text_[pos_])) {
      throw TextError(static_cast<std::uint32_t>(start), "a name cannot start with a digit");
    }
    return Value::integer(v);
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  std::size_t depth_ = 0;
};

// A number as sign and magnitude, so that addresses above 2^63 and negative integers compare.
struct Number {
  bool negative = false;
  std::uint64_t magnitude = 0;
  auto operator<=>(const Number& o) const {
    if (negative != o.negative) {
      return negative ? std::strong_ordering::less : std::strong_ordering::greater;
    }
    return negative ? o.magnitude <=> magnitude : magnitude <=> o.magnitude;
  }
  bool operator==(const Number&) const = default;
};

std::optional<Number> number_of(const Value& v, bool allow_string) {
  switch (v.kind()) {
  case Value::Kind::Int: {
    const std::int64_t i = v.as_int();
    if (i < 0) {
      return Number{true, static_cast<std::uint64_t>(-(i + 1)) + 1};
    }
    return Number{false, static_cast<std::uint64_t>(i)};
  }
  case Value::Kind::Address:
    return Number{false, v.as_address()};
  case Value::Kind::String: {
    if (!allow_string) {
      return std::nullopt;
    }
    std::string_view s = v.as_string();
    bool negative = false;
    if (!s.empty() && s[0] == '-') {
      negative = true;
      s.remove_prefix(1);
    }
    int base = 10;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
      base = 16;
      s.remove_prefix(2);
    }
    std::uint64_t m = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), m, base);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size()) {
      return std::nullopt;
    }
    return Number{negative && m != 0, m};
  }
  default:
    return std::nullopt;
  }
}

bool numeric(const Value& v) {
  return v.kind() == Value::Kind::Int || v.kind() == Value::Kind::Address;
}

// <0, 0, >0, or nullopt when the two cannot be ordered.
std::optional<int> compare(const Value& a, const Value& b) {
  if (numeric(a) || numeric(b)) {
    auto x = number_of(a, true);
    auto y = number_of(b, true);
    if (!x || !y) {
      return std::nullopt;
    }
    auto o = *x <=> *y;
    return o < 0 ? -1 : (o > 0 ? 1 : 0);
  }
  if (a.kind() == Value::Kind::String && b.kind() == Value::Kind::String) {
    const int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  return std::nullopt;
}

bool equal(const Value& a, const Value& b) {
  if (a.kind() == Value::Kind::Null || b.kind() == Value::Kind::Null) {
    return a.kind() == b.kind();
  }
  if (a.kind() == Value::Kind::Bool || b.kind() == Value::Kind::Bool) {
    return a.kind() == b.kind() && a.as_bool() == b.as_bool();
  }
  auto c = compare(a, b);
  return c && *c == 0;
}

} // namespace

std::shared_ptr<const ExprNode> parse_expr(std::string_view text) {
  return ExprParser(text).parse();
}

void for_each_name(const ExprNode& node,
                   const std::function<void(const std::vector<std::string>&, std::uint32_t)>& fn) {
  if (node.op == Op::Name) {
    fn(node.path, node.offset);
  }
  for (const auto& arg : node.args) {
    for_each_name(*arg, fn);
  }
}

const Value* resolve(const Scope& scope, const std::vector<std::string>& path) {
  if (path.empty()) {
    return nullptr;
  }
  const Value* v = scope.lookup(path[0]);
  for (std::size_t i = 1; v != nullptr && i < path.size(); ++i) {
    if (v->kind() == Value::Kind::Map) {
      v = v->get(path[i]);
    } else if (v->kind() == Value::Kind::List) {
      std::size_t index = 0;
      auto [p, ec] = std::from_chars(path[i].data(), path[i].data() + path[i].size(), index);
      if (ec != std::errc() || p != path[i].data() + path[i].size() || index >= v->items().size()) {
        return nullptr;
      }
      v = &v->items()[index];
    } else {
      return nullptr;
    }
  }
  return v;
}

Value evaluate(const ExprNode& node, const Scope& scope) {
  auto arg = [&](std::size_t i) { return evaluate(*node.args[i], scope); };
  switch (node.op) {
  case Op::Literal:
    return node.literal;
  case Op::Name: {
    const Value* v = resolve(scope, node.path);
    return v != nullptr ? *v : Value();
  }
  case Op::Not:
    return Value::boolean(!arg(0).truthy());
  case Op::And:
    return Value::boolean(arg(0).truthy() && arg(1).truthy());
  case Op::Or:
    return Value::boolean(arg(0).truthy() || arg(1).truthy());
  case Op::Eq:
    return Value::boolean(equal(arg(0), arg(1)));
  case Op::Ne:
    return Value::boolean(!equal(arg(0), arg(1)));
  case Op::Lt:
  case Op::Le:
  case Op::Gt:
  case Op::Ge: {
    auto c = compare(arg(0), arg(1));
    if (!c) {
      return Value::boolean(false);
    }
    switch (node.op) {
    case Op::Lt:
      return Value::boolean(*c < 0);
    case Op::Le:
      return Value::boolean(*c <= 0);
    case Op::Gt:
      return Value::boolean(*c > 0);
    default:
      return Value::boolean(*c >= 0);
    }
  }
  case Op::Contains: {
    const Value hay = arg(0);
    const Value needle = arg(1);
    if (hay.kind() == Value::Kind::String && needle.kind() == Value::Kind::String) {
      return Value::boolean(hay.as_string().find(needle.as_string()) != std::string::npos);
    }
    if (hay.kind() == Value::Kind::List) {
      for (const auto& item : hay.items()) {
        if (equal(item, needle)) {
          return Value::boolean(true);
        }
      }
      return Value::boolean(false);
    }
    if (hay.kind() == Value::Kind::Map && needle.kind() == Value::Kind::String) {
      return Value::boolean(hay.get(needle.as_string()) != nullptr);
    }
    return Value::boolean(false);
  }
  case Op::StartsWith:
  case Op::EndsWith: {
    const Value s = arg(0);
    const Value affix = arg(1);
    if (s.kind() != Value::Kind::String || affix.kind() != Value::Kind::String) {
      return Value::boolean(false);
    }
    const std::string& str = s.as_string();
    const std::string& a = affix.as_string();
    if (a.size() > str.size()) {
      return Value::boolean(false);
    }
    return Value::boolean(node.op == Op::StartsWith
                              ? str.compare(0, a.size(), a) == 0
                              : str.compare(str.size() - a.size(), a.size(), a) == 0);
  }
  case Op::HasMiCommand:
    return Value::boolean(scope.has_mi_command(node.literal.as_string()));
  case Op::Defined: {
    const Value* v = resolve(scope, node.args[0]->path);
    return Value::boolean(v != nullptr && !v->is_null());
  }
  case Op::Len: {
    const Value v = arg(0);
    switch (v.kind()) {
    case Value::Kind::String:
      return Value::integer(static_cast<std::int64_t>(v.as_string().size()));
    case Value::Kind::List:
      return Value::integer(static_cast<std::int64_t>(v.items().size()));
    case Value::Kind::Map:
      return Value::integer(static_cast<std::int64_t>(v.entries().size()));
    default:
      return Value::integer(0);
    }
  }
  }
  return Value();
}

} // namespace rocplay::playbook::detail
