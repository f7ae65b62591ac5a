#!/usr/bin/env bash
# Hardware validation of rocplay with cuda-gdb (run on a machine with NVIDIA GPUs, as root or with
# ptrace rights). For each scenario: build and start it, run
#   rocplay run hang-triage --pid PID --debugger cuda-gdb --record FILE --format json
# check its findings, check the target still runs after the detach (not stopped, heartbeat and,
# for the healthy kernel, GPU progress advancing), run the raw baseline
#   cuda-gdb -batch -nx -q -p PID -x FILE   (the CLI form of the same commands)
# and kill the scenario. Transcripts, reports and a summary land in $OUT (default /tmp/hw-out);
# everything is also packed into $OUT/hw.tar.gz (the device tool brings back at most 8 files).
#
#   tests/hardware/run.sh [SCENARIO...]     scenarios: syncspin splitk hostsync healthy idle
#                                           torch nccl (default: all but nccl; nccl needs 2 GPUs)
# Environment: ROCPLAY=path to a rocplay binary (else it is built from this tree with cmake);
# LD_LIBRARY_PATH for libraries carried with it.
#   ROUNDS=N   the alternating measurement: per scenario (and for torch per mode, normal and
#              --fast) one discarded rocplay attach, then N rounds of the ways in ALT_WAYS on the
#              same process, the order reversed every other round; the summary gives each way's
#              median stop (outside) and total. Default 0: one rocplay run, then one raw run.
#   ALT_WAYS   the ways of a round (default "raw rocplay"): raw = cuda-gdb -batch -p PID -x FILE,
#              rocplay = rocplay run hang-triage, mi = cuda-gdb over MI (mi_drive.py) sending
#              rocplay's recorded commands without its symbol preload, rocplay0 = a second
#              rocplay binary, $ROCPLAY0 (before/after a change; its rows are NAME-rocplay0).
#   ALT_FAST=0 leaves out torch's --fast rounds.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${OUT:-/tmp/hw-out}
work=/tmp/hw-run
src=/home/dev/repro # sources and binaries live here, so recorded paths need no scrubbing
rm -rf "$work" && mkdir -p "$work" "$src" "$out"
export CUDA_MODULE_LOADING=${CUDA_MODULE_LOADING:-EAGER}
# NVLink multicast stays off on shared hosts.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
rounds=${ROUNDS:-0}
read -r -a ways <<<"${ALT_WAYS:-raw rocplay}"
scenarios=("$@")
[ ${#scenarios[@]} -eq 0 ] && scenarios=(syncspin splitk hostsync healthy idle torch)
drive="python3 $here/mi_drive.py"
# cuda-gdb calls functions in the target to attach and to detach; rocplay's default
# `may-call-functions off` (set before the first step) makes its attach never finish. Until the
# runner leaves it on for cuda-gdb, allow the calls (ROCPLAY_HW_CALLS=0 to run the default).
calls=
[ "${ROCPLAY_HW_CALLS:-1}" = 1 ] && calls=--allow-unsafe-commands
times=$work/times.jsonl
summary=$work/summary.txt

save() { tar czf "$out/hw.tar.gz" -C "$work" . 2>/dev/null; cp "$summary" "$out/" 2>/dev/null; }
say() { echo "$*" | tee -a "$summary"; }

{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
  cuda-gdb --version 2>/dev/null | grep -m1 'NVIDIA (R) cuda-gdb'
  nvcc --version | tail -1
  uname -r
  python3 -c 'import torch; print("torch", torch.__version__, "gpus", torch.cuda.device_count())'
} >"$work/env.txt" 2>&1
say "== environment"; cat "$work/env.txt" | tee -a "$summary"

# ---- rocplay ------------------------------------------------------------------------------------
. "$here/lib.sh"
rocplay=$(hw_rocplay)
[ -n "$rocplay" ] && say "rocplay: $("$rocplay" version 2>&1 | head -1)"

# ---- scenarios ------------------------------------------------------------------------------------
cp "$here"/*.cu "$here"/*.cuh "$here"/*.py "$src"/
for s in syncspin splitk_two_streams hostsync healthy idle; do
  (cd "$src" && nvcc -O2 -g -lineinfo -arch=native -std=c++17 -o "$s" "$s.cu" -lpthread \
    >"$work/$s.build.log" 2>&1) &
done
wait

start() { # name, argv... -> sets pid (the first ready line's); waits for it
  local name=$1; shift
  "$@" >"$work/$name.out" 2>&1 &
  launcher=$!
  pid=
  for _ in $(seq 1 600); do
    pid=$(sed -n 's/^ready pid=\([0-9]*\).*/\1/p' "$work/$name.out" 2>/dev/null | head -1)
    [ -n "$pid" ] && return 0
    kill -0 "$launcher" 2>/dev/null || break
    sleep 0.1
  done
  local rc=running
  kill -0 "$launcher" 2>/dev/null || { wait "$launcher"; rc=$?; }
  say "$name: did not get ready (launcher exit: $rc)"
  tail -5 "$work/$name.out" | tee -a "$summary"
  return 1
}

stop() { kill -9 "$@" 2>/dev/null; wait 2>/dev/null; }

# rocplay once on PID: files $work/STEM.{rec,json,log}, times under LABEL.
rocplay_once() { # stem label pid [rocplay flags...]
  local stem=$1 label=$2 p=$3; shift 3
  $drive wrap --pid "$p" --scenario "$label" --times "$times" --log "$work/$stem.log" \
    --timeout 150 -- "${rp:-$rocplay}" run hang-triage --pid "$p" --debugger cuda-gdb \
    --record "$work/$stem.rec" --format json --output "$work/$stem.json" --quiet \
    --attach-timeout 120 $calls "$@" >/dev/null
  # rocplay's own account of the stop, next to the outside measure, and from its recording the
  # time its symbol preload took (sent while the target still ran).
  python3 - "$work/$stem.json" "$label" "$work/$stem.rec" >>"$times" <<'EOF' 2>/dev/null
import json, sys
t = json.load(open(sys.argv[1]))["run"]["target"]
first = attach = None
files = 0
for line in open(sys.argv[3], encoding="utf-8", errors="replace"):
    if not line.startswith("> "):
        continue
    _, at, cmd = line.split(" ", 2)
    if "-file-exec-and-symbols" in cmd or "add-symbol-file" in cmd:
        first = float(at) if first is None else first
        files += 1
    elif "-target-attach" in cmd:
        attach = float(at)
        break
print(json.dumps({"mode": "rocplay-self", "scenario": sys.argv[2],
                  "attach_s": t.get("attach_seconds"), "stop_s": t.get("stop_seconds"),
                  "total_s": t.get("total_seconds"), "detached": t.get("detached"),
                  "left_stopped": t.get("left_stopped"), "preload_files": files,
                  "preload_s": round(attach - first, 4) if first is not None and attach else None}))
EOF
}

# Raw `cuda-gdb -batch -p PID -x FILE` with the CLI form of a rocplay recording's commands.
raw_once() { # stem label pid recording [--fast]
  local stem=$1 label=$2 p=$3 rec=$4; shift 4
  $drive batch --pid "$p" --scenario "$label" --recording "$rec" --script "$work/$stem.gdb" \
    --log "$work/$stem.batch.log" --times "$times" "$@" >/dev/null
}

# cuda-gdb over MI sending a rocplay recording's commands, less its symbol preload.
mi_once() { # stem label pid recording
  local stem=$1 label=$2 p=$3 rec=$4
  $drive record --pid "$p" --scenario "$label" --from-recording "$rec" --out "$work/$stem.mirec" \
    --raw "$work/$stem.mi" --times "$times" >/dev/null
}

# The alternating measurement (ROUNDS=N): one rocplay attach first, discarded (it warms the page
# cache and the driver for everyone, and its recording gives the other ways their commands), then
# N rounds of the ways in $ALT_WAYS, the order reversed every other round (raw rocplay, rocplay
# raw, raw rocplay, ...), all on the same process. Times are labelled NAME@warm, NAME@1...
alternate() { # name pid tag [rocplay flags...]
  local name=$1 p=$2 tag=$3; shift 3
  local base=$name$tag fast=
  [ "$*" = --fast ] && fast=--fast
  say "$base: warm-up attach (rocplay, discarded), then $rounds rounds of '${ways[*]}', the order reversed every other round"
  rocplay_once "${base}_warm" "$base@warm" "$p" "$@"
  local recipe=$work/${base}_warm.rec i w order
  for i in $(seq 1 "$rounds"); do
    order=("${ways[@]}")
    if [ $((i % 2)) -eq 0 ]; then
      order=()
      for ((w = ${#ways[@]} - 1; w >= 0; w--)); do order+=("${ways[w]}"); done
    fi
    for w in "${order[@]}"; do
      case $w in
      rocplay) rocplay_once "${base}_r$i" "$base@$i" "$p" "$@" ;;
      rocplay0) rp=$ROCPLAY0 rocplay_once "${base}_r${i}_0" "$base-rocplay0@$i" "$p" "$@" ;;
      raw) raw_once "${base}_r$i" "$base@$i" "$p" "$recipe" $fast ;;
      mi) mi_once "${base}_r$i" "$base@$i" "$p" "$recipe" ;;
      esac
    done
  done
}

