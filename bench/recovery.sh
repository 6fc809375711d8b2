#!/usr/bin/env bash
# Recovery time on the local real cluster (tests/cluster/cluster.sh: slurmctld + 3 slurmd + one healthd
# per node, the plugin in plugstack): from a fault injected at the hardware boundary (an XID 79 line in
# one node's kernel log) to the node drained, to the job requeued, to the job running again, for
#   hung:    the step keeps running on the dead GPU (nothing exits; healthd acts on the log event)
#   failing: the step's tasks exit 7 the moment the fault is written (the task-exit path races the event)
# BENCH_RUNS runs of each (default 10): median, p95 and worst. Each under two scheduler settings
# (BENCH_SCHED, default "tuned stock"), each on a cluster of its own:
#   tuned: SchedulerParameters=batch_sched_delay=0,sched_interval=2,bf_interval=1 (the test cluster's)
#   stock: no SchedulerParameters line: Slurm's defaults (batch_sched_delay=3, sched_interval=60,
#          bf_interval=30)
#   any other word: that SchedulerParameters value (e.g. BENCH_SCHED=batch_sched_delay=0)
# Baseline in the same run: the same job requeued with plain `scontrol requeue` (Slurm holds it for
# AuthInfo cred_expire, 120 s by default), to running again; BENCH_BASELINE_RUNS runs (default 1, 0
# skips it), on the first cluster.
#
# Times are seen from outside, as a user sees them: `scontrol show job` and `sinfo` polled in a loop
# (its period is printed: it is the resolution). healthd's own timeline (`healthctl explain`) gives the
# daemon's view of the same runs: fault seen and requeue issued, to the millisecond.
#
# Kernel-log poll interval: the default (250 ms). check_interval_s = 1, hold_s = 2 and recovery_passes = 1
# only bring the drained node back quickly for the next run; flap_max_faults is raised so that repeated
# runs do not keep a node out. None of them is on the path being measured.
#
# usage: bench/recovery.sh [DIR]   (DIR: the cluster's directory, short: unix socket paths)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
dir=${1:-/tmp/ar-bench-rec}
runs=${BENCH_RUNS:-10}
scheds=${BENCH_SCHED:-tuned stock}
baseline_runs=${BENCH_BASELINE_RUNS:-1}
need_built "$HEALTHD" "$HEALTHCTL" "$PLUGIN"
[ "$(id -u)" = 0 ] || bench_die "run as root (slurmd and healthd need it)"

fault_cluster_prepare "$dir"
trap 'cluster_down "$dir"' EXIT

# start_cluster SCHED: (re)starts the cluster with those scheduler settings.
start_cluster() { fault_cluster_start "$dir" "$1" "recovery"; }
hctl() { "$HEALTHCTL" --socket "$dir/run/healthd-$1.sock" "${@:2}"; }

