#!/usr/bin/env bash
# Every real recording's headline, alone and per directory, as one rocplay build reads it: the
# replay to do after changing a heuristic (diff two builds' outputs and read each change).
#   scripts/headlines.sh ROCPLAY [MORE_DIRS...] > headlines.txt
# Reads fixtures/ (but the pasted console text and snapshot JSON goldens) and MORE_DIRS (for
# example the shared transcripts beside the checkout). One line each: PATH, a tab, the first two
# lines of `rocplay postmortem PATH` joined.
set -u
rocplay=${1:?usage: scripts/headlines.sh ROCPLAY [MORE_DIRS...]}
shift
cd "$(dirname "$0")/.."
dirs=(fixtures "$@")
head_of() { "$rocplay" postmortem "$1" 2>&1 | head -2 | tr -s ' \n' ' ' | cut -c1-230; }
find "${dirs[@]}" -type f \( -name '*.rec' -o -name '*.mi' -o -name '*.rocplay' \) |
  grep -v -e rocgdb-console -e snapshot-json | sort | while read -r f; do
  printf '%s\t%s\n' "$f" "$(head_of "$f")"
done
find "${dirs[@]}" -mindepth 1 -type d | grep -v -e rocgdb-console -e snapshot-json | sort |
  while read -r d; do
    printf 'DIR %s\t%s\n' "$d" "$(head_of "$d")"
  done
