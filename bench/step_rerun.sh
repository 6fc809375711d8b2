#!/usr/bin/env bash
# Step re-run inside the allocation against today's requeue, on the local real cluster
# (tests/cluster/cluster.sh: slurmctld + 3 slurmd + one healthd per node), in one run:
#   rerun:   a 3-node job whose batch script runs `srun --auto-resume=1 -N2` (one spare node); an XID 79
#            line in the kernel log of the step's node that does not run the batch script -> the step
#            runs again on the two nodes left, in the same job
#   requeue: the same step in a 2-node job (no spare) -> the job is requeued and its step runs again
# Measured from the fault to every task of the step running again (each task touches a marker file
# named after its job, restart count, step and node), BENCH_RUNS runs of each (default 5), under two
# scheduler settings (BENCH_SCHED, default "tuned stock"; see recovery.sh for what they are).
# Same healthd settings as recovery.sh (none of them is on the measured path).
#
# usage: bench/step_rerun.sh [DIR]
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
dir=${1:-/tmp/ar-bench-sr}
runs=${BENCH_RUNS:-5}
scheds=${BENCH_SCHED:-tuned stock}
need_built "$HEALTHD" "$HEALTHCTL" "$PLUGIN"
[ "$(id -u)" = 0 ] || bench_die "run as root (slurmd and healthd need it)"

fault_cluster_prepare "$dir"
trap 'cluster_down "$dir"' EXIT

# Job ids start again at 1 on each new cluster: the markers of the last one go first.
start_cluster() { rm -f "$dir"/work/run-*; fault_cluster_start "$dir" "$1" "step re-run"; }
batch_host() { job_field "$1" BatchHost; }
# markers JOB RESTART STEP: how many tasks of that step have started
markers() { find "$dir/work" -name "run-$1-$2-$3-*" 2>/dev/null | wc -l; }
markers_at_least() { [ "$(markers "$1" "$2" "$3")" -ge "$4" ]; }

submit_step_job() {  # NODES: prints the job id
  sbatch --parsable -N"$1" -o /dev/null --auto-resume=1 --wrap "
    srun --auto-resume=1 -N2 bash -c 'touch $dir/work/run-\$SLURM_JOB_ID-\${SLURM_RESTART_COUNT:-0}-\$SLURM_STEP_ID-\$SLURMD_NODENAME; exec sleep 600'" |
    cut -d';' -f1
}

for sched in $scheds; do
  start_cluster "$sched"
  for kind in rerun requeue; do
    : >"$dir/work/$sched-$kind.tsv"
    for ((i = 1; i <= runs; i++)); do
      cluster_reset || bench_die "the cluster did not come back to idle (see $dir/log)"
      if [ "$kind" = rerun ]; then job=$(submit_step_job 3); else job=$(submit_step_job 2); fi
      wait_for 60 markers_at_least "$job" 0 0 2 || bench_die "job $job's step did not start"
      host=$(batch_host "$job")
      victim=$(find "$dir/work" -name "run-$job-0-0-*" | sed 's/.*-//' | grep -vx "$host" | head -1)
      t0=$(now_s)
      xid79 >>"$dir/host/$victim/var/log/kern.log"
      if [ "$kind" = rerun ]; then
        wait_for 60 markers_at_least "$job" 0 1 2 || bench_log "job $job: step not re-run after 60 s"
        again=$(since "$t0")
        restarts=$(job_restarts "$job")
      else
        wait_for 120 markers_at_least "$job" 1 0 2 || bench_log "job $job: not running again after 120 s"
        again=$(since "$t0")
        restarts=$(job_restarts "$job")
      fi
      printf '%s\n' "$again" >>"$dir/work/$sched-$kind.tsv"
      printf '  %-5s %-7s run %d: job %s, fault on %s: step running again after %s s (Restarts=%s)\n' \
        "$sched" "$kind" "$i" "$job" "$victim" "$again" "$restarts"
    done
  done
  scancel --user=root 2>/dev/null || true
done

bench_say "step re-run figures ($runs runs each; seconds from the fault to every task of the step running again)"
for sched in $scheds; do
  rr=$(stat_median <"$dir/work/$sched-rerun.tsv")
  rq=$(stat_median <"$dir/work/$sched-requeue.tsv")
  emit step_rerun "$sched sched: fault -> step running again in the allocation (median/worst)" \
    "$(fmt "$rr" 2)/$(fmt "$(stat_max <"$dir/work/$sched-rerun.tsv")" 2) s" \
    "requeue: $(fmt "$rq" 2)/$(fmt "$(stat_max <"$dir/work/$sched-requeue.tsv")" 2) s" "-" "re-run/requeue = $(ratio "$rr" "$rq")"
done
