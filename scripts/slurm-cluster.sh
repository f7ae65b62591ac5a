#!/usr/bin/env bash
# A real Slurm cluster on this one machine, from Debian's packages (munge, slurmctld, slurmd),
# for rocplay's --slurm-job test and bench and for any developer who wants to try it:
#
#   scripts/slurm-cluster.sh up [NODES]   munged + slurmctld on the host, NODES (default 2) slurmd,
#                                         each in its own network namespace (rpnode1, rpnode2, ...)
#                                         with its own host name and address on a bridge
#   scripts/slurm-cluster.sh env          the line to source: export SLURM_CONF=...
#   scripts/slurm-cluster.sh status       daemons, nodes (sinfo), jobs (squeue)
#   scripts/slurm-cluster.sh stop-node N  SIGSTOP node N's slurmd (a node that does not answer)
#   scripts/slurm-cluster.sh down         every job cancelled, every daemon stopped, namespaces,
#                                         bridge and state removed
#
# Needs root (namespaces, a bridge, daemons as root). Nothing under /etc is changed: config, keys,
# sockets, logs and state live in $ROCPLAY_SLURM_DIR (default build/slurm-cluster); clients find
# the cluster through SLURM_CONF. The controller listens on the bridge's address (10.77.0.1), the
# nodes' slurmd on 6818 in their own namespaces. Two clusters side by side (the test beside a
# developer's) differ in ROCPLAY_SLURM_DIR, ROCPLAY_SLURM_NAME (node and bridge names, default
# rpnode), ROCPLAY_SLURM_NET (default 10.77.0) and ROCPLAY_SLURM_PORT (slurmctld, default 6817).
#
# Plugins are the ones that work in a container without a cgroup hierarchy of our own:
# proctrack/linuxproc (the process tree), task/none, jobacct_gather/none.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${ROCPLAY_SLURM_DIR:-$PWD/build/slurm-cluster}
name=${ROCPLAY_SLURM_NAME:-rpnode}
bridge=${name:0:10}br
net=${ROCPLAY_SLURM_NET:-10.77.0}
ctl_port=${ROCPLAY_SLURM_PORT:-6817}

die() {
  echo "slurm-cluster: $*" >&2
  exit 1
}

need_root() {
  [ "$(id -u)" -eq 0 ] || die "must run as root (network namespaces, a bridge, daemons); try: sudo $0 $*"
  for b in munged slurmctld slurmd srun scontrol ip unshare nsenter; do
    command -v "$b" >/dev/null || die "$b not found; install Debian's munge slurmctld slurmd slurm-client iproute2 (scripts/setup.sh)"
  done
}

node_count() { cat "$dir/nodes" 2>/dev/null || echo 0; }

write_conf() {
  local n=$1 host
  host=$(hostname -s)
  {
    echo "ClusterName=rocplay"
    echo "SlurmctldHost=$host($net.1)"
    echo "SlurmctldPort=$ctl_port"
    echo "SlurmdPort=6818"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    echo "AuthInfo=socket=$dir/munge/munge.socket"
    echo "StateSaveLocation=$dir/ctld"
    echo "SlurmdSpoolDir=$dir/spool/%n"
    echo "SlurmctldPidFile=$dir/slurmctld.pid"
    echo "SlurmdPidFile=$dir/slurmd-%n.pid"
    echo "SlurmctldLogFile=$dir/log/slurmctld.log"
    echo "SlurmdLogFile=$dir/log/slurmd-%n.log"
    echo "SlurmctldDebug=info"
    echo "SlurmdDebug=info"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "SwitchType=switch/none"
    echo "MpiDefault=none"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_Core"
    echo "SchedulerType=sched/builtin"
    echo "SlurmdParameters=config_overrides"
    echo "ReturnToService=2"
    echo "SlurmdTimeout=30"
    echo "MessageTimeout=5"
    echo "KillWait=2"
    echo "InactiveLimit=0"
    echo "PrologFlags=NoHold"
    local names=()
    for i in $(seq 1 "$n"); do
      echo "NodeName=$name$i NodeAddr=$net.$((10 + i)) CPUs=8 RealMemory=1000 State=UNKNOWN"
      names+=("$name$i")
    done
    echo "PartitionName=debug Nodes=$(
      IFS=,
      echo "${names[*]}"
    ) Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8"
  } >"$dir/slurm.conf"
  : >"$dir/cgroup.conf"
}