# rocplay on PID (tag names the files), then the raw baseline with the same commands; with
# ROUNDS=N, the alternating measurement instead.
triage() { # name pid tag [rocplay flags...]
  local name=$1 p=$2 tag=$3; shift 3
  local rec=$work/$name$tag.rec
  if [ "$rounds" -gt 0 ] && [ -n "$rocplay" ]; then
    alternate "$name" "$p" "$tag" "$@"
    return
  fi
  if [ -n "$rocplay" ]; then
    rocplay_once "$name$tag" "$name$tag" "$p" "$@"
  else # no rocplay: record with the harness so the scenario still yields a transcript
    $drive record --pid "$p" --scenario "$name$tag" --commands "$here/triage.cmds" --out "$rec" \
      --raw "$work/$name$tag.mi" --times "$times" $([ "$*" = --fast ] && echo --fast) >/dev/null
  fi
  local fast=
  [ "$*" = --fast ] && fast=--fast
  raw_once "$name$tag" "$name$tag" "$p" "$rec" $fast
}

# The finding ids of a JSON report, sorted, comma-separated; a failed run says so instead.
finding_ids() {
  python3 - "$1" <<'EOF' 2>/dev/null
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception:
    print("(no report)"); sys.exit()
run = j.get("run", {})
if run.get("aborted") or run.get("exit_code", 0) not in (0, 1, None):
    print(f"(run failed: exit {run.get('exit_code')})"); sys.exit()
found = list(j.get("findings", []))
for event in j.get("summary", {}).get("events", []):  # postmortem: cross-rank findings
    found += event.get("findings", [])
ids = sorted({f["id"] for f in found})
print(",".join(ids) if ids else "(none)")
EOF
}

