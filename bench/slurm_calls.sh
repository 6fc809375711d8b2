#!/usr/bin/env bash
# One Slurm action's cost through the C API (what healthd runs) against the forked scontrol it
# replaced, in one run on the local real cluster (no healthd, no plugin: nothing else touches the
# node or the job): drain + resume of a node, and requeue, then (once the job is PENDING) read +
# hold release of a running batch job; Slurm's own wait in between is not timed. BENCH_SLURM_ROUNDS rounds (default 20), API and fork alternating.
#
# usage: bench/slurm_calls.sh [DIR]
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
dir=${1:-/tmp/ar-bench-calls}
rounds=${BENCH_SLURM_ROUNDS:-20}
prog=$BUILD/bench/ar_bench_slurm_calls
need_built "$prog"
[ "$(id -u)" = 0 ] || bench_die "run as root (slurmd needs it)"

bench_say "slurm calls: starting a 3-node cluster in $dir (no healthd)"
mkdir -p "$dir"
unset AR_HEALTHD AR_PLUGIN
trap 'cluster_down "$dir"' EXIT
cluster_up "$dir" || bench_die "the cluster did not start"
job=$(sbatch --parsable -N1 -w n1 -o /dev/null --wrap 'sleep 6000' | cut -d';' -f1)
wait_for 60 job_running_attempt "$job" 0 || bench_die "job $job did not start"

out=$("$prog" --node n3 --job "$job" --rounds "$rounds" --scontrol "$(command -v scontrol)") || bench_die "the benchmark failed"
scancel "$job" 2>/dev/null || true
get() { awk -v n="$1" -v c="$2" '$1 == n { print $c }' <<<"$out"; }
bench_say "slurm call figures ($rounds rounds each, API and fork alternating)"
for action in drain_resume requeue_release; do
  case $action in
    drain_resume) label="drain + resume a node" ;;
    requeue_release) label="requeue, then read + release the hold" ;;
  esac
  emit slurm "$label, through libslurm, median/p95" "$(get "${action}_api" 2)/$(get "${action}_api" 3) ms" \
    "$(get "${action}_fork" 2)/$(get "${action}_fork" 3) ms (forked scontrol)" "-" \
    "CPU $(get "${action}_api" 4) ms vs $(get "${action}_fork" 4) ms per action; wall ratio $(ratio "$(get "${action}_api" 2)" "$(get "${action}_fork" 2)") x"
done
