#!/usr/bin/env bash
# slurmctld away while many daemons have something to do (the herd that comes back with it): the
# fault cluster of bench/lib.sh with BENCH_NODES slurmd (default 32), one healthd each. slurmctld is
# stopped; the same kernel-log fault lands on BENCH_HIT of the nodes (default a quarter) within a few
# milliseconds, so each of their daemons journals a drain and fails to carry it out; slurmctld starts
# again BENCH_DOWN_S (default 45) seconds later. Measured:
#   - the failed tries of the hit daemons while slurmctld was away (their logs' "will retry" lines)
#     and the most of them in any one second (daemons that failed together retry together unless
#     their waits have a random part);
#   - from slurmctld's return: root's RPCs in each second (sdiag, sampled once a second for
#     BENCH_WATCH_S, default 60 s), the most in one second, and the time until every hit node is
#     drained.
# Baseline in the same run: the same with the build in AR_BENCH_BEFORE when it is set (for the
# figures in RESULTS.md: commit 9b67e79, the last one whose retries waited exactly 2, 4, 8 ... 60 s).
# healthd: max_drained_share = 1 (every hit node is drained), check_interval_s = 5; [slurm] timeout_s
# at its default (10 s). Scheduler: the tuned settings.
#
# usage: bench/outage.sh [DIR]   (DIR: the cluster's directory, short: unix socket paths)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
dir=${1:-/tmp/ar-bench-outage}
nodes=${BENCH_NODES:-32}
hits=${BENCH_HIT:-$((nodes / 4))}
down_s=${BENCH_DOWN_S:-45}
watch_s=${BENCH_WATCH_S:-60}
[ "$(id -u)" = 0 ] || bench_die "run as root (slurmd and healthd need it)"
trap 'cluster_down "$dir"' EXIT
export AR_START_TIMEOUT=300

efa_err() { echo "<3>efa 0000:10:1b.0: Admin command timed out"; }
ctld_pid() { tr -dc 0-9 <"$dir/run/slurmctld.pid"; }
log_lines() { grep -c "$2" "$dir/log/healthd-$1.log" 2>/dev/null || true; }
# most_in_a_second PATTERN FILE...: the most log lines matching PATTERN in any one second of the logs
# (healthd's log lines start with an ISO time: 2026-12-04T19:13:18.565)
most_in_a_second() {
  grep -h "$1" "${@:2}" 2>/dev/null | sed -n 's/^\([0-9-]*T[0-9:]*\)\..*/\1/p' | sort | uniq -c | sort -rn | head -1 | awk '{ print $1 + 0 }'
}
# last_after PATTERN T FILE...: seconds from T (epoch) to the last of the first lines matching
# PATTERN after T in each log; "-" when a log has none
last_after() {
  local pattern=$1 t=$2 f line worst=0 at
  shift 2
  for f in "$@"; do
    line=$(grep "$pattern" "$f" 2>/dev/null | while read -r stamp _; do
      at=$(date -d "$stamp" +%s.%N 2>/dev/null) || continue
      awk -v a="$at" -v t="$t" 'BEGIN { exit !(a >= t) }' && { echo "$at"; break; }
    done)
    [ -n "$line" ] || { echo "-"; return; }
    worst=$(awk -v w="$worst" -v a="$line" -v t="$t" 'BEGIN { d = a - t; print (d > w ? d : w) }')
  done
  fmt "$worst" 2
}

# run LABEL BUILD: one outage with healthd of BUILD; prints the figures and appends a row to $dir.tsv
run() {
  local label=$1 build=$2 n i t_back all_at="-" prev=0 now_rpcs peak=0 total=0 tries=0 before_tries
  HEALTHD=$build/healthd/healthd HEALTHCTL=$build/healthd/healthctl PLUGIN=$build/plugin/auto_resume.so
  need_built "$HEALTHD" "$HEALTHCTL" "$PLUGIN"
  fault_cluster_prepare "$dir" "$nodes" 5 1.0
  fault_cluster_start "$dir" tuned "outage ($label)"
  local -a hit=()
  local step=$((nodes / hits))
  for ((i = 1; i <= nodes && ${#hit[@]} < hits; i += step)); do hit+=("n$i"); done
  local -a logs=()
  for n in "${hit[@]}"; do logs+=("$dir/log/healthd-$n.log"); done
  before_tries=0
  for n in "${hit[@]}"; do before_tries=$((before_tries + $(log_lines "$n" "will retry"))); done
  # slurmctld away: stopped (connections refused), as during its restart or a failover
  local ctld
  ctld=$(ctld_pid)
  kill -TERM "$ctld"
  wait_for 60 bash -c "! kill -0 $ctld 2>/dev/null" || bench_die "slurmctld did not stop"
  for n in "${hit[@]}"; do efa_err >>"$dir/host/$n/var/log/kern.log"; done
  sleep "$down_s"
  local during
  during=$(most_in_a_second "will retry" "${logs[@]}")
  for n in "${hit[@]}"; do tries=$((tries + $(log_lines "$n" "will retry"))); done
  tries=$((tries - before_tries))
  slurmctld -f "$SLURM_CONF" </dev/null >>"$dir/log/slurmctld.stdout" 2>&1 || bench_die "slurmctld did not start again"
  t_back=$(now_s)
  wait_for 60 bash -c 'command sdiag >/dev/null 2>&1' || bench_die "slurmctld did not answer after its start"
  command sdiag -r >/dev/null
  local -a per_s=()
  for ((i = 0; i < watch_s; i++)); do
    sleep 1
    now_rpcs=$(sdiag_rpcs)
    per_s+=($((now_rpcs - prev)))
    ((now_rpcs - prev > peak)) && peak=$((now_rpcs - prev))
    prev=$now_rpcs
  done
  total=$prev
  # drains by the hit daemons in one second: comparable across builds, whose calls per drain differ
  local drains_peak
  drains_peak=$(most_in_a_second "drained node" "${logs[@]}")
  all_at=$(last_after "drained node" "$t_back" "${logs[@]}")
  printf '  %s: %d of %d nodes hit, slurmctld away %s s: %d failed tries (at most %s in one second); back: all drained after %s s, at most %s drains in one second; %d RPCs (root) in %s s, at most %d in one second; per second: %s\n' \
    "$label" "${#hit[@]}" "$nodes" "$down_s" "$tries" "${during:-0}" "$all_at" "${drains_peak:-0}" "$total" "$watch_s" "$peak" "${per_s[*]}"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "${#hit[@]}" "$tries" "${during:-0}" "$all_at" "${drains_peak:-0}" "$total" "$peak" "${per_s[*]:0:20}" >>"$dir.tsv"
  cluster_down "$dir"
}

: >"$dir.tsv"
[ -z "${AR_BENCH_BEFORE:-}" ] || run before "$AR_BENCH_BEFORE"
run after "$BUILD"

bench_say "outage figures ($nodes nodes, slurmctld away ${down_s} s, watched ${watch_s} s after)"
while IFS=$'\t' read -r label hit tries during all_at drains_peak total peak first; do
  emit outage "$label: $hit nodes' drains while slurmctld was away" "$tries failed tries, at most $during in one second" "-" "spread, not in step" ""
  emit outage "$label: after slurmctld's return" "all drained after $all_at s, at most $drains_peak drains in one second" "-" "no herd" "$total RPCs in ${watch_s} s, at most $peak in one second; first seconds: $first"
done <"$dir.tsv"
