# Shared by the package tier's bats files (tests/package/run.sh runs them on the packages that
# scripts/package.sh left in AR_PACKAGE_DIR).

: "${AR_PACKAGE_DIR:?AR_PACKAGE_DIR must name the folder scripts/package.sh wrote the packages to}"
REPO_ROOT=$(cd "${BATS_TEST_DIRNAME}/../.." && pwd)
PKG=slurm-auto-resume

# the_one GLOB: the single file matching GLOB, or a failure saying what was found.
the_one() {
  local -a found
  mapfile -t found < <(compgen -G "$1" || true)
  if [ "${#found[@]}" -ne 1 ]; then
    echo "expected exactly one $1, found: ${found[*]:-none}" >&2
    return 1
  fi
  printf '%s\n' "${found[0]}"
}
DEB=$(the_one "$AR_PACKAGE_DIR/*.deb")

# The Slurm series of the installed headers, read here on its own (not from the build), so a wrong
# detection in packaging/CMakeLists.txt shows: Debian's slurm_version.h defines only
# SLURM_VERSION_NUMBER, 0xMMmmuu (0x160508 = 22.05.8).
slurm_series() {
  local hex
  hex=$(sed -n 's/^#define SLURM_VERSION_NUMBER *0x\([0-9a-fA-F]\{6\}\).*/\1/p' /usr/include/slurm/slurm_version.h)
  [ -n "$hex" ] || { echo "no SLURM_VERSION_NUMBER in /usr/include/slurm/slurm_version.h" >&2; return 1; }
  printf '%d.%02d\n' "$((16#${hex:0:2}))" "$((16#${hex:2:2}))"
}
# The first series after it, as the packages' upper bound spells it (22.05 -> 22.06).
next_series() {
  local s; s=$(slurm_series)
  printf '%s.%02d\n' "${s%%.*}" "$((10#${s#*.} + 1))"
}
project_version() { sed -n 's/^project(auto_resume VERSION \([0-9.]*\).*/\1/p' "$REPO_ROOT/CMakeLists.txt"; }

# What the maintainer scripts must never do: start, restart or reload healthd (the admin decides).
# Reload counts too: a SIGHUP applies a config the admin may still be editing. `daemon-reload`
# (systemd rereading its units) is fine and does not match.
STARTS_DAEMON='(systemctl|deb-systemd-invoke|invoke-rc\.d|service)[^|;&]*[[:space:]](start|restart|try-restart|reload-or-restart|reload|--now)([[:space:]]|$)'
# script_code: a maintainer script without its comments and messages (which tell the admin to run
# `systemctl enable --now healthd`).
script_code() { grep -v -E '^[[:space:]]*(#|echo )' || true; }

# apt-get that waits for the dpkg lock (other engineers may run apt on this machine) and never asks.
apt_get() { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 -q "$@"; }

installed() { [ "$(dpkg-query -W -f '${db:Status-Status}' "$PKG" 2>/dev/null)" = installed ]; }
