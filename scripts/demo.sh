#!/usr/bin/env bash
# The README's first command: build rocplay, start the bundled "hung worker" (two threads spinning
# in start_sync, one blocked on a condition variable), run `rocplay run hang-triage --pid` on it
# with the debugger rocplay finds (gdb on a machine without ROCm or CUDA), print the report, and
# stop the target. Exits 0 when the report came out and the target was left running.
set -euo pipefail
cd "$(dirname "$0")/.."

# ROCPLAY_BUILD_DIR: use an existing build there instead of building into build/.
# Only what the demo runs is built (rocplay and the target): the tests and benchmarks are the
# test command's business (scripts/test.sh builds everything).
# The first build takes 7 CPU-minutes, about 3.5 minutes on 2 idle cores (README.md); a later demo
# on an unchanged tree reuses it without even configuring (build/.demo-tree records the tree).
build_dir=${ROCPLAY_BUILD_DIR:-}
if [ -z "$build_dir" ]; then
  build_dir=build
  # The tree's state: commit, changes and untracked files (their contents too); none outside git.
  tree=$( { git rev-parse HEAD && git diff HEAD && git ls-files -o --exclude-standard -z |
    xargs -0 -r sha256sum; } 2>/dev/null | sha256sum | cut -d' ' -f1) || tree=""
  git rev-parse HEAD >/dev/null 2>&1 || tree=""
  # ... and the binaries' times, so that a build of another tree since then is not reused.
  built() { stat -c %Y.%s build/rocplay build/tests/spin_target 2>/dev/null | tr '\n' ' '; }
  if [ -n "$tree" ] && [ -x build/rocplay ] && [ -x build/tests/spin_target ] &&
    [ "$(cat build/.demo-tree 2>/dev/null)" = "$tree $(built)" ]; then
    echo "demo: the tree has not changed since build/ was built for the demo; reusing it" >&2
  else
    rm -f build/.demo-tree
    scripts/build.sh rocplay spin_target
    [ -z "$tree" ] || echo "$tree $(built)" >build/.demo-tree
  fi
fi
rocplay=$build_dir/rocplay
target=$build_dir/tests/spin_target
if [ ! -x "$rocplay" ] || [ ! -x "$target" ]; then
  cmake --build "$build_dir" --target rocplay spin_target >/dev/null
fi

work=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

"$target" "$work/progress" 2 >"$work/target.out" &
pid=$!
for _ in $(seq 200); do
  grep -q '^ready$' "$work/target.out" 2>/dev/null && break
  sleep 0.1
done
if ! grep -q '^ready$' "$work/target.out"; then
  echo "demo: the target did not start" >&2
  exit 1
fi
echo "demo: started $target (pid $pid): 2 threads spin in start_sync(), 1 waits forever" >&2
echo "demo: rocplay run hang-triage --pid $pid" >&2
echo >&2

set +e
"$rocplay" run hang-triage --pid "$pid"
rc=$?
set -e

echo >&2
state=$(ps -o stat= -p "$pid" 2>/dev/null | tr -d ' ')
case "$rc" in
0 | 1)
  echo "demo: rocplay exited $rc (0: nothing found, 1: findings); the target's state is" \
    "'$state' (R or S: running again)" >&2
  case "$state" in
  T* | t*)
    echo "demo: the target was left stopped" >&2
    exit 1
    ;;
  esac
  exit 0
  ;;
*)
  echo "demo: rocplay failed with exit code $rc (see the message above; README.md lists the codes)" >&2
  exit "$rc"
  ;;
esac
