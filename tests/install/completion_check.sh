#!/usr/bin/env bash
# The bash and zsh completions complete what the binary has: subcommands, each command's options
# (from its --help), option values and playbook names (from `rocplay playbooks`).
# Usage: tests/install/completion_check.sh ROCPLAY_DIR BASH_COMPLETION ZSH_COMPLETION
#   ROCPLAY_DIR: the directory holding the rocplay to complete for (put first on PATH)
set -euo pipefail
abs() { (cd "$(dirname "$1")" && printf '%s/%s\n' "$PWD" "$(basename "$1")"); }
dir=$(cd "$1" && pwd) bash_file=$(abs "$2") zsh_file=$(abs "$3")
fail=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PATH="$dir:$PATH" HOME="$work"
cd "$work" # no ./playbooks here: the built-ins only

bash_complete() { # the words typed, the last one being completed
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _rocplay
           printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " " | sed "s/ $//"' _ "$bash_file" "$@"
}
zsh_complete() {
  zsh -f -c '
    compadd() { # the real one offers the candidates that match the word; here: by prefix
      while [[ $1 == -* ]]; do [[ $1 == -- ]] && { shift; break; }; shift; done
      local w; for w in "$@"; do [[ $w == ${words[CURRENT]}* ]] && print -- $w; done; true; }
    _files() { print -- "<files>"; }
    _pids() { print -- "<pids>"; }
    _normal() { print -- "<normal>"; }
    file=$1; shift
    words=("$@"); CURRENT=$#
    source "$file" 2>/dev/null || true
    ' _ "$zsh_file" "$@" | sort | tr "\n" " " | sed "s/ $//"
}
expect() { # shell, expected, words...
  local shell=$1 want=$2
  shift 2
  local got
  got=$("${shell}_complete" "$@")
  if [ "$got" != "$want" ]; then
    echo "completion_check: $shell: '$*' completes to '$got', expected '$want'" >&2
    fail=1
  fi
}
for sh in bash zsh; do
  if [ "$sh" = zsh ] && ! command -v zsh >/dev/null; then
    echo "completion_check: no zsh here; its completion is not checked (scripts/setup.sh installs it)" >&2
    fail=1
    continue
  fi
  expect $sh "postmortem" rocplay po
  expect $sh "record run" rocplay r
  expect $sh "--pid --pids" rocplay run --pi
  expect $sh "hang-triage" rocplay run hang-t
  expect $sh "check show" rocplay playbooks ""
  expect $sh "gpu-state" rocplay playbooks show gpu-
  expect $sh "json jsonl" rocplay postmortem --format j
  expect $sh "html" rocplay run --format h
  expect $sh "--one-event" rocplay postmortem --one-
  expect $sh "host-stacks" rocplay record --playbook ho
  expect $sh "--catch" rocplay launch --cat
done
# Every subcommand --help lists is offered for an empty word.
all=$(rocplay --help | awk '/^Subcommands:$/ {s = 1; next} /^$/ {s = 0} s && /^  [a-z]/ {print $1}' | sort | tr '\n' ' ' | sed 's/ $//')
expect bash "$all" rocplay ""
expect zsh "$all" rocplay ""
[ "$fail" -eq 0 ] || exit 1
echo "ok: bash and zsh complete subcommands, options, values and playbook names"
