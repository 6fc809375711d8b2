#!/usr/bin/env bash
# A Debian chroot holding one Slurm series (its slurmctld, slurmd, srun, sbatch, munge, libslurm and
# headers, and that release's own compiler), made from Debian's registry, so the project is built,
# packaged and tested on a series this machine's own Debian does not ship. Needs root.
#
#   scripts/slurm-chroot.sh make SERIES        # make (or bring up to date) the chroot of SERIES
#   scripts/slurm-chroot.sh run SERIES CMD...  # run CMD in it, in this source tree, as root
#   scripts/slurm-chroot.sh path SERIES        # where it is
#   scripts/slurm-chroot.sh series             # the series this script can make, one per line
#
# SERIES is a Slurm series: 24.11 (Debian 13, trixie, gcc 14) or 26.05 (Debian testing, forky, gcc
# 16). 22.05 is this machine's own (Debian 12): scripts/install-deps.sh, no chroot.
#
# The chroots live under AR_CHROOT_ROOT (default /var/cache/slurm-auto-resume/chroots), one folder per
# series, about 1.3 GB each, 4-6 minutes each to make here. The base comes from AR_DEBIAN_MIRROR
# (default: the Debian mirror this machine's apt uses). `make` is idempotent: a chroot whose
# packages are all there is left as it is. `run` mounts /proc, /sys, /dev and this source tree (at
# its own path, so build folders and absolute paths mean the same inside and out) in a mount
# namespace of its own: nothing stays mounted on the host when CMD ends, and several `run`s of one
# chroot may go at once. Daemons that CMD leaves running keep that namespace alive until they end.
# The chroot shares the host's network: its clusters pick free ports (tests/cluster/cluster.sh) and
# run their own munged.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
root=${AR_CHROOT_ROOT:-/var/cache/slurm-auto-resume/chroots}

die() { echo "slurm-chroot.sh: $*" >&2; exit 1; }

# codename SERIES: the Debian release that ships that Slurm series.
codename() {
  case $1 in
    24.11) echo trixie ;;
    26.05) echo forky ;;
    22.05) die "22.05 is this machine's own Slurm (Debian 12): no chroot; scripts/install-deps.sh installs it" ;;
    *) die "no chroot for Slurm series '$1' (known: 24.11, 26.05)" ;;
  esac
}

# The packages a chroot holds: what scripts/install-deps.sh installs for the build, test and package
# groups, under the same names in trixie and forky. Not the sanitizer and fuzz tiers' clang, nor
# the PyTorch example's torch: those tiers run on this machine's own series only (README).
packages=(
  build-essential cmake pkg-config
  libslurm-dev slurmctld slurmd slurm-client munge
  nlohmann-json3-dev libspdlog-dev libfmt-dev libtomlplusplus-dev libcli11-dev
  libsystemd-dev libcurl4-openssl-dev libasio-dev libre2-dev prometheus-cpp-dev prometheus
  googletest libgtest-dev libgmock-dev bats procps python3 curl bc
  pandoc man-db lintian file
)

# shellcheck source=scripts/lib/debian-mirror.sh
source scripts/lib/debian-mirror.sh  # (the tree root is the working directory)

# in_chroot DIR CMD...: CMD inside DIR with the kernel file systems and this tree mounted, in a
# private mount namespace (unshare), so the mounts end with it.
in_chroot() {
  local dir=$1
  shift
  mkdir -p "$dir$src"
  unshare --mount --propagation private -- /bin/bash -euc '
    dir=$1; src=$2; shift 2
    mount -t proc proc "$dir/proc"
    mount --rbind /sys "$dir/sys"
    mount --rbind /dev "$dir/dev"
    mount -t tmpfs -o mode=1777 tmpfs "$dir/tmp"
    mount -t tmpfs -o mode=0755 tmpfs "$dir/run"
    mount --bind "$src" "$dir$src"
    exec chroot "$dir" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" LANG=C.UTF-8 \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      DEBIAN_FRONTEND=noninteractive AR_SLURM_SERIES="${AR_SLURM_SERIES:-}" \
      AR_SERIES_CLUSTER="${AR_SERIES_CLUSTER:-}" AR_SERIES_UNIT="${AR_SERIES_UNIT:-}" \
      AR_SERIES_FAULTS="${AR_SERIES_FAULTS:-}" AR_BATS_FILTER="${AR_BATS_FILTER:-}" \
      /bin/bash -c "cd \"\$0\" && exec \"\$@\"" "$src" "$@"
  ' in_chroot "$dir" "$src" "$@"
}

