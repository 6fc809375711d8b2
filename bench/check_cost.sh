#!/usr/bin/env bash
# Check cost: a full sweep of every check healthd has, on a large fake node (bench/fake_host.sh: 8 GPUs
# through the fake NVML library, 32 EFA devices, 16 Neuron devices, a busy kernel log), against a shell
# health-check script doing comparable work the HealthCheckProgram way (bench/healthcheck_program.sh),
# measured in the same run on the same files.
#
# What is measured, and how:
# - the checks: whatever `healthctl status --json` lists after healthd's first sweep (the config has a
#   section for every check this healthd accepts; fake_host.sh says which areas are not configured);
# - wall time of a sweep: healthd's own per-check duration_ms from its status (milliseconds, whole
#   numbers: a check under 1 ms shows 0), summed over the checks, one sweep at a time;
# - CPU time of a sweep: healthd's utime+stime (/proc/PID/stat) over BENCH_SWEEPS sweeps, less the CPU of
#   the same messages that trigger no sweep, divided by the number of sweeps;
# - sweeps are asked for with `healthctl check --now` when this healthctl has it (timed end to end), or
#   else by a failing task of an auto-resume step sent over the socket (what the plugin sends), and then
#   `healthctl status` is timed as the CLI's end-to-end cost instead; the output says which.
#
# usage: bench/check_cost.sh [WORKDIR]    env: BENCH_SWEEPS (default 40), BENCH_QUICK=1, BENCH_RESULTS
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
work=${1:-/tmp/ar-bench-checks}
need_built "$HEALTHD" "$HEALTHCTL" "$PROTO_BENCH"
[ "$(id -u)" = 0 ] || bench_die "run as root: healthd accepts lifecycle messages from root only"
sweeps=${BENCH_SWEEPS:-40}
[ "${BENCH_QUICK:-0}" = 1 ] && sweeps=8

bench_say "check cost: building the fake node in $work"
rm -rf "$work" && mkdir -p "$work"
"$BENCH_DIR/fake_host.sh" "$work"
mapfile -t env_words <"$work/healthd.env"
trap healthd_stop EXIT
healthd_start "$work" bench "$work/healthd.toml" ${env_words[@]+"${env_words[@]}"} || bench_die "healthd did not start (see $work/healthd.log)"
hctl() { "$HEALTHCTL" --socket "$HEALTHD_SOCK" "$@"; }

# checks_json: {"checks": {name: duration_ms}, "at": newest at_ms, "results": n, "lines": [...]} of the
# last sweep in healthd's status.
checks_json() {
  hctl status --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
checks = d.get("health", {}).get("checks", [])
per = {}
for c in checks:
    per[c["check"]] = max(per.get(c["check"], 0), c.get("duration_ms", 0))
print(json.dumps({"checks": per, "at": max([c.get("at_ms", 0) for c in checks] or [0]), "results": len(checks),
                  "lines": ["%s %s %s %s" % (c["check"], c["status"], c.get("code", ""), c.get("message", "")) for c in checks]}))'
}
jget() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"; }

wait_for 20 bash -c "'$HEALTHCTL' --socket '$HEALTHD_SOCK' status --json | grep -q '\"at_ms\"'" ||
  bench_die "healthd ran no sweep within 20 s (see $work/healthd.log)"
first=$(checks_json)
echo "healthd pid $HEALTHD_PID runs these checks (results of its first sweep):"
jget "$first" '"\n".join("  " + l for l in d["lines"])'
check_names=$(jget "$first" '" ".join(sorted(d["checks"]))')

have_check_now=0
if "$HEALTHCTL" --help 2>/dev/null | grep -qE '^ +check( |$)' && "$HEALTHCTL" check --help 2>/dev/null | grep -q -- '--now'; then
  have_check_now=1
fi
echo "healthctl check --now: $([ "$have_check_now" = 1 ] && echo "present, sweeps are asked for with it" ||
  echo "not in this healthctl; sweeps are triggered by a failing auto-resume task over the socket")"

# ---- wall time per sweep, one sweep at a time ----
trigger=("$PROTO_BENCH" --socket "$HEALTHD_SOCK" --node bench --clients 1 --steps 1 --auto-resume 1 --wait-status 256 -q)
: >"$work/sweep_ms" && : >"$work/e2e_ms"
missed=0
for c in $check_names; do : >"$work/check-$c.ms"; done
for ((i = 0; i < sweeps; i++)); do
  before=$(jget "$(checks_json)" 'd["at"]')
  t0=$(now_s)
  if [ "$have_check_now" = 1 ]; then
    hctl check --now >/dev/null 2>&1 || true
    echo "$(sub_s "$(now_s)" "$t0") * 1000" | bc -l >>"$work/e2e_ms"
  else
    "${trigger[@]}" --job-base $((500000 + i)) >/dev/null
  fi
  # the sweep's results appear in the status once it is done (at_ms is when each result was taken)
  seen=0
  for ((w = 0; w < 500; w++)); do
    now=$(checks_json)
    if [ "$(jget "$now" 'd["at"]')" -gt "$before" ]; then seen=1 && break; fi
    sleep 0.01
  done
  if [ "$seen" = 0 ]; then
    missed=$((missed + 1))
    continue
  fi
  jget "$now" 'sum(d["checks"].values())' >>"$work/sweep_ms"
  for c in $check_names; do jget "$now" "d['checks'].get('$c', 0)" >>"$work/check-$c.ms"; done
done

