#!/usr/bin/env bash
# Every real recording under fixtures/ rendered as a person reads it: the text report of
# `rocplay postmortem FILE` (one input: its whole report) and of each fixture folder as a batch
# with --details, at WIDTH columns (default 80), with and without colour. (`rocplay agent-log`'s
# own fault report is not held to it yet.) Fails on any line wider than the terminal: nothing here asks for --wide, so
# every table, stack, step and verdict must fit. Colour codes take no columns; a UTF-8
# character takes one.
# Usage: tests/scripts/report_width.sh ROCPLAY SOURCE_DIR [WIDTH]
set -euo pipefail
bin=$1 src=$2 width=${3:-80}
cd "$src"
fail=0 reports=0 lines=0

# The lines of stdin wider than $width, as `N: COLUMNS: LINE`; exit 1 when there is one.
too_wide() {
  # Colour codes out, then UTF-8 continuation bytes, so that awk's byte count is columns.
  sed 's/\x1b\[[0-9;]*[A-Za-z]//g' | LC_ALL=C sed 's/[\x80-\xbf]//g' |
    LC_ALL=C awk -v w="$width" 'length($0) > w { print NR ": " length($0) ": " $0; bad = 1 }
                                END { exit bad }'
}

render() { # LABEL ROCPLAY-ARGS...
  local label=$1
  shift
  for color in never always; do
    local out rc=0
    out=$(COLUMNS=$width "$bin" "$@" --color="$color" 2>/dev/null) || rc=$?
    if [ "$rc" -ge 64 ]; then
      echo "report_width: \`rocplay $*\` failed with exit $rc" >&2
      fail=1
      continue
    fi
    reports=$((reports + 1))
    lines=$((lines + $(printf '%s\n' "$out" | wc -l)))
    local wide
    if ! wide=$(printf '%s\n' "$out" | too_wide); then
      echo "report_width: $label (--color=$color): lines wider than $width columns:" >&2
      printf '%s\n' "$wide" | sed -n '1,20p' >&2
      fail=1
    fi
  done
}

# The recordings, logs and saved sessions: what postmortem reads (sources, playbooks, READMEs
# and expected outputs are not recordings).
mapfile -t inputs < <(find fixtures -type f \
  \( -name '*.rec' -o -name '*.mi' -o -name '*.rocplay' -o -name '*.log' -o -name '*.jsonl' \
     -o -name '*.txt' -o -name '*.json' \) \
  -not -path '*/expected*' -not -name 'expected-*' | sort)
[ "${#inputs[@]}" -gt 100 ] || { echo "report_width: only ${#inputs[@]} recordings found" >&2; exit 1; }
for f in "${inputs[@]}"; do
  render "postmortem $f" postmortem --no-progress "$f"
done
for d in fixtures/*/; do
  render "postmortem --details $d" postmortem --no-progress --details "$d"
done
echo "report_width: $reports reports ($lines lines) of ${#inputs[@]} recordings at $width columns"
exit "$fail"
