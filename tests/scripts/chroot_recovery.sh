#!/usr/bin/env bash
# scripts/slurm-chroot.sh's `make` picks up after a make that was cut off, as CI's and sessions' are
# (a run stopped at its deadline, a download that failed): the two ways a cut-off make broke every
# later one, each reproduced for real on a copy of a made chroot.
#
#   tests/scripts/chroot_recovery.sh SERIES     # as root, once SERIES' chroot is made
#
# The copy is an overlay over AR_CHROOT_ROOT (default /var/cache/slurm-auto-resume/chroots) in a
# mount namespace of this script's own: the made chroot is only read, and nothing stays mounted.
#   1. dpkg killed in the middle of configuring a package leaves "dpkg was interrupted", which every
#      later apt-get refuses: `make` finishes the install (dpkg --configure -a) and leaves a chroot
#      apt accepts.
#   2. A base whose debootstrap did not finish (no stamp) is made again from nothing, not built
#      upon: `make` with a mirror that cannot answer fails, naming debootstrap, and leaves no base
#      behind; with the stamp, `make` needs no mirror at all.
# Needs no network: the mirror it names is a closed local port. Prints one line per check; exits 1
# if any failed.
set -euo pipefail
cd "$(dirname "$0")/../.."
series=${1:?usage: tests/scripts/chroot_recovery.sh SERIES}
[ "$(id -u)" -eq 0 ] || { echo "chroot_recovery.sh: run as root (overlay mounts, chroot)" >&2; exit 1; }
root=${AR_CHROOT_ROOT:-/var/cache/slurm-auto-resume/chroots}
[ -f "$root/$series/.ar-debootstrap-complete" ] ||
  { echo "chroot_recovery.sh: no $series chroot in $root (scripts/slurm-chroot.sh make $series)" >&2; exit 1; }

# Everything below runs in a mount namespace of its own, where the overlay lives and dies.
if [ "${AR_CHROOT_RECOVERY_NS:-}" != 1 ]; then
  exec env AR_CHROOT_RECOVERY_NS=1 unshare --mount --propagation private -- "$0" "$@"
fi

tmp=$(mktemp -d /tmp/ar-chroot-recovery.XXXXXX)
trap 'umount "$tmp/merged" 2>/dev/null || true; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/upper" "$tmp/work" "$tmp/merged"
# The whole chroots folder is the lower layer, so the series' chroot is a plain folder of the merged
# one: `make` may remove it (test 2), which it could not do to a mount point.
mount -t overlay overlay -o "lowerdir=$root,upperdir=$tmp/upper,workdir=$tmp/work" "$tmp/merged"
export AR_CHROOT_ROOT=$tmp/merged
# Nothing listens on port 9 of this machine: a debootstrap that tries this mirror fails at once.
export AR_DEBIAN_MIRROR=http://127.0.0.1:9/debian
chroot_dir=$tmp/merged/$series

failed=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; failed=1; }
in_copy() { scripts/slurm-chroot.sh run "$series" "$@"; }

# --- 1. dpkg cut off while configuring a package -------------------------------------------------
# A package whose postinst kills dpkg, once: dpkg is stopped where a SIGKILL at a CI deadline would
# stop it, with its journal of half-done work on disk.
pkg=$tmp/pkg
mkdir -p "$pkg/DEBIAN"
cat >"$pkg/DEBIAN/control" <<'EOF'
Package: ar-cut-off-test
Version: 1.0
Architecture: all
Maintainer: slurm-auto-resume tests <tests@localhost>
Description: a package whose configuration is cut off once (tests/scripts/chroot_recovery.sh)
EOF
cat >"$pkg/DEBIAN/postinst" <<'EOF'
#!/bin/sh
if [ -e /ar-cut-dpkg-off ]; then
  rm -f /ar-cut-dpkg-off
  kill -9 "$PPID"
fi
exit 0
EOF
chmod 0755 "$pkg/DEBIAN/postinst"
dpkg-deb --root-owner-group --build "$pkg" "$chroot_dir/ar-cut-off-test.deb" >/dev/null
touch "$chroot_dir/ar-cut-dpkg-off"
if in_copy dpkg -i /ar-cut-off-test.deb >"$tmp/dpkg.log" 2>&1; then
  fail "1: dpkg was not cut off (the test package's postinst did not stop it): $(tail -n 3 "$tmp/dpkg.log")"
fi
# The state is the one CI met: apt refuses to work until someone finishes dpkg's job.
if in_copy apt-get check >"$tmp/check-before.log" 2>&1 || ! grep -q 'dpkg was interrupted' "$tmp/check-before.log"; then
  fail "1: the cut-off dpkg did not leave 'dpkg was interrupted': $(tail -n 3 "$tmp/check-before.log")"
else
  pass "1: a dpkg cut off mid-configure leaves 'dpkg was interrupted'"
fi
if scripts/slurm-chroot.sh make "$series" >"$tmp/make1.log" 2>&1; then
  pass "1: make after the cut-off dpkg succeeds (and asks no mirror: the base is stamped)"
else
  fail "1: make after the cut-off dpkg failed: $(tail -n 5 "$tmp/make1.log")"
fi
if in_copy apt-get check >"$tmp/check-after.log" 2>&1; then
  pass "1: apt accepts the chroot after make"
else
  fail "1: apt still refuses the chroot after make: $(tail -n 3 "$tmp/check-after.log")"
fi
status=$(in_copy dpkg-query -W -f='${Status}' ar-cut-off-test 2>/dev/null || true)
if [ "$status" = "install ok installed" ]; then
  pass "1: the cut-off package is configured"
else
  fail "1: the cut-off package is '$status', not 'install ok installed'"
fi

# --- 2. a base whose debootstrap did not finish -------------------------------------------------
# What a debootstrap cut off after unpacking apt leaves: a base with apt-get in it and no stamp.
rm -f "$chroot_dir/.ar-debootstrap-complete"
if scripts/slurm-chroot.sh run "$series" true >"$tmp/run.log" 2>&1 || ! grep -q "no $series chroot" "$tmp/run.log"; then
  fail "2: run used an unstamped base: $(tail -n 2 "$tmp/run.log")"
else
  pass "2: run refuses an unstamped base"
fi
if scripts/slurm-chroot.sh make "$series" >"$tmp/make2.log" 2>&1; then
  fail "2: make built upon an unstamped base (it succeeded with no mirror to make one from)"
elif ! grep -q "debootstrap of .* failed" "$tmp/make2.log"; then
  fail "2: make failed, but not at debootstrap: $(tail -n 5 "$tmp/make2.log")"
else
  pass "2: make starts an unstamped base again with debootstrap (which fails here: no mirror)"
fi
if [ -e "$chroot_dir/usr/bin/apt-get" ] || [ -e "$chroot_dir/.ar-debootstrap-complete" ]; then
  fail "2: the unstamped base is still there after make (or was stamped by a failed debootstrap)"
else
  pass "2: the unstamped base is gone, and the failed debootstrap left no stamp"
fi
if scripts/slurm-chroot.sh make "$series" >"$tmp/make3.log" 2>&1 || ! grep -q "debootstrap of .* failed" "$tmp/make3.log"; then
  fail "2: a second make after the failed debootstrap did not start debootstrap again: $(tail -n 3 "$tmp/make3.log")"
else
  pass "2: a second make after the failed debootstrap starts debootstrap again"
fi

exit "$failed"
