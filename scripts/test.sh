#!/usr/bin/env bash
# The README's test command (and CI's, through .ci/run): installs what is missing, then runs every
# test tier this machine can run, each in its own build directory:
#   release  the release build (the packages' own: -O2, warnings as errors, build/release), every
#         ctest test: unit, man pages, then integration on a real local Slurm cluster
#   dev   the same tests on the developer build (Debug, build/dev); not in the default list: the
#         release tier runs them on the build the packages are made of, one build fewer for CI
#   package  the .deb and .rpm made by scripts/package.sh from build/release (lintian), the .deb
#         installed, run on a Slurm cluster, upgraded and purged on this machine (tests/package/run.sh)
#   asan  unit tests under AddressSanitizer + UndefinedBehaviorSanitizer (build/asan, clang 16)
#   tsan  unit tests under ThreadSanitizer (build/tsan); not in the default list: AR_TIERS=tsan
#   fuzz  each libFuzzer target for a bounded time over its seed corpus (build/asan: the asan tier's
#         build, which compiles the daemon's code once for both)
#   series-24.11, series-26.05  the build, man page checks, cluster suites and .deb against that
#         Slurm series, in its Debian chroot (tests/series/run.sh; build/series-SERIES); the unit
#         tests too with AR_SERIES_UNIT=1
# The tiers above run on this machine's own Slurm (22.05, Debian 12). The series tiers run in the
# background from the start, side by side, beside the others (AR_SERIES_BACKGROUND=0 runs them
# after the rest): their chroots are made while this machine's tiers build, and their builds
# overlap the cluster tests here, which mostly wait. Their output goes to build/series-SERIES.log
# and is printed when they end.
# A failing tier does not stop the later ones; the summary at the end names each failed tier and the
# script exits 1 if any failed. AR_TIERS="release asan" runs only those; arguments go to the
# release (or dev) tier's ctest.
# Needs root for the cluster tier (it starts munge, slurmctld and slurmd) and the series tiers.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/series-report.bash

# tsan is not in the default list: CI's 2 cores cannot build the tree four times and run the three
# series' clusters in 70 minutes (README, "Sanitizers and fuzzing"). AR_TIERS=tsan runs it.
read -r -a tiers <<<"${AR_TIERS:-release package asan fuzz series-24.11 series-26.05}"

# What the tiers asked for need (scripts/install-deps.sh's parts): every tier builds and runs tests
# on this machine's cluster; the release and dev tiers' cluster tests run the PyTorch example; the
# sanitizer tiers need clang; the series tiers make their chroots themselves.
parts=(build run test)
for tier in "${tiers[@]}"; do
  case $tier in
    release | dev) parts+=(example) ;;
    package) parts+=(package) ;;
    asan | tsan | fuzz) parts+=(fuzz) ;;
  esac
done
read -r -a parts <<<"$(printf '%s\n' "${parts[@]}" | awk '!seen[$0]++' | tr '\n' ' ')"
bash scripts/install-deps.sh "${parts[@]}"
passed=()
failed=()

# preset_tier NAME [CTEST ARGS...]: configure, build and test with the presets of that name.
preset_tier() {
  local name=$1
  shift
  cmake --preset "$name" && cmake --build --preset "$name" && ctest --preset "$name" "$@"
}

fuzz_tier() { cmake --preset asan && cmake --build --preset fuzz && ctest --preset fuzz; }

# tier_build TIER: the build directory a tier's tests run in (fuzz shares asan's).
tier_build() { if [ "$1" = fuzz ]; then echo build/asan; else echo "build/$1"; fi; }

# run_tier NAME CMD...: runs one tier's command; prints one line per outcome. A failed tier's ctest
# logs are kept under its own name: two tiers testing in one build directory overwrite ctest's.
run_tier() {
  local name=$1
  shift
  local start=$SECONDS
  local logs
  logs=$(tier_build "$name")/Testing/Temporary
  rm -f "$logs/LastTestsFailed.log" "$logs/$name-LastTestsFailed.log" "$logs/$name-LastTest.log"
  echo "=== test.sh: tier $name: start"
  if "$@"; then
    echo "=== test.sh: tier $name: passed in $((SECONDS - start)) s"
    passed+=("$name")
  else
    echo "=== test.sh: tier $name: FAILED after $((SECONDS - start)) s (its output is above this line)"
    failed+=("$name")
    [ ! -f "$logs/LastTestsFailed.log" ] || cp "$logs/LastTestsFailed.log" "$logs/$name-LastTestsFailed.log"
    [ ! -f "$logs/LastTest.log" ] || cp "$logs/LastTest.log" "$logs/$name-LastTest.log"
  fi
}

