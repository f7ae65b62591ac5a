#!/usr/bin/env python3
# Writes reconstructed PyTorch Flight Recorder dumps for rocplay's tests (fixtures/collectives/
# reconstructed/), byte for byte as PyTorch's writer lays them out, without PyTorch:
#  - the pickle as torch::jit::Pickler writes it with tag_aggregates off (pickle_str in
#    torch/csrc/distributed/c10d/TraceUtils.h / FlightRecorderDetail.hpp): PROTO 2; dicts as
#    EMPTY_DICT MARK k v ... SETITEMS, lists as EMPTY_LIST MARK ... APPENDS, tuples as TUPLE2,
#    strings BINUNICODE memoized by value (BINPUT/BINGET), a container used twice memoized by
#    pointer (BINPUT after it, BINGET later), ints BININT1/BININT2/BININT/LONG1, doubles BINFLOAT;
#  - the JSON as FlightRecorder::dump_json writes it (nlohmann: keys sorted, no frames, pg_config
#    and pg_status values as strings, time_discovered_* 0 when unset).
# The dicts hold what FlightRecorderDetail.hpp's getCollectiveTrace and dump_dict put in them
# (format version "2.10", PyTorch 2.11). Usage: make_fr_fixtures.py OUTDIR
import json
import os
import struct
import sys


class JitPickler:
    def __init__(self):
        self.out = bytearray(b"\x80\x02")
        self.memo_id = 0
        self.strings = {}
        self.shared = {}  # id(container) -> memo id, for containers used more than once
        self.uses = {}

    def count(self, v):
        if isinstance(v, (dict, list)):
            self.uses[id(v)] = self.uses.get(id(v), 0) + 1
            if self.uses[id(v)] > 1:
                return
            for x in (v.values() if isinstance(v, dict) else v):
                self.count(x)
        elif isinstance(v, tuple):
            for x in v:
                self.count(x)

    def put(self):
        if self.memo_id <= 255:
            self.out += b"q" + bytes([self.memo_id])
        else:
            self.out += b"r" + struct.pack("<I", self.memo_id)
        self.memo_id += 1
        return self.memo_id - 1

    def get(self, i):
        self.out += (b"h" + bytes([i])) if i <= 255 else (b"j" + struct.pack("<I", i))

    def push(self, v):
        if isinstance(v, (dict, list)) and self.uses.get(id(v), 0) > 1:
            if id(v) in self.shared:
                self.get(self.shared[id(v)])
                return
            self.push_impl(v)
            self.shared[id(v)] = self.put()
            return
        self.push_impl(v)

    def push_impl(self, v):
        if v is None:
            self.out += b"N"
        elif isinstance(v, bool):
            self.out += b"\x88" if v else b"\x89"
        elif isinstance(v, int):
            if 0 <= v <= 0xFF:
                self.out += b"K" + bytes([v])
            elif 0 <= v <= 0xFFFF:
                self.out += b"M" + struct.pack("<H", v)
            elif -(2**31) <= v < 2**31:
                self.out += b"J" + struct.pack("<i", v)
            else:
                self.out += b"\x8a\x08" + struct.pack("<q", v)
        elif isinstance(v, float):
            self.out += b"G" + struct.pack(">d", v)
        elif isinstance(v, str):
            if v in self.strings:
                self.get(self.strings[v])
                return
            b = v.encode()
            self.out += b"X" + struct.pack("<I", len(b)) + b
            self.strings[v] = self.put()
        elif isinstance(v, tuple):
            for x in v:
                self.push(x)
            self.out += {0: b")", 1: b"\x85", 2: b"\x86", 3: b"\x87"}[len(v)]
        elif isinstance(v, dict):
            self.out += b"}("
            for k, x in v.items():
                self.push(k)
                self.push(x)
            self.out += b"u"
        elif isinstance(v, list):
            self.out += b"]("
            for x in v:
                self.push(x)
            self.out += b"e"
        else:
            raise TypeError(type(v))

    def dumps(self, v):
        self.count(v)
        self.push(v)
        self.out += b"."
        return bytes(self.out)


def frames_for(user_file, user_line, user_fn, op):
    return [
        {"name": op, "filename": "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", "line": 2806},
        {"name": "wrapper", "filename": "/usr/lib/python3/dist-packages/torch/distributed/c10d_logger.py", "line": 81},
        {"name": user_fn, "filename": user_file, "line": user_line},
        {"name": "main", "filename": user_file, "line": 140},
        {"name": "<module>", "filename": user_file, "line": 180},
    ]


