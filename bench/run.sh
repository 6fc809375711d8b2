#!/usr/bin/env bash
# bench/run.sh: every benchmark of the project in one command, each figure printed next to its baseline
# measured in the same run and the target it is held to. Builds the release preset first if needed.
#
# usage: bench/run.sh [options]
#   --only LIST          comma-separated subset of: recovery,step_rerun,slurm,plugin,checks,footprint,protocol,scale,suspect
#                        (default: all but scale, which starts clusters of 8 to 64 nodes and takes ~25 min; see
#                        bench/scale.sh for its own settings, BENCH_NODES among them)
#   --runs N             recovery runs per variant and scheduler setting (default 10)
#   --baseline-runs N    plain-requeue baseline runs, ~2 min each (default 1; 0 skips it)
#   --plugin-rounds N    plugin-cost rounds (default 3), --plugin-reps N runs per setup per round (default 10)
#   --sweeps N           check-cost forced sweeps, healthctl check --now (default 200)
#   --idle-s N           footprint idle window in seconds (default 60), --load-s N under load (default 20)
#   --quick              a short smoke run: 2 recovery runs, no baseline requeue, 1 plugin round of 3,
#                        40 sweeps, 10 s idle, 5 s load, fewer protocol steps
#   --no-build           use the build as it is (AR_BENCH_BUILD, default build/release)
#   --dir PREFIX         work directories PREFIX-rec, -plug, -checks, -foot, -proto (default /tmp/arb)
#   --write-results      write bench/RESULTS.md from this run (the command, the machine, the table)
#   --note TEXT          a line for RESULTS.md about the conditions of this run
# Needs root (the cluster's slurmd, healthd's lifecycle messages). The exit status says whether every
# benchmark could measure, never whether a figure met its target.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
# shellcheck source=bench/lib.sh
source bench/lib.sh

only=recovery,step_rerun,slurm,plugin,checks,footprint,protocol
build=1 write=0 note="" prefix=/tmp/arb quick=0
cmdline="bench/run.sh${*:+ $(printf '%q ' "$@" | sed 's/ $//')}"
while [ $# -gt 0 ]; do
  case $1 in
    --only) only=$2; shift ;;
    --runs) export BENCH_RUNS=$2; shift ;;
    --baseline-runs) export BENCH_BASELINE_RUNS=$2; shift ;;
    --plugin-rounds) export BENCH_PLUGIN_ROUNDS=$2; shift ;;
    --plugin-reps) export BENCH_PLUGIN_REPS=$2; shift ;;
    --sweeps) export BENCH_SWEEPS=$2; shift ;;
    --idle-s) export BENCH_IDLE_S=$2; shift ;;
    --load-s) export BENCH_LOAD_S=$2; shift ;;
    --quick) quick=1 ;;
    --no-build) build=0 ;;
    --dir) prefix=$2; shift ;;
    --write-results) write=1 ;;
    --note) note=$2; shift ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [ "$quick" = 1 ]; then
  export BENCH_QUICK=1
  export BENCH_RUNS=${BENCH_RUNS:-2} BENCH_BASELINE_RUNS=${BENCH_BASELINE_RUNS:-0}
fi
[ "$(id -u)" = 0 ] || bench_die "run as root: the cluster's slurmd and healthd's lifecycle messages need it"

if [ "$build" = 1 ]; then
  bench_say "building the release preset"
  if [ ! -e "$BUILD/CMakeCache.txt" ]; then cmake --preset release >/dev/null || bench_die "cmake --preset release failed"; fi
  nice -n 5 cmake --build --preset release --target auto_resume healthd healthctl ar_bench_protocol ar_bench_slurm_calls fake_nvml ||
    bench_die "the build failed"
fi

export BENCH_RESULTS
BENCH_RESULTS=$(mktemp /tmp/ar-bench-results.XXXXXX)
started=$(date -u +%FT%TZ)
failed=()
declare -A script=([suspect]=suspect.sh [recovery]=recovery.sh [step_rerun]=step_rerun.sh [slurm]=slurm_calls.sh [plugin]=plugin_cost.sh [checks]=check_cost.sh [footprint]=footprint.sh [protocol]=protocol.sh [scale]=scale.sh)
declare -A workdir=([suspect]=sus [recovery]=rec [step_rerun]=sr [slurm]=calls [plugin]=plug [checks]=checks [footprint]=foot [protocol]=proto [scale]=scale)
IFS=, read -r -a picked <<<"$only"
for b in "${picked[@]}"; do
  [ -n "${script[$b]:-}" ] || bench_die "unknown benchmark '$b' (recovery,step_rerun,slurm,plugin,checks,footprint,protocol,scale,suspect)"
done
for b in "${picked[@]}"; do
  bench_say "benchmark: $b (bench/${script[$b]})"
  if ! bash "bench/${script[$b]}" "$prefix-${workdir[$b]}"; then
    failed+=("$b")
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$b" "(benchmark failed: see its output above)" "not measured" "-" "-" "" >>"$BENCH_RESULTS"
  fi
done

table() {
  echo "| area | figure | measured | baseline (same run) | target | notes |"
  echo "|---|---|---|---|---|---|"
  awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6 }' "$BENCH_RESULTS"
}
bench_say "results ($started, $(nproc) CPUs, load average now $(cut -d' ' -f1-3 /proc/loadavg))"
table

if [ "$write" = 1 ]; then
  {
    echo "# Benchmark results"
    echo
    echo "Produced by \`bench/run.sh --write-results\`; re-run it to refresh this file. Every figure is"
    echo "printed next to its baseline measured in the same run (see bench/README.md for what each one measures)."
    echo
    echo "Command: \`$cmdline\`  "
    echo "Run: $started, commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
    [ -z "$note" ] || { echo; echo "**$note**"; }
    echo
    echo "Machine:"
    echo
    machine_info
    echo
    table
  } >bench/RESULTS.md
  echo
  echo "wrote bench/RESULTS.md"
fi
rm -f "$BENCH_RESULTS"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "bench/run.sh: could not measure: ${failed[*]}" >&2
  exit 1
fi
