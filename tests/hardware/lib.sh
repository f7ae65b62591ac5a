# Shared by the hardware scripts (sourced after `here` is set): their directories, summary and
# environment record, and the rocplay they run.

repo=$(cd "$here/../.." && pwd)
out=${OUT:-/tmp/hw-out}
src=/home/dev/repro # sources and binaries live here, so recorded paths need no scrubbing

# A fresh work directory WORK with its summary.txt (say() appends to it) and env.txt: the GPU,
# driver, cuda-gdb and nvcc versions, also copied to the summary.
hw_start() {
  work=$1
  summary=$work/summary.txt
  rm -rf "$work" && mkdir -p "$work" "$src" "$out"
  {
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    cuda-gdb --version 2>/dev/null | grep -m1 'NVIDIA (R) cuda-gdb'
    nvcc --version | tail -1
  } >"$work/env.txt" 2>&1
  tee -a "$summary" <"$work/env.txt"
}
say() { echo "$*" | tee -a "$summary"; }

# Prints the path of a rocplay that runs here: $ROCPLAY when it does, else one built from this
# tree into /tmp/rocplay-build (the log in $work/rocplay-build.log); nothing when the build fails.
hw_rocplay() {
  local rocplay=${ROCPLAY:-} t0=$SECONDS
  if [ -n "$rocplay" ] && ! "$rocplay" version >/dev/null 2>&1; then
    say "carried rocplay does not run here ($("$rocplay" version 2>&1 | head -1)); building" >&2
    rocplay=
  fi
  if [ -z "$rocplay" ]; then
    cmake -S "$repo" -B /tmp/rocplay-build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DROCPLAY_TESTS=OFF -DROCPLAY_BENCH=OFF >"$work/rocplay-build.log" 2>&1 &&
      cmake --build /tmp/rocplay-build --target rocplay -j "$(nproc)" >>"$work/rocplay-build.log" 2>&1 &&
      rocplay=/tmp/rocplay-build/rocplay
    say "rocplay build: $((SECONDS - t0)) s, ${rocplay:-FAILED (see rocplay-build.log)}" >&2
  fi
  echo "$rocplay"
}

# Builds NAME.cu of this directory (with common.cuh) into $src/NAME the way run.sh builds the
# scenarios; the script ends, showing the build log's tail, when it does not build.
hw_nvcc() {
  local name=$1
  cp "$here/$name.cu" "$here/common.cuh" "$src/"
  (cd "$src" && nvcc -O2 -g -lineinfo -arch=native -std=c++17 -o "$name" "$name.cu" -lpthread) \
    >"$work/$name.build.log" 2>&1 || { tail -20 "$work/$name.build.log"; exit 1; }
}

# The pid that a program writing to FILE announces (`ready pid=N`), waiting up to SECONDS
# (default 30); nothing when it never does.
hw_ready_pid() {
  local file=$1 tenths=$((${2:-30} * 10)) pid=
  for _ in $(seq 1 "$tenths"); do
    pid=$(sed -n 's/^ready pid=\([0-9]*\).*/\1/p' "$file" 2>/dev/null | head -1)
    [ -n "$pid" ] && break
    sleep 0.1
  done
  echo "$pid"
}

# Starts the syncspin scenario (built by hw_nvcc syncspin) and sets pid once its spin is under
# way; the script ends when it never gets ready.
hw_start_syncspin() {
  "$src/syncspin" >"$work/syncspin.out" 2>&1 &
  pid=$(hw_ready_pid "$work/syncspin.out")
  [ -n "$pid" ] || { say "syncspin did not get ready"; exit 1; }
  sleep 1
}

# Milliseconds since START, a `date +%s%N` reading.
hw_ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

# A cuda-gdb command that prints `T <monotonic seconds>`: the commands between two are timed.
hw_stamp='python import time; print("T", time.monotonic())'

# Runs `cuda-gdb -batch` with ARGS into $work/LABEL.log, then says its wall time, the times
# between its hw_stamp lines and its first error lines.
hw_stamped_cuda_gdb() { # label cuda-gdb-args...
  local label=$1 t0
  shift
  t0=$(date +%s%N)
  cuda-gdb -batch -nx -q -iex "set pagination off" -iex "set confirm off" "$@" >"$work/$label.log" 2>&1
  say "== $label: $(hw_ms "$t0") ms; stamps: $(grep '^T ' "$work/$label.log" |
    awk 'NR>1{printf "%.0f ", ($2-p)*1000} {p=$2}')"
  grep -iE "error|cannot|no symbol|unable" "$work/$label.log" | head -3 | sed 's/^/   /' | tee -a "$summary"
}

# Runs COMMAND... on GPU 0 as the worker a timing script looks at (its output in
# $work/worker.out, killed when the script ends) and sets pid once it says `ready pid=N` (up to
# 120 s); the script ends when it never does.
hw_start_worker() {
  CUDA_VISIBLE_DEVICES=0 "$@" >"$work/worker.out" 2>&1 &
  worker=$!
  trap 'kill -9 $worker 2>/dev/null' EXIT
  pid=$(hw_ready_pid "$work/worker.out" 120)
  [ -n "$pid" ] || { say "worker did not get ready"; tail -5 "$work/worker.out"; exit 1; }
  sleep 2
}
