#!/usr/bin/env bash
# cluster.sh - a real three-node Slurm 22.05 cluster made of plain processes on one machine,
# for the auto_resume integration tests.
#
# Everything lives under one directory DIR (absolute path):
#
#   DIR/etc/slurm.conf        generated on every start
#   DIR/etc/plugstack.conf    generated on every start (AR_PLUGIN, AR_PLUGIN_ARGS)
#   DIR/etc/healthd.toml      written only if missing (copy of AR_HEALTHD_CONFIG, else a comment)
#   DIR/etc/cluster.env       what start was given (AR_HEALTHD, ...), reused by start-healthd
#   DIR/env.sh                `source` it: exports SLURM_CONF and friends for clients
#   DIR/munge/                this cluster's own munged: key, socket, pid, log, seed
#   DIR/run/                  pid files of every daemon, healthd sockets
#   DIR/log/                  slurmctld.log, slurmd-nX.log, healthd-nX.log, *.stdout
#   DIR/log.prev/             the logs of the previous start
#   DIR/spool/                slurmctld state and one slurmd spool dir per node
#   DIR/state/nX              healthd state dir per node
#
# Subcommands (see usage below). The script must run as root (slurmd needs it). It only ever
# signals processes of this DIR, so several clusters can run side by side on one machine:
# daemons by the pid files under DIR, each checked against /proc/PID/cmdline first (and, for lost
# pid files, by an exact command line naming DIR); job steps by SLURM_CONF=DIR/etc/slurm.conf in
# the environment of slurmstepd and of the job's tasks.
#
# Environment read by `start`:
#   AR_PLUGIN          absolute path of auto_resume.so; unset = empty plugstack.conf
#   AR_PLUGIN_ARGS     extra plugin arguments appended to the plugstack line
#   AR_HEALTHD         path of the healthd binary; unset = no healthd is started
#   AR_HEALTHD_ARGS    extra healthd arguments (word-split), appended to its command line
#   AR_REBOOT_PROGRAM  slurm.conf RebootProgram (default: fake-reboot.sh beside this script; "" = none)
#   AR_HEALTHD_ENV     extra environment for healthd: VAR=VALUE words, "%n" replaced by the node name
#                      (e.g. the scenario file of the fake NVML library, one per node)
#   AR_HEALTHD_CONFIG  file copied to DIR/etc/healthd.toml when that does not exist yet
#   AR_CRED_EXPIRE     sets AuthInfo cred_expire (seconds, >= 5); Slurm's default is 120, and it
#                      is also how long a requeued job is held (Reason=BeginTime) before it may run
#   AR_START_TIMEOUT   seconds to wait for all nodes to become idle (default 60)
#   AR_SLURM_DEBUG     SlurmctldDebug/SlurmdDebug level (default info)
#   AR_NODES           number of nodes (default 3, names n1..nN)
#   AR_SCHED_PARAMS    slurm.conf SchedulerParameters (default: the tuned
#                      batch_sched_delay=0,sched_interval=2,bf_interval=1; "stock" = no line: Slurm's own)
#   AR_SLURMCTLD_PARAMS  slurm.conf SlurmctldParameters (default: none), e.g. enable_expedited_requeue
#                      (Slurm 25.11+: bench/expedite.sh)
#   AR_KEEP_ON_FAILURE =1: a failed start leaves its daemons running for inspection
#
# Environment read by `start-healthd` and `restart-healthd` (one daemon, this start only):
#   AR_HEALTHD_NODE_CONFIG  the file this node's healthd reads instead of DIR/etc/healthd.toml (a test
#                           giving one node other settings; %n in it is the node's name, so `start`
#                           can give each node its own); a later start without it goes back

set -euo pipefail

readonly PROG="${0##*/}"
readonly DEFAULT_NODES=3

# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------

log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

usage() {
  cat <<EOF
usage: $PROG start DIR                   build and start the cluster under DIR (stops a running one first)
       $PROG stop DIR                    stop everything started under DIR
       $PROG status DIR                  show what runs (exit 0 only if everything runs)
       $PROG start-healthd DIR NODE      start NODE's healthd (uses AR_HEALTHD or the path given at start)
       $PROG stop-healthd DIR NODE [SIG] stop NODE's healthd (SIG=TERM default; KILL simulates a crash
                                         and leaves its socket file behind)
       $PROG restart-healthd DIR NODE    stop-healthd then start-healthd
       $PROG start-slurmd DIR NODE       start NODE's slurmd again
       $PROG stop-slurmd DIR NODE [SIG]  stop NODE's slurmd (its running job steps are left alone)
DIR must be an absolute path. See the header of this file for the environment variables.
EOF
}

# now_ms: milliseconds since the epoch (for timing messages).
now_ms() { date +%s%3N; }

