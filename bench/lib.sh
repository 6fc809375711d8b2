# shellcheck shell=bash disable=SC2034
# Shared helpers of the benchmark scripts (sourced, not run). bash only.
#
# Every benchmark prints its figures as it goes and, when BENCH_RESULTS names a file, appends one
# tab-separated row per figure to it (see `emit`), from which bench/run.sh prints its table.
# Benchmarks report; they never fail on a timing. They fail only when they could not measure.

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$BENCH_DIR/.." && pwd)
BUILD=${AR_BENCH_BUILD:-$REPO_ROOT/build/release}
HEALTHD=$BUILD/healthd/healthd
HEALTHCTL=$BUILD/healthd/healthctl
PLUGIN=$BUILD/plugin/auto_resume.so
PROTO_BENCH=$BUILD/bench/ar_bench_protocol
CLUSTER_SH=$REPO_ROOT/tests/cluster/cluster.sh
CLK_TCK=$(getconf CLK_TCK)

bench_say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
bench_log() { printf '%s\n' "$*" >&2; }
bench_die() { printf 'bench: error: %s\n' "$*" >&2; exit 1; }

# now_s: seconds since the epoch with nanoseconds. since T0: seconds since T0, 3 decimals.
now_s() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }'; }
sub_s() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }

# Statistics of the numbers on stdin (one per line): median, max, min, mean, percentile P.
stat_median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; if (NR % 2) print v[(NR + 1) / 2]; else printf "%.6g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
stat_max() { sort -g | tail -n 1; }
stat_min() { sort -g | head -n 1; }
stat_mean() { awk '{ s += $1; n++ } END { if (n == 0) exit 1; printf "%.6g\n", s / n }'; }
stat_pct() { sort -g | awk -v p="$1" '{ v[NR] = $1 } END { if (NR == 0) exit 1; i = int(p / 100 * (NR - 1) + 0.5) + 1; print v[i] }'; }
# fmt NUMBER DECIMALS
fmt() { awk -v x="$1" -v d="${2:-2}" 'BEGIN { printf "%.*f", d, x }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "n/a"; else printf "%.3f", a / b }'; }

# emit AREA FIGURE VALUE BASELINE TARGET [NOTE]: one row of the summary table. Each field is free text
# (no tabs); VALUE and BASELINE carry their units.
emit() {
  printf '  %-44s %-22s baseline: %-24s target: %s%s\n' "$2" "$3" "$4" "$5" "${6:+  ($6)}"
  if [ -n "${BENCH_RESULTS:-}" ]; then
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "${6:-}" >>"$BENCH_RESULTS"
  fi
}

# need_built FILE...: the build outputs a benchmark needs (bench/run.sh builds them).
need_built() {
  local f
  for f in "$@"; do [ -e "$f" ] || bench_die "$f is missing: run bench/run.sh (it builds the release preset) or set AR_BENCH_BUILD"; done
}

# ---- one process, from /proc ------------------------------------------------------------------------

