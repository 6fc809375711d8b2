#!/usr/bin/env bash
# Check cost: full sweeps of every check healthd has, asked for with `healthctl check --now`, on a large
# healthy fake node (bench/fake_host.sh: 8 GPUs through the fake NVML library, the DCGM diagnostic
# through a fake dcgmi, 32 EFA devices, 16 Neuron devices, 192 CPUs and 1000 processes, a busy kernel
# log, a lustre checkpoint mount, EC2 metadata, an admin script), against a shell health-check script
# doing the same work the HealthCheckProgram way (bench/healthcheck_program.sh), in the same run on the
# same files.
#
# What is measured, and how:
# - the node must be healthy: the first `check --now` must list every check (kernel_log, gpu_xid, gpu,
#   gpu.dcgm, efa, neuron, node, storage, ec2, script:admin) and every result must be ok, else this
#   benchmark fails (it measures nothing on a node healthd would drain);
# - BENCH_SWEEPS forced sweeps (`healthctl check --now --json`, which runs every check, those with their
#   own intervals too, and waits until the status reports health.sweep_seq >= the sweep's number);
# - wall time of a sweep: health.sweep_ms (healthd's own clock around the sweep, fractional ms); of each
#   check: its duration_ms (whole ms: a check under 1 ms shows 0);
# - CPU time of a sweep: healthd's utime+stime (/proc/PID/stat, all its threads) over the sweeps, less
#   as many `healthctl status --json` round trips (what check --now also sends), divided by the number
#   of sweeps; the CPU of the programs it starts (fake dcgmi, the admin script) is cutime+cstime, apart;
# - `healthctl check --now` end to end (the CLI as an admin or a script runs it), next to `healthctl ping`.
#
# usage: bench/check_cost.sh [WORKDIR]    env: BENCH_SWEEPS (default 200), BENCH_QUICK=1 (40), BENCH_RESULTS
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
work=${1:-/tmp/ar-bench-checks}
need_built "$HEALTHD" "$HEALTHCTL"
[ "$(id -u)" = 0 ] || bench_die "run as root: healthctl check --now is for root only"
sweeps=${BENCH_SWEEPS:-200}
[ "${BENCH_QUICK:-0}" = 1 ] && sweeps=${BENCH_SWEEPS:-40}
expected_checks="kernel_log gpu_xid gpu gpu.dcgm efa neuron node storage ec2 script:admin"

bench_say "check cost: building the fake node in $work"
rm -rf "$work" && mkdir -p "$work"
"$BENCH_DIR/fake_host.sh" "$work"
trap fake_node_stop EXIT
fake_node_start "$work"
hctl() { "$HEALTHCTL" --socket "$HEALTHD_SOCK" --timeout-ms 60000 "$@"; }

# summary FILE...: one line per file of `check --now --json` output, three tab-separated fields: sweep_ms,
# "check=ms check=ms ..." (each check's duration_ms: the results of one check share it), and "BAD ..."
# with the results that are not ok (empty when all are).
summary() {
  python3 - "$@" <<'PY'
import json, sys
def check_of(name):
    if name.startswith("gpu.dcgm"): return "gpu.dcgm"
    if name.startswith("script:"): return name.split(".")[0]
    return name.split(".")[0]
for f in sys.argv[1:]:
    h = json.load(open(f)).get("health", {})
    per, bad = {}, []
    for c in h.get("checks", []):
        k = check_of(c["check"])
        per[k] = max(per.get(k, 0), c.get("duration_ms", 0))
        if c.get("status") != "ok":
            bad.append("%s:%s:%s:%s" % (c["check"], c.get("status"), c.get("code", ""), c.get("message", "").replace(" ", "_")))
    print("%s\t%s\t%s" % (h.get("sweep_ms", -1), " ".join("%s=%s" % kv for kv in per.items()), ("BAD " + " ".join(bad)) if bad else ""))
PY
}

# ---- the first sweep: every check present, every result ok ----
rc=0
hctl check --now --json >"$work/first.json" || rc=$?
[ "$rc" -le 1 ] || { cat "$work/first.json" >&2; tail -n 20 "$work/healthd.log" >&2; bench_die "the first 'healthctl check --now' exited $rc (2: a fault on the fake node, 3: no answer)"; }
echo "healthd pid $HEALTHD_PID, results of its first forced sweep:"
python3 -c '
import json, sys
for c in json.load(open(sys.argv[1]))["health"]["checks"]:
    print("  %-22s %-6s %4s ms  %s" % (c["check"], c["status"], c.get("duration_ms", ""), c.get("message", "")))' "$work/first.json"
IFS=$'\t' read -r _ per bad <<<"$(summary "$work/first.json")"
[ -z "$bad" ] || bench_die "the fake node is not healthy, results not ok: ${bad#BAD }"
seen=" $(tr ' ' '\n' <<<"$per" | cut -d= -f1 | tr '\n' ' ')"
missing=""
for c in $expected_checks; do [[ "$seen" == *" $c "* ]] || missing+=" $c"; done
[ -z "$missing" ] || bench_die "healthd ran no check named:$missing (it ran:$seen)"
check_names=$(tr ' ' '\n' <<<"$per" | cut -d= -f1 | xargs)
for _ in 1 2 3; do hctl check --now >/dev/null; done  # warm: caches, the EFA/NVML baselines

