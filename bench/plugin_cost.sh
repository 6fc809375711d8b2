#!/usr/bin/env bash
# Plugin cost on the local real cluster: the time of `srun -N3 true` and of a step with many tasks
# (`srun -N3 -n48 --overcommit true`), each a new job and step as a user's srun is, in four setups:
#   up:    the plugin in plugstack, healthd running on every node
#   down:  the plugin, healthd stopped on every node (no socket: the plugin gives up at once)
#   hung:  the plugin, healthd stopped with SIGSTOP (socket there, nobody answers: the plugin waits out
#          its timeout, 200 ms per message and 500 ms per step by default, then gives up for the step)
#   none:  no plugin in plugstack (the baseline)
# BENCH_PLUGIN_ROUNDS rounds (3) of BENCH_PLUGIN_REPS runs (10) of each command in each setup, the setups
# interleaved round by round so that a machine getting busier or quieter hurts them alike. Medians and
# their ratios to `none`.
#
# usage: bench/plugin_cost.sh [DIR]
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
dir=${1:-/tmp/ar-bench-plug}
rounds=${BENCH_PLUGIN_ROUNDS:-3} reps=${BENCH_PLUGIN_REPS:-10}
if [ "${BENCH_QUICK:-0}" = 1 ]; then rounds=1 reps=3; fi
need_built "$HEALTHD" "$HEALTHCTL" "$PLUGIN"
[ "$(id -u)" = 0 ] || bench_die "run as root (slurmd and healthd need it)"

mkdir -p "$dir/host"
for node in n1 n2 n3; do mkdir -p "$dir/host/$node/var/log" && : >"$dir/host/$node/var/log/kern.log"; done
cat >"$dir/healthd.toml" <<TOML
[daemon]
host_root = "$dir/host/%n"
log_level = "warn"
[checks.kernel_log]
path = "/var/log/kern.log"
TOML
trap 'for n in n1 n2 n3; do kill -CONT "$(cat "$dir/run/healthd-$n.pid" 2>/dev/null)" 2>/dev/null || true; done; cluster_down "$dir"' EXIT

declare -A cmds=([small]="srun -N3 true" [many]="srun -N3 -n48 --overcommit true")
rm -rf "$dir/times" && mkdir -p "$dir/times"

# time_cmds SETUP: REPS runs of each command, milliseconds appended to times/SETUP-KIND.
time_cmds() {
  local setup=$1 kind i t0
  for kind in small many; do
    # shellcheck disable=SC2086 # the command is meant to be word-split
    ${cmds[$kind]} >/dev/null 2>&1 || bench_die "'${cmds[$kind]}' failed in setup $setup"  # warm-up, not counted
    for ((i = 0; i < reps; i++)); do
      t0=$(now_s)
      # shellcheck disable=SC2086
      ${cmds[$kind]} >/dev/null 2>&1 || bench_die "'${cmds[$kind]}' failed in setup $setup"
      echo "$(sub_s "$(now_s)" "$t0") * 1000" | bc -l >>"$dir/times/$setup-$kind"
    done
  done
}
healthd_pids() { local n; for n in n1 n2 n3; do cat "$dir/run/healthd-$n.pid"; done; }

for ((r = 1; r <= rounds; r++)); do
  bench_say "plugin cost: round $r of $rounds"
  rm -f "$dir/etc/healthd.toml"
  AR_PLUGIN=$PLUGIN AR_HEALTHD=$HEALTHD AR_HEALTHD_CONFIG=$dir/healthd.toml cluster_up "$dir" || bench_die "the cluster did not start"
  echo "  up" && time_cmds up
  # the plugin did report to healthd (else "up" would measure nothing)
  "$HEALTHCTL" --socket "$dir/run/healthd-n1.sock" jobs --json | grep -q '"job_id"' ||
    bench_die "healthd on n1 heard of no job: the plugin did not report"
  mapfile -t pids < <(healthd_pids)
  kill -STOP "${pids[@]}"
  echo "  hung" && time_cmds hung
  kill -CONT "${pids[@]}"
  for n in n1 n2 n3; do "$CLUSTER_SH" stop-healthd "$dir" "$n" >/dev/null 2>&1; done
  echo "  down" && time_cmds down
  grep -q auto_resume "$dir/etc/plugstack.conf" || bench_die "the plugin was not in plugstack.conf"
  cluster_down "$dir"
  (unset AR_PLUGIN AR_HEALTHD AR_HEALTHD_CONFIG && cluster_up "$dir") || bench_die "the cluster did not start"
  # shellcheck disable=SC1091
  source "$dir/env.sh"
  grep -q auto_resume "$dir/etc/plugstack.conf" && bench_die "the plugin is still in plugstack.conf"
  echo "  none" && time_cmds none
  cluster_down "$dir"
done

bench_say "plugin cost figures ($((rounds * reps)) runs per setup; median)"
for kind in small many; do
  base=$(stat_median <"$dir/times/none-$kind")
  for setup in up down hung; do
    med=$(stat_median <"$dir/times/$setup-$kind")
    case $setup in
      up) target="< 1.02 x" what="plugin, healthd up" ;;
      down) target="<= none + timeout" what="plugin, healthd down" ;;
      hung) target="<= none + 500 ms (step budget)" what="plugin, healthd hung (SIGSTOP)" ;;
    esac
    emit plugin "'${cmds[$kind]}', $what" "$(fmt "$med" 0) ms ($(ratio "$med" "$base") x)" "$(fmt "$base" 0) ms (no plugin)" \
      "$target" "$(awk -v a="$med" -v b="$base" 'BEGIN { printf "%+.0f", a - b }') ms; worst $(fmt "$(stat_max <"$dir/times/$setup-$kind")" 0) ms"
  done
done
