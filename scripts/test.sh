#!/usr/bin/env bash
# The README's test command (and CI's, through .ci/run): installs what is missing, then runs every
# test tier this machine can run, each in its own build directory:
#   dev   developer build, every ctest test (unit, then integration on a real local Slurm cluster)
#   package  the .deb and .rpm built by scripts/package.sh (lintian), the .deb installed, run on a
#         Slurm cluster, upgraded and purged on this machine (tests/package/run.sh; build/release)
#   asan  unit tests under AddressSanitizer + UndefinedBehaviorSanitizer (build/asan)
#   tsan  unit tests under ThreadSanitizer (build/tsan)
#   fuzz  each libFuzzer target for a bounded time over its seed corpus (build/fuzz, clang 16)
# A failing tier does not stop the later ones; the summary at the end names each failed tier and the
# script exits 1 if any failed. AR_TIERS="dev asan" runs only those; arguments go to the dev ctest.
# Needs root for the cluster tier (it starts munge, slurmctld and slurmd).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh

read -r -a tiers <<<"${AR_TIERS:-dev package asan tsan fuzz}"
passed=()
failed=()

# preset_tier NAME [CTEST ARGS...]: configure, build and test with the presets of that name.
preset_tier() {
  local name=$1
  shift
  cmake --preset "$name" && cmake --build --preset "$name" && ctest --preset "$name" "$@"
}

# run_tier NAME CMD...: runs one tier's command; prints one line per outcome.
run_tier() {
  local name=$1
  shift
  local start=$SECONDS
  echo "=== test.sh: tier $name: start"
  if "$@"; then
    echo "=== test.sh: tier $name: passed in $((SECONDS - start)) s"
    passed+=("$name")
  else
    echo "=== test.sh: tier $name: FAILED after $((SECONDS - start)) s (its output is above this line)"
    failed+=("$name")
  fi
}

for tier in "${tiers[@]}"; do
  case $tier in
    dev) run_tier dev preset_tier dev "$@" ;;
    package) run_tier package tests/package/run.sh ;;
    asan | tsan | fuzz) run_tier "$tier" preset_tier "$tier" ;;
    *) echo "test.sh: unknown tier '$tier' (known: dev package asan tsan fuzz)" >&2; exit 2 ;;
  esac
done

# failed_tests_summary TIER: the names of the tests that failed in TIER's last ctest run and, for a
# bats suite, its "not ok" lines with what follows them. CI shows only the end of this script's
# output, so the reason for a red tier must be repeated here, not only where ctest printed it.
failed_tests_summary() {
  local dir=build/$1/Testing/Temporary
  [ -s "$dir/LastTestsFailed.log" ] || return 0
  echo "=== test.sh: tier $1: failed tests:"
  sed 's/^/    /' "$dir/LastTestsFailed.log"
  if [ -f "$dir/LastTest.log" ]; then
    grep -A 25 -E '^not ok ' "$dir/LastTest.log" | head -n 120 | sed 's/^/    | /' || true
  fi
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
