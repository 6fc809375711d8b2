#!/usr/bin/env bash
# The series tier (scripts/test.sh, AR_TIERS="series-24.11 series-26.05"): the project built, tested
# and packaged against one Slurm series other than this machine's own, inside that series' Debian
# chroot (scripts/slurm-chroot.sh), with that series' compiler, libslurm, slurmctld, slurmd, srun,
# sbatch and munge. Needs root.
#
#   tests/series/run.sh SERIES     # 24.11 or 26.05
#
# In the chroot, in build/series-SERIES (the release preset's settings: -O2, warnings as errors):
#   1. the build, with that series' gcc;
#   2. the unit tests of the code compiled against the series' own slurm.h and spank.h
#      (slurm_unit_tests, tests named slurm.*: the plugin's hooks on a fake SPANK, libslurm's records) and
#      the man page checks (label docs); with AR_SERIES_UNIT=1 every unit test (label unit), less
#      examples.pytorch, whose PyTorch this tier does not install (this machine's own series runs
#      it: README);
#   3. on a real 3-node cluster of that series (AR_SERIES_CLUSTER=0 leaves this step out),
#      the suites that hold the promises every series must keep: foundation (the plugin's options, reports and socket in each context), auto_resume (the
#      fault loop: drain, one requeue, running again off the node, node back; the user's comment
#      left alone; the cap), step_rerun (a step re-run on a spare node), stall (the watchdog),
#      ordinary_user, slurm_api, and from faults.bats the undisturbed incident and a SIGKILL of
#      healthd just before each Slurm call of an incident, then just after (AR_SERIES_FAULTS=0
#      leaves that sweep out);
#   4. the package: the .deb built for the series (lintian), installed, run on a cluster, upgraded
#      under a running daemon, purged (tests/package/deb.bats; no .rpm: the chroot has no rpmbuild);
#   5. on the host, a make of the chroot cut off half-way does not break the next one
#      (tests/scripts/chroot_recovery.sh, on an overlay: the chroot itself is only read).
# Each step prints its time. A failed build ends the tier; after any other failed step the next ones
# still run, and the tier fails at the end naming each failed step.
set -euo pipefail
cd "$(dirname "$0")/../.."
series=${1:?usage: tests/series/run.sh SERIES (24.11 or 26.05)}

# On the host: make the chroot (idempotent), then run this same script inside it.
if [ "${AR_SLURM_SERIES:-}" != "$series" ]; then
  [ "$(id -u)" -eq 0 ] || { echo "tests/series/run.sh: run as root (chroot, cluster, package install)" >&2; exit 1; }
  start=$SECONDS
  scripts/slurm-chroot.sh make "$series"
  echo "=== series $series: chroot ready in $((SECONDS - start)) s"
  rc=0
  scripts/slurm-chroot.sh run "$series" tests/series/run.sh "$series" || rc=$?
  # On the host, after the steps in the chroot (it reads the chroot they ran in; a few seconds): a
  # make cut off half-way does not break the next one (tests/scripts/chroot_recovery.sh).
  start=$SECONDS
  echo "=== series $series: a cut-off chroot make recovers"
  if tests/scripts/chroot_recovery.sh "$series"; then
    echo "=== series $series: a cut-off chroot make recovers passed in $((SECONDS - start)) s"
  else
    echo "=== series $series: a cut-off chroot make recovers FAILED after $((SECONDS - start)) s"
    rc=1
  fi
  exit "$rc"
fi

build=$PWD/build/series-$series
failed=()
# step NAME CMD...: runs one step and prints its time. A failed build ends the tier (nothing after
# it has a build to test); any other failed step is named at the end, after the steps that follow.
step() {
  local name=$1 start=$SECONDS
  shift
  echo "=== series $series: $name"
  if "$@"; then
    echo "=== series $series: $name passed in $((SECONDS - start)) s"
  else
    echo "=== series $series: $name FAILED after $((SECONDS - start)) s"
    failed+=("$name")
    [[ $name != build* ]] || exit 1
  fi
}

# What the Slurm-facing unit tests, the cluster suites, the man page checks and the package need.
# The other unit tests are built and run only with AR_SERIES_UNIT=1: no code of theirs is compiled
# against Slurm's headers, and their build is about half of the tier's CPU, which CI's 2 cores do not
# have to spare (README, "Slurm series"). The benchmarks are never built: nothing here runs them.
series_targets=(auto_resume healthd healthctl slurm_unit_tests man_pages fake_nvml fake_nvml_old kill_at_call)
configure_and_build() {
  cmake --preset release -B "$build" -DAR_BUILD_BENCH=OFF >/dev/null || return 1
  if [ "${AR_SERIES_UNIT:-0}" = 1 ]; then
    cmake --build "$build" -j2
  else
    cmake --build "$build" -j2 --target "${series_targets[@]}"
  fi
}

ctest_in() { ctest --test-dir "$build" --output-on-failure --timeout 1800 "$@"; }
slurm_and_docs_tests() { ctest_in -j2 -R '^slurm\.' && ctest_in -j2 -L '^docs$'; }

cluster_suites='foundation|auto_resume|step_rerun|stall|suspect|ordinary_user|slurm_api'
step "build ($(gcc -dumpfullversion 2>/dev/null | sed 's/^/gcc /'), Slurm $(dpkg-query -W -f='${Version}' libslurm-dev))" \
  configure_and_build
if [ "${AR_SERIES_UNIT:-0}" = 1 ]; then
  step "unit and docs tests" ctest_in -j2 -L '^(unit|docs)$' -E '^examples\.pytorch$'
else
  step "the unit tests of the Slurm-facing code, and the docs tests (AR_SERIES_UNIT=1: every unit test)" \
    slurm_and_docs_tests
fi
# The cluster suites run on every series (AR_SERIES_CLUSTER=0 leaves them out, for a quick check of
# the build and the package alone).
cluster_default=1
if [ "${AR_SERIES_CLUSTER:-$cluster_default}" = 1 ]; then
  step "cluster suites ($cluster_suites)" ctest_in -R "^(cluster_start|integration\.($cluster_suites)|cluster_stop)$"
  # The SIGKILL sweep is the heaviest suite (a few hundred incidents' worth of polling, about 8
  # minutes); AR_SERIES_FAULTS=0 leaves it out, for a quicker look at one series by hand.
  if [ "${AR_SERIES_FAULTS:-1}" = 1 ]; then
    AR_BATS_FILTER='an undisturbed incident|SIGKILLed just (before|after) each Slurm call' \
      step "faults: an incident undisturbed, then healthd SIGKILLed before and after each Slurm call" \
      ctest_in -R '^(cluster_start|integration\.faults|cluster_stop)$'
  else
    echo "=== series $series: faults.bats' SIGKILL sweep not run (AR_SERIES_FAULTS=0)"
  fi
else
  echo "=== series $series: cluster suites not run (AR_SERIES_CLUSTER=0)"
fi
AR_BUILD_DIR=$build AR_PACKAGE_DIR=$build/packages AR_PACKAGE_FORMATS=DEB \
  step "package (.deb built, installed, upgraded, purged)" tests/package/run.sh
if [ "${#failed[@]}" -gt 0 ]; then
  echo "=== series $series: FAILED steps: ${failed[*]}"
  exit 1
fi
echo "=== series $series: all passed"