make_chroot() {
  local series=$1 name dir suite_script=()
  name=$(codename "$series")
  dir=$root/$series
  [ "$(id -u)" -eq 0 ] || die "run as root (debootstrap and chroot need it)"
  command -v debootstrap >/dev/null || {
    echo "slurm-chroot.sh: installing debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >/dev/null ||
      { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >/dev/null; }
  }
  # Debian 12's debootstrap knows no "forky": testing is made with sid's script (same layout).
  [ -f "/usr/share/debootstrap/scripts/$name" ] || suite_script=(/usr/share/debootstrap/scripts/sid)
  # The stamp is written only once debootstrap succeeded: a run cut off or failed half-way leaves apt-get
  # unpacked in a base that is not, and is started again from nothing, not built upon.
  if [ ! -f "$dir/.ar-debootstrap-complete" ]; then
    echo "slurm-chroot.sh: debootstrap $name ($series) into $dir"
    rm -rf "$dir"
    mkdir -p "$dir"
    debootstrap --variant=minbase "$name" "$dir" "$(mirror)" "${suite_script[@]}" >"$root/$series.debootstrap.log" 2>&1 ||
      { tail -n 30 "$root/$series.debootstrap.log" >&2; die "debootstrap of $name failed (log: $root/$series.debootstrap.log)"; }
    touch "$dir/.ar-debootstrap-complete"
  fi
  # Name lookups: the host's resolver (apt-get), and its hosts file. munged stamps each credential
  # with the address its host name resolves to; where the name did not resolve (a chroot's own
  # hosts file knows only localhost) that was 0.0.0.0, and Slurm 24.11's slurmctld looked it up in
  # DNS on every RPC ("auth_p_get_host: Lookup failed for 0.0.0.0"): a drain took 10 s, not 0.1.
  cp -L /etc/resolv.conf "$dir/etc/resolv.conf"
  cp -L /etc/hosts "$dir/etc/hosts"
  # Daemons a package starts at install time must not start inside a chroot (they would run on the
  # host's network with the chroot's configuration).
  printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
  chmod 0755 "$dir/usr/sbin/policy-rc.d"
  # A make cut off while dpkg worked (a CI run stopped, a session ended) leaves packages unpacked but
  # not configured, and every apt-get after it refuses ("dpkg was interrupted"): finish that first.
  in_chroot "$dir" dpkg --configure -a >/dev/null ||
    die "finishing an interrupted install in the $series chroot failed (dpkg --configure -a)"
  local missing
  missing=$(in_chroot "$dir" /bin/bash -c 'for p in "$@"; do dpkg-query -W -f="\${Status}" "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"; done' \
    _ "${packages[@]}" | tr '\n' ' ')
  if [ -n "${missing// /}" ]; then
    echo "slurm-chroot.sh: installing in $series: $missing"
    # The registry's copy of testing's Release file is past its Valid-Until date (SLURM-NOTES).
    # shellcheck disable=SC2086
    in_chroot "$dir" /bin/bash -c 'apt-get -q -o Acquire::Check-Valid-Until=false -o Acquire::Retries=3 update >/dev/null &&
      apt-get install -y -q -o Acquire::Retries=3 --no-install-recommends "$@" >/dev/null && apt-get clean' _ $missing ||
      die "installing packages in the $series chroot failed"
  fi
  local have
  have=$(in_chroot "$dir" dpkg-query -W -f='${Version}' libslurm-dev)
  case $have in
    "$series".*) ;;
    *) die "the $name chroot has Slurm $have, not $series (Debian changed its Slurm: update this script's series table)" ;;
  esac
  echo "slurm-chroot.sh: $series ready in $dir (Slurm $have, $(in_chroot "$dir" gcc -dumpfullversion 2>/dev/null | sed 's/^/gcc /'))"
}

cmd=${1:-}
case $cmd in
  make)
    [ $# -eq 2 ] || die "usage: $0 make SERIES"
    make_chroot "$2"
    ;;
  run)
    [ $# -ge 3 ] || die "usage: $0 run SERIES CMD..."
    series=$2
    shift 2
    codename "$series" >/dev/null
    [ -f "$root/$series/.ar-debootstrap-complete" ] || die "no $series chroot in $root (make it: $0 make $series)"
    AR_SLURM_SERIES=$series in_chroot "$root/$series" "$@"
    ;;
  path)
    [ $# -eq 2 ] || die "usage: $0 path SERIES"
    codename "$2" >/dev/null
    echo "$root/$2"
    ;;
  series) printf '%s\n' 24.11 26.05 ;;
  *) die "usage: $0 make SERIES | run SERIES CMD... | path SERIES | series" ;;
esac
