#!/usr/bin/env bash
# RebootProgram of the local test cluster. A real reboot cannot happen here (every "node" is this
# machine), so this one does what a reboot does to the parts healthd and Slurm see:
#   - the node's slurmd stops and starts again with -b ("report node rebooted now"), so slurmctld
#     sees the boot it asked for and applies nextstate=RESUME;
#   - the node's fake host tree gets a new boot id (DIR/host/NODE/proc/sys/kernel/random/boot_id);
#   - the node's healthd restarts, as it would after a boot;
#   - it stays down for AR_FAKE_REBOOT_SECONDS (default 5) first: a real reboot takes minutes, and a
#     job requeued off the node starts elsewhere meanwhile instead of racing the node's return.
# slurmd runs this through system(); the node and cluster come from that slurmd's command line.
set -u

node="" conf="" slurmd_pid=""
p=$PPID
for _ in 1 2 3 4 5 6; do
  [ -r "/proc/$p/cmdline" ] || break
  mapfile -d '' -t argv <"/proc/$p/cmdline"
  if [ "${#argv[@]}" -gt 0 ] && [ "$(basename "${argv[0]}")" = slurmd ]; then
    for ((i = 0; i < ${#argv[@]}; i++)); do
      case "${argv[i]}" in
        -N) node="${argv[i + 1]:-}" ;;
        -f) conf="${argv[i + 1]:-}" ;;
      esac
    done
    slurmd_pid=$p
    break
  fi
  p="$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null)" || break
done
if [ -z "$node" ] || [ -z "$conf" ]; then
  echo "fake-reboot: cannot find the slurmd that runs me (-N and -f)" >&2
  exit 1
fi
dir="$(dirname "$(dirname "$conf")")"
here="$(cd "$(dirname "$0")" && pwd)"
log="$dir/log/fake-reboot-$node.log"

# Detached: the slurmd that runs this is about to be stopped.
setsid bash -c '
  set -u
  node=$1 conf=$2 dir=$3 here=$4 pid=$5 delay=$6
  echo "$(date +%T.%N) rebooting $node (slurmd pid $pid)"
  sleep 0.5
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  sleep "$delay"
  mkdir -p "$dir/host/$node/proc/sys/kernel/random"
  cat /proc/sys/kernel/random/uuid >"$dir/host/$node/proc/sys/kernel/random/boot_id"
  "$here/cluster.sh" restart-healthd "$dir" "$node" || echo "healthd did not restart"
  slurmd -b -N "$node" -f "$conf" </dev/null
  echo "$(date +%T.%N) $node is back (slurmd rc $?)"
' fake-reboot "$node" "$conf" "$dir" "$here" "$slurmd_pid" "${AR_FAKE_REBOOT_SECONDS:-5}" </dev/null >>"$log" 2>&1 &
# Return only once that child leads its own session: from 26.05, slurmd runs RebootProgram through
# run_command(), which kills the program's process group as soon as it exits ("kill children too",
# src/common/run_command.c), and a child not yet out of it died with it, leaving the node in
# REBOOT_ISSUED for good.
child=$!
for _ in $(seq 1 100); do
  [ "$(awk '{print $6}' "/proc/$child/stat" 2>/dev/null)" = "$child" ] && break
  sleep 0.02
done
exit 0
