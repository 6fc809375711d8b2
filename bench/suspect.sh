#!/usr/bin/env bash
# The node behind a hang (issue 34), on the local real cluster (tests/cluster/cluster.sh: slurmctld +
# 3 slurmd + one healthd per node): BENCH_INCIDENTS incidents (default 20) of a 2-node job with
# per-rank heartbeats (--auto-resume-heartbeat-dir, stall time 4 s), each a fresh job running
# tests/integration/rank_hang.py, one rank per node beating every 0.2 s:
#   one:  the rank of a random node of the job stops (no CPU); the other reaches the collective after
#         a random 0-BENCH_JITTER_S seconds more of steps (default 3) and spins there;
#   all:  every rank stops together (every BENCH_ALL_EVERY-th incident, default 4): nobody is to blame.
# Printed: the time from the hang to the requeue that decided (from the stalled rank's stop), how often
# the stopped rank's node was the one named, and how often a node whose ranks were fine was named
# (goal: never). healthd: check interval 1 s, check deadline 10 s (settle 2 x 1 + 10 s).
#
# usage: bench/suspect.sh [DIR]
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
dir=${1:-/tmp/ar-bench-sus}
incidents=${BENCH_INCIDENTS:-20}
jitter=${BENCH_JITTER_S:-3}
all_every=${BENCH_ALL_EVERY:-4}
rank=$(cd "$(dirname "$0")/.." && pwd)/tests/integration/rank_hang.py
need_built "$HEALTHD" "$HEALTHCTL" "$PLUGIN"
[ "$(id -u)" = 0 ] || bench_die "run as root (slurmd and healthd need it)"

fault_cluster_prepare "$dir"
trap 'cluster_down "$dir"' EXIT
fault_cluster_start "$dir" tuned "suspects"

# The whole admin comment (healthd's lines after the first start a line of their own).
admin_comment() { scontrol show job "$1" | awk 'on && /^   [A-Za-z]+=/ {exit} /^   AdminComment=/ {sub(/^   AdminComment=/, ""); on=1} on {print}'; }
requeued() { [ "$(job_restarts "$1")" = 1 ]; }
ranks_beating() { [ -e "$1/rank-0" ] && [ -e "$1/rank-1" ]; }

out="$dir/work/incidents.tsv"
: >"$out"
for ((i = 1; i <= incidents; i++)); do
  cluster_reset || bench_die "the cluster did not come back to idle (see $dir/log)"
  beats="$dir/work/beats-$i"
  mkdir -p "$beats"
  job=$(sbatch --parsable -N2 -o /dev/null --auto-resume=1 --auto-resume-heartbeat-dir="$beats" \
    --auto-resume-stall=4,30 --wrap "srun -N2 --ntasks-per-node=1 python3 $rank $beats/hang" | cut -d';' -f1)
  wait_for 60 ranks_beating "$beats" || bench_die "job $job: ranks not beating"
  sleep 3  # past the first beat
  if ((i % all_every == 0)); then
    kind=all victim=-
    t0=$(now_s)
    echo all >"$beats/hang"
  else
    kind=one
    victim=$(job_nodes "$job" | shuf -n 1)
    t0=$(now_s)
    echo "one $victim $jitter" >"$beats/hang"
  fi
  if ! wait_for 120 requeued "$job"; then
    bench_log "job $job: not requeued within 120 s"
    scancel "$job"
    continue
  fi
  took=$(since "$t0")
  named=$(admin_comment "$job" | sed -n 's/^auto-resume suspects: attempt 1: \([^:]*\):.*/\1/p')
  [ -n "$named" ] || named=none
  if [ "$kind" = one ] && [ "$named" = "$victim" ]; then verdict=right
  elif [ "$kind" = all ] && [ "$named" = none ]; then verdict=right
  elif [ "$named" = none ]; then verdict=missed
  else verdict=wrong; fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$kind" "$victim" "$named" "$took" "$verdict" >>"$out"
  printf '  incident %2d: %-3s stopped %-2s named %-5s after %6s s: %s\n' "$i" "$kind" "$victim" "$named" "$took" "$verdict"
  scancel "$job"
done

bench_say "suspects ($incidents incidents, stall time 4 s, check interval 1 s, jitter up to $jitter s)"
ones=$(awk -F'\t' '$1 == "one"' "$out" | wc -l)
alls=$(awk -F'\t' '$1 == "all"' "$out" | wc -l)
right_one=$(awk -F'\t' '$1 == "one" && $5 == "right"' "$out" | wc -l)
missed=$(awk -F'\t' '$5 == "missed"' "$out" | wc -l)
wrong=$(awk -F'\t' '$5 == "wrong"' "$out" | wc -l)
right_all=$(awk -F'\t' '$1 == "all" && $5 == "right"' "$out" | wc -l)
emit suspect "hang -> requeue decided (median/p90/worst)" \
  "$(cut -f4 "$out" | stat_median)/$(cut -f4 "$out" | stat_pct 90)/$(cut -f4 "$out" | stat_max) s" \
  "stall time 4 s + settle 12 s" "-" "-"
emit suspect "one rank stopped: its node named" "$right_one of $ones" "-" "all" "missed: $missed"
emit suspect "a node whose ranks were fine named" "$wrong of $((ones + alls))" "-" "never" "-"
emit suspect "every rank stopped together: nobody named" "$right_all of $alls" "-" "all" "-"
emit suspect "stragglers (1.5x, 1.2x slow rank)" "not measured" "-" "-" "straggler detection is not built yet"
