# shellcheck shell=bash
# Sourced by scripts/test.sh: the report of one series tier, which ran in the background
# (tests/series/run.sh) with its outcome in DIR/TIER.rc ("RC SECONDS"), its output in DIR/TIER.log
# and its chroot's making in DIR/TIER.chroot.log.
#
#   report_series_tier DIR TIER    # prints the report; returns 0 if the tier passed, 1 if not
#   failure_digest LOG             # the failed tests' lines of a test log, a few lines each
#
# Passed: the tier's step lines. Failed: its step lines, the end of its chroot's log where the chroot
# was never made (no step line), then the end of its log, where the failure is. CI shows only this
# script's output, so nothing here may end the caller (set -e) before the failure is printed: a grep
# that finds nothing, a file that is missing.
report_series_tier() {
  local dir=$1 tier=$2 rc took
  echo "=== test.sh: tier $tier: its output ($dir/$tier.log):"
  read -r rc took <"$dir/$tier.rc" 2>/dev/null || { rc=1; took="?"; }
  { grep '^=== series' "$dir/$tier.log" 2>/dev/null || true; } | sed 's/^/    /'
  if [ "$rc" = 0 ]; then
    echo "=== test.sh: tier $tier: passed in $took s"
    return 0
  fi
  if [ -s "$dir/$tier.chroot.log" ] && ! grep -q '^=== series' "$dir/$tier.log" 2>/dev/null; then
    echo "    its chroot ($dir/$tier.chroot.log):"
    tail -n 40 "$dir/$tier.chroot.log" | sed 's/^/    | /'
  fi
  { tail -n 150 "$dir/$tier.log" 2>/dev/null || true; } | sed 's/^/    | /'
  echo "=== test.sh: tier $tier: FAILED after $took s"
  return 1
}

# failure_digest LOG: each failed test in LOG with the lines that say why, kept short: a bats suite's
# "not ok" line and the four lines after it (the file, line and command that failed), the "FAIL -"
# lines of the standalone scripts (examples/test_train.sh), and faults.bats' list of broken promises
# (which comes after the bats lines, each promise on a line of its own). At most 60 lines: CI shows
# only the end of test.sh's output, and this is what must fit there.
failure_digest() {
  [ -f "$1" ] || return 0
  { grep -a -A 4 -E '^(not ok |FAIL - )' "$1" 2>/dev/null || true
    grep -a -A 4 -E '^# [0-9]+ broken promise' "$1" 2>/dev/null || true; } | cut -c 1-300 | head -n 60 | sed 's/^/    | /'
}