check() { # name tag expected-id|none
  local name=$1 tag=$2 want=$3 got
  got=$(finding_ids "$work/$name$tag.json")
  if [ "$want" = none ]; then
    [ "$got" = "(none)" ] && verdict=PASS || verdict=FAIL
  else
    [[ ",$got," == *",$want,"* ]] && verdict=PASS || verdict=FAIL
  fi
  say "$name$tag: findings=$got expected=$want -> $verdict"
}

# Several samples (hang-triage takes 2): the progress verdict, whether the expected finding says
# the samples confirmed it, and each sample's stop.
check_progress() { # name tag expected-verdict expected-id|none
  local name=$1 tag=$2 want=$3 id=$4 got
  got=$(python3 - "$work/$name$tag.json" "$id" <<'EOF' 2>/dev/null
import json, sys
j = json.load(open(sys.argv[1]))
p = j.get("progress", {})
stops = ",".join(f"{s.get('stop_seconds', 0):.3f}" for s in j.get("samples", []))
conf = "-"
for f in j.get("findings", []):
    if f["id"] == sys.argv[2]:
        conf = json.dumps(f.get("details", {}).get("progress", {}).get("confirmed"))
ids = ",".join(sorted({f["id"] for f in j.get("findings", [])})) or "(none)"
print(p.get("verdict", "(none)"), conf, "stops=" + (stops or "-"), "findings=" + ids, "|",
      p.get("verdict_text", ""))
EOF
)
  local verdict confirmed
  verdict=$(echo "$got" | awk '{print $1}')
  confirmed=$(echo "$got" | awk '{print $2}')
  if [ "$verdict" = "$want" ] && { [ "$id" = none ] || [ "$confirmed" = true ]; }; then
    say "$name$tag: progress $got -> PASS"
  else
    say "$name$tag: progress $got (expected $want, confirmed) -> FAIL"
  fi
}

