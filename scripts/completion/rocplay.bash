# bash completion for rocplay: subcommands, each command's options (read from its own --help, so
# they never go stale) and playbook names (from `rocplay playbooks`: built-ins and the search path).
# Installed as share/bash-completion/completions/rocplay.

_rocplay_words() { # $1: the help text's section (Subcommands or Options)
  awk -v want="$1:" '
    $0 == want { s = 1; next }
    /^$/ { s = 0 }
    s && want == "Subcommands:" && /^  [a-z]/ { print $1 }
    s && want == "Options:" && /^  -/ {
      n = split($1, names, ",")
      for (i = 1; i <= n; i++) { o = names[i]; sub(/[ {=:].*/, "", o); sub(/\{.*/, "", o); print o }
    }'
}

_rocplay_playbooks() {
  "$1" playbooks 2>/dev/null | awk '/^[A-Za-z0-9_.-]+( |$)/ { print $1 }'
}

_rocplay() {
  local cur prev words cword
  if declare -F _init_completion >/dev/null; then
    _init_completion -n = || return
  else
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
  fi
  local bin=${words[0]}
  # The command words typed so far (rocplay playbooks show ...), options skipped.
  local cmd=() i
  for ((i = 1; i < cword; i++)); do
    case "${words[i]}" in
    --) return ;; # launch's program and its arguments: leave them to the shell
    -*) ;;
    *)
      if [ ${#cmd[@]} -eq 0 ] || { [ "${cmd[0]}" = playbooks ] && [ ${#cmd[@]} -eq 1 ]; }; then
        cmd+=("${words[i]}")
      fi
      ;;
    esac
  done
  # A value after an option that takes one.
  case "$prev" in
  --playbook)
    mapfile -t COMPREPLY < <(compgen -W "$(_rocplay_playbooks "$bin")" -- "$cur")
    return
    ;;
  -p | --pid | --workers-of)
    mapfile -t COMPREPLY < <(compgen -W "$(ps -e -o pid= 2>/dev/null)" -- "$cur")
    return
    ;;
  --slurm-job) # the running jobs Slurm shows this user
    mapfile -t COMPREPLY < <(compgen -W "$(squeue -h -t RUNNING -o %i 2>/dev/null)" -- "$cur")
    return
    ;;
  --format | -f)
    mapfile -t COMPREPLY < <(compgen -W "text json jsonl sarif html" -- "$cur")
    return
    ;;
  --color)
    mapfile -t COMPREPLY < <(compgen -W "auto always never" -- "$cur")
    return
    ;;
  --debugger)
    mapfile -t COMPREPLY < <(compgen -W "rocgdb cuda-gdb gdb" -- "$cur")
    return
    ;;
  -o | --output | --record | --log | --out)
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    return
    ;;
  esac
  local help
  help=$("$bin" "${cmd[@]}" --help 2>/dev/null)
  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$(printf '%s\n' "$help" | _rocplay_words Options)" -- "$cur")
    return
  fi
  local subs
  subs=$(printf '%s\n' "$help" | _rocplay_words Subcommands)
  if [ -n "$subs" ]; then
    mapfile -t COMPREPLY < <(compgen -W "$subs" -- "$cur")
    return
  fi
  case "${cmd[0]:-}" in
  run | launch | show | check | playbooks)
    mapfile -t COMPREPLY < <(compgen -W "$(_rocplay_playbooks "$bin")" -- "$cur")
    ;;
  *)
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    ;;
  esac
}
complete -o default -F _rocplay rocplay
