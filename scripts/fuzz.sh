#!/usr/bin/env bash
# Runs the libFuzzer targets from build-fuzz/ with a seed corpus made from fixtures/.
# Usage: scripts/fuzz.sh [SECONDS]   (the parser gets SECONDS; the transcript reader and the
# snapshot path, from transcript to findings and JSON, half each; the code-object reader a third,
# at most 20 s, from the checked-in objects in tests/codeobj; the crash-evidence readers half, at
# most 20 s; the Python-frame reader a sixth, at most 10 s, from the location tables of
# fixtures/pyframes and the notes of fixtures/pyframes' recording; the collective-record readers
# a quarter, at most 10 s, from fixtures/collectives)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
# Named by their path: fixtures in different directories share names (rank0.mi, snapshot.mi).
while IFS= read -r f; do
  cp "$f" "$work/corpus/$(echo "$f" | tr / _)"
done < <(find fixtures -type f \( -name '*.mi' -o -name '*.rec' -o -name '*.rocplay' \) | sort)
# Small seeds too: one per line of the fixtures, so mutations start from single records.
cat "$work"/corpus/* >"$work/all-lines"
head -c 200000 "$work/all-lines" | split -l 1 - "$work/corpus/line-"
rm "$work/all-lines"
# The crash-evidence readers start from their own fixtures (logs, dmesg, dump metadata, JSON).
mkdir -p "$work/crash-corpus"
while IFS= read -r f; do
  cp "$f" "$work/crash-corpus/$(echo "$f" | tr / _)"
done < <(find fixtures/crash -type f -size -64k ! -name '*.pt' ! -name README.md | sort)
run() {
  local dir=$1 target=$2 secs=$3 corpus=${4:-$work/corpus} max_len=${5:-8192}
  echo "fuzz: $target for ${secs}s"
  mkdir -p "$work/$target"
  # A crashing input is kept in build-fuzz/artifacts/ (the work directory is removed on exit).
  mkdir -p build-fuzz/artifacts
  (cd "$work" && "$OLDPWD/build-fuzz/$dir/$target" -max_total_time="$secs" -timeout=10 \
     -rss_limit_mb=2048 -max_len="$max_len" -print_final_stats=1 \
     -artifact_prefix="$OLDPWD/build-fuzz/artifacts/$target-" "$work/$target" "$corpus" \
     2>"$work/$target.log") || {
    tail -50 "$work/$target.log"
    echo "fuzz: $target FAILED; reproduce with build-fuzz/$dir/$target build-fuzz/artifacts/$target-*"
    exit 1
  }
  grep -E 'stat::number_of_executed_units|Done [0-9]+ runs' "$work/$target.log" | tail -2
}
run mi/fuzz fuzz_mi_parser "$seconds"
run mi/fuzz fuzz_transcript $(( (seconds + 1) / 2 ))
run tests/fuzz fuzz_snapshot $(( (seconds + 1) / 2 ))
# Code objects: the small ELFs and the bundle (not the 1 MB benchmark object).
mkdir -p "$work/codeobj-corpus"
cp tests/codeobj/kernels-*.elf tests/codeobj/kernels.hsaco fixtures/cuda-gdb/h100-nvdisasm/*.sass \
  fixtures/cuda-fatbin/*.nv_fatbin fixtures/cuda-fatbin/native.cubin "$work/codeobj-corpus/"
codeobj_seconds=$(( (seconds + 2) / 3 ))
if [ "$codeobj_seconds" -gt 20 ]; then codeobj_seconds=20; fi
run tests/fuzz fuzz_codeobj "$codeobj_seconds" "$work/codeobj-corpus" 131072
crash_seconds=$(( (seconds + 1) / 2 ))
run tests/fuzz fuzz_crash $(( crash_seconds > 20 ? 20 : crash_seconds )) "$work/crash-corpus"
# Debugger console text: the console fixtures (their README too, as plain text).
mkdir -p "$work/console-corpus"
while IFS= read -r f; do
  cp "$f" "$work/console-corpus/$(echo "$f" | tr / _)"
done < <(find fixtures/rocgdb-console -type f ! -name '*.py' | sort)
console_seconds=$(( (seconds + 2) / 3 ))
run tests/fuzz fuzz_console_log $(( console_seconds > 10 ? 10 : console_seconds )) \
  "$work/console-corpus" 65536
# Python frames: location tables, memory images and notes (one seed per table, mode byte first).
mkdir -p "$work/pyframes-corpus"
python3 - "$work/pyframes-corpus" <<'PY'
import json, os, sys, glob
out = sys.argv[1]
n = 0
for path in sorted(glob.glob("fixtures/pyframes/linetables-*.json")):
    mode = 1 if path.endswith("3.10.json") else 0
    for t in json.load(open(path))["tables"][:20]:
        with open(os.path.join(out, "t%d" % n), "wb") as fh:
            fh.write(bytes([mode, 0, 0]) + bytes.fromhex(t["linetable"]))
        n += 1
# Process images of 3.14 and 3.15 (default, free-threaded) laid out by their real _Py_DebugOffsets
# (tests/unit/pyframes/debug_offsets_tables.hpp; mode 2 with byte 2 >= 128 puts the table over
# the image): one thread, two frames and the interpreter's own, as debug_offsets.cpp builds them.
import re, struct
tables = dict(re.findall(r"(k31[45]t?)\[\] = \{([^}]*)\}",
                         open("tests/unit/pyframes/debug_offsets_tables.hpp").read()))
# word index in _Py_DebugOffsets of: interpreters_head, threads_head, gil_runtime_state,
# gil_locked, gil_holder, ts interp, current_frame, native_thread_id, frame previous, executable,
# instr_ptr, owner, tlbc_index, co filename, name, qualname, linetable, firstlineno,
# co_code_adaptive, co_tlbc, ob_type, tp_name, bytes ob_size, ob_sval, str state, length,
# ascii size
index = {"k314": [5, 9, 16, 18, 19, 25, 26, 28, 32, 33, 34, 36, 38, 40, 41, 42, 43, 44, 48, 49,
                  51, 53, 75, 76, 78, 79, 80],
         "k315": [5, 9, 16, 18, 19, 25, 26, 31, 40, 41, 42, 44, 46, 48, 49, 50, 51, 52, 56, 57,
                  59, 61, 87, 88, 90, 91, 92]}
for k, name in enumerate(["k314", "k314t", "k315", "k315t"]):
    w = [0] + [int(x) for x in tables[name].replace("\n", " ").split(",")]
    (ih, th, gs, gl, gh, ti, cf, nt, fp, fe, fi, fo, ft, cfi, cn, cq, cl, cfl, cc, ct, ot, tn,
     bs, bv, us, ul, ua) = [w[i] for i in index[name.rstrip("t")]]
    free = w[2] != 0
    img = bytearray(0x3800)
    B = 0x10000
    q = lambda off, v: struct.pack_into("<Q", img, off, v)
    i4 = lambda off, v: struct.pack_into("<i", img, off, v)
    interp, ts, frames, code, types, table, strs, tlbc, copy = (0x400, 0x2400, 0x2800, 0x2C00,
                                                                0x2F00, 0x3100, 0x3200, 0x3400, 0x3500)
    q(ih, B + interp); q(interp + th, B + ts); i4(interp + gs, 0); i4(interp + gl, 1)
    q(interp + gh, B + ts); q(ts + ti, B + interp); q(ts + cf, B + frames); q(ts + nt, 4242)
    for n, (prev, owner, ex) in enumerate([(frames + 0x100, 0, code), (frames + 0x200, 0, code + 0x100),
                                           (0, 3, 0)]):
        f = frames + n * 0x100
        q(f + fp, B + prev if prev else 0); q(f + fe, B + ex + 1 if ex else 0); img[f + fo] = owner
        q(f + fi, B + (copy + 2 if free and n == 0 else ex + cc))
        if free:
            i4(f + ft, 1 if n == 0 else 0)
    struct.pack_into("5s", img, types, b"code\0"); struct.pack_into("6s", img, types + 0x80, b"bytes\0")
    q(types + 0x40 + tn, B + types); q(types + 0xC0 + tn, B + types + 0x80)
    q(table + ot, B + types + 0xC0); q(table + bs, 4); img[table + bv:table + bv + 4] = bytes([0xE8, 4, 0xE8, 6])
    shift = 8 if free else 2
    for n, text in enumerate([b"job.py", b"inner", b"outer"]):
        sobj = strs + n * 0x40
        struct.pack_into("<I", img, sobj + us, (1 << shift) | (1 << (shift + 3)) | (1 << (shift + 4)))
        q(sobj + ul, len(text)); img[sobj + ua:sobj + ua + len(text)] = text
    for n in range(2):
        c = code + n * 0x100
        q(c + ot, B + types + 0x40); q(c + cfi, B + strs); q(c + cn, B + strs + 0x40 * (n + 1))
        q(c + cq, B + strs + 0x40 * (n + 1)); q(c + cl, B + table); i4(c + cfl, 10)
    if free:
        q(code + ct, B + tlbc); q(tlbc, 2); q(tlbc + 8, B + code + cc); q(tlbc + 16, B + copy)
    with open(os.path.join(out, "image%d" % k), "wb") as fh:
        fh.write(bytes([2, 0, 128 + k]) + bytes(img))
for path in sorted(glob.glob("fixtures/pyframes/*.rocplay")):
    notes = [l.split(" ", 2)[2] for l in open(path, errors="replace") if l.startswith("! ") and " python " in l]
    with open(os.path.join(out, "notes%d" % n), "w") as fh:
        fh.write("\x03\x00\x00" + "".join(notes))
    n += 1
PY
pyframes_seconds=$(( (seconds + 5) / 6 ))
run tests/fuzz fuzz_pyframes $(( pyframes_seconds > 10 ? 10 : pyframes_seconds )) "$work/pyframes-corpus" 65536
# Collective records: the pickle reader and the Flight Recorder, NCCL log and ncclras readers,
# from the Flight Recorder dumps, pickles, logs and RAS answers of fixtures/collectives (at most
# 10 s: the inputs are small and the reader is one pass).
mkdir -p "$work/collectives-corpus"
while IFS= read -r f; do
  cp "$f" "$work/collectives-corpus/$(echo "$f" | tr / _)"
done < <(find fixtures/collectives -type f -size -64k ! -name README.md | sort)
collectives_seconds=$(( (seconds + 3) / 4 ))
run tests/fuzz fuzz_collectives $(( collectives_seconds > 10 ? 10 : collectives_seconds )) \
  "$work/collectives-corpus" 65536
