// The one rank rule (rocplay/core/source.hpp).
#include "rocplay/core/source.hpp"

#include "core/text_scan.hpp"
#include "rocplay/core/names.hpp"

#include <filesystem>
#include <regex>

namespace rocplay::source {

namespace {

using text_scan::is_digit;

// The decimal digits at `pos` (at most 18, so they fit in 64 bits).
std::string_view digits_at(std::string_view s, std::size_t pos) {
  std::size_t end = pos;
  while (end < s.size() && is_digit(s[end]) && end - pos < 18) {
    ++end;
  }
  return s.substr(std::min(pos, s.size()), end - std::min(pos, s.size()));
}

// The length of a prefix that ends at `end` (exclusive), with one space after it if there is one.
std::size_t with_space(std::string_view line, std::size_t end) {
  return end < line.size() && line[end] == ' ' ? end + 1 : end;
}

// `N` of the first `TP<N>` in a `(...)` prefix: `Worker_TP3`, `TP3`, `scheduler_TP12_EP0`.
std::optional<int> tp_rank(std::string_view inner) {
  for (std::size_t at = inner.find("TP"); at != std::string_view::npos;
       at = inner.find("TP", at + 2)) {
    if (auto r = parse_rank(digits_at(inner, at + 2))) {
      return r;
    }
  }
  return std::nullopt;
}

} // namespace

constexpr NameTable<RankRule, 8> kRankRuleNames{{
    {RankRule::None, ""},
    {RankRule::Pattern, "--rank-from"},
    {RankRule::Meta, "meta"},
    {RankRule::Environment, "environment"},
    {RankRule::Prefix, "launcher prefix"},
    {RankRule::FileName, "file name"},
    {RankRule::Device, "device"},
    {RankRule::Order, "input order"},
}};
static_assert(names_cover(kRankRuleNames, RankRule::Order));

std::string_view to_string(RankRule rule) {
  return name_of(kRankRuleNames, rule);
}

bool Source::offer_rank(std::optional<int> r, RankRule rule) {
  if (!r || rule == RankRule::None) {
    return false;
  }
  if (rank && rank_rule != RankRule::None && rank_rule <= rule) {
    return false;
  }
  rank = r;
  rank_rule = rule;
  return true;
}

std::optional<int> parse_rank(std::string_view text) {
  if (text.empty() || text.size() > 6) {
    return std::nullopt;
  }
  auto v = text_scan::parse_digits(text, 10);
  if (!v) {
    return std::nullopt;
  }
  return static_cast<int>(*v);
}

std::optional<int> rank_from_env(const std::map<std::string, std::string>& env) {
  for (std::string_view key : kRankVariables) {
    auto it = env.find(std::string(key));
    if (it == env.end()) {
      continue;
    }
    if (auto r = parse_rank(it->second)) {
      return r;
    }
  }
  return std::nullopt;
}

std::optional<int> rank_from_device(std::string_view device) {
  if (!device.starts_with("cuda:")) {
    return std::nullopt;
  }
  auto r = parse_rank(device.substr(5));
  if (!r || *r >= 4096) {
    return std::nullopt;
  }
  return r;
}

std::optional<LauncherPrefix> launcher_prefix(std::string_view line) {
  if (line.size() < 3) {
    return std::nullopt;
  }
  LauncherPrefix p;
  if (line.front() == '[') {
    const auto close = line.find(']');
    if (close == std::string_view::npos || close > 40) {
      return std::nullopt;
    }
    const auto inner = line.substr(1, close - 1);
    const auto after = line.substr(close + 1);
    // torchrun --tee / torch.distributed: `[rank3]:`
    if (inner.starts_with("rank") && after.starts_with(":")) {
      if (auto r = parse_rank(inner.substr(4))) {
        p.rank = r;
        p.key = line.substr(0, close + 2);
        p.length = with_space(line, close + 2);
        return p;
      }
      return std::nullopt;
    }
    // OpenMPI --tag-output: `[jobid,rank]<stderr>:`
    const auto comma = inner.find(',');
    if (comma == std::string_view::npos || !text_scan::parse_digits(inner.substr(0, comma), 10)) {
      return std::nullopt;
    }
    auto r = parse_rank(inner.substr(comma + 1));
    if (!r) {
      return std::nullopt;
    }
    for (std::string_view tag : {"<stderr>:", "<stdout>:", "<stddiag>:"}) {
      if (after.starts_with(tag)) {
        p.rank = r;
        p.key = line.substr(0, close + 1 + tag.size());
        p.length = with_space(line, p.key.size());
        return p;
      }
    }
    return std::nullopt;
  }
  if (line.front() == '(') {
    // vLLM / SGLang: `(VllmWorker rank=3 pid=12345) `, `(Worker_TP3 pid=7) `
    const auto close = line.find(')');
    if (close == std::string_view::npos || close > 128) {
      return std::nullopt;
    }
    const auto inner = line.substr(1, close - 1);
    const auto pid_at = inner.find("pid=");
    const auto rank_at = inner.find("rank=");
    if (pid_at == std::string_view::npos && rank_at == std::string_view::npos) {
      return std::nullopt;
    }
    if (pid_at != std::string_view::npos) {
      if (auto pid = text_scan::parse_digits(digits_at(inner, pid_at + 4), 10);
          pid && *pid > 0 && *pid < (std::uint64_t{1} << 62)) {
        p.pid = static_cast<std::int64_t>(*pid);
      }
    }
    p.rank = rank_at != std::string_view::npos ? parse_rank(digits_at(inner, rank_at + 5))
                                               : tp_rank(inner);
    p.key = line.substr(0, close + 1);
    p.length = with_space(line, close + 1);
    return p;
  }
  return std::nullopt;
}

std::optional<std::pair<std::string, int>> rank_in_file_name(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  std::string name = p.filename().string();
  // The stem: up to the first dot (`hang_rank0.mi`, `rank1.rec.txt`).
  const std::size_t dot = name.find('.');
  const std::string stem = name.substr(0, dot);
  if (stem.empty() || stem.size() > 256) {
    return std::nullopt;
  }
  // A word that says "rank" right before the number, not inside a longer word; else a trailing
  // `-N` / `_N`.
  static const std::regex kNamed(
      "(^|[^A-Za-z0-9])(rank|rank_|rank-|r|tp|tp_|tp-|worker|worker_|"
      "worker-|gpu|gpu_|gpu-|local_rank|local_rank_)([0-9]{1,5})(?=$|[^0-9])",
      std::regex::ECMAScript | std::regex::icase);
  static const std::regex kTrailing("[-_]([0-9]{1,5})$", std::regex::ECMAScript);
  std::smatch m;
  std::size_t at = 0;
  std::size_t len = 0;
  if (std::regex_search(stem, m, kNamed)) {
    at = static_cast<std::size_t>(m.position(3));
    len = static_cast<std::size_t>(m.length(3));
  } else if (std::regex_search(stem, m, kTrailing)) {
    at = static_cast<std::size_t>(m.position(1));
    len = static_cast<std::size_t>(m.length(1));
  } else {
    return std::nullopt;
  }
  const int number = std::stoi(stem.substr(at, len));
  name.replace(at, len, "#");
  return std::make_pair((p.parent_path() / name).string(), number);
}

} // namespace rocplay::source