# The code at the sync lanes' PC: the spin loop, and what decoded it (nvdisasm after the detach
# when it is at hand, else cuda-gdb in the stop).
check_code() { # name tag
  local name=$1 tag=$2 got
  got=$(python3 - "$work/$name$tag.json" <<'EOF' 2>/dev/null
import json, sys
j = json.load(open(sys.argv[1]))
snap = j.get("snapshot", {})
by = sorted({w.get("decoded_by", "cuda-gdb") for w in snap.get("code_windows", [])
             if any("BRA" in i.get("text", "") for i in w.get("instructions", []))})
loops = [c["loop"]["summary"] for c in snap.get("code", []) if c.get("gpu") and c.get("loop")]
print("decoded_by=" + (",".join(by) or "-"), "|", "; ".join(loops) or "(no loop)")
EOF
)
  if [[ "$got" == *"spin loop of 4 instructions: LDG.E.STRONG.SYS, YIELD, ISETP.GE.AND, BRA"* ]]; then
    say "$name$tag: code $got -> PASS"
  else
    say "$name$tag: code $got -> FAIL"
  fi
}

alive() { # name pid status-file [--expect-progress]
  local name=$1 p=$2 status=$3; shift 3
  if $drive alive --pid "$p" --scenario "$name" --status "$status" --times "$times" "$@" >/dev/null; then
    say "$name: runs after detach -> PASS"
  else
    say "$name: runs after detach -> FAIL ($(tail -1 "$times"))"
  fi
}

expect_of() {
  case $1 in
  syncspin) echo sync-lane-barrier-spin ;;
  splitk) echo splitk-clean-race ;;
  hostsync) echo host-blocked-on-gpu ;;
  healthy) echo none ;;
  idle) echo nothing-visible ;;
  torch) echo host-blocked-on-gpu ;;
  esac
}

first= # the files check() reads: the first round's in the alternating measurement
[ "$rounds" -gt 0 ] && first=_r1
for s in "${scenarios[@]}"; do
  say "== $s"
  case $s in
  syncspin | splitk | hostsync | healthy | idle)
    bin=$s
    [ "$s" = splitk ] && bin=splitk_two_streams
    start "$s" "$src/$bin" "$work/$s.status" || continue
    sleep 1.5 # past the splitk holds; the healthy kernel has made progress
    triage "$s" "$pid" ""
    [ -n "$rocplay" ] && check "$s" "$first" "$(expect_of "$s")"
    case $s in
    syncspin | splitk) [ -n "$rocplay" ] && check_progress "$s" "$first" stuck "$(expect_of "$s")" ;;&
    syncspin) [ -n "$rocplay" ] && check_code "$s" "$first" ;;
    healthy) [ -n "$rocplay" ] && check_progress "$s" "$first" moving none ;;
    esac
    alive "$s" "$pid" "$work/$s.status" $([ "$s" = healthy ] && echo --expect-progress)
    if [ "$s" = healthy ] && [ -n "$rocplay" ] && [ "$rounds" = 0 ]; then # a second stop
      triage "$s" "$pid" "_b"
      check "$s" "_b" none
    fi
    stop "$pid"
    ;;
  splitk-probe)
    # Raw cuda-gdb through the harness: which thread-list forms cover both kernels.
    start "$s" "$src/splitk_two_streams" "$work/$s.status" || continue
    sleep 1.5
    $drive record --pid "$pid" --scenario "$s" --commands "$here/probe-threads.cmds" \
      --out "$work/$s.rec" --raw "$work/$s.mi" --times "$times" >/dev/null
    say "$s: recorded $(grep -c '^>' "$work/$s.rec") commands"
    stop "$pid"
    ;;
  torch)
    # Lazy module loading, as PyTorch runs by default: the attach cost is host symbols.
    say "torch: $(python3 -c 'import torch; print(torch.__version__, torch.cuda.is_available())' 2>&1 | tail -1)"
    CUDA_MODULE_LOADING=LAZY start torch python3 "$src/torch_item_hang.py" || continue
    sleep 1
    triage torch "$pid" ""
    [ "${ALT_FAST:-1}" = 1 ] && triage torch "$pid" "_fast" --fast
    [ -n "$rocplay" ] && check torch "$first" host-blocked-on-gpu
    [ -n "$rocplay" ] && [ "${ALT_FAST:-1}" = 1 ] && check torch "_fast$first" host-blocked-on-gpu
    say "torch: state after detach $(awk '{print $3}' /proc/"$pid"/stat 2>/dev/null)"
    stop "$pid"
    ;;
  nccl)
    mkdir -p "$work/nccl"
    CUDA_MODULE_LOADING=LAZY STATUS_DIR=$work/nccl start nccl torchrun --nproc-per-node 2 --master-port 29517 \
      "$src/nccl_skip_rank.py" || continue
    for _ in $(seq 1 300); do
      [ "$(grep -c '^ready' "$work/nccl.out")" -ge 2 ] && break
      sleep 0.1
    done
    sleep 2 # rank 0's all_reduce kernel is spinning
    pids=()
    for r in 0 1; do
      p=$(sed -n "s/^ready pid=\([0-9]*\) rank=$r.*/\1/p" "$work/nccl.out" | head -1)
      pids+=("$p")
      triage nccl "$p" "_rank$r"
      alive "nccl_rank$r" "$p" "$work/nccl/rank$r.status"
    done
    if [ -n "$rocplay" ]; then
      "$rocplay" postmortem "$work/nccl_rank0.rec" "$work/nccl_rank1.rec" --rank-from 'rank(\d+)' \
        --format json --output "$work/nccl_ranks.json" >"$work/nccl_ranks.log" 2>&1
      say "nccl_rank0: findings=$(finding_ids "$work/nccl_rank0.json")"
      say "nccl_rank1: findings=$(finding_ids "$work/nccl_rank1.json")"
      check nccl _ranks missing-rank
    fi
    stop "${pids[@]}" "$launcher"
    ;;
  *) say "unknown scenario $s" ;;
  esac
  save