# submit KIND FLAGS...: a 2-node job whose step hangs or waits to fail; a restarted attempt just sleeps.
submit() {
  local kind=$1 go=$dir/work/go-$RANDOM$RANDOM
  shift
  local step='sleep 600'
  [ "$kind" = failing ] && step="bash -c 'while [ ! -e $go ]; do sleep 0.02; done; exit 7'"
  SUBMIT_GO=$go
  SUBMIT_JOB=$(sbatch --parsable -N2 -o /dev/null "$@" --wrap "
    touch $dir/work/started-\$SLURM_JOB_ID-\${SLURM_RESTART_COUNT:-0}
    if [ \"\${SLURM_RESTART_COUNT:-0}\" -gt 0 ]; then exec sleep 600; fi
    srun -N2 $step" | cut -d';' -f1)
}

# the victim's daemon has seen the step start (else a hung job is not known to be on it yet)
known_on() { hctl "$2" jobs --json 2>/dev/null | grep -q "\"job_id\": *$1[,}]"; }

# watch JOB NODE T0 LIMIT: polls until JOB runs again (restart 1); sets DRAINED REQUEUED RUNNING (seconds
# after T0, or "-") and POLL_MS (median poll period).
watch() {
  local job=$1 node=$2 t0=$3 limit=$4 line t st rs periods=() last
  DRAINED=- REQUEUED=- RUNNING=-
  last=$(now_s)
  while :; do
    line=$(scontrol show job "$job" -o 2>/dev/null)
    t=$(now_s)
    st=$(grep -o ' JobState=[A-Z_]*' <<<"$line" | cut -d= -f2)
    rs=$(grep -o ' Restarts=[0-9]*' <<<"$line" | cut -d= -f2)
    if [ "$DRAINED" = - ] && [ -n "$node" ] && scontrol show node "$node" -o 2>/dev/null | grep -q 'State=[A-Z+]*DRAIN'; then
      DRAINED=$(sub_s "$(now_s)" "$t0")
    fi
    if [ "$REQUEUED" = - ] && { [ "${rs:-0}" -ge 1 ] || [[ "$st" == REQUEUE* ]]; }; then REQUEUED=$(sub_s "$t" "$t0"); fi
    if [ "$st" = RUNNING ] && [ "${rs:-0}" = 1 ] && runs_off "$line" "$node"; then
      RUNNING=$(sub_s "$t" "$t0")
      break
    fi
    periods+=("$(sub_s "$(now_s)" "$last")")
    last=$(now_s)
    if awk -v e="$(sub_s "$(now_s)" "$t0")" -v l="$limit" 'BEGIN { exit !(e > l) }'; then
      bench_log "recovery: job $job not running again after $limit s (state $st, restarts $rs)"
      break
    fi
    sleep 0.02
  done
  POLL_MS=$(printf '%s\n' "${periods[@]:-0}" | stat_median | awk '{ printf "%.0f", $1 * 1000 }')
}

# daemon_view JOB NODE T0: "fault seen" and "requeued" from the victim's timeline, seconds after T0.
daemon_view() {
  hctl "$2" explain "$1" --json 2>/dev/null | python3 -c '
import json, sys
t0 = float(sys.argv[1]); d = json.load(sys.stdin); out = {}
for e in d.get("timeline", []):
    out.setdefault(e["event"], e["at_ms"] / 1000 - t0)
print(" ".join("%.3f" % out[k] if k in out else "-" for k in ("fault seen", "requeued", "hold released")))' "$3" 2>/dev/null || echo "- - -"
}

first=""
for sched in $scheds; do
start_cluster "$sched"
first=${first:-$sched}
for kind in hung failing; do
  : >"$dir/work/$sched-$kind.tsv"
  for ((i = 1; i <= runs; i++)); do
    cluster_reset || bench_die "the cluster did not come back to idle (see $dir/log)"
    submit "$kind" --auto-resume=1
    job=$SUBMIT_JOB
    wait_for 60 job_running_attempt "$job" 0 || bench_die "job $job did not start"
    victim=$(job_nodes "$job" | tail -n1)
    wait_for 30 known_on "$job" "$victim" || bench_die "healthd on $victim never heard of job $job"
    t0=$(now_s)
    xid79 >>"$dir/host/$victim/var/log/kern.log"
    [ "$kind" = failing ] && touch "$SUBMIT_GO"
    watch "$job" "$victim" "$t0" 60
    # Not cancelled (by the next run's reset) before its restarted script runs: a job cancelled a
    # moment after its launch has kept its batch node COMPLETING for a minute in Slurm 22.05.
    wait_for 10 test -e "$dir/work/started-$job-1" || true
    read -r seen requeue_issued released <<<"$(daemon_view "$job" "$victim" "$t0")"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$DRAINED" "$REQUEUED" "$RUNNING" "$seen" "$requeue_issued" "$POLL_MS" >>"$dir/work/$sched-$kind.tsv"
    printf '  %-5s %-7s run %d: job %s on %s: drained %s s, requeued %s s, running again %s s (healthd: fault seen %s s, requeue issued %s s, hold released %s s; poll %s ms)\n' \
      "$sched" "$kind" "$i" "$job" "$victim" "$DRAINED" "$REQUEUED" "$RUNNING" "$seen" "$requeue_issued" "$released" "$POLL_MS"
  done
done

[ "$sched" = "$first" ] || continue
: >"$dir/work/baseline.tsv"
for ((i = 1; i <= baseline_runs; i++)); do
  cluster_reset || bench_die "the cluster did not come back to idle"
  submit hung
  job=$SUBMIT_JOB
  wait_for 60 job_running_attempt "$job" 0 || bench_die "job $job did not start"
  t0=$(now_s)
  scontrol requeue "$job"
  watch "$job" "" "$t0" 400
  echo "$RUNNING" >>"$dir/work/baseline.tsv"
  printf '  plain scontrol requeue run %d: job %s running again after %s s\n' "$i" "$job" "$RUNNING"
done
scancel --user=root 2>/dev/null || true
done

# col FILE N: column N of FILE, without the runs where it was not seen
col() { cut -f"$2" "$1" | grep -v '^-$' || true; }
mw() {  # "median/worst s" of column N of FILE (and the count when some runs missed it)
  local vals n total
  vals=$(col "$1" "$2")
  total=$(wc -l <"$1")
  n=$(grep -c . <<<"$vals" || true)
  [ "$n" -gt 0 ] || { echo "not seen"; return; }
  printf '%s/%s s' "$(fmt "$(stat_median <<<"$vals")" 2)" "$(fmt "$(stat_max <<<"$vals")" 2)"
  [ "$n" = "$total" ] || printf ' (%d of %d runs)' "$n" "$total"
}

# pcts FILE N: "p50/p95/worst s" of column N of FILE
pcts() {
  local vals
  vals=$(col "$1" "$2")
  [ -n "$vals" ] || { echo "not seen"; return; }
  printf '%s/%s/%s s' "$(fmt "$(stat_pct 50 <<<"$vals")" 2)" "$(fmt "$(stat_pct 95 <<<"$vals")" 2)" "$(fmt "$(stat_max <<<"$vals")" 2)"
}

base="not measured (BENCH_BASELINE_RUNS=0)"
if [ -s "$dir/work/baseline.tsv" ]; then base="$(mw "$dir/work/baseline.tsv" 1) plain requeue"; fi
bench_say "recovery figures ($runs runs each, median/worst, running again p50/p95/worst; seconds after the fault)"
for sched in $scheds; do
  for kind in hung failing; do
    tsv=$dir/work/$sched-$kind.tsv
    poll="poll period $(col "$tsv" 6 | stat_median) ms"
    emit recovery "$sched sched, $kind step: fault -> node drained" "$(mw "$tsv" 1)" "no drain without a health check" "-" "$poll"
    emit recovery "$sched sched, $kind step: fault -> job requeued" "$(mw "$tsv" 2)" "-" "-" "healthd issued the requeue at $(mw "$tsv" 5)"
    emit recovery "$sched sched, $kind step: fault -> running again, p50/p95/worst" "$(pcts "$tsv" 3)" "$base" "p95 < 2 s" \
      "healthd saw the fault at $(mw "$tsv" 4); $(wc -l <"$tsv") incidents"
  done
done
