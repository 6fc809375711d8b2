#!/usr/bin/env bash
# Daemon footprint: resident memory and CPU share of healthd on the large fake node (bench/fake_host.sh)
# with the default check intervals, first idle for BENCH_IDLE_S seconds (60), then under load: hundreds
# of steps starting and ending at once (bench's protocol load generator) for BENCH_LOAD_S seconds (20).
# Sampled once a second from /proc/PID/status (VmRSS, VmHWM) and /proc/PID/stat (utime+stime).
# Baseline in the same run: the shell health-check script (bench/healthcheck_program.sh) on the same
# node, its CPU per run spread over healthd's default check interval, and its peak RSS.
#
# usage: bench/footprint.sh [WORKDIR]    env: BENCH_IDLE_S, BENCH_LOAD_S, BENCH_LOAD_CLIENTS (300),
#                                             BENCH_QUICK=1 (10 s idle, 5 s load), BENCH_RESULTS
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
work=${1:-/tmp/ar-bench-foot}
need_built "$HEALTHD" "$PROTO_BENCH"
[ "$(id -u)" = 0 ] || bench_die "run as root: healthd accepts lifecycle messages from root only"
idle_s=${BENCH_IDLE_S:-60} load_s=${BENCH_LOAD_S:-20} clients=${BENCH_LOAD_CLIENTS:-300}
if [ "${BENCH_QUICK:-0}" = 1 ]; then idle_s=10 load_s=5; fi

bench_say "footprint: healthd on the fake node in $work (default intervals)"
rm -rf "$work" && mkdir -p "$work"
"$BENCH_DIR/fake_host.sh" "$work"
# The fake node's config sets no interval: the daemon's defaults (check_interval_s 30, kernel-log poll
# every 250 ms, EC2 metadata every 5 s, the storage probe every 60 s, the admin script every 300 s, the
# DCGM diagnostic once a day on an idle node).
trap fake_node_stop EXIT
fake_node_start "$work"
pid=$HEALTHD_PID
sleep 2  # start-up and the first sweep are not idle time

# sample SECONDS FILE: one "rss_kib ticks" line per second.
sample() {
  local i
  : >"$2"
  for ((i = 0; i <= $1; i++)); do
    echo "$(proc_kib "$pid" VmRSS) $(proc_ticks "$pid")" >>"$2"
    ((i == $1)) || sleep 1
  done
}
# share FILE SECONDS: CPU share of one core over the samples, in percent.
share() { awk -v hz="$CLK_TCK" -v s="$2" 'NR == 1 { t0 = $2 } { t = $2 } END { printf "%.3f", (t - t0) / hz / s * 100 }' "$1"; }
rss_max() { awk '{ if ($1 > m) m = $1 } END { printf "%.1f", m / 1024 }' "$1"; }

echo "idle for $idle_s s ..."
sample "$idle_s" "$work/idle"
idle_rss=$(rss_max "$work/idle") idle_cpu=$(share "$work/idle" "$idle_s")
echo "  RSS max $idle_rss MiB, CPU $idle_cpu % of a core"

echo "load for $load_s s (then until the steps under way are done): $clients concurrent steps starting and ending (each held 100 ms, 8 tasks) ..."
"$PROTO_BENCH" --socket "$HEALTHD_SOCK" --node bench --clients "$clients" --tasks 8 --hold-ms 100 \
  --duration-s "$load_s" --json >"$work/load.out" &
load_pid=$!
# sampled until the generator is done: steps under way when its time is up still finish
t_load=$(now_s)
: >"$work/load"
while kill -0 "$load_pid" 2>/dev/null; do
  echo "$(proc_kib "$pid" VmRSS) $(proc_ticks "$pid")" >>"$work/load"
  sleep 1
done
echo "$(proc_kib "$pid" VmRSS) $(proc_ticks "$pid")" >>"$work/load"
load_s=$(since "$t_load")
wait "$load_pid" || true
grep -v '^{' "$work/load.out" | sed 's/^/  /'
load_rss=$(rss_max "$work/load") load_cpu=$(share "$work/load" "$load_s") hwm=$(awk '{ printf "%.1f", $1 / 1024 }' <<<"$(proc_kib "$pid" VmHWM)")
echo "  RSS max $load_rss MiB (VmHWM $hwm MiB), CPU $load_cpu % of a core"
sleep 2
after_rss=$(awk '{ printf "%.1f", $1 / 1024 }' <<<"$(proc_kib "$pid" VmRSS)")
echo "  RSS 2 s after the load: $after_rss MiB"

# The baseline: the shell script on the same node, CPU and peak RSS of one run.
TIMEFORMAT='%3R %3U %3S'
: >"$work/shell_cpu"
for i in 1 2 3 4 5; do
  { time "$BENCH_DIR/healthcheck_program.sh" "$work" "$IMDS_ENDPOINT" >/dev/null; } 2>"$work/time.out" || true
  read -r _ u s <"$work/time.out"
  echo "$u + $s" | bc -l >>"$work/shell_cpu"
done
shell_cpu_s=$(stat_median <"$work/shell_cpu")
shell_share=$(awk -v c="$shell_cpu_s" 'BEGIN { printf "%.3f", c / 30 * 100 }')
shell_rss="-"
if [ -x /usr/bin/time ]; then
  shell_rss="$(/usr/bin/time -f '%M' "$BENCH_DIR/healthcheck_program.sh" "$work" "$IMDS_ENDPOINT" 2>&1 >/dev/null | tail -n1 |
    awk '{ printf "%.1f", $1 / 1024 }') MiB peak (one process of the script)"
fi

bench_say "footprint figures"
emit footprint "healthd RSS idle, max over ${idle_s} s" "$idle_rss MiB" "$shell_rss" "< 20 MiB"
emit footprint "healthd CPU idle, share of a core" "$idle_cpu %" "$shell_share % (shell script every 30 s)" "< 1 %" \
  "resolution $(awk -v hz="$CLK_TCK" -v s="$idle_s" 'BEGIN { printf "%.3f", 100 / hz / s }') %; script: $(fmt "$shell_cpu_s" 3) s CPU per run"
emit footprint "healthd RSS under load, max (VmHWM)" "$load_rss MiB ($hwm)" "-" "< 20 MiB" "$clients concurrent steps; after: $after_rss MiB"
load_note=$(python3 -c 'import json,sys; d=json.loads(open(sys.argv[1]).read().splitlines()[-1]); print("%d requests, %.0f req/s, %d slower than 200 ms, %d failed" % (d["requests"], d["rps"], d["slow"], d["errors"]))' "$work/load.out" 2>/dev/null || echo "load generator output missing")
emit footprint "healthd CPU under load, share of a core" "$load_cpu %" "-" "-" "over $(fmt "$load_s" 1) s; $load_note"
