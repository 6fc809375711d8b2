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
# Then stragglers: BENCH_STRAGGLERS jobs (default 5) for each of a 1.5x and a 1.2x slow rank, each
# rank's step 0.2 s with a random +-10% on every step (RANK_JITTER), slowed once the job has run a
# window and 5 s (a steady state: the watch judges only over a whole window): the time from the
# slowdown to its node's report ([policy] straggler_window_s = BENCH_STRAGGLER_WINDOW_S, default 20;
# share 0.15), and how often the other node was reported (goal: never).
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

stragglers=${BENCH_STRAGGLERS:-5}
window=${BENCH_STRAGGLER_WINDOW_S:-20}
fault_cluster_prepare "$dir"
sed -i "/^\[policy\]$/a straggler_window_s = $window" "$dir/healthd.toml"
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

# BENCH_INCIDENTS=0: the stragglers only.
if ((incidents > 0)); then
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
fi

# Stragglers: one rank of a 2-node job made slower; its node's healthd reports it.
straggling() {
  { "$HEALTHCTL" --socket "$dir/run/healthd-$1.sock" status --json || true; } |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["health"]["node"].get("stragglers", {}).get("jobs", 0))' 2>/dev/null
}
reported() { [ "$(straggling "$1")" = 1 ]; }
sout="$dir/work/stragglers.tsv"
: >"$sout"
for factor in 1.5 1.2; do
  for ((i = 1; i <= stragglers; i++)); do
    cluster_reset || bench_die "the cluster did not come back to idle (see $dir/log)"
    beats="$dir/work/slow-$factor-$i"
    mkdir -p "$beats"
    job=$(RANK_JITTER=0.1 sbatch --parsable -N2 -o /dev/null --export=ALL --auto-resume=1 \
      --auto-resume-heartbeat-dir="$beats" --auto-resume-stall=60,60 \
      --wrap "srun -N2 --ntasks-per-node=1 python3 $rank $beats/hang 0.2" | cut -d';' -f1)
    wait_for 60 ranks_beating "$beats" || bench_die "job $job: ranks not beating"
    victim=$(job_nodes "$job" | shuf -n 1)
    other=$(job_nodes "$job" | grep -vx "$victim")
    sleep $((window + 5))
    if [ "$(straggling "$victim")" != 0 ] || [ "$(straggling "$other")" != 0 ]; then
      bench_log "job $job: a straggler reported before any rank was slowed"
    fi
    t0=$(now_s)
    echo "slow $victim $factor" >"$beats/hang"
    if wait_for $((window * 4)) reported "$victim"; then took=$(since "$t0"); else took=-; fi
    wrong=$(straggling "$other")
    printf '%s\t%s\t%s\n' "$factor" "$took" "$wrong" >>"$sout"
    printf '  straggler %sx %d: %s reported after %s s; the other node reported: %s\n' "$factor" "$i" "$victim" "$took" "$wrong"
    scancel "$job"
  done
done
bench_say "stragglers ($stragglers per factor, window $window s, share 0.15, steps 0.2 s +-10%)"
for factor in 1.5 1.2; do
  found=$(awk -F'\t' -v f="$factor" '$1 == f && $2 != "-"' "$sout" | wc -l)
  emit suspect "${factor}x slow rank -> reported (median/worst)" \
    "$(awk -F'\t' -v f="$factor" '$1 == f && $2 != "-" {print $2}' "$sout" | stat_median)/$(awk -F'\t' -v f="$factor" '$1 == f && $2 != "-" {print $2}' "$sout" | stat_max) s" \
    "window $window s" "-" "found $found of $stragglers"
done
emit suspect "straggler: the node keeping pace reported" "$(awk -F'\t' '$3 != "0"' "$sout" | wc -l) of $(wc -l <"$sout")" "-" "never" "-"