def entry(rid, pg, seq, op, numel, state, frames, dtype="Float", out_numel=None, pg_id=0):
    return {
        "frames": frames,
        "record_id": rid,
        "pg_id": pg_id,
        "process_group": pg,
        "thread_name": "pt_main_thread",
        "thread_id": "140245",
        "collective_seq_id": seq,
        "p2p_seq_id": 0,
        "op_id": seq,
        "profiling_name": "nccl:" + op,
        "time_created_ns": 1764272000000000000 + rid * 1000000,
        "duration_ms": 0.25 if state == "completed" else None,
        "input_sizes": [[numel]],
        "input_dtypes": [dtype],
        "output_sizes": [[out_numel if out_numel is not None else numel]],
        "output_dtypes": [dtype],
        "state": state,
        "time_discovered_started_ns": 1764272000000000000 + rid * 1000000 + 5000,
        "time_discovered_completed_ns": (1764272000000000000 + rid * 1000000 + 9000) if state == "completed" else None,
        "retired": state == "completed",
        "timeout_ms": 20000,
        "is_p2p": False,
    }


def dump(entries, groups):
    pg_config = {name: {"name": name, "desc": desc, "ranks": "[" + ", ".join(map(str, ranks)) + "]"}
                 for name, desc, ranks in groups}
    pg_status = {str(i): {"last_enqueued_collective": 0, "last_started_collective": 0,
                          "last_completed_collective": 0} for i in range(len(groups))}
    for e in entries:  # drop None durations as FlightRecorderDetail.hpp does (inserted only when set)
        if e["duration_ms"] is None:
            del e["duration_ms"]
    return {"version": "2.10", "pg_config": pg_config, "comm_lib_version": "2.27.5",
            "pg_status": pg_status, "entries": entries}


def as_json(d):
    j = json.loads(json.dumps(d))
    for e in j.get("entries", []):
        e.pop("frames", None)
        for k in ("time_discovered_started_ns", "time_discovered_completed_ns"):
            if e[k] is None:
                e[k] = 0
    for g in j["pg_config"].values():
        pass
    for s in j["pg_status"].values():
        for k in s:
            s[k] = str(s[k])
    return json.dumps(j, sort_keys=True, separators=(",", ":"))


def scenario(kind):
    default = ("0", "default_pg")
    user = "/home/user/train.py"
    ranks = {}
    for rank in (0, 1):
        shared = {}

        def fr(line, fn, op):  # one frame list per call site, shared like PyTorch's symbolized frames
            return shared.setdefault((line, fn, op), frames_for(user, line, fn, op))

        es = [entry(i, default, i + 1, "all_reduce", 1024, "completed", fr(120, "train_step", "all_reduce"))
              for i in range(3)]
        if kind == "missing_rank":
            if rank == 0:
                es.append(entry(3, default, 4, "all_reduce", 1024, "started", fr(120, "train_step", "all_reduce")))
        elif kind == "op_mismatch":
            if rank == 0:
                es.append(entry(3, default, 4, "all_reduce", 1024, "started", fr(120, "train_step", "all_reduce")))
            else:
                es.append(entry(3, default, 4, "_allgather_base", 1024, "completed",
                                fr(131, "gather_step", "all_gather_into_tensor"), out_numel=2048))
        elif kind == "size_mismatch":
            es.append(entry(3, default, 4, "all_reduce", 1024 if rank == 0 else 262144, "started",
                            fr(125 if rank == 0 else 127, "train_step", "all_reduce")))
        elif kind == "order_deadlock":
            a, b = ("1", "undefined"), ("2", "undefined")
            es = [entry(0, a, 1, "all_reduce", 1024, "completed", fr(101, "warm_up", "all_reduce"), pg_id=1),
                  entry(1, b, 1, "all_reduce", 1024, "completed", fr(102, "warm_up", "all_reduce"), pg_id=2)]
            es += [entry(2 + i, default, i + 1, "all_reduce", 1024, "completed",
                         fr(120, "train_step", "all_reduce")) for i in range(3)]
            first = (a, 1) if rank == 0 else (b, 2)
            es.append(entry(5, first[0], 2, "all_reduce", 1024, "started",
                            fr(150 if rank == 0 else 152, "sync_groups", "all_reduce"), pg_id=first[1]))
        elif kind == "healthy":
            es.append(entry(3, default, 4, "all_reduce", 1024, "completed", fr(120, "train_step", "all_reduce")))
        groups = [("0", "default_pg", [0, 1])]
        if kind == "order_deadlock":
            groups += [("1", "undefined", [0, 1]), ("2", "undefined", [0, 1])]
        ranks[rank] = dump(es, groups)
    return ranks


def main():
    out = sys.argv[1]
    for kind in ("missing_rank", "op_mismatch", "size_mismatch", "order_deadlock", "healthy"):
        d = os.path.join(out, kind)
        os.makedirs(d, exist_ok=True)
        for rank, dmp in scenario(kind).items():
            with open(os.path.join(d, f"nccl_trace_rank_{rank}"), "wb") as f:
                f.write(JitPickler().dumps(dmp))
            with open(os.path.join(d, f"nccl_trace_json_rank_{rank}.json"), "w") as f:
                f.write(as_json(dmp))


if __name__ == "__main__":
    main()
