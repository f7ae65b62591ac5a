#!/usr/bin/env bash
# Runs every post-mortem fixture of the test suite through two rocplay binaries and fails unless
# their reports (JSON, wall-clock "seconds" fields aside) and exit codes are the same: the
# installed or released binary must analyse exactly like the build tree's.
# Usage: tests/install/compare_postmortem.sh ROCPLAY_UNDER_TEST ROCPLAY_REFERENCE [SOURCE_DIR]
set -euo pipefail
test_bin=$1 ref_bin=$2
src=${3:-$(cd "$(dirname "$0")/../.." && pwd)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$src"
# One post-mortem per fixture directory (a hang's ranks together), and one over all of fixtures/.
mapfile -t sets < <(find fixtures -mindepth 2 -maxdepth 2 -type d | sort)
sets+=(fixtures)
n=0 findings=0
for set in "${sets[@]}"; do
  for tag in test ref; do
    bin=$([ "$tag" = test ] && echo "$test_bin" || echo "$ref_bin")
    set +e
    env -i PATH=/usr/bin:/bin HOME="$work" "$bin" postmortem --format json --color=never -j 2 "$set" \
      2>/dev/null | grep -v '"seconds": ' >"$work/$tag.json"
    echo "${PIPESTATUS[0]}" >"$work/$tag.rc"
    set -e
  done
  if ! cmp -s "$work/test.rc" "$work/ref.rc" || ! cmp -s "$work/test.json" "$work/ref.json"; then
    echo "compare_postmortem: $set: $test_bin and $ref_bin disagree (exit $(cat "$work/test.rc")" \
      "against $(cat "$work/ref.rc")):" >&2
    diff "$work/ref.json" "$work/test.json" | head -20 >&2
    exit 1
  fi
  case "$(cat "$work/test.rc")" in
  0 | 1 | 2) ;;
  *)
    echo "compare_postmortem: $set: both exited $(cat "$work/test.rc")" >&2
    exit 1
    ;;
  esac
  [ "$(cat "$work/test.rc")" = 1 ] && findings=$((findings + 1))
  n=$((n + 1))
done
[ "$findings" -gt 0 ] || { echo "compare_postmortem: no fixture set gave a finding" >&2; exit 1; }
echo "ok: $n post-mortems ($findings with findings) identical between $test_bin and $ref_bin"
