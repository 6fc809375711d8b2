#!/usr/bin/env bash
# Protocol benchmark: the plugin's messages (step_start, task_exit, step_end, one connection per step as
# slurmstepd holds it) from many concurrent clients to a healthd started here on its own (no Slurm),
# with requests per second and latency percentiles. Baseline in the same run: as many pings over the same
# connections (the cheapest request: what the socket and the event loop cost without the job registry).
# The plugin's own limit is the other yardstick: it waits at most timeout_ms (200 ms) per message.
#
# usage: bench/protocol.sh [WORKDIR]      env: BENCH_PROTO_STEPS (steps per case, 800), BENCH_QUICK=1 (160),
#                                             BENCH_RESULTS (table rows)
# Must run as root (lifecycle messages are accepted from root only).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
work=${1:-/tmp/ar-bench-proto}
need_built "$HEALTHD" "$PROTO_BENCH"
[ "$(id -u)" = 0 ] || bench_die "run as root: healthd accepts lifecycle messages from root only"

rm -rf "$work" && mkdir -p "$work/host/var/log" && : >"$work/host/var/log/kern.log"
cat >"$work/healthd.toml" <<TOML
[daemon]
host_root = "$work/host"
log_level = "warn"
TOML
trap healthd_stop EXIT

# steps per case, shared among its clients
total=${BENCH_PROTO_STEPS:-800}
[ "${BENCH_QUICK:-0}" = 1 ] && total=160
# run_case NAME ARGS...: prints the program's summary and keeps its JSON in $work/NAME.json.
# Each case gets a fresh daemon with an empty state directory, so the cases do not depend on each other:
# the job registry healthd writes (whole, at most every 100 ms) grows with the steps earlier cases left.
run_case() {
  local name=$1
  shift
  healthd_stop
  rm -rf "$work/state"
  healthd_start "$work" bench "$work/healthd.toml" || bench_die "healthd did not start (see $work/healthd.log)"
  # failed requests are part of the figures (the summary counts them), not a reason to stop
  "$PROTO_BENCH" --socket "$HEALTHD_SOCK" --node bench --json "$@" >"$work/$name.out" || true
  grep -v '^{' "$work/$name.out"
  grep '^{' "$work/$name.out" >"$work/$name.json" || bench_die "ar_bench_protocol printed no summary"
  echo "  registry after the case: $(stat -c %s "$work/state/jobs.json" 2>/dev/null || echo 0) bytes"
}
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$work/$1.json" "$2"; }

bench_say "protocol: a healthd of its own on $work/healthd.sock, fresh for every case"
declare -a cases=("1 1" "16 1" "64 8" "256 1")
for c in "${cases[@]}"; do
  read -r clients tasks <<<"$c"
  n=$((total / clients))
  ((n >= 2)) || n=2
  echo "-- $clients clients, $tasks task(s) per step, $n steps each"
  run_case "ping-$clients-$tasks" --clients "$clients" --tasks "$tasks" --steps "$n" --job-base $((1000000 + clients * 1000)) --ping
  run_case "life-$clients-$tasks" --clients "$clients" --tasks "$tasks" --steps "$n" --job-base $((2000000 + clients * 1000))
done

# A task-failure storm: one auto-resume step of 2,000 tasks all failing (NCCL aborting on every rank).
# Each failed task used to write and fsync the timeline on the event loop and queue a sweep of its own.
storm_tasks=${BENCH_STORM_TASKS:-2000}
echo "-- storm: one step of $storm_tasks failing tasks"
run_case "ping-storm" --clients 1 --tasks "$storm_tasks" --steps 1 --job-base 3000000 --ping
run_case "life-storm" --clients 1 --tasks "$storm_tasks" --steps 1 --job-base 3000000 --wait-status 256

bench_say "protocol figures"
l=life-storm p=ping-storm
emit protocol "task-failure storm: latency p50/p99, $storm_tasks failing tasks" \
  "$(fmt "$(field "$l" p50_ms)" 2)/$(fmt "$(field "$l" p99_ms)" 2) ms" \
  "$(fmt "$(field "$p" p50_ms)" 2)/$(fmt "$(field "$p" p99_ms)" 2) ms (ping)" "<< 200 ms (plugin timeout)" \
  "$(field "$l" slow) replies slower than $(field "$l" slow_ms) ms, $(field "$l" errors) failed; max $(fmt "$(field "$l" max_ms)" 1) ms"
for c in "${cases[@]}"; do
  read -r clients tasks <<<"$c"
  l=life-$clients-$tasks p=ping-$clients-$tasks
  note="$(field "$l" requests) requests; $(field "$l" slow) slower than $(field "$l" slow_ms) ms and $(field "$l" errors) failed (no reply within 2 s): the plugin would have given up on those"
  emit protocol "req/s, $clients clients, $tasks task/step" "$(fmt "$(field "$l" rps)" 0) req/s" \
    "$(fmt "$(field "$p" rps)" 0) req/s (ping)" "-" "$note"
  emit protocol "latency p50/p99, $clients clients" "$(fmt "$(field "$l" p50_ms)" 2)/$(fmt "$(field "$l" p99_ms)" 2) ms" \
    "$(fmt "$(field "$p" p50_ms)" 2)/$(fmt "$(field "$p" p99_ms)" 2) ms (ping)" "<< 200 ms (plugin timeout)" \
    "p90 $(fmt "$(field "$l" p90_ms)" 2) ms, max $(fmt "$(field "$l" max_ms)" 1) ms"
done
