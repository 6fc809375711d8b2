#!/usr/bin/env bash
# kill_at_call.sh: stands in for scontrol (linked under that name into WRAP/bin/) for healthd on the
# test cluster, so that faults.bats can SIGKILL the daemon at an exact point of an incident: just
# before its Nth Slurm call, or just after that call returned. healthd forks scontrol only for
# `scontrol reboot` (faults.bats points [slurm] scontrol at WRAP/bin/scontrol); its libslurm calls
# go through tests/fakes/libkill-at-call.so, which keeps the same files and the same count.
# Per node, under WRAP/NODE/ (the node is the `--node` of the calling daemon):
#   count      calls so far (the test resets it to 0)
#   calls.log  one line per call: epoch seconds, call number, command and its arguments
#   kill-at    "N before" or "N after", written by the test; consumed when it fires
#   kills.log  one line per kill: where it struck
#   stop-ctld-at  "N", written by the test: slurmctld is stopped (SIGTERM, waited for) just before
#              call N, which then meets a Slurm that does not answer; consumed when it fires, and
#              noted in ctld-stopped
# The daemon (the caller) and its process group are killed with SIGKILL, as a crash would; the real
# command runs only in the "after" case.
set -u

name="${0##*/}"
wrap="$(cd "$(dirname "$0")/.." && pwd)"
daemon=$PPID

# The inherited descriptors (healthd's listening socket and client connections, when it leaks them)
# must not outlive the killed daemon in this process: its restart would find its socket still held.
for fd in "/proc/$$/fd"/*; do
  fd="${fd##*/}"
  if [ "$fd" -gt 2 ] && [ "$fd" -ne 255 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
done

# The node of the calling daemon, from its command line (--node NAME).
node=""
mapfile -d '' -t argv <"/proc/$daemon/cmdline" 2>/dev/null || argv=()
for ((i = 0; i + 1 < ${#argv[@]}; i++)); do
  if [ "${argv[$i]}" = --node ]; then node="${argv[$((i + 1))]}"; fi
done

# The real command: the first one of that name on PATH that is not this wrapper.
real=""
IFS=: read -r -a path_dirs <<<"${PATH:-/usr/local/bin:/usr/bin:/bin}:/usr/bin:/bin"
for d in "${path_dirs[@]}"; do
  if [ -z "$d" ] || [ ! -x "$d/$name" ]; then continue; fi
  [ "$(cd "$d" && pwd)" = "$wrap/bin" ] && continue
  real="$d/$name"
  break
done
if [ -z "$real" ]; then
  echo "kill_at_call: no real $name on PATH" >&2
  exit 127
fi

# Not called by a healthd of this cluster: just the real command.
if [ -z "$node" ] || [[ "${argv[0]:-}" != *healthd ]]; then exec "$real" "$@"; fi

dir="$wrap/$node"
mkdir -p "$dir"
fire=""
{
  flock 9
  n=$(($(cat "$dir/count" 2>/dev/null || echo 0) + 1))
  echo "$n" >"$dir/count"
  if [ -r "$dir/kill-at" ]; then
    read -r at when <"$dir/kill-at" || true
    if [ "${at:-}" = "$n" ]; then
      fire="${when:-before}"
      rm -f "$dir/kill-at"
    fi
  fi
  stop_ctld=""
  if [ -r "$dir/stop-ctld-at" ] && [ "$(cat "$dir/stop-ctld-at")" = "$n" ]; then
    stop_ctld=yes
    rm -f "$dir/stop-ctld-at"
  fi
  printf '%s %d %s %s\n' "$(date +%s.%N)" "$n" "$name" "$*" >>"$dir/calls.log"
} 9>>"$dir/lock"

# stop_slurmctld: SIGTERM to this cluster's slurmctld, and wait (up to 15 s) until it is gone.
stop_slurmctld() {
  local pid st
  pid="$(tr -dc '0-9' <"$wrap/../run/slurmctld.pid" 2>/dev/null)"
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 150); do
    st="$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)"
    if [ -z "$st" ] || [ "$st" = Z ]; then break; fi
    sleep 0.1
  done
  printf '%s stopped slurmctld before call %d: %s %s\n' "$(date +%s.%N)" "$n" "$name" "$*" >>"$dir/ctld-stopped"
}

if [ "$stop_ctld" = yes ]; then stop_slurmctld "$@"; fi

# kill_daemon WHEN: SIGKILL the calling daemon and its process group (this program has its own).
kill_daemon() {
  local when="$1" pgid
  shift
  printf '%s killed %s call %d: %s %s\n' "$(date +%s.%N)" "$when" "$n" "$name" "$*" >>"$dir/kills.log"
  pgid="$(ps -o pgid= -p "$daemon" | tr -d ' ')"
  if [ "$pgid" = "$daemon" ]; then kill -KILL -- "-$pgid"; else kill -KILL "$daemon"; fi
}

if [ "$fire" = before ]; then
  kill_daemon before "$@"
  exit 137
fi
"$real" "$@"
rc=$?
if [ "$fire" = after ]; then kill_daemon after "$@"; fi
exit "$rc"