# ---- BENCH_SWEEPS forced sweeps: wall (sweep_ms, per check), end to end, CPU ----
mkdir -p "$work/sweeps"
: >"$work/e2e_ms"
wait_quiet "$HEALTHD_PID"
t0_ticks=$(proc_ticks "$HEALTHD_PID") t0_child=$(proc_child_ticks "$HEALTHD_PID")
for ((i = 0; i < sweeps; i++)); do
  t0=$(now_s)
  rc=0
  hctl check --now --json >"$work/sweeps/$i.json" || rc=$?
  echo "$(sub_s "$(now_s)" "$t0") * 1000" | bc -l >>"$work/e2e_ms"
  [ "$rc" -le 1 ] || bench_die "sweep $i: 'healthctl check --now' exited $rc (see $work/sweeps/$i.json)"
done
wait_quiet "$HEALTHD_PID"
sweep_ticks=$(($(proc_ticks "$HEALTHD_PID") - t0_ticks)) child_ticks=$(($(proc_child_ticks "$HEALTHD_PID") - t0_child))
# the control: as many status round trips, no sweep
t0_ticks=$(proc_ticks "$HEALTHD_PID")
for ((i = 0; i < sweeps; i++)); do hctl status --json >/dev/null; done
wait_quiet "$HEALTHD_PID"
control_ticks=$(($(proc_ticks "$HEALTHD_PID") - t0_ticks))
cpu_ms=$(awk -v s="$sweep_ticks" -v c="$control_ticks" -v hz="$CLK_TCK" -v n="$sweeps" 'BEGIN { v = (s - c) * 1000 / hz / n; if (v < 0) v = 0; printf "%.2f", v }')
child_ms=$(awk -v s="$child_ticks" -v hz="$CLK_TCK" -v n="$sweeps" 'BEGIN { printf "%.2f", s * 1000 / hz / n }')

files=()
for ((i = 0; i < sweeps; i++)); do files+=("$work/sweeps/$i.json"); done
summary "${files[@]}" >"$work/summary"
cut -f1 "$work/summary" >"$work/sweep_ms"
unhealthy=$(cut -f3 "$work/summary" | grep -c 'BAD' || true)
for c in $check_names; do
  cut -f2 "$work/summary" | awk -v k="$c" '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) print kv[2] } }' >"$work/check-$c.ms"
done

# ---- ping: the CLI's round trip without a sweep ----
: >"$work/ping_ms"
for ((i = 0; i < 20; i++)); do
  t0=$(now_s)
  hctl ping >/dev/null
  echo "$(sub_s "$(now_s)" "$t0") * 1000" | bc -l >>"$work/ping_ms"
done

# ---- the HealthCheckProgram way, same node, same run ----
shell_runs=$((sweeps < 20 ? sweeps : 20))
: >"$work/shell_wall" && : >"$work/shell_cpu"
TIMEFORMAT='%3R %3U %3S'
pid0=$(cat /proc/sys/kernel/ns_last_pid 2>/dev/null || echo 0)
for ((i = 0; i < shell_runs; i++)); do
  { time "$BENCH_DIR/healthcheck_program.sh" "$work" "$IMDS_ENDPOINT" >"$work/shell.out"; } 2>"$work/time.out" ||
    { cat "$work/shell.out" >&2; bench_die "the shell health check found the fake node unhealthy"; }
  read -r r u s <"$work/time.out"
  echo "$r * 1000" | bc -l >>"$work/shell_wall"
  echo "($u + $s) * 1000" | bc -l >>"$work/shell_cpu"
done
procs=$((($(cat /proc/sys/kernel/ns_last_pid 2>/dev/null || echo 0) - pid0) / shell_runs))

bench_say "check cost figures ($sweeps forced sweeps; checks: $check_names)"
sw_med=$(stat_median <"$work/sweep_ms") sw_max=$(stat_max <"$work/sweep_ms")
sh_med=$(stat_median <"$work/shell_wall") sh_cpu=$(stat_median <"$work/shell_cpu")
e2e_med=$(stat_median <"$work/e2e_ms") e2e_max=$(stat_max <"$work/e2e_ms")
emit checks "forced full sweep wall, median/max (healthd)" "$(fmt "$sw_med" 1)/$(fmt "$sw_max" 1) ms" \
  "$(fmt "$sh_med" 1) ms (shell script)" "a few ms" \
  "health.sweep_ms; every check, the DCGM, storage, EC2 and script ones too$([ "$unhealthy" = 0 ] || echo "; $unhealthy sweeps had a result not ok")"
emit checks "CPU per forced full sweep (healthd)" "$cpu_ms ms" "$(fmt "$sh_cpu" 1) ms (shell script)" "a few ms" \
  "utime+stime over $sweeps sweeps less $sweeps status round trips; ${CLK_TCK} ticks/s; + $child_ms ms in the programs it starts (fake dcgmi, admin script)"
emit checks "healthctl check --now end to end, median/max" "$(fmt "$e2e_med" 1)/$(fmt "$e2e_max" 1) ms" \
  "$(fmt "$sh_med" 1) ms (shell script)" "-" "includes the sweep; healthctl ping $(fmt "$(stat_median <"$work/ping_ms")" 1) ms"
for c in $check_names; do
  emit checks "  check $c, median/max" "$(fmt "$(stat_median <"$work/check-$c.ms")" 0)/$(fmt "$(stat_max <"$work/check-$c.ms")" 0) ms" "-" "-" "healthd duration_ms, whole ms"
done
emit checks "shell script processes per run" "~$procs" "-" "-" "pid counter delta; other activity on the machine adds to it"