done

say "== times (seconds; stop = window the target's main thread was seen stopped)"
python3 - "$times" <<'EOF' | tee -a "$summary"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])] if len(sys.argv) > 1 else []
# rocplay-self: rocplay's report (attach = -target-attach to the stop, stop = attach to detach);
# the other rows: the stop window seen from /proc and the wall time of the whole tool.
print(f"{'scenario':24} {'tool':26} {'attach':>7} {'stop':>7} {'total':>7}")
names = {"wrap": "rocplay (outside)", "raw-batch": "cuda-gdb -batch (outside)",
         "record": "MI harness (outside)", "rocplay-self": "rocplay (own report)"}
fmt = lambda v: f"{v:7.3f}" if isinstance(v, (int, float)) else f"{'-':>7}"
for r in rows:
    if r.get("mode") in names:
        stop = r.get("stop_s") if r["mode"] == "rocplay-self" else r.get("stop_window_s")
        print(f"{r['scenario']:24} {names[r['mode']]:26} {fmt(r.get('attach_s'))} "
              f"{fmt(stop)} {fmt(r.get('total_s'))}")

# The alternating measurement: per scenario and way, the medians over the rounds (NAME@1...;
# NAME@warm left out) and the values in the order they ran.
import statistics
alt = {}
for r in rows:
    name, _, rnd = str(r.get("scenario", "")).partition("@")
    if not rnd.isdigit() or r.get("mode") not in names:
        continue
    stop = r.get("stop_s") if r["mode"] == "rocplay-self" else r.get("stop_window_s")
    alt.setdefault(name, {}).setdefault(r["mode"], []).append(
        (int(rnd), r.get("attach_s"), stop, r.get("total_s"), r.get("preload_s")))
if alt:
    print()
    print("alternating rounds: medians (seconds); stop = outside window, own report for 'own'")
    print(f"{'scenario':16} {'way':26} {'n':>2} {'attach':>7} {'stop':>7} {'total':>7} "
          f"{'preload':>7}  stops in order")
    med = lambda xs: statistics.median(xs) if xs else None
    for name, ways in alt.items():
        for mode in ("raw-batch", "wrap", "rocplay-self", "record"):
            if mode not in ways:
                continue
            got = ways[mode]
            col = lambda k: [g[k] for g in got if isinstance(g[k], (int, float))]
            order = " ".join(f"{g[2]:.3f}" for g in got if isinstance(g[2], (int, float)))
            print(f"{name:16} {names[mode]:26} {len(got):2} {fmt(med(col(1)))} "
                  f"{fmt(med(col(2)))} {fmt(med(col(3)))} {fmt(med(col(4)))}  {order}")
        raw = [g[2] for g in ways.get("raw-batch", []) if isinstance(g[2], (int, float))]
        roc = [g[2] for g in ways.get("wrap", []) if isinstance(g[2], (int, float))]
        if raw and roc:
            a, b = statistics.median(roc), statistics.median(raw)
            verdict = "met" if a <= b else "NOT met"
            print(f"{name:16} rocplay stop {a:.3f} vs raw {b:.3f} ({a - b:+.3f} s): goal {verdict}")
EOF
save
