#!/usr/bin/env bats
# scripts/test.sh's report of a series tier (scripts/lib/series-report.bash), driven as test.sh
# drives it: sourced into a bash running with set -euo pipefail. CI shows only test.sh's output, so
# a red series tier must print why, whatever state its logs are in. CI once ended test.sh silently
# after "its output" when a series' chroot could not be made (no step line in its log).

setup() {
  dir=$BATS_TEST_TMPDIR
  lib=$BATS_TEST_DIRNAME/../../scripts/lib/series-report.bash
}

# report TIER: what test.sh does with one series tier, then a last line that shows it went on.
report() {
  run bash -euo pipefail -c '
    source "$1"
    if report_series_tier "$2" "$3"; then echo "counted: passed"; else echo "counted: failed"; fi
    echo "test.sh went on"' _ "$lib" "$dir" "$1"
}

@test "a tier whose chroot was never made prints the chroot's log and its own, and test.sh goes on" {
  echo "1 37" >"$dir/series-24.11.rc"
  printf 'slurm-chroot.sh: installing in 24.11: slurmd\nE: dpkg was interrupted, you must manually run dpkg --configure -a\n' \
    >"$dir/series-24.11.chroot.log"
  printf 'slurm-chroot.sh: installing packages in the 24.11 chroot failed\n' >"$dir/series-24.11.log"
  report series-24.11
  [ "$status" -eq 0 ]
  [[ $output == *"its chroot ($dir/series-24.11.chroot.log):"* ]]
  [[ $output == *"    | E: dpkg was interrupted"* ]]
  [[ $output == *"    | slurm-chroot.sh: installing packages in the 24.11 chroot failed"* ]]
  [[ $output == *"tier series-24.11: FAILED after 37 s"* ]]
  [ "${lines[-2]}" = "counted: failed" ]
  [ "${lines[-1]}" = "test.sh went on" ]
}

@test "a tier that left no outcome and no log counts as failed, and test.sh goes on" {
  report series-26.05
  [ "$status" -eq 0 ]
  [[ $output == *"tier series-26.05: FAILED after ? s"* ]]
  [ "${lines[-2]}" = "counted: failed" ]
  [ "${lines[-1]}" = "test.sh went on" ]
}

@test "a tier that failed in a step prints its steps and the end of its log, not its chroot's" {
  echo "1 600" >"$dir/series-24.11.rc"
  echo "slurm-chroot.sh: 24.11 ready" >"$dir/series-24.11.chroot.log"
  {
    echo "=== series 24.11: build passed in 300 s"
    for i in $(seq 1 200); do echo "filler line $i"; done
    echo "not ok 3 the fault loop"
    echo "=== series 24.11: cluster suites FAILED after 250 s"
  } >"$dir/series-24.11.log"
  report series-24.11
  [[ $output == *"    === series 24.11: build passed in 300 s"* ]]
  [[ $output == *"    | not ok 3 the fault loop"* ]]
  [[ $output != *"its chroot"* ]]
  # Only the end of a long log: its first filler lines are left out.
  [[ $output != *"filler line 1"$'\n'* ]]
  [[ $output == *"tier series-24.11: FAILED after 600 s"* ]]
  [ "${lines[-2]}" = "counted: failed" ]
}

@test "a tier that passed prints its step lines only" {
  echo "0 512" >"$dir/series-26.05.rc"
  printf '=== series 26.05: build\nnoise\n=== series 26.05: build passed in 200 s\n' >"$dir/series-26.05.log"
  report series-26.05
  [[ $output == *"    === series 26.05: build passed in 200 s"* ]]
  [[ $output != *"noise"* ]]
  [[ $output == *"tier series-26.05: passed in 512 s"* ]]
  [ "${lines[-2]}" = "counted: passed" ]
}
