// NCCL/RCCL NCCL_DEBUG logs and PyTorch's watchdog lines (rocplay/collectives/collectives.hpp).
// Line formats, from their writers:
//  - every NCCL line: `HOST:PID:TID [DEV] NCCL INFO ...` (NCCL src/debug.cc), optionally after a
//    timestamp (NCCL_DEBUG_TIMESTAMP_FORMAT);
//  - init: `[Rank R] FUNC comm 0xPTR rank R nranks N cudaDev D nvmlDev D busId B commId 0xH -
//    Init START` and `FUNC comm 0xPTR rank R nranks N ... commId 0xH - Init COMPLETE` (NCCL
//    src/init.cc; older releases print no `[Rank R]` and no FUNC);
//  - NCCL_DEBUG_SUBSYS=COLL: `AllReduce: opCount 3 sendbuff 0x.. recvbuff 0x.. count 1024
//    datatype 7 op 0 root 0 comm 0xPTR [nranks=2] stream 0x..` (NCCL src/enqueue.cc);
//  - PyTorch (ProcessGroupNCCL.cpp): `[rank0]:[E1127 ...] [Rank 0] Watchdog caught collective
//    operation timeout: WorkNCCL(SeqNum=4, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024,
//    Timeout(ms)=20000) ran for 20004 milliseconds before timing out.` and the line after it,
//    `[PG ID 0 PG GUID 0(default_pg) Rank 0] Exception (either an error or timeout) detected by
//    watchdog at work: 4, last enqueued NCCL work: 4, last completed NCCL work: 3.` (`[PG 1
//    Rank 0]` in older releases).
#include "internal.hpp"

#include <fmt/format.h>

#include <map>

