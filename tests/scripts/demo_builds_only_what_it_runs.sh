#!/usr/bin/env bash
# scripts/demo.sh on a fresh clone builds rocplay and the target it runs, never the whole tree
# (63 targets, 3 min on a 2-core builder, before the demo showed anything). Every cmake --build the
# demo runs is logged through a cmake wrapper first on PATH, then checked. A second demo on the
# unchanged tree reuses that build: it runs no cmake at all.
set -euo pipefail
src=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
real=$(command -v cmake)
cat >"$work/cmake" <<EOF
#!/usr/bin/env bash
printf '%s\n' "\$*" >>"$work/log"
exec "$real" "\$@"
EOF
chmod +x "$work/cmake"
rm -f "$src/build/.demo-tree" # as after a build by anything but the demo
if ! PATH="$work:$PATH" ROCPLAY_BUILD_DIR='' "$src/scripts/demo.sh" >"$work/out" 2>"$work/err"; then
  echo "demo.sh failed:" >&2
  cat "$work/err" >&2
  exit 1
fi
grep -q 'Playbook hang-triage on pid' "$work/out" || {
  echo "demo.sh printed no report" >&2
  exit 1
}
builds=$(grep -e '--build' "$work/log" || true)
[ -n "$builds" ] || {
  echo "demo.sh built nothing through cmake" >&2
  exit 1
}
while IFS= read -r line; do
  case "$line" in
  *"--target rocplay spin_target") ;;
  *)
    echo "demo.sh built more than it runs: cmake $line" >&2
    exit 1
    ;;
  esac
done <<<"$builds"
: >"$work/log"
if ! PATH="$work:$PATH" ROCPLAY_BUILD_DIR='' "$src/scripts/demo.sh" >"$work/out" 2>"$work/err"; then
  echo "demo.sh failed the second time:" >&2
  cat "$work/err" >&2
  exit 1
fi
grep -q 'Playbook hang-triage on pid' "$work/out" || {
  echo "demo.sh printed no report the second time" >&2
  exit 1
}
if [ -s "$work/log" ] || ! grep -q 'reusing it' "$work/err"; then
  echo "demo.sh on an unchanged tree did not reuse its build; it ran: $(cat "$work/log")" >&2
  exit 1
fi
echo "ok: demo.sh built only rocplay and spin_target, and reused them on an unchanged tree"
