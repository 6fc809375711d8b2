#!/usr/bin/env bash
# The package tier (scripts/test.sh, AR_TIERS=package): builds the .deb and the .rpm with
# scripts/package.sh (which fails on a lintian tag not overridden), checks the .rpm from the file
# (rpm.bats), then installs, runs, upgrades and purges the .deb on this machine (deb.bats: root).
# The machine is left as found: deb.bats purges the package whatever failed. AR_PACKAGE_DIR: where
# the packages go (default build/packages). AR_PACKAGE_FORMATS="DEB" (a Slurm series' chroot, which
# has no rpmbuild: the .rpm is built and checked on this machine's own series) leaves rpm.bats out;
# AR_BUILD_DIR is the build folder (scripts/package.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ "$(id -u)" -eq 0 ] || { echo "tests/package/run.sh: run as root (it installs and purges the .deb)" >&2; exit 1; }
export AR_PACKAGE_DIR=${AR_PACKAGE_DIR:-$PWD/build/packages}

# One package tier at a time on this machine: a series' chroot (tests/series/run.sh) runs its own
# beside this machine's, and both name the same cluster folder and installed paths, which its
# process scans see across the chroot. The lock file is in the source tree, which both see.
mkdir -p build
exec 9>build/package-tier.lock
flock 9

scripts/package.sh
# Each file runs even when the one before failed; the tier fails if either did.
rc=0
if [[ " ${AR_PACKAGE_FORMATS:-DEB RPM} " == *" RPM "* ]]; then
  bats --timing tests/package/rpm.bats || rc=1
fi
bats --timing tests/package/deb.bats || rc=1
exit "$rc"
