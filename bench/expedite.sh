#!/usr/bin/env bash
# Slurm's own expedited requeue (25.11+: `sbatch --requeue=expedite`, slurm.conf
# SlurmctldParameters=enable_expedited_requeue) against healthd's requeue, in one run, on one local
# cluster of the series this runs against (26.05 in its chroot: scripts/slurm-chroot.sh run 26.05
# env AR_BENCH_BUILD=build/series-26.05 bench/expedite.sh). For each of BENCH_RUNS incidents (default
# 5) of each kind, a 2-node job whose step hangs, its fault at T0 on its last node, and the time from
# T0 to the job RUNNING its second attempt:
#   slurm:   the job has --requeue=expedite and no --auto-resume; at T0 the node is set DOWN with a
#            reason, as a HealthCheckProgram (NHC) does when it finds the fault: Slurm's own path,
#            without the health check's detection time (its interval: NHC's default is 300 s)
#   healthd: the job has --auto-resume=1 and no expedite; at T0 an XID 79 line lands in the node's
#            kernel log: healthd sees it, drains, requeues and releases the hold (then reboots it)
#   both:    --auto-resume=1 and --requeue=expedite, the XID line: does expedite change healthd's path?
# Between runs the victim is returned to service (healthd's own drain, or the DOWN of the slurm kind).
# Under BENCH_SCHED (default "tuned stock", as bench/recovery.sh). Prints each incident and the
# medians; emits rows for bench/run.sh's table.
#
# usage: bench/expedite.sh [DIR]   (DIR: the cluster's directory, short: unix socket paths)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
dir=${1:-/tmp/ar-bench-exp}
runs=${BENCH_RUNS:-5}
scheds=${BENCH_SCHED:-tuned stock}
need_built "$HEALTHD" "$HEALTHCTL" "$PLUGIN"
[ "$(id -u)" = 0 ] || bench_die "run as root (slurmd and healthd need it)"
# Before any cluster is up (sbatch would look for a slurm.conf): the installed client's package.
version=$(dpkg-query -W -f='${Version}' slurm-client 2>/dev/null || echo 0)
[ "$(printf '%s\n' "$version" 25.11 | sort -V | head -n1)" = 25.11 ] ||
  bench_die "this Slurm ($version) has no --requeue=expedite (Slurm 25.11 and later)"

fault_cluster_prepare "$dir"
export AR_SLURMCTLD_PARAMS=enable_expedited_requeue
trap 'cluster_down "$dir"' EXIT
hctl() { "$HEALTHCTL" --socket "$dir/run/healthd-$1.sock" "${@:2}"; }
known_on() { hctl "$2" jobs --json 2>/dev/null | grep -q "\"job_id\": *$1[,}]"; }

# running_again JOB VICTIM T0 LIMIT: seconds from T0 to JOB running its second attempt, off VICTIM
# ("-" past LIMIT).
running_again() {
  local job=$1 victim=$2 t0=$3 limit=$4
  until job_running_attempt "$job" 1 && runs_off "$(scontrol show job "$job" -o 2>/dev/null)" "$victim"; do
    if awk -v e="$(since "$t0")" -v l="$limit" 'BEGIN { exit !(e > l) }'; then
      bench_log "expedite: job $job not running again after $limit s ($(job_state "$job"), restarts $(job_restarts "$job"))"
      echo -
      return
    fi
    sleep 0.02
  done
  since "$t0"
}

for sched in $scheds; do
  fault_cluster_start "$dir" "$sched" "expedite"
  scontrol show config | grep -E '^SlurmctldParameters' | sed 's/^/  /'
  for kind in slurm healthd both; do
    : >"$dir/work/$sched-$kind.tsv"
    for ((i = 1; i <= runs; i++)); do
      cluster_reset || bench_die "the cluster did not come back to idle (see $dir/log)"
      flags=()
      case $kind in
        slurm) flags=(--requeue=expedite) ;;
        healthd) flags=(--auto-resume=1) ;;
        both) flags=(--auto-resume=1 --requeue=expedite) ;;
      esac
      job=$(sbatch --parsable -N2 -o /dev/null "${flags[@]}" --wrap 'srun -N2 sleep 600' | cut -d';' -f1)
      wait_for 60 job_running_attempt "$job" 0 || bench_die "job $job did not start"
      victim=$(job_nodes "$job" | tail -n1)
      [ "$kind" = slurm ] || wait_for 30 known_on "$job" "$victim" || bench_die "healthd on $victim never heard of job $job"
      t0=$(now_s)
      if [ "$kind" = slurm ]; then
        scontrol update nodename="$victim" state=down reason="bench: GPU fault found by a health check"
      else
        # XID 79 (fallen off the bus), as bench/recovery.sh: drain, requeue, then the cure's reboot
        # (the cluster's fake RebootProgram) gives the node back for the next run. XID 48's cure is a
        # GPU reset, which this cluster has no command for: the node stayed drained.
        xid79 >>"$dir/host/$victim/var/log/kern.log"
      fi
      took=$(running_again "$job" "$victim" "$t0" 300)
      echo "$took" >>"$dir/work/$sched-$kind.tsv"
      printf '  %-5s %-7s run %d: job %s, fault on %s: running again after %s s (%s)\n' "$sched" "$kind" "$i" "$job" \
        "$victim" "$took" "$(job_field "$job" NodeList)"
      [ "$kind" != slurm ] || scontrol update nodename="$victim" state=resume >/dev/null 2>&1 || true
    done
  done
  scancel --user=root 2>/dev/null || true
done

bench_say "expedite figures ($runs incidents each: median/worst, seconds from the fault to running again)"
for sched in $scheds; do
  base=$dir/work/$sched-healthd.tsv
  for kind in slurm healthd both; do
    tsv=$dir/work/$sched-$kind.tsv
    vals=$(grep -v '^-$' "$tsv" || true)
    [ -n "$vals" ] || { emit expedite "$sched sched, $kind: fault -> running again" "not seen" "-" "-" "$(wc -l <"$tsv") incidents"; continue; }
    emit expedite "$sched sched, $kind: fault -> running again, median/worst" \
      "$(fmt "$(stat_median <<<"$vals")" 2)/$(fmt "$(stat_max <<<"$vals")" 2) s" \
      "$(fmt "$(grep -v '^-$' "$base" | stat_median)" 2) s (healthd, same run)" "-" \
      "$(grep -c . <<<"$vals") of $(wc -l <"$tsv") incidents; Slurm $(sbatch --version | cut -d' ' -f2)"
  done
done
