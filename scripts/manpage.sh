#!/usr/bin/env bash
# Writes the man page rocplay(1): the hand-written sections of docs/man/rocplay.1.in with the
# COMMANDS section made from the built binary's own `--help` (every subcommand, its usage, its
# positionals and options, its exit codes), so the page says what the binary does.
# The build runs it (target rocplay_man); tests/install/man_check.sh checks the result.
# Usage: scripts/manpage.sh ROCPLAY TEMPLATE OUT
set -euo pipefail
bin=$1 template=$2 out=$3

# One command's help as troff. Options start at column 2 with `-`; their text continues in the
# description column; other lines are paragraphs.
help_to_troff() {
  awk '
    function esc(s) {
      gsub(/\\/, "\\e", s)
      gsub(/-/, "\\-", s)
      sub(/^[.\047]/, "\\\\\\&&", s)
      return s
    }
    function flush() {
      if (para != "") { print ".PP"; print esc(para); para = "" }
    }
    NR == 1 { next }                       # the description: printed by the caller
    /^Usage: / { next }                    # the usage: the subsection heading
    /^(Options|Positionals|Subcommands):$/ {
      flush(); section = $0; sub(/:$/, "", section)
      print ".PP"; print "\\fI" section "\\fR"; inlist = 1; next
    }
    /^$/ { flush(); inlist = 0; next }
    inlist && /^  [^ ]/ {
      line = substr($0, 3)
      # The term is up to two spaces before the description column, or the whole line.
      term = line; text = ""
      if (match(line, /  +/)) { term = substr(line, 1, RSTART - 1); text = substr(line, RSTART + RLENGTH) }
      print ".TP"; print "\\fB" esc(term) "\\fR"
      if (text != "") print esc(text)
      next
    }
    inlist && /^   / { t = $0; sub(/^ +/, "", t); print esc(t); next }
    { t = $0; para = (para == "" ? t : para " " t) }
    END { flush() }
  '
}

commands=$(COLUMNS=100 "$bin" --help | awk '/^Subcommands:$/ {s = 1; next} /^$/ {s = 0} s && /^  [a-z]/ {print $1}')
[ -n "$commands" ] || { echo "manpage: $bin --help lists no subcommands" >&2; exit 1; }

section() {
  local words=("$@")
  local help
  help=$(COLUMNS=100 "$bin" "${words[@]}" --help)
  local usage
  usage=$(printf '%s\n' "$help" | sed -n 's/^Usage: //p' | head -1)
  printf '.SS "%s"\n' "$(printf '%s' "$usage" | sed 's/-/\\-/g')"
  printf '%s\n' "$help" | awk 'NR == 1 || (!/^Usage: / && !done) {print} /^Usage: /{done=1}' |
    sed '/^Usage: /d' | sed 's/-/\\-/g' | sed 's/^[.'\'']/\\\&&/'
  printf '%s\n' "$help" | help_to_troff
  # Nested subcommands (playbooks show, playbooks check).
  local subs
  subs=$(printf '%s\n' "$help" | awk '/^Subcommands:$/ {s = 1; next} /^$/ {s = 0} s && /^  [a-z]/ {print $1}')
  for s in $subs; do
    section "${words[@]}" "$s"
  done
}

body=$(mktemp)
trap 'rm -f "$body"' EXIT
for c in $commands; do
  section "$c" >>"$body"
done
version=$("$bin" version | awk '{print $2}')
awk -v version="$version" -v body="$body" '
  /^@COMMANDS@$/ { while ((getline l < body) > 0) print l; next }
  { gsub(/@VERSION@/, version); print }
' "$template" >"$out.tmp"
mv "$out.tmp" "$out"