# tail_log FILE...: print the last lines of each existing file, for diagnostics.
tail_log() {
  local f
  for f in "$@"; do
    [ -e "$f" ] || continue
    printf -- '----- tail of %s -----\n' "$f" >&2
    tail -n 25 "$f" >&2 || true
  done
}

# Sets the global paths for cluster directory $1.
set_paths() {
  DIR="$1"
  case "$DIR" in
    /*) ;;
    *) die "DIR must be an absolute path, got '$DIR'" ;;
  esac
  DIR="${DIR%/}"
  ETC="$DIR/etc"
  CONF="$ETC/slurm.conf"
  RUN="$DIR/run"
  LOGD="$DIR/log"
  SPOOL="$DIR/spool"
  STATE="$DIR/state"
  MUNGE_DIR="$DIR/munge"
  MUNGE_SOCKET="$MUNGE_DIR/munge.socket"
  MUNGE_PID="$MUNGE_DIR/munged.pid"
  CTLD_PID="$RUN/slurmctld.pid"
  # SLURM_CONF for every daemon and client we run from here on.
  export SLURM_CONF="$CONF"
}

# Node names: n1..nN. Stored in DIR/etc/cluster.env at start; AR_NODES otherwise.
node_names() {
  local n="${CLUSTER_NODES:-${AR_NODES:-$DEFAULT_NODES}}" i
  for ((i = 1; i <= n; i++)); do printf 'n%d\n' "$i"; done
}

load_cluster_env() {
  # shellcheck source=/dev/null
  if [ -r "$ETC/cluster.env" ]; then . "$ETC/cluster.env"; fi
}

check_node() {
  local node="$1" x
  while read -r x; do [ "$x" = "$node" ] && return 0; done < <(node_names)
  die "unknown node '$node' (nodes: $(node_names | tr '\n' ' '))"
}

# ---------------------------------------------------------------------------------------------
# Process handling: pid files + /proc/PID/cmdline checks
# ---------------------------------------------------------------------------------------------

# stat_field PID N: field N (3 = state, 4 = ppid, 5 = pgid) of /proc/PID/stat; fails if PID is gone.
# The command name (field 2) may hold spaces, so the fields are counted after its closing ')'.
stat_field() {
  local line rest
  local -a f
  { read -r line <"/proc/$1/stat"; } 2>/dev/null || return 1
  rest="${line##*) }"
  read -r -a f <<<"$rest"
  printf '%s\n' "${f[$(($2 - 3))]}"
}

# alive PID: true if PID exists and is no zombie (orphaned zombies may linger where the
# machine's pid 1 does not reap them).
alive() {
  local st
  st="$(stat_field "$1" 3)" || return 1
  [ "$st" != Z ] && [ "$st" != X ]
}

# cmdline PID: the process's command line with NULs turned into spaces (empty if gone).
cmdline() { tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline" || true; }

# pid_matches PID MARKER: true if PID is alive, not a zombie, and its command line contains
# MARKER (a path unique to this cluster, e.g. the slurm.conf path or a socket path).
pid_matches() {
  local pid="$1" marker="$2"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  alive "$pid" || return 1
  [[ "$(cmdline "$pid")" == *"$marker"* ]]
}

# live_pid PIDFILE MARKER: print the pid from PIDFILE if that process still runs with MARKER.
live_pid() {
  local file="$1" marker="$2" pid
  [ -r "$file" ] || return 1
  pid="$(tr -dc '0-9' <"$file")"
  pid_matches "$pid" "$marker" || return 1
  printf '%s\n' "$pid"
}

# wait_gone DEADLINE_S PID...: wait until none of the pids runs; returns 1 on timeout.
wait_gone() {
  local deadline=$(($(now_ms) + $1 * 1000)) p any
  shift
  while :; do
    any=0
    for p in "$@"; do
      if alive "$p"; then any=1; fi
    done
    [ "$any" = 0 ] && return 0
    [ "$(now_ms)" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}

# stop_pidfile NAME PIDFILE MARKER [SIGNAL [GROUP]]: signal the process of PIDFILE (if it is
# ours), SIGKILL it after a deadline, remove the pid file. With GROUP=group and the process
# leading its own process group (healthd, started with setsid), the whole group is signalled,
# so children it may have forked go too.
stop_pidfile() {
  local name="$1" file="$2" marker="$3" sig="${4:-TERM}" group="${5:-}" pid target
  if pid="$(live_pid "$file" "$marker")"; then
    target="$pid"
    if [ "$group" = group ] && [ "$(stat_field "$pid" 5)" = "$pid" ]; then target="-$pid"; fi
    kill -s "$sig" -- "$target" 2>/dev/null || true
    if ! wait_gone 10 "$pid"; then
      log "$name (pid $pid) ignored SIG$sig for 10 s, sending SIGKILL"
      kill -s KILL -- "$target" 2>/dev/null || true
      wait_gone 5 "$pid" || log "warning: $name (pid $pid) still there after SIGKILL"
    fi
    # Whatever is left of its group once the leader is gone.
    if [ "$target" != "$pid" ]; then kill -s KILL -- "$target" 2>/dev/null || true; fi
  fi
  rm -f "$file"
}

# descendants PID...: print all descendants of the given pids (one pass over /proc).
descendants() {
  local -A kids=()
  local p pp line rest
  for p in /proc/[0-9]*; do
    { read -r line <"$p/stat"; } 2>/dev/null || continue
    rest="${line##*) }"
    read -r _ pp _ <<<"$rest"
    kids[$pp]+="${p#/proc/} "
  done
  local -a queue=("$@")
  while [ "${#queue[@]}" -gt 0 ]; do
    p="${queue[0]}"
    queue=("${queue[@]:1}")
    for pp in ${kids[$p]:-}; do
      printf '%s\n' "$pp"
      queue+=("$pp")
    done
  done
}

# env_has PID ENTRY: true if the environment of PID holds exactly ENTRY ("NAME=value"), or
# only the name when ENTRY ends in "=" and ANY is given as third argument.
env_has() {
  local e
  local -a env
  { mapfile -d '' -t env <"/proc/$1/environ"; } 2>/dev/null || return 1
  for e in "${env[@]}"; do
    if [ "${3:-}" = ANY ]; then
      [[ "$e" == "$2"* ]] && return 0
    else
      [ "$e" = "$2" ] && return 0
    fi
  done
  return 1
}

# our_stepds: pids of the slurmstepd processes of this cluster. slurmstepd re-titles itself
# ("slurmstepd: [12.0]") and is reparented to pid 1, so it is recognised by its name plus
# SLURM_CONF=<our conf> in its environment (slurmd hands its environment on to slurmstepd).
our_stepds() {
  local p comm
  for p in /proc/[0-9]*; do
    { read -r comm <"$p/comm"; } 2>/dev/null || continue
    [ "$comm" = slurmstepd ] || continue
    alive "${p#/proc/}" || continue
    if env_has "${p#/proc/}" "SLURM_CONF=$CONF"; then printf '%s\n' "${p#/proc/}"; fi
  done
}

# our_stray_tasks: job processes of this cluster that left their slurmstepd's process tree
# (daemonized by the job). slurmstepd puts SLURMD_NODENAME and SLURM_CONF into every task's
# environment; a shell that merely sourced env.sh has no SLURMD_NODENAME.
our_stray_tasks() {
  local p
  for p in /proc/[0-9]*; do
    p="${p#/proc/}"
    [ "$p" != $$ ] || continue
    env_has "$p" "SLURM_CONF=$CONF" || continue
    env_has "$p" "SLURMD_NODENAME=" ANY || continue
    alive "$p" && printf '%s\n' "$p"
  done
  return 0
}

# our_daemons: pids of daemons of this cluster found by their command line alone, for when a
# pid file is gone or wrong (a crash, a start interrupted half-way, a hand-deleted DIR/run).
# Only exact shapes this script launches match: slurmctld/slurmd with "-f DIR/etc/slurm.conf",
# munged with "--socket=DIR/munge/munge.socket", healthd with "--state-dir DIR/state/...".
our_daemons() {
  local p a prev
  local -a argv
  for p in /proc/[0-9]*; do
    { mapfile -d '' -t argv <"$p/cmdline"; } 2>/dev/null || continue
    [ "${#argv[@]}" -gt 0 ] || continue
    p="${p#/proc/}"
    [ "$p" != $$ ] || continue
    prev=""
    for a in "${argv[@]}"; do
      case "${argv[0]##*/}:$prev:$a" in
        slurmctld:-f:"$CONF" | slurmd:-f:"$CONF" | munged:*:"--socket=$MUNGE_SOCKET" | *:--state-dir:"$STATE"/*)
          alive "$p" && printf '%s\n' "$p"
          break
          ;;
      esac
      prev="$a"
    done
  done
  return 0
}

# kill_stepds: SIGKILL every slurmstepd of this cluster and every job process (the stepds'
# descendants and strays), so that nothing of a job outlives `stop`.
kill_stepds() {
  local -a steps procs
  mapfile -t steps < <(our_stepds)
  mapfile -t procs < <({
    if [ "${#steps[@]}" -gt 0 ]; then descendants "${steps[@]}"; fi
    our_stray_tasks
  } | sort -un)
  [ "${#steps[@]}" -gt 0 ] || [ "${#procs[@]}" -gt 0 ] || return 0
  log "killing ${#steps[@]} slurmstepd and ${#procs[@]} job processes"
  kill -s KILL "${steps[@]}" "${procs[@]}" 2>/dev/null || true
  wait_gone 5 "${steps[@]}" "${procs[@]}" || log "warning: some job processes survived SIGKILL"
}

# ---------------------------------------------------------------------------------------------
# munge
# ---------------------------------------------------------------------------------------------

start_munge() {
  rm -rf "$MUNGE_DIR"
  mkdir -p "$MUNGE_DIR"
  # Our own key: this cluster trusts nothing but itself.
  mungekey --create --keyfile="$MUNGE_DIR/munge.key" >/dev/null 2>&1 ||
    dd if=/dev/urandom of="$MUNGE_DIR/munge.key" bs=1024 count=1 status=none
  chmod 0600 "$MUNGE_DIR/munge.key"

  # munged runs as the munge user (as in production). It refuses to start unless every directory
  # above its socket is searchable by all ("Socket is inaccessible: execute permissions for all
  # required on ..."), even as root; cmd_start checked that already.
  local -a as_user=()
  if id munge >/dev/null 2>&1; then
    chown -R munge:munge "$MUNGE_DIR"
    chmod 0755 "$MUNGE_DIR"
    as_user=(runuser -u munge --)
  else
    log "note: no user 'munge' on this machine; running munged as root"
  fi

  # munged daemonizes itself and writes its pid file; its stdio must not hold the caller's pipes.
  if ! "${as_user[@]}" munged \
    --socket="$MUNGE_SOCKET" \
    --key-file="$MUNGE_DIR/munge.key" \
    --pid-file="$MUNGE_PID" \
    --log-file="$MUNGE_DIR/munged.log" \
    --seed-file="$MUNGE_DIR/munged.seed" \
    </dev/null >>"$MUNGE_DIR/munged.stdout" 2>&1; then
    tail_log "$MUNGE_DIR/munged.stdout" "$MUNGE_DIR/munged.log"
    die "munged failed to start"
  fi
  wait_for 10 "munge socket $MUNGE_SOCKET" test -S "$MUNGE_SOCKET" ||
    {
      tail_log "$MUNGE_DIR/munged.stdout" "$MUNGE_DIR/munged.log"
      die "munged did not create its socket"
    }
  if ! munge -S "$MUNGE_SOCKET" -n </dev/null | unmunge -S "$MUNGE_SOCKET" >/dev/null; then
    tail_log "$MUNGE_DIR/munged.log"
    die "munge round trip through $MUNGE_SOCKET failed"
  fi
}

# wait_for SECONDS WHAT CMD...: poll CMD every 0.1 s until it succeeds; returns 1 on timeout.
wait_for() {
  local deadline=$(($(now_ms) + $1 * 1000)) what="$2"
  shift 2
  until "$@" >/dev/null 2>&1; do
    if [ "$(now_ms)" -ge "$deadline" ]; then
      log "timed out waiting for $what"
      return 1
    fi
    sleep 0.1
  done
}

# ---------------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------------

# free_ports N: print N distinct TCP ports that nobody listens on / has bound right now. They are
# taken from 20000-32767, below Linux's ephemeral range, so the clients' own outgoing connections
# cannot grab them between now and the daemons' start.
free_ports() {
  python3 - "$1" <<'EOF'
import random, socket, sys
want = int(sys.argv[1])
held, ports = [], []
for port in random.sample(range(20000, 32768), 400):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("0.0.0.0", port))
    except OSError:
        s.close()
        continue
    held.append(s)  # keep it bound so the next pick differs
    ports.append(port)
    if len(ports) == want:
        break
if len(ports) < want:
    sys.exit("no free ports found")
print(" ".join(map(str, ports)))
EOF
}

# RebootProgram: by default fake-reboot.sh beside this script (restarts the node's slurmd with -b, a
# new boot id in its host tree, its healthd); AR_REBOOT_PROGRAM overrides, empty for none.
reboot_program_line() {
  local prog="${AR_REBOOT_PROGRAM-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/fake-reboot.sh}"
  if [ -n "$prog" ]; then printf 'RebootProgram=%s\nResumeTimeout=120\n' "$prog"; fi
}

# The tuned scheduler settings (a queued scheduling pass every second, see docs in README "Slurm
# settings that matter"), or none at all: AR_SCHED_PARAMS=stock measures Slurm's defaults.
sched_params_line() {
  local p="${AR_SCHED_PARAMS:-batch_sched_delay=0,sched_interval=2,bf_interval=1}"
  if [ "$p" != stock ]; then printf 'SchedulerParameters=%s\n' "$p"; fi
  if [ -n "${AR_SLURMCTLD_PARAMS:-}" ]; then printf 'SlurmctldParameters=%s\n' "$AR_SLURMCTLD_PARAMS"; fi
}

write_slurm_conf() {
  local -a ports
  local nnodes auth i debug="${AR_SLURM_DEBUG:-info}"
  nnodes="$(node_names | wc -l)"
  read -r -a ports <<<"$(free_ports $((nnodes + 1)))"
  auth="socket=$MUNGE_SOCKET"
  if [ -n "${AR_CRED_EXPIRE:-}" ]; then auth+=",cred_expire=$AR_CRED_EXPIRE"; fi

  {
    cat <<EOF
# Generated by tests/cluster/cluster.sh on $(date -u +%FT%TZ); rewritten on every start.
ClusterName=arcluster
SlurmctldHost=localhost
SlurmctldPort=${ports[0]}
SlurmUser=root
SlurmdUser=root

# This cluster's own munged.
AuthType=auth/munge
CredType=cred/munge
AuthInfo=$auth

StateSaveLocation=$SPOOL/ctld
SlurmdSpoolDir=$SPOOL/%n
SlurmctldPidFile=$CTLD_PID
SlurmdPidFile=$RUN/slurmd-%n.pid
SlurmctldLogFile=$LOGD/slurmctld.log
SlurmdLogFile=$LOGD/slurmd-%n.log
SlurmctldDebug=$debug
SlurmdDebug=$debug
PlugStackConfig=$ETC/plugstack.conf

ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
$(sched_params_line)
# Nodes are declared with fewer resources than a test machine may have; never drain for that.
SlurmdParameters=config_overrides

ReturnToService=2
JobRequeue=1
KillWait=5
# Finished jobs stay visible to 'scontrol show job' for 300 s.
MinJobAge=300
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=30
MessageTimeout=10
Waittime=0

JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MailProg=/bin/true
$(reboot_program_line)

EOF
    i=1
    while read -r node; do
      printf 'NodeName=%s NodeHostname=localhost NodeAddr=127.0.0.1 Port=%s CPUs=2 RealMemory=1000 State=UNKNOWN\n' \
        "$node" "${ports[$i]}"
      i=$((i + 1))
    done < <(node_names)
    printf 'PartitionName=debug Nodes=n[1-%s] Default=YES MaxTime=INFINITE State=UP\n' "$nnodes"
  } >"$CONF"
}

write_plugstack_conf() {
  if [ -n "${AR_PLUGIN:-}" ]; then
    case "$AR_PLUGIN" in /*) ;; *) die "AR_PLUGIN must be an absolute path, got '$AR_PLUGIN'" ;; esac
    [ -r "$AR_PLUGIN" ] || die "AR_PLUGIN=$AR_PLUGIN does not exist"
    local plugin=$AR_PLUGIN
    # srun loads the plugin as the job's user, an ordinary account. A build it cannot read (a checkout
    # under /root) is copied under DIR, readable by all; copied and renamed into place, so a
    # slurmstepd that has the old copy mapped keeps it. An installed plugin is used where it is.
    if ! runuser -u nobody -- test -r "$plugin"; then
      mkdir -p "$DIR/lib"
      chmod 0755 "$DIR/lib"
      cp "$plugin" "$DIR/lib/.auto_resume.so.new"
      chmod 0755 "$DIR/lib/.auto_resume.so.new"
      mv -f "$DIR/lib/.auto_resume.so.new" "$DIR/lib/auto_resume.so"
      plugin=$DIR/lib/auto_resume.so
    fi
    # %n is expanded by the plugin itself to the Slurm node name.
    printf 'optional %s socket=%s/healthd-%%n.sock%s\n' \
      "$plugin" "$RUN" "${AR_PLUGIN_ARGS:+ $AR_PLUGIN_ARGS}" >"$ETC/plugstack.conf"
  else
    printf '# No SPANK plugin (AR_PLUGIN was not set when %s started this cluster).\n' "$PROG" \
      >"$ETC/plugstack.conf"
  fi
}

write_healthd_conf() {
  [ -e "$ETC/healthd.toml" ] && return 0
  if [ -n "${AR_HEALTHD_CONFIG:-}" ]; then
    cp "$AR_HEALTHD_CONFIG" "$ETC/healthd.toml"
  else
    printf '# healthd configuration for the test cluster (defaults only).\n' >"$ETC/healthd.toml"
  fi
}

# Remembers what start was given, so that start-healthd works without the environment.
write_cluster_env() {
  {
    printf '# Written by %s start; read by its other subcommands.\n' "$PROG"
    printf 'CLUSTER_NODES=%q\n' "$(node_names | wc -l)"
    printf 'CLUSTER_HEALTHD=%q\n' "${AR_HEALTHD:-}"
    printf 'CLUSTER_HEALTHD_ARGS=%q\n' "${AR_HEALTHD_ARGS:-}"
    printf 'CLUSTER_HEALTHD_ENV=%q\n' "${AR_HEALTHD_ENV:-}"
    printf 'CLUSTER_PLUGIN=%q\n' "${AR_PLUGIN:-}"
  } >"$ETC/cluster.env"
}

write_env_sh() {
  {
    printf '# Source this file to use the test cluster in %s.\n' "$DIR"
    printf 'export SLURM_CONF=%q\n' "$CONF"
    printf 'export AR_CLUSTER_DIR=%q\n' "$DIR"
    printf 'export AR_MUNGE_SOCKET=%q\n' "$MUNGE_SOCKET"
    printf 'export AR_CLUSTER_NODES=%q\n' "$(node_names | tr '\n' ' ' | sed 's/ $//')"
  } >"$DIR/env.sh"
}

# ---------------------------------------------------------------------------------------------
# Slurm daemons
# ---------------------------------------------------------------------------------------------

start_slurmctld() {
  # slurmctld daemonizes itself and writes SlurmctldPidFile. -f puts the conf path on its command
  # line, which is what stop checks before signalling.
  if ! slurmctld -f "$CONF" </dev/null >>"$LOGD/slurmctld.stdout" 2>&1; then
    tail_log "$LOGD/slurmctld.stdout" "$LOGD/slurmctld.log"
    die "slurmctld failed to start"
  fi
}

start_slurmd() {
  local node="$1"
  mkdir -p "$SPOOL/$node"
  if ! slurmd -N "$node" -f "$CONF" </dev/null >>"$LOGD/slurmd-$node.stdout" 2>&1; then
    tail_log "$LOGD/slurmd-$node.stdout" "$LOGD/slurmd-$node.log"
    die "slurmd -N $node failed to start"
  fi
}

stop_slurmd() {
  local node="$1" sig="${2:-TERM}"
  stop_pidfile "slurmd $node" "$RUN/slurmd-$node.pid" "$CONF" "$sig"
}

# all_idle: true when sinfo lists every node as idle.
all_idle() {
  local out want
  out="$(sinfo -h -N -o '%N %t' 2>/dev/null | sort -u)" || return 1
  want="$(node_names | sed 's/$/ idle/' | sort)"
  [ "$out" = "$want" ]
}

wait_all_idle() {
  local timeout="${AR_START_TIMEOUT:-60}" node
  if ! wait_for "$timeout" "all nodes idle" all_idle; then
    log "sinfo now:"
    sinfo -N -o '%N %t %E' >&2 || true
    for node in $(node_names); do
      if ! live_pid "$RUN/slurmd-$node.pid" "$CONF" >/dev/null; then log "slurmd $node is not running"; fi
    done
    tail_log "$LOGD/slurmctld.log" "$LOGD"/slurmd-*.log "$LOGD"/*.stdout
    die "the cluster did not come up within $timeout s"
  fi
}

# ---------------------------------------------------------------------------------------------
# healthd
# ---------------------------------------------------------------------------------------------

healthd_bin() {
  local bin="${AR_HEALTHD:-${CLUSTER_HEALTHD:-}}"
  [ -n "$bin" ] || die "no healthd binary: set AR_HEALTHD"
  [ -x "$bin" ] || die "healthd binary '$bin' is not executable"
  printf '%s\n' "$bin"
}

start_healthd() {
  local node="$1" bin sock pidfile logf pid extra config="${AR_HEALTHD_NODE_CONFIG:-$ETC/healthd.toml}"
  config="${config//%n/$node}"
  bin="$(healthd_bin)"
  [ -r "$config" ] || die "healthd $node: configuration file '$config' is not readable"
  sock="$RUN/healthd-$node.sock"
  pidfile="$RUN/healthd-$node.pid"
  logf="$LOGD/healthd-$node.log"
  if pid="$(live_pid "$pidfile" "$sock")"; then
    log "healthd $node already runs (pid $pid)"
    return 0
  fi
  rm -f "$sock" "$pidfile"
  mkdir -p -m 0700 "$STATE/$node"
  extra="${AR_HEALTHD_ARGS:-${CLUSTER_HEALTHD_ARGS:-}}"
  local -a envs=()
  local word
  # shellcheck disable=SC2086 # AR_HEALTHD_ENV is meant to be word-split
  for word in ${AR_HEALTHD_ENV:-${CLUSTER_HEALTHD_ENV:-}}; do envs+=("${word//%n/$node}"); done
  # A new session, stdio detached from the caller: it must outlive this script and not hold the
  # caller's pipes open. In a non-interactive shell the background child is no process group
  # leader, so setsid does not fork again and $! is healthd's pid. SLURM_CONF is exported, so
  # scontrol/libslurm calls from healthd reach this cluster.
  # shellcheck disable=SC2086 # AR_HEALTHD_ARGS is meant to be word-split
  setsid env "${envs[@]}" "$bin" --config "$config" --node "$node" --socket "$sock" \
    --state-dir "$STATE/$node" $extra </dev/null >>"$logf" 2>&1 &
  pid=$!
  printf '%s\n' "$pid" >"$pidfile"
  local deadline=$(($(now_ms) + 20000))
  while [ ! -S "$sock" ]; do
    # `alive`, not pid_matches: until the child has exec'd, its cmdline is still this script's.
    if ! alive "$pid"; then
      wait "$pid" 2>/dev/null || true
      rm -f "$pidfile"
      tail_log "$logf"
      die "healthd $node (pid $pid) exited before creating $sock"
    fi
    if [ "$(now_ms)" -ge "$deadline" ]; then
      tail_log "$logf"
      die "healthd $node (pid $pid) did not create $sock within 20 s"
    fi
    sleep 0.05
  done
}

stop_healthd() {
  local node="$1" sig="${2:-TERM}"
  local sock="$RUN/healthd-$node.sock"
  stop_pidfile "healthd $node" "$RUN/healthd-$node.pid" "$sock" "$sig" group
  # A graceful stop leaves no socket behind; SIGKILL simulates a crash, so its socket stays.
  if [ "$sig" != KILL ] && [ "$sig" != 9 ] && [ "$sig" != SIGKILL ]; then rm -f "$sock"; fi
}

# ---------------------------------------------------------------------------------------------
# Subcommands
# ---------------------------------------------------------------------------------------------

cmd_stop() {
  local node t0
  t0="$(now_ms)"
  load_cluster_env
  # Job steps first: slurmd does not take its slurmstepd processes down with it.
  kill_stepds
  for node in $(node_names); do stop_healthd "$node"; done
  # slurmds and slurmctld together, then munged (the others may still talk to it on the way out).
  local -a pids=()
  local pid
  for node in $(node_names); do
    if pid="$(live_pid "$RUN/slurmd-$node.pid" "$CONF")"; then pids+=("$pid"); fi
  done
  if pid="$(live_pid "$CTLD_PID" "$CONF")"; then pids+=("$pid"); fi
  if [ "${#pids[@]}" -gt 0 ]; then
    kill -s TERM "${pids[@]}" 2>/dev/null || true
    if ! wait_gone 15 "${pids[@]}"; then
      log "slurm daemons still up 15 s after SIGTERM, sending SIGKILL"
      kill -s KILL "${pids[@]}" 2>/dev/null || true
      wait_gone 5 "${pids[@]}" || log "warning: slurm daemons survived SIGKILL"
    fi
  fi
  rm -f "$CTLD_PID" "$RUN"/slurmd-*.pid
  # A step started while the daemons went down would be orphaned: sweep once more.
  kill_stepds
  stop_pidfile munged "$MUNGE_PID" "$MUNGE_SOCKET"
  # Daemons whose pid file was lost or overwritten.
  mapfile -t pids < <(our_daemons)
  if [ "${#pids[@]}" -gt 0 ]; then
    log "stopping ${#pids[@]} daemon(s) of this cluster without a valid pid file: ${pids[*]}"
    kill -s TERM "${pids[@]}" 2>/dev/null || true
    if ! wait_gone 10 "${pids[@]}"; then kill -s KILL "${pids[@]}" 2>/dev/null || true; fi
    wait_gone 5 "${pids[@]}" || log "warning: pids ${pids[*]} survived SIGKILL"
  fi
  rm -f "$MUNGE_SOCKET" "$MUNGE_SOCKET.lock"
  log "stopped cluster in $DIR ($(($(now_ms) - t0)) ms)"
}

# EXIT trap of a start that did not finish.
on_start_exit() {
  local rc=$?
  [ "$rc" -ne 0 ] || return 0
  if [ "${AR_KEEP_ON_FAILURE:-0}" = 1 ]; then
    log "start failed; AR_KEEP_ON_FAILURE=1, leaving what runs in place"
  else
    log "start failed; stopping what was started (logs stay in $LOGD)"
    cmd_stop || true
  fi
  exit "$rc"
}

cmd_start() {
  local t0 node
  t0="$(now_ms)"
  [ "$(id -u)" -eq 0 ] || die "must run as root (slurmd needs it)"
  local cmd
  for cmd in munged munge unmunge slurmctld slurmd sinfo scontrol python3 setsid runuser; do
    command -v "$cmd" >/dev/null || die "'$cmd' not found (run scripts/install-deps.sh)"
  done
  # Unix socket paths are limited to 107 bytes; the longest one below DIR is a slurmstepd socket,
  # "spool/nX/nX_<jobid>.<stepid>", about 40 bytes.
  [ "${#DIR}" -le 64 ] || die "DIR is too long for unix socket paths (${#DIR} > 64 characters): $DIR"

  mkdir -p "$DIR"
  # munged needs every directory above its socket to be searchable by all users.
  chmod go+x "$DIR"
  local d="$DIR"
  while [ "$d" != / ] && [ -n "$d" ]; do
    d="$(dirname "$d")"
    if [ "$(($(stat -c '0%a' "$d") & 1))" -eq 0 ]; then
      die "munged needs $d to be searchable by all (chmod o+x), or choose a DIR elsewhere (e.g. under /tmp)"
    fi
  done
  # Stop whatever a previous start left: live daemons (also those whose pid files were lost) and
  # stray job processes. Cheap when nothing runs.
  cmd_stop
  unset CLUSTER_NODES CLUSTER_HEALTHD CLUSTER_HEALTHD_ARGS CLUSTER_HEALTHD_ENV CLUSTER_PLUGIN

  # Fresh state: Slurm state, spools, healthd state, pid files, sockets. Logs move to log.prev.
  rm -rf "$SPOOL" "$RUN" "$STATE" "$DIR/log.prev" "$DIR/env.sh"
  if [ -d "$LOGD" ]; then mv "$LOGD" "$DIR/log.prev"; fi
  mkdir -p "$ETC" "$RUN" "$LOGD" "$SPOOL/ctld" "$STATE"
  # Jobs run as ordinary users: their srun reads slurm.conf and reaches the healthd sockets.
  chmod 0755 "$ETC" "$RUN"

  # From here on a failed start takes down what it started (unless AR_KEEP_ON_FAILURE=1), so a
  # failing test setup leaves no daemons behind; the logs stay in DIR/log.
  trap on_start_exit EXIT

  write_slurm_conf
  write_plugstack_conf
  write_healthd_conf
  write_cluster_env

  start_munge
  start_slurmctld
  for node in $(node_names); do start_slurmd "$node"; done
  if [ -n "${AR_HEALTHD:-}" ]; then
    for node in $(node_names); do start_healthd "$node"; done
  fi
  wait_all_idle
  write_env_sh
  trap - EXIT
  log "cluster up in $DIR: $(node_names | tr '\n' ' ')($(($(now_ms) - t0)) ms); source $DIR/env.sh"
}

cmd_status() {
  local node pid rc=0
  load_cluster_env
  report() {
    local name="$1" file="$2" marker="$3"
    if pid="$(live_pid "$file" "$marker")"; then
      printf '%-14s running  pid %s\n' "$name" "$pid"
    else
      printf '%-14s stopped\n' "$name"
      rc=1
    fi
  }
  report munged "$MUNGE_PID" "$MUNGE_SOCKET"
  report slurmctld "$CTLD_PID" "$CONF"
  for node in $(node_names); do report "slurmd $node" "$RUN/slurmd-$node.pid" "$CONF"; done
  if [ -n "${CLUSTER_HEALTHD:-}" ]; then
    for node in $(node_names); do report "healthd $node" "$RUN/healthd-$node.pid" "$RUN/healthd-$node.sock"; done
  fi
  local steps
  steps="$(our_stepds | tr '\n' ' ')"
  printf '%-14s %s\n' slurmstepd "${steps:-none}"
  if live_pid "$CTLD_PID" "$CONF" >/dev/null; then
    sinfo -N -o '%N %t %E' 2>&1 || true
    squeue 2>&1 || true
  fi
  return "$rc"
}

# Daemons started from here must not inherit the caller's file descriptors: an inherited pipe
# keeps a harness waiting for EOF forever (bats, for one, hangs while a background process holds
# its fd 3). So everything above stderr is closed first (255 is bash's own handle on this script).
close_inherited_fds() {
  local fd
  for fd in "/proc/$$/fd"/*; do
    fd="${fd##*/}"
    if [ "$fd" -gt 2 ] && [ "$fd" -ne 255 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
  done
}

main() {
  close_inherited_fds
  [ $# -ge 2 ] || {
    usage >&2
    exit 2
  }
  local sub="$1"
  set_paths "$2"
  case "$sub" in
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    start-healthd | stop-healthd | restart-healthd | start-slurmd | stop-slurmd)
      [ $# -ge 3 ] || die "$sub needs DIR NODE"
      load_cluster_env
      check_node "$3"
      case "$sub" in
        start-healthd) start_healthd "$3" ;;
        stop-healthd) stop_healthd "$3" "${4:-TERM}" ;;
        restart-healthd)
          stop_healthd "$3"
          start_healthd "$3"
          ;;
        start-slurmd)
          live_pid "$RUN/slurmd-$3.pid" "$CONF" >/dev/null && die "slurmd $3 already runs"
          start_slurmd "$3"
          ;;
        stop-slurmd) stop_slurmd "$3" "${4:-TERM}" ;;
      esac
      ;;
    -h | --help | help) usage ;;
    *)
      usage >&2
      exit 2
      ;;
  esac
}

main "$@"