wait_for() { # SECONDS DESCRIPTION COMMAND...
  local limit=$1 what=$2
  shift 2
  for _ in $(seq 1 $((limit * 5))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  die "$what did not come up in ${limit}s; see $dir/log/"
}

up() {
  local n=${1:-2}
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 32 ] || die "NODES must be 1..32, not '$n'"
  need_root
  [ -e "$dir/nodes" ] && die "a cluster is already up in $dir; run: $0 down"
  # Another interface with the subnet would take the nodes' traffic (slurmd: "Unable to contact
  # slurm controller"); a bridge left by an older run, or another cluster of this script.
  if ip -o addr show | grep -q " inet $net\.1/"; then
    die "$net.1 is already on $(ip -o addr show | awk -v a="$net.1/" 'index($4, a) == 1 {print $2}'); remove it, or pick another ROCPLAY_SLURM_NET"
  fi
  mkdir -p "$dir"/{munge,ctld,log,spool}
  chmod 755 "$dir/munge"
  echo "$n" >"$dir/nodes"
  write_conf "$n"

  # munge: our own key and socket, so nothing of the machine's munge setup is used or changed.
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/munge/munge.key"
  munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/munged.seed"
  wait_for 10 munged test -S "$dir/munge/munge.socket"

  # The bridge the controller listens on and every node's veth joins.
  ip link add "$bridge" type bridge
  ip addr add "$net.1/24" dev "$bridge"
  ip link set "$bridge" up

  export SLURM_CONF=$dir/slurm.conf
  slurmctld -f "$dir/slurm.conf"
  wait_for 20 slurmctld scontrol ping

  for i in $(seq 1 "$n"); do start_node "$i"; done
  wait_for 60 "every node idle" all_idle "$n"
  echo "slurm-cluster: up with $n nodes; use it with: export SLURM_CONF=$dir/slurm.conf" >&2
}

start_node() {
  local i=$1 ns=$name$1
  export SLURM_CONF=$dir/slurm.conf
  if ! ip netns list | grep -qw "$ns"; then
    ip netns add "$ns"
    ip link add "${name:0:8}v$i" type veth peer name eth0 netns "$ns"
    ip link set "${name:0:8}v$i" master "$bridge" up
    ip -n "$ns" addr add "$net.$((10 + i))/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    ip -n "$ns" route add default via "$net.1"
  fi
  mkdir -p "$dir/spool/$ns"
  # Its own UTS namespace: `hostname` in the node (slurmd and the job's tasks) says rpnodeN.
  # nsenter, not `ip netns exec`: that one mounts a fresh /sys without /sys/fs/cgroup, and
  # slurmd 22.05 will not start without its cgroup plugin.
  nsenter --net="/run/netns/$ns" unshare --uts sh -c "hostname $ns && exec slurmd -f '$dir/slurm.conf'"
}

all_idle() {
  local n=$1 idle
  idle=$(sinfo -h -N -o '%N %t' 2>/dev/null | grep -cE ' (idle|mix|alloc)$' || true)
  [ "$idle" -eq "$n" ]
}

pid_of() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null && cat "$1"; }

stop_pidfile() { # FILE: SIGTERM, then SIGKILL after 5 s
  local pid
  pid=$(pid_of "$1") || return 0
  kill -CONT "$pid" 2>/dev/null || true
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 25); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.2
  done
  kill -9 "$pid" 2>/dev/null || true
}

down() {
  need_root
  local n
  n=$(node_count)
  export SLURM_CONF=$dir/slurm.conf
  if [ -e "$dir/slurm.conf" ] && pid_of "$dir/slurmctld.pid" >/dev/null; then
    scancel --full --quiet "--user=$(id -un)" 2>/dev/null || true
    sleep 1
  fi
  for i in $(seq 1 "$n"); do
    # A node's job processes (its slurmstepd and tasks) live in its namespace; end them first.
    for pid in $(ip netns pids "$name$i" 2>/dev/null); do
      [ "$pid" = "$(cat "$dir/slurmd-$name$i.pid" 2>/dev/null)" ] && continue
      kill -CONT "$pid" 2>/dev/null || true
      kill -9 "$pid" 2>/dev/null || true
    done
    stop_pidfile "$dir/slurmd-$name$i.pid"
    ip netns del "$name$i" 2>/dev/null || true
    ip link del "${name:0:8}v$i" 2>/dev/null || true
  done
  stop_pidfile "$dir/slurmctld.pid"
  stop_pidfile "$dir/munge/munged.pid"
  ip link del "$bridge" 2>/dev/null || true
  rm -rf "$dir"
  echo "slurm-cluster: down" >&2
}

status() {
  local n
  n=$(node_count)
  [ "$n" -gt 0 ] || {
    echo "slurm-cluster: down (no cluster in $dir)"
    return 1
  }
  export SLURM_CONF=$dir/slurm.conf
  echo "config: $dir/slurm.conf"
  echo "munged: $(pid_of "$dir/munge/munged.pid" || echo stopped)"
  echo "slurmctld: $(pid_of "$dir/slurmctld.pid" || echo stopped)"
  for i in $(seq 1 "$n"); do
    echo "slurmd $name$i: $(pid_of "$dir/slurmd-$name$i.pid" || echo stopped)"
  done
  sinfo -N || true
  squeue || true
}

stop_node() {
  local i=$1 pid
  pid=$(pid_of "$dir/slurmd-$name$i.pid") || die "slurmd of $name$i is not running"
  kill -STOP "$pid"
  echo "slurm-cluster: slurmd of $name$i (pid $pid) stopped (SIGSTOP); '$0 cont-node $i' resumes it" >&2
}

cont_node() {
  local pid
  pid=$(pid_of "$dir/slurmd-$name$1.pid") || die "slurmd of $name$1 is not running"
  kill -CONT "$pid"
}

case "${1:-}" in
up) up "${2:-2}" ;;
down) down ;;
status) status ;;
env) echo "export SLURM_CONF=$dir/slurm.conf" ;;
stop-node) stop_node "${2:?node number}" ;;
cont-node) cont_node "${2:?node number}" ;;
*)
  sed -n '2,/^$/p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
  ;;
esac
