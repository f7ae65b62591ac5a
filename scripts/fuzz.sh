#!/usr/bin/env bash
# Runs the libFuzzer targets from build-fuzz/ with a seed corpus made from fixtures/.
# Usage: scripts/fuzz.sh [SECONDS]   (the parser gets SECONDS; the transcript reader and the
# snapshot path, from transcript to findings and JSON, half each; the code-object reader a third,
# at most 20 s, from the checked-in objects in tests/codeobj; the crash-evidence readers half, at
# most 20 s; the Python-frame reader a sixth, at most 10 s, from the location tables of
# fixtures/pyframes and the notes of fixtures/pyframes' recording)
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
  "$work/codeobj-corpus/"
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
for path in sorted(glob.glob("fixtures/pyframes/*.rocplay")):
    notes = [l.split(" ", 2)[2] for l in open(path, errors="replace") if l.startswith("! ") and " python " in l]
    with open(os.path.join(out, "notes%d" % n), "w") as fh:
        fh.write("\x03\x00\x00" + "".join(notes))
    n += 1
PY
pyframes_seconds=$(( (seconds + 5) / 6 ))
run tests/fuzz fuzz_pyframes $(( pyframes_seconds > 10 ? 10 : pyframes_seconds )) "$work/pyframes-corpus" 65536
