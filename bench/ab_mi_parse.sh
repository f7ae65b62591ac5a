#!/usr/bin/env bash
# Two builds' MI parser side by side: bench_mi_parse of OLD and NEW taking turns (the order
# flipped every round), so that the shared builder's slow and fast phases weigh on both alike.
# Prints each round's figures and, per build, the median over rounds of: the parse phase's
# median wall MB/s, its MB/s per CPU-second, the same for the pipe phase (the corpus fed in 64 KB
# chunks; "-" for a build whose benchmark has no such phase), and the streaming phase's wall and
# per-CPU MB/s.
#
#   bench/ab_mi_parse.sh OLD_BUILD_DIR NEW_BUILD_DIR [ROUNDS]   (default 10; each round runs
#                                                               bench_mi_parse --runs 11 once
#                                                               per build)
#   STREAM_MB=256 bench/ab_mi_parse.sh ...   the streaming phase's size (default 128)
set -euo pipefail
old=${1:?old build directory}
new=${2:?new build directory}
rounds=${3:-10}
stream_mb=${STREAM_MB:-128}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 0; r < rounds; r++)); do
  if ((r % 2 == 0)); then order="old new"; else order="new old"; fi
  for side in $order; do
    dir=$old
    [ "$side" = new ] && dir=$new
    out=$("$dir/bench/bench_mi_parse" --corpus-mb 32 --stream-mb "$stream_mb" --runs 11)
    pw=$(sed -n 's/^parse:.*median \([0-9.]*\) MB\/s wall.*/\1/p' <<<"$out")
    pc=$(sed -n 's/^parse:.* \([0-9.]*\) MB\/s per CPU-second.*/\1/p' <<<"$out")
    qw=$(sed -n 's/^pipe:.*median \([0-9.]*\) MB\/s wall.*/\1/p' <<<"$out")
    qc=$(sed -n 's/^pipe:.* \([0-9.]*\) MB\/s per CPU-second.*/\1/p' <<<"$out")
    sw=$(sed -n 's/^stream:.* \([0-9.]*\) MB\/s wall.*/\1/p' <<<"$out")
    sc=$(sed -n 's/^stream:.* \([0-9.]*\) MB\/s per CPU-second.*/\1/p' <<<"$out")
    echo "$pw" >>"$work/$side.pw"
    echo "$pc" >>"$work/$side.pc"
    if [ -n "$qw" ]; then
      echo "$qw" >>"$work/$side.qw"
      echo "$qc" >>"$work/$side.qc"
    fi
    echo "$sw" >>"$work/$side.sw"
    echo "$sc" >>"$work/$side.sc"
    echo "round $r $side: parse $pw wall, $pc per CPU-s; pipe ${qw:--} wall, ${qc:--} per CPU-s; stream $sw wall, $sc per CPU-s"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
pipe() { if [ -s "$work/$1.qw" ]; then echo "$(median <"$work/$1.qw"), per CPU-s $(median <"$work/$1.qc")"; else echo "-"; fi; }
for side in old new; do
  echo "$side: parse wall median $(median <"$work/$side.pw") MB/s (rounds: $(sort -g "$work/$side.pw" | tr '\n' ' ')), per CPU-s $(median <"$work/$side.pc"); pipe wall $(pipe "$side"); stream wall $(median <"$work/$side.sw"), per CPU-s $(median <"$work/$side.sc")"
done