# proc_stat_sum PID I J: the sum of two fields of /proc/PID/stat, counted after the command name
# (which may hold spaces): 0 is field 3 (state).
proc_stat_sum() {
  local line rest
  local -a f
  read -r line <"/proc/$1/stat" || return 1
  rest=${line##*) }
  read -r -a f <<<"$rest"
  echo $((f[$2] + f[$3]))
}

# proc_ticks PID: utime + stime in clock ticks (fields 14 and 15 of /proc/PID/stat).
proc_ticks() { proc_stat_sum "$1" 11 12; }
# proc_kib PID FIELD: a kB field of /proc/PID/status (VmRSS, VmHWM, ...).
proc_kib() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
ticks_to_s() { awk -v t="$1" -v hz="$CLK_TCK" 'BEGIN { printf "%.3f", t / hz }'; }

# wait_quiet PID: waits until PID has used no CPU for 0.5 s (its queued work is done), at most 30 s.
wait_quiet() {
  local last now i
  last=$(proc_ticks "$1") || return 1
  for ((i = 0; i < 60; i++)); do
    sleep 0.5
    now=$(proc_ticks "$1") || return 1
    [ "$now" = "$last" ] && return 0
    last=$now
  done
  return 0
}

# ---- a healthd of our own, without Slurm ----------------------------------------------------------

# healthd_start DIR NODE CONFIG [VAR=VALUE...]: starts healthd with its socket, state and log under DIR;
# sets HEALTHD_PID and HEALTHD_SOCK. It never talks to Slurm unless it finds a fault.
healthd_start() {
  local dir=$1 node=$2 config=$3 i
  shift 3
  HEALTHD_SOCK=$dir/healthd.sock
  mkdir -p "$dir/state"
  rm -f "$HEALTHD_SOCK"
  env "$@" "$HEALTHD" --config "$config" --node "$node" --socket "$HEALTHD_SOCK" --state-dir "$dir/state" \
    </dev/null >>"$dir/healthd.log" 2>&1 &
  HEALTHD_PID=$!
  for ((i = 0; i < 200; i++)); do
    [ -S "$HEALTHD_SOCK" ] && return 0
    kill -0 "$HEALTHD_PID" 2>/dev/null || { tail -n 20 "$dir/healthd.log" >&2; return 1; }
    sleep 0.05
  done
  bench_log "healthd did not create $HEALTHD_SOCK within 10 s"
  return 1
}

healthd_stop() {
  [ -n "${HEALTHD_PID:-}" ] || return 0
  kill -TERM "$HEALTHD_PID" 2>/dev/null || true
  wait "$HEALTHD_PID" 2>/dev/null || true
  HEALTHD_PID=
}

# ---- the large fake node of bench/fake_host.sh, with its EC2 metadata server ------------------------

# fake_node_start DIR: after `fake_host.sh DIR`, starts the fake EC2 metadata server
# (tests/fakes/imds_server.py, sets IMDS_PID and IMDS_ENDPOINT), writes DIR/healthd.toml with its port
# and starts healthd on it (HEALTHD_PID, HEALTHD_SOCK). Dies with healthd's own message when healthd
# refuses the config or exits. fake_node_stop stops both.
fake_node_start() {
  local dir=$1 i port env_words
  rm -f "$dir/imds.port"
  python3 "$REPO_ROOT/tests/fakes/imds_server.py" "$dir/imds" --port-file "$dir/imds.port" </dev/null >"$dir/imds.log" 2>&1 &
  IMDS_PID=$!
  for ((i = 0; i < 200; i++)); do
    [ -s "$dir/imds.port" ] && break
    kill -0 "$IMDS_PID" 2>/dev/null || { cat "$dir/imds.log" >&2; bench_die "the fake EC2 metadata server did not start"; }
    sleep 0.05
  done
  port=$(cat "$dir/imds.port" 2>/dev/null) || bench_die "the fake EC2 metadata server gave no port within 10 s"
  IMDS_ENDPOINT=http://127.0.0.1:$port
  sed "s/@IMDS_PORT@/$port/g" "$dir/healthd.toml.in" >"$dir/healthd.toml"
  mapfile -t env_words <"$dir/healthd.env"
  if ! healthd_start "$dir" bench "$dir/healthd.toml" ${env_words[@]+"${env_words[@]}"}; then
    bench_die "healthd refused the fake node's config $dir/healthd.toml or did not start (its log is above, all of it in $dir/healthd.log)"
  fi
}
fake_node_stop() {
  healthd_stop
  if [ -n "${IMDS_PID:-}" ]; then
    kill -TERM "$IMDS_PID" 2>/dev/null || true
    wait "$IMDS_PID" 2>/dev/null || true
    IMDS_PID=
  fi
}

# proc_child_ticks PID: cutime + cstime (fields 16 and 17): the CPU of PID's children it has waited for.
proc_child_ticks() { proc_stat_sum "$1" 13 14; }

# ---- the local Slurm cluster (tests/cluster/cluster.sh) -------------------------------------------

# sdiag_rpcs: root's RPCs to slurmctld since the last `sdiag -r`, less sdiag's own (REQUEST_STATS_INFO).
sdiag_rpcs() {
  command sdiag 2>/dev/null | awk '
    function count() { for (i = 1; i <= NF; i++) if ($i ~ /^count:/) { c = $i; sub("count:", "", c); return c } return 0 }
    /by message type/ { sec = "type"; next } /by user/ { sec = "user"; next } /^[^ \t]/ { sec = "" }
    sec == "type" && $1 == "REQUEST_STATS_INFO" { stats = count() }
    sec == "user" && $1 == "root" { root = count() }
    END { print root - stats }'
}

job_field() { scontrol show job "$1" -o 2>/dev/null | grep -o " $2=[^ ]*" | cut -d= -f2; }
job_state() { job_field "$1" JobState; }
job_restarts() { job_field "$1" Restarts; }
job_running_attempt() { [ "$(job_state "$1")" = RUNNING ] && [ "$(job_restarts "$1")" = "$2" ]; }
job_nodes() { scontrol show hostnames "$(job_field "$1" NodeList)"; }
# runs_off LINE NODE: the NodeList of a `scontrol show job -o` LINE is set and does not hold NODE.
# What "running again" must check besides RUNNING and Restarts=1: just after a requeue, slurmctld
# 24.11 and 26.05 have shown the job RUNNING with Restarts=1 for a moment, with the old attempt's
# nodes or with none, and a bench that took that for the restart read 0.27 s.
runs_off() {
  local list
  list=$(grep -o ' NodeList=[^ ]*' <<<"$1" | head -1 | cut -d= -f2)
  [ -n "$list" ] && [ "$list" != "(null)" ] && ! scontrol show hostnames "$list" | grep -qx "$2"
}
node_state() { sinfo -h -n "$1" -o '%T'; }
# In service and free. "mixed" with no job on the node counts as free: after a job was requeued off
# a draining node, slurmctld 22.05 has been seen to keep one CPU of the node counted as allocated
# for about two minutes (sinfo "mixed", no job on it in squeue) while it schedules new jobs on it.
node_idle() {
  local st
  st=$(node_state "$1")
  [ "$st" = idle ] || { [ "$st" = mixed ] && [ -z "$(squeue -h -w "$1" -o %i 2>/dev/null)" ]; }
}
node_drained() { [[ "$(node_state "$1")" == drain* ]]; }

# wait_for SECONDS CMD...: polls CMD every 0.05 s; fails after SECONDS.
wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    if ((SECONDS >= deadline)); then
      bench_log "bench: timed out waiting for: $*"
      return 1
    fi
    sleep 0.05
  done
}

