#!/usr/bin/env bash
# What each piece of cuda-gdb's stop is (issue 46): syncspin runs with stop_meter.c preloaded,
# which logs each gap over 5 ms in its millisecond ticks with the monotonic time it woke; cuda-gdb
# attaches and detaches with nothing between (the least any look through it can stop the target),
# LOOKS times, with gdb's infrun and CUDA traces stamped on the same clock (`set debug timestamp`).
# Per look the script lines the gaps up with the trace: which of cuda-gdb's steps each gap
# covered (pieces.txt), and the merged timeline (timeline-N.txt, in the archive).
#
#   OUT=/path/to/out LOOKS=3 tests/hardware/stop_pieces.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
work=/tmp/hw-pieces
hw_start "$work"
looks=${LOOKS:-3}
gcc -O2 -shared -fPIC -pthread -o "$src/stop_meter.so" "$here/stop_meter.c" ||
  { say "stop_meter.c does not build"; exit 1; }
: >"$work/stops"
hw_nvcc syncspin
hw_start_worker env LD_PRELOAD="$src/stop_meter.so" HW_STOP_LOG="$work/stops" "$src/syncspin"
say "worker pid $pid; load $(cut -d' ' -f1-3 /proc/loadavg)"

for ((n = 1; n <= looks; ++n)); do
  seen=$(wc -l <"$work/stops")
  cuda-gdb -q -nx -batch -iex 'set debug timestamp on' -iex 'set debug infrun on' \
    -iex 'set debug cuda trace general,event,api' -p "$pid" -ex detach >"$work/look-$n.log" 2>&1
  sleep 0.05
  tail -n +"$((seen + 1))" "$work/stops" >"$work/stops-$n"
  state=$(awk '{print $3}' "/proc/$pid/stat")
  say "look $n: $(wc -l <"$work/stops-$n") gaps, $(awk '{s+=$1} END {printf "%.0f", s}' "$work/stops-$n") ms; worker state $state"
  python3 - "$work/look-$n.log" "$work/stops-$n" "$work/timeline-$n.txt" <<'PY' | tee -a "$summary"
import re, sys
log, stops, timeline = sys.argv[1:4]
stamp = re.compile(r"^(\d+\.\d{6}) (.*)")
events, last = [], None  # lines without a stamp (CUDA traces) take the previous stamp
for line in open(log, errors="replace"):
    m = stamp.match(line)
    if m:
        last = float(m.group(1))
        events.append((last, m.group(2).rstrip()))
    elif last is not None and line.strip():
        events.append((last, line.rstrip()))
gaps = [(float(b) - float(a) / 1e3, float(b), float(a)) for a, b in (l.split()[:2] for l in open(stops))]
with open(timeline, "w") as out:
    marks = sorted([(s, f"===== gap starts ({ms:.1f} ms)") for s, e, ms in gaps] +
                   [(e, "===== gap ends") for s, e, ms in gaps])
    for t, text in sorted(events + marks, key=lambda x: x[0]):
        out.write(f"{t:.6f} {text}\n")
for s, e, ms in gaps:
    inside = [text for t, text in events if s - 0.001 <= t <= e + 0.001]
    first = [x[:110] for x in inside[:2]]
    final = [x[:110] for x in inside[-2:]] if len(inside) > 2 else []
    print(f"  gap {ms:.1f} ms: {len(inside)} trace lines; first {first}; last {final}")
PY
done
say "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
(cd "$work" && tar czf "$out/pieces.tar.gz" summary.txt stops* look-*.log timeline-*.txt worker.out 2>/dev/null)
cp "$summary" "$out/pieces-summary.txt"
