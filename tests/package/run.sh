#!/usr/bin/env bash
# The package tier (scripts/test.sh, AR_TIERS=package): builds the .deb and the .rpm with
# scripts/package.sh (which fails on a lintian tag not overridden), checks the .rpm from the file
# (rpm.bats), then installs, runs, upgrades and purges the .deb on this machine (deb.bats: root).
# The machine is left as found: deb.bats purges the package whatever failed. AR_PACKAGE_DIR: where
# the packages go (default build/packages).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ "$(id -u)" -eq 0 ] || { echo "tests/package/run.sh: run as root (it installs and purges the .deb)" >&2; exit 1; }
export AR_PACKAGE_DIR=${AR_PACKAGE_DIR:-$PWD/build/packages}

scripts/package.sh
# Each file runs even when the one before failed; the tier fails if either did.
rc=0
bats --timing tests/package/rpm.bats || rc=1
bats --timing tests/package/deb.bats || rc=1
exit "$rc"
