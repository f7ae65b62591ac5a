#!/usr/bin/env bash
# `rocplay launch` with cuda-gdb on a machine with an NVIDIA GPU: a kernel that stores out of
# bounds and one that fails a device assert. For each: the exit code (81), the report (JSON and
# text), the recording, and that no process of the program is left. Results in $OUT (default
# /tmp/hw-out), packed into $OUT/launch.tar.gz.
#
#   tests/hardware/launch_faults.sh        ROCPLAY=path to a rocplay binary, else built here
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
hw_start /tmp/hw-launch
rocplay=$(hw_rocplay)
[ -z "$rocplay" ] && { tail -30 "$work/rocplay-build.log"; tar czf "$out/launch.tar.gz" -C "$work" .; exit 1; }
cp "$here/oob_store.cu" "$here/device_assert.cu" "$src/"
for s in oob_store device_assert; do
  (cd "$src" && nvcc -g -G -arch=native -o "$s" "$s.cu") >"$work/$s.build.log" 2>&1 ||
    say "$s: build FAILED"
done
for s in oob_store device_assert; do
  say "== $s"
  (cd "$src" && timeout 300 "$rocplay" launch --debugger cuda-gdb --timeout 120s \
    --record "$work/$s.rec" --format json -o "$work/$s.json" -- "./$s" \
    >"$work/$s.stdout" 2>"$work/$s.stderr")
  rc=$?
  say "exit $rc"
  python3 - "$work/$s.json" <<'PY' | tee -a "$summary"
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print("no JSON report:", e); sys.exit(0)
print("launch:", json.dumps(j.get("launch", {})))
print("fault:", json.dumps(j.get("snapshot", {}).get("fault")))
for f in j.get("findings", [])[:3]:
    print("finding:", f["id"], "|", f["title"])
    for e in f.get("evidence", [])[:8]:
        print("   ", e)
PY
  (cd "$src" && "$rocplay" postmortem "$work/$s.rec" >"$work/$s.postmortem.txt" 2>&1)
  say "postmortem of the recording: exit $? ($(grep -m1 VERDICT "$work/$s.postmortem.txt"))"
  left=$(pgrep -f "$src/$s|\./$s" | grep -v "^$$\$" || true)
  say "processes left: ${left:-none}"
  sed -i "s|/tmp/rocplay-build/rocplay|/usr/local/bin/rocplay|g" "$work/$s.rec"
  tail -5 "$work/$s.stderr" | tee -a "$summary"
done
tar czf "$out/launch.tar.gz" -C "$work" .
cp "$summary" "$out/"