namespace rocplay::collectives {

namespace {

using detail::number_after;
using detail::word_after;

using text_scan::is_digit;

// NCCL's ncclDataType_t, as numbered in nccl.h.
std::string nccl_dtype(std::uint64_t n) {
  static const char* const names[] = {"Int8",    "Uint8",    "Int32",      "Uint32",
                                      "Int64",   "Uint64",   "Float16",    "Float32",
                                      "Float64", "Bfloat16", "Float8e4m3", "Float8e5m2"};
  return n < std::size(names) ? names[n] : "datatype " + std::to_string(n);
}

// `HOST:PID:TID [DEV] NCCL ` before the message: host and pid (nullopt if not an NCCL line).
struct NcclPrefix {
  std::string host;
  std::int64_t pid = 0;
  std::string_view message; // after `NCCL INFO ` / `NCCL WARN `
  bool warn = false;
};

std::optional<NcclPrefix> nccl_prefix(std::string_view line, std::size_t max_text) {
  auto at = line.find(" NCCL INFO ");
  bool warn = false;
  if (at == std::string_view::npos) {
    at = line.find(" NCCL WARN ");
    warn = true;
  }
  if (at == std::string_view::npos) {
    return std::nullopt;
  }
  NcclPrefix p;
  p.warn = warn;
  p.message = line.substr(at + 11);
  // The `HOST:PID:TID` field: the last blank-separated field before ` [DEV]`.
  std::string_view before = line.substr(0, at);
  const auto dev = before.rfind(" [");
  if (dev != std::string_view::npos) {
    before = before.substr(0, dev);
  }
  const auto sp = before.rfind(' ');
  std::string_view id = sp == std::string_view::npos ? before : before.substr(sp + 1);
  const auto c2 = id.rfind(':');
  if (c2 != std::string_view::npos && c2 > 0) {
    const auto c1 = id.rfind(':', c2 - 1);
    if (c1 != std::string_view::npos) {
      if (auto pid = text_scan::parse_dec(id.substr(c1 + 1, c2 - c1 - 1));
          pid && *pid < (1u << 31)) {
        p.pid = static_cast<std::int64_t>(*pid);
        p.host = detail::clean(id.substr(0, c1), max_text);
      }
    }
  }
  return p;
}

// `[rank3]:` at the start of a line (PyTorch's per-rank prefix).
std::optional<int> rank_prefix(std::string_view line) {
  const auto p = line.find("[rank");
  if (p == std::string_view::npos || p > 32) {
    return std::nullopt;
  }
  auto n = number_after(line.substr(p), "[rank");
  if (n && *n < (1u << 24)) {
    return static_cast<int>(*n);
  }
  return std::nullopt;
}

// The group a PyTorch log prefix names: `PG GUID 0(default_pg)` -> {0, default_pg}; `[PG 3 ` ->
// {3, ""}; none -> empty.
std::pair<std::string, std::string> group_of(std::string_view line) {
  std::string group;
  std::string desc;
  if (line.find("PG GUID ") != std::string_view::npos) {
    group = word_after(line, "PG GUID ", 64);
    if (auto paren = group.find('('); paren != std::string::npos) {
      desc = group.substr(paren + 1);
      group.resize(paren);
      if (!desc.empty() && desc.back() == ')') {
        desc.pop_back();
      }
    }
  } else if (line.find("[PG ") != std::string_view::npos) {
    group = word_after(line, "[PG ", 64);
  }
  return {group, desc};
}

std::string lower_op(std::string_view op) {
  return text_scan::lower(op);
}

} // namespace

Input read_nccl_log(std::string_view text, const std::string& file, std::optional<int> rank,
                    const Limits& limits) {
  Input in;
  in.file = file;
  in.source = Source::NcclLog;
  in.rank = rank;
  std::map<std::string, std::size_t> comm_by_ptr; // `pid/0xPTR` -> communicators index
  std::size_t line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto nl = text.find('\n', pos);
    if (nl == std::string_view::npos) {
      nl = text.size();
    }
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (line.size() > limits.max_line_bytes) {
      line = line.substr(0, limits.max_line_bytes);
    }
    if (auto p = nccl_prefix(line, limits.max_text)) {
      if (in.host.empty() && !p->host.empty()) {
        in.host = p->host;
        in.pid = p->pid;
      }
      const std::string_view m = p->message;
      if (m.find(" nranks ") != std::string_view::npos &&
          (m.find("Init COMPLETE") != std::string_view::npos ||
           m.find("Init START") != std::string_view::npos)) {
        Communicator c;
        c.comm_ptr = word_after(m, "comm ", 32);
        if (auto r = number_after(m, " rank "); r && *r < (1u << 24)) {
          c.rank = static_cast<int>(*r);
        }
        if (auto n = number_after(m, " nranks "); n && *n < (1u << 24)) {
          c.nranks = static_cast<int>(*n);
        }
        if (auto d = number_after(m, " cudaDev "); d && *d < 4096) {
          c.cuda_dev = static_cast<int>(*d);
        }
        c.bus_id = word_after(m, " busId ", 32);
        c.comm_id = word_after(m, " commId ", 32);
        c.host = p->host;
        c.pid = p->pid;
        c.line = line_no;
        const std::string key = std::to_string(p->pid) + "/" + c.comm_ptr;
        if (auto it = comm_by_ptr.find(key); it != comm_by_ptr.end()) {
          auto& old = in.communicators[it->second];
          if (old.comm_id.empty()) {
            old.comm_id = c.comm_id;
          }
        } else if (in.communicators.size() < limits.max_groups && !c.comm_ptr.empty()) {
          comm_by_ptr[key] = in.communicators.size();
          in.communicators.push_back(std::move(c));
        }
        continue;
      }
      // A COLL line: `AllReduce: opCount 3 ... count 1024 datatype 7 ... comm 0xPTR [nranks=2]`.
      if (const auto colon = m.find(": opCount "); colon != std::string_view::npos && colon < 40) {
        auto op_count = number_after(m, ": opCount ", 16);
        auto count = number_after(m, " count ");
        const std::string ptr = word_after(m, " comm ", 32);
        if (!op_count || ptr.empty()) {
          continue;
        }
        if (in.records.size() >= limits.max_records) {
          ++in.records_dropped;
          continue;
        }
        Record r;
        r.source = Source::NcclLog;
        r.file = file;
        r.line = line_no;
        r.op = detail::clean(m.substr(0, colon), 40);
        r.seq = *op_count + 1; // opCount counts from 0; PyTorch's seq ids from 1
        if (count && *count <= static_cast<std::uint64_t>(INT64_MAX)) {
          r.numel_in = static_cast<std::int64_t>(*count);
        }
        if (auto dt = number_after(m, " datatype ")) {
          r.dtype = nccl_dtype(*dt);
        }
        r.state = State::Scheduled;
        const std::string key = std::to_string(p->pid) + "/" + ptr;
        if (auto it = comm_by_ptr.find(key); it != comm_by_ptr.end()) {
          const auto& c = in.communicators[it->second];
          r.group.name = c.comm_id.empty() ? "comm " + ptr : c.comm_id;
          r.group.desc = fmt::format("NCCL communicator of {} ranks", c.nranks);
          r.rank = c.rank;
        } else {
          r.group.name = "comm " + ptr;
          r.rank = rank.value_or(-1);
        }
        in.records.push_back(std::move(r));
      }
      continue;
    }
    // PyTorch's watchdog.
    if (const auto w = line.find("Watchdog caught collective operation timeout");
        w != std::string_view::npos) {
      if (in.records.size() >= limits.max_records) {
        ++in.records_dropped;
        continue;
      }
      auto seq = number_after(line, "SeqNum=");
      if (!seq) {
        in.notes.push_back(fmt::format("line {}: a watchdog timeout without its SeqNum", line_no));
        continue;
      }
      Record r;
      r.source = Source::NcclLog;
      r.file = file;
      r.line = line_no;
      r.seq = *seq;
      r.op = word_after(line, "OpType=", 40);
      r.state = State::TimedOut;
      r.complete_history = false;
      if (auto n = number_after(line, "NumelIn=");
          n && *n <= static_cast<std::uint64_t>(INT64_MAX)) {
        r.numel_in = static_cast<std::int64_t>(*n);
      }
      if (auto n = number_after(line, "NumelOut=");
          n && *n <= static_cast<std::uint64_t>(INT64_MAX)) {
        r.numel_out = static_cast<std::int64_t>(*n);
      }
      if (auto t = number_after(line, "Timeout(ms)="); t && *t < (1ULL << 40)) {
        r.timeout_ms = static_cast<std::int64_t>(*t);
      }
      auto global = rank_prefix(line);
      auto local = number_after(line, "[Rank ");
      if (!local) {
        local = number_after(line, " Rank ");
      }
      if (global) {
        r.rank = *global;
      } else if (rank) {
        r.rank = *rank;
      } else if (local && *local < (1u << 24)) {
        r.rank = static_cast<int>(*local);
      }
      // Newer releases put the group in the line's own prefix (ProcessGroupNCCL's logPrefix());
      // older ones in the `detected by watchdog at work` line that follows.
      const auto [group, desc] = group_of(line.substr(0, w));
      r.group.name = group.empty() ? "?" : group;
      r.group.desc = desc;
      in.records.push_back(std::move(r));
      continue;
    }
    // `[PG ID 0 PG GUID 0(default_pg) Rank 0] Exception (either an error or timeout) detected by
    // watchdog at work: 4, ...`: names the group of the timeout line before it.
    if (line.find("detected by watchdog at work: ") != std::string_view::npos) {
      auto seq = number_after(line, "detected by watchdog at work: ");
      const auto [group, desc] = group_of(line);
      const auto global = rank_prefix(line);
      for (auto it = in.records.rbegin(); it != in.records.rend(); ++it) {
        if (it->source == Source::NcclLog && it->state == State::TimedOut &&
            it->group.name == "?" && seq && it->seq == *seq && (!global || it->rank == *global)) {
          it->group.name = group.empty() ? "?" : group;
          it->group.desc = desc;
          break;
        }
      }
    }
  }
  for (auto& r : in.records) {
    if (r.group.name == "?") {
      r.group.name = ""; // the group was not named: matched by seq alone, with the other lines
    }
    if (r.source == Source::NcclLog && r.state == State::TimedOut) {
      r.op = lower_op(r.op);
    }
  }
  if (in.notes.size() > limits.max_notes) {
    in.notes.resize(limits.max_notes);
  }
  return in;
}

} // namespace rocplay::collectives
