#!/usr/bin/env bash
# `rocplay watch` on a machine with an NVIDIA GPU (issue 18's device test): a "server" shell writes
# "output send" lines to its log, then starts the syncspin worker (allgather_vec spinning in
# start_sync) and falls silent. The watcher must see the log go quiet while nvidia-smi reads the
# worker's GPU busy, capture the worker with hang-triage under cuda-gdb, name the spin, and leave
# the worker running (its heartbeat still advancing after the capture). Results in $OUT (default
# /tmp/hw-out), packed into $OUT/watch.tar.gz.
#
#   tests/hardware/watch_syncspin.sh      ROCPLAY=path to a rocplay binary (else built here)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
hw_start /tmp/hw-watch
export CUDA_MODULE_LOADING=${CUDA_MODULE_LOADING:-EAGER}

rocplay=$(hw_rocplay)
[ -z "$rocplay" ] && { tar czf "$out/watch.tar.gz" -C "$work" .; exit 1; }
cp "$here/syncspin.cu" "$here/common.cuh" "$src/"
(cd "$src" && nvcc -g -lineinfo -arch=native -o syncspin syncspin.cu) >"$work/build.log" 2>&1 ||
  { say "syncspin build FAILED"; tail -20 "$work/build.log"; exit 1; }

# The server: 5 s of log lines, then the worker, then silence (it waits on the worker).
cat >"$work/server.sh" <<EOF
#!/usr/bin/env bash
for i in \$(seq 1 10); do echo "output send \$i" >>"$work/server.log"; sleep 0.5; done
"$src/syncspin" "$work/worker.status" >"$work/worker.out" 2>&1
EOF
chmod +x "$work/server.sh"
"$work/server.sh" &
server=$!
say "server pid $server"

t0=$SECONDS
(cd "$src" && timeout 240 "$rocplay" watch --workers-of "$server" --log "$work/server.log" \
  --debugger cuda-gdb --quiet-for 15s --check-every 1s --status-every 5s --watch-for 200s \
  --out "$work/out" --format json >"$work/watch.stdout" 2>"$work/watch.stderr")
rc=$?
say "watch: exit $rc after $((SECONDS - t0)) s"
grep -E 'rocplay watch' "$work/watch.stderr" | head -30 | tee -a "$summary"
ls -la "$work/out" >>"$summary" 2>&1

# The worker must still run after the capture: its heartbeat advances.
b1=$(cut -d' ' -f1 "$work/worker.status" 2>/dev/null)
sleep 1
b2=$(cut -d' ' -f1 "$work/worker.status" 2>/dev/null)
worker=$(pgrep -f "$src/syncspin" | head -1)
state=$(awk '/^State:/ {print $2}' "/proc/$worker/status" 2>/dev/null)
say "after the capture: worker $worker state ${state:-gone}, heartbeat $b1 -> $b2"
for t in /proc/"$worker"/task/*; do
  awk -v t="$t" '/^State:/ {print t, $2}' "$t/status"
done 2>/dev/null | tee -a "$summary"

python3 - "$work/out" <<'PY' | tee -a "$summary"
import glob, json, sys
for p in sorted(glob.glob(sys.argv[1] + "/*.json")):
    try:
        j = json.load(open(p))
    except Exception as e:
        print(p, "not JSON:", e)
        continue
    print("report:", p.rsplit("/", 1)[-1])
    for f in j.get("findings", [])[:4]:
        print("  finding:", f.get("id"), "|", f.get("title"))
PY
cat "$work"/out/*summary* 2>/dev/null | head -5 | tee -a "$summary"

kill "$worker" "$server" 2>/dev/null
sleep 1
say "left behind: $(pgrep -f "$src/syncspin" | wc -l) syncspin, $(pgrep -x cuda-gdb | wc -l) cuda-gdb"
tar czf "$out/watch.tar.gz" -C "$work" .