# cluster_up DIR: starts the cluster with what AR_PLUGIN / AR_HEALTHD / AR_HEALTHD_CONFIG say (exported
# by the caller) and sources its environment. cluster_down DIR stops it.
cluster_up() {
  "$CLUSTER_SH" start "$1" >"$1.start.log" 2>&1 || { cat "$1.start.log" >&2; return 1; }
  # shellcheck disable=SC1091
  source "$1/env.sh"
}
# cluster.sh stop has been seen to leave one node's slurmd and healthd running (a slurmd busy with a
# requeued job's clean-up); a second stop kills what is left, and a third attempt is only reported.
cluster_down() {
  local try pidfile left
  for try in 1 2 3; do
    "$CLUSTER_SH" stop "$1" >"$1.stop.log" 2>&1 || true
    left=""
    for pidfile in "$1"/run/*.pid; do
      [ -e "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null && left+=" $(basename "$pidfile" .pid)"
    done
    [ -z "$left" ] && return 0
    bench_log "bench: after 'cluster.sh stop $1' still running:$left (try $try)"
  done
}

# cluster_reset: no jobs left, every node idle (healthd returns its own drains by itself).
cluster_reset() {
  local node
  scancel --user=root 2>/dev/null || true
  # shellcheck disable=SC2016 # expanded by the inner shell
  wait_for 60 bash -c '[ -z "$(squeue -h)" ]' || return 1
  for node in $AR_CLUSTER_NODES; do
    if ! wait_for 60 node_idle "$node"; then
      sinfo -N -o '%N %T %E' >&2
      scontrol update nodename="$node" state=resume 2>/dev/null || true
      wait_for 60 node_idle "$node" || { scontrol show node "$node" >&2; return 1; }
    fi
  done
}

# machine_info: one line per fact, for RESULTS.md.
machine_info() {
  echo "- CPUs: $(nproc) ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'))"
  echo "- memory: $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
  echo "- kernel: $(uname -sr)"
  echo "- Slurm: $(slurmd -V 2>/dev/null || echo 'not installed')"
  echo "- load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
}

# fault_cluster_prepare DIR [NODES [CHECK_INTERVAL_S [MAX_DRAINED_SHARE]]]: the fault cluster of
# recovery.sh and step_rerun.sh (3 nodes) and scale.sh (NODES, exported as AR_NODES for cluster.sh): an
# empty kernel log per node and a healthd.toml that brings a drained node back quickly for the next run
# (check_interval_s = 1, hold_s = 2, recovery_passes = 1) and never keeps one out for flapping
# (flap_max_faults). None of them is on a measured path.
fault_cluster_prepare() {
  local dir=$1 nodes=${2:-3} interval=${3:-1} share=${4:-0.7} i
  mkdir -p "$dir"
  rm -rf "$dir/host" "$dir/work" "$dir/etc/healthd.toml"
  for ((i = 1; i <= nodes; i++)); do mkdir -p "$dir/host/n$i/var/log" && : >"$dir/host/n$i/var/log/kern.log"; done
  mkdir -p "$dir/work"
  cat >"$dir/healthd.toml" <<TOML
[daemon]
host_root = "$dir/host/%n"
[policy]
check_interval_s = $interval
recovery_passes = 1
flap_max_faults = 1000
max_drained_share = $share
[checks.kernel_log]
path = "/var/log/kern.log"
hold_s = 2
TOML
  export AR_PLUGIN=$PLUGIN AR_HEALTHD=$HEALTHD AR_HEALTHD_CONFIG=$dir/healthd.toml AR_NODES=$nodes
}

# fault_cluster_start DIR SCHED WHAT: (re)starts that cluster with scheduler settings SCHED ("tuned":
# the test cluster's; "stock": no SchedulerParameters line; else a SchedulerParameters value).
fault_cluster_start() {
  cluster_down "$1"
  rm -f "$1/etc/healthd.toml"
  case $2 in
    tuned) unset AR_SCHED_PARAMS ;;
    *) export AR_SCHED_PARAMS=$2 ;;
  esac
  bench_say "$3: starting a ${AR_NODES:-3}-node cluster in $1 ($2 scheduler settings)"
  cluster_up "$1" || bench_die "the cluster did not start"
  scontrol show config | grep -E '^SchedulerParameters' | sed 's/^/  /'
}

xid79() { echo "<4>NVRM: Xid (PCI:0000:17:00): 79, pid=4242, name=python, GPU has fallen off the bus."; }
