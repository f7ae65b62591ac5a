#!/usr/bin/env bash
# rocplay(1) agrees with the binary: every subcommand (playbooks show/check included) and every
# long option that `rocplay CMD --help` prints appears in that command's part of the rendered man
# page, every option the page names for a command exists in its --help, and man renders the page
# without warnings.
# Usage: tests/install/man_check.sh ROCPLAY MANPAGE
set -euo pipefail
bin=$1 page=$2
fail=0
[ -s "$page" ] || { echo "man_check: no man page at $page" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Render once; split into one file per command section (".SS rocplay CMD ..." headings).
if command -v man >/dev/null; then
  MANWIDTH=200 man --warnings=w -l "$page" 2>"$work/warnings" | col -bx >"$work/page.txt"
  if [ -s "$work/warnings" ]; then
    echo "man_check: man reports problems in $page:" >&2
    cat "$work/warnings" >&2
    fail=1
  fi
else # no man-db: the troff source, unescaped
  sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\e/\\/g' "$page" >"$work/page.txt"
fi
grep -q '^ROCPLAY(1)' "$work/page.txt" || [ ! -x "$(command -v man)" ] || {
  echo "man_check: $page does not render as ROCPLAY(1)" >&2
  fail=1
}

subcommands() {
  awk '/^Subcommands:$/ {s = 1; next} /^$/ {s = 0} s && /^  [a-z]/ {print $1}'
}
long_options() { # the --long names of an Options: section
  awk '/^Options:$/ {s = 1; next} /^$/ {s = 0} s && /^  -/ {print $1}' |
    tr ',' '\n' | grep -oE '^--[a-z0-9][a-z0-9-]*' | sort -u
}
# The rendered text of one command's section: from its heading to the next command heading.
section_of() {
  awk -v head="rocplay $*" '
    /^   rocplay [a-z]/ {
      line = $0; sub(/^ +/, "", line)
      on = (index(line, head " ") == 1 || line == head)
      if (on) { rest = substr(line, length(head) + 2); if (rest ~ /^[a-z]/) on = 0 }
    }
    /^[A-Z][A-Z ]+$/ { on = 0 }
    on { print }' "$work/page.txt"
}

check_command() {
  local help
  help=$(COLUMNS=100 "$bin" "$@" --help)
  section_of "$@" >"$work/section"
  if [ ! -s "$work/section" ]; then
    echo "man_check: the man page has no section for 'rocplay $*'" >&2
    fail=1
    return
  fi
  for opt in $(printf '%s\n' "$help" | long_options); do
    grep -qE -- "(^|[^a-z0-9-])$opt([^a-z0-9-]|$)" "$work/section" || {
      echo "man_check: 'rocplay $* --help' has $opt; the man page's 'rocplay $*' does not" >&2
      fail=1
    }
  done
  # Options the page names under the command's Options list must exist in --help.
  for opt in $(awk '/^ *Options$/ {s = 1; next} /^ *(Positionals|Subcommands)$/ {s = 0} s' "$work/section" |
    grep -oE '^ +--[a-z0-9][a-z0-9-]*|^ +-[a-zA-Z], *--[a-z0-9][a-z0-9-]*' | grep -oE -- '--[a-z0-9-]+' | sort -u); do
    printf '%s\n' "$help" | long_options | grep -qx -- "$opt" || {
      echo "man_check: the man page lists $opt for 'rocplay $*'; its --help does not" >&2
      fail=1
    }
  done
  for sub in $(printf '%s\n' "$help" | subcommands); do
    check_command "$@" "$sub"
  done
}

commands=$("$bin" --help | subcommands)
[ -n "$commands" ] || { echo "man_check: $bin --help lists no subcommands" >&2; exit 1; }
n=0
for c in $commands; do
  check_command "$c"
  n=$((n + 1))
done
[ "$fail" -eq 0 ] || exit 1
echo "ok: rocplay(1) covers the $n commands and every long option their --help prints"