# ---- CPU per sweep: many sweeps, less the same messages without a sweep ----
wait_quiet "$HEALTHD_PID"
cpu_sweeps=${BENCH_CPU_SWEEPS:-200}
[ "${BENCH_QUICK:-0}" = 1 ] && cpu_sweeps=40
cpu_of() {
  local t0
  t0=$(proc_ticks "$HEALTHD_PID")
  "$@" >/dev/null
  wait_quiet "$HEALTHD_PID"
  echo $(($(proc_ticks "$HEALTHD_PID") - t0))
}
if [ "$have_check_now" = 1 ]; then
  control_ticks=$(cpu_of bash -c "for i in \$(seq $cpu_sweeps); do '$HEALTHCTL' --socket '$HEALTHD_SOCK' ping; done")
  sweep_ticks=$(cpu_of bash -c "for i in \$(seq $cpu_sweeps); do '$HEALTHCTL' --socket '$HEALTHD_SOCK' check --now; done")
  how="healthctl check --now x$cpu_sweeps, less as many pings"
else
  control_ticks=$(cpu_of "$PROTO_BENCH" --socket "$HEALTHD_SOCK" --node bench --clients 1 --steps "$cpu_sweeps" --auto-resume 1 --wait-status 0 --job-base 600000 -q)
  sweep_ticks=$(cpu_of "$PROTO_BENCH" --socket "$HEALTHD_SOCK" --node bench --clients 1 --steps "$cpu_sweeps" --auto-resume 1 --wait-status 256 --job-base 600001 -q)
  how="$cpu_sweeps failing auto-resume steps over the socket, less $cpu_sweeps succeeding ones: an upper bound, it includes recording each failure in the job's timeline"
fi
cpu_ms=$(awk -v s="$sweep_ticks" -v c="$control_ticks" -v hz="$CLK_TCK" -v n="$cpu_sweeps" 'BEGIN { v = (s - c) * 1000 / hz / n; if (v < 0) v = 0; printf "%.2f", v }')

# ---- CLI end to end, and a ping as the round trip without a sweep ----
: >"$work/ping_ms"
for ((i = 0; i < sweeps; i++)); do
  t0=$(now_s)
  hctl ping >/dev/null
  echo "$(sub_s "$(now_s)" "$t0") * 1000" | bc -l >>"$work/ping_ms"
done
: >"$work/cli_ms"
cli=status
[ "$have_check_now" = 1 ] && cli="check --now"
if [ "$have_check_now" = 1 ]; then
  cp "$work/e2e_ms" "$work/cli_ms"
else
  for ((i = 0; i < sweeps; i++)); do
    t0=$(now_s)
    hctl status >/dev/null
    echo "$(sub_s "$(now_s)" "$t0") * 1000" | bc -l >>"$work/cli_ms"
  done
fi

# ---- the HealthCheckProgram way, same files, same run ----
shell_runs=$((sweeps < 20 ? sweeps : 20))
: >"$work/shell_wall" && : >"$work/shell_cpu"
TIMEFORMAT='%3R %3U %3S'
pid0=$(cat /proc/sys/kernel/ns_last_pid 2>/dev/null || echo 0)
for ((i = 0; i < shell_runs; i++)); do
  { time "$BENCH_DIR/healthcheck_program.sh" "$work/host" "$work/nvml-scenario.json" >/dev/null; } 2>"$work/time.out" || true
  read -r r u s <"$work/time.out"
  echo "$r * 1000" | bc -l >>"$work/shell_wall"
  echo "($u + $s) * 1000" | bc -l >>"$work/shell_cpu"
done
procs=$((($(cat /proc/sys/kernel/ns_last_pid 2>/dev/null || echo 0) - pid0) / shell_runs))

bench_say "check cost figures ($sweeps sweeps; checks: $check_names)"
sw_med=$(stat_median <"$work/sweep_ms" || echo 0) sw_max=$(stat_max <"$work/sweep_ms")
sh_med=$(stat_median <"$work/shell_wall") sh_cpu=$(stat_median <"$work/shell_cpu")
emit checks "full sweep wall, median/max (healthd)" "$(fmt "$sw_med" 1)/$(fmt "$sw_max" 1) ms" \
  "$(fmt "$sh_med" 1) ms (shell script)" "a few ms" "sum of per-check duration_ms, whole ms$([ "$missed" = 0 ] || echo "; $missed sweeps not seen within 5 s")"
emit checks "CPU per full sweep (healthd)" "$cpu_ms ms" "$(fmt "$sh_cpu" 1) ms (shell script)" "a few ms" \
  "$how; ${CLK_TCK} ticks/s"
if [ "$have_check_now" = 1 ]; then
  emit checks "full sweep wall, check --now minus ping" \
    "$(fmt "$(awk -v a="$(stat_median <"$work/cli_ms")" -v b="$(stat_median <"$work/ping_ms")" 'BEGIN { print a - b }')" 2) ms" \
    "$(fmt "$sh_med" 1) ms (shell script)" "a few ms" "medians of $sweeps; sub-millisecond estimate"
fi
emit checks "healthctl $cli end to end, median" "$(fmt "$(stat_median <"$work/cli_ms")" 1) ms" \
  "$(fmt "$sh_med" 1) ms (shell script)" "-" \
  "ping $(fmt "$(stat_median <"$work/ping_ms")" 1) ms; $([ "$have_check_now" = 1 ] && echo "includes the sweep" || echo "no 'check --now' in this healthctl: status round trip only, no sweep")"
for c in $check_names; do
  emit checks "  check $c, median/max" "$(fmt "$(stat_median <"$work/check-$c.ms")" 0)/$(fmt "$(stat_max <"$work/check-$c.ms")" 0) ms" "-" "-" "healthd duration_ms"
done
emit checks "shell script processes per run" "~$procs" "-" "-" "pid counter delta; other activity on the machine adds to it"
while read -r area what rest; do
  [ "$what" = configured ] && continue
  emit checks "area $area" "not measured" "-" "-" "$rest"
done <"$work/areas.txt"
