#!/usr/bin/env bash
# The README's test command (and CI's, through .ci/run): installs what is missing, then runs every
# test tier this machine can run, each in its own build directory:
#   dev   developer build, every ctest test (unit, then integration on a real local Slurm cluster)
#   package  the .deb and .rpm built by scripts/package.sh (lintian), the .deb installed, run on a
#         Slurm cluster, upgraded and purged on this machine (tests/package/run.sh; build/release)
#   asan  unit tests under AddressSanitizer + UndefinedBehaviorSanitizer (build/asan, clang 16)
#   tsan  unit tests under ThreadSanitizer (build/tsan)
#   fuzz  each libFuzzer target for a bounded time over its seed corpus (build/asan: the asan tier's
#         build, which compiles the daemon's code once for both)
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

for tier in "${tiers[@]}"; do
  case $tier in
    dev) run_tier dev preset_tier dev "$@" ;;
    package) run_tier package tests/package/run.sh ;;
    asan | tsan) run_tier "$tier" preset_tier "$tier" ;;
    # Its build is the asan tier's (configure preset asan): nothing to compile after that tier.
    fuzz) run_tier fuzz fuzz_tier ;;
    *) echo "test.sh: unknown tier '$tier' (known: dev package asan tsan fuzz)" >&2; exit 2 ;;
  esac
done

# failed_tests_summary TIER: the names of the tests that failed in TIER's last ctest run and, for a
# bats suite, its "not ok" lines with what follows them. CI shows only the end of this script's
# output, so the reason for a red tier must be repeated here, not only where ctest printed it.
failed_tests_summary() {
  local dir
  dir=$(tier_build "$1")/Testing/Temporary
  [ -s "$dir/$1-LastTestsFailed.log" ] || return 0
  echo "=== test.sh: tier $1: failed tests:"
  sed 's/^/    /' "$dir/$1-LastTestsFailed.log"
  if [ -f "$dir/$1-LastTest.log" ]; then
    grep -A 25 -E '^not ok ' "$dir/$1-LastTest.log" | head -n 120 | sed 's/^/    | /' || true
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