# The series tiers asked for, in order; the others, in order.
series_tiers=()
host_tiers=()
for tier in "${tiers[@]}"; do
  case $tier in
    release | dev | package | asan | tsan | fuzz) host_tiers+=("$tier") ;;
    series-24.11 | series-26.05) series_tiers+=("$tier") ;;
    *) echo "test.sh: unknown tier '$tier' (known: release dev package asan tsan fuzz series-24.11 series-26.05)" >&2; exit 2 ;;
  esac
done

# series_chain: every series' chroot in turn (mostly downloads and unpacking: by the time they are
# made this machine's build is done, and its cluster tests, which mostly wait, leave the CPUs to the
# series' builds), then the series tiers side by side, each with its output in build/SERIES.log and
# its outcome in build/SERIES.rc (what the summary reads). Their clusters pick free ports of their
# own and their package steps take the package tier's lock.
series_chain() {
  local tier
  for tier in "${series_tiers[@]}"; do
    scripts/slurm-chroot.sh make "${tier#series-}" >"build/$tier.chroot.log" 2>&1 </dev/null || true
  done
  for tier in "${series_tiers[@]}"; do
    (
      start=$SECONDS
      rc=0
      tests/series/run.sh "${tier#series-}" >"build/$tier.log" 2>&1 </dev/null || rc=$?
      echo "$rc $((SECONDS - start))" >"build/$tier.rc"
    ) &
  done
  wait
}

mkdir -p build
series_pid=""
if [ "${#series_tiers[@]}" -gt 0 ]; then
  for tier in "${series_tiers[@]}"; do rm -f "build/$tier.rc" "build/$tier.log"; done
  if [ "${AR_SERIES_BACKGROUND:-1}" = 1 ] && [ "${#host_tiers[@]}" -gt 0 ]; then
    echo "=== test.sh: tiers ${series_tiers[*]}: started in the background (build/series-*.log)"
    series_chain &
    series_pid=$!
  fi
fi

for tier in "${host_tiers[@]}"; do
  case $tier in
    release | dev) run_tier "$tier" preset_tier "$tier" "$@" ;;
    package) run_tier package tests/package/run.sh ;;
    asan | tsan) run_tier "$tier" preset_tier "$tier" ;;
    # Its build is the asan tier's (configure preset asan): nothing to compile after that tier.
    fuzz) run_tier fuzz fuzz_tier ;;
  esac
done

if [ "${#series_tiers[@]}" -gt 0 ]; then
  if [ -n "$series_pid" ]; then
    echo "=== test.sh: waiting for the series tiers"
    wait "$series_pid" || true
  else
    series_chain
  fi
  for tier in "${series_tiers[@]}"; do
    if report_series_tier build "$tier"; then passed+=("$tier"); else failed+=("$tier"); fi
  done
fi

# failed_tests_summary TIER: the tests that failed in TIER and, for each, the lines that say why.
# CI shows only the end of this script's output, so the reason for a red tier is repeated here, short,
# not only where ctest or the series tier printed it (a series tier's tail is mostly daemon logs).
failed_tests_summary() {
  echo "=== test.sh: tier $1: failed tests:"
  if [[ $1 == series-* ]]; then
    { grep -a -E '^=== series .* FAILED' "build/$1.log" 2>/dev/null || true; } | sed 's/^/    /'
    failure_digest "build/$1.log"
    return 0
  fi
  local dir
  dir=$(tier_build "$1")/Testing/Temporary
  [ -s "$dir/$1-LastTestsFailed.log" ] || return 0
  sed 's/^/    /' "$dir/$1-LastTestsFailed.log"
  failure_digest "$dir/$1-LastTest.log"
}

echo "=== test.sh: passed: ${passed[*]:-none}"
if [ "${#failed[@]}" -gt 0 ]; then
  for tier in "${failed[@]}"; do
    failed_tests_summary "$tier"
  done
  echo "=== test.sh: FAILED tiers: ${failed[*]}"
  exit 1
fi
echo "=== test.sh: all tiers passed"
