#!/usr/bin/env bash
# Builds the .deb and the .rpm of slurm-auto-resume for the Slurm series whose headers are installed
# (libslurm-dev), from the release preset (build/release), and checks the .deb with lintian.
#   scripts/package.sh            # -> build/packages/slurm-auto-resume_<ver>+slurm<series>-1_<arch>.deb
#                                 #    build/packages/slurm-auto-resume-<ver>+slurm<series>-1.<arch>.rpm
# AR_PACKAGE_DIR sets the output folder; AR_BUILD_DIR the build folder (default build/release: a
# chroot of another series builds in its own, e.g. build/series-24.11, configured like the release
# preset); AR_PACKAGE_FORMATS which packages ("DEB RPM", the default, or "DEB": a series' chroot has
# no rpmbuild). Needs what scripts/install-deps.sh installs (lintian, rpm).
# Exits non-zero when the build fails or lintian reports a tag that packaging/debian/lintian-overrides
# does not override (each override there says why).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${AR_PACKAGE_DIR:-$root/build/packages}
build=${AR_BUILD_DIR:-$root/build/release}
read -r -a formats <<<"${AR_PACKAGE_FORMATS:-DEB RPM}"

die() { echo "package.sh: $*" >&2; exit 1; }
tools=(cmake cpack dpkg-deb dpkg-shlibdeps lintian gzip)
for f in "${formats[@]}"; do
  case $f in
    DEB) ;;
    RPM) tools+=(rpmbuild) ;;
    *) die "AR_PACKAGE_FORMATS: unknown format '$f' (DEB, RPM)" ;;
  esac
done
for cmd in "${tools[@]}"; do
  command -v "$cmd" >/dev/null || die "'$cmd' not found (run scripts/install-deps.sh)"
done

# Only what the packages hold is built: the plugin, the daemon, the CLI and the man pages (docs/man,
# pandoc at build time), not the unit tests and benchmarks the preset also has. With
# CMAKE_SKIP_INSTALL_ALL_DEPENDENCY cpack does not build every target first, so a target added to
# the packages must be added here. It only changes what `make install` builds in build/release; the
# preset's own options are left as they are.
cmake --preset release -B "$build" -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON -DAR_MAN_PAGES=ON >/dev/null
cmake --build "$build" -j2 --target auto_resume healthd healthctl man_pages

rm -rf "$out"
mkdir -p "$out"
generators=$(IFS=';'; echo "${formats[*]}")
(cd "$build" && cpack -G "$generators" -B "$out") || die "cpack failed (see above; cpack --verbose in $build says more)"
rm -rf "$out/_CPack_Packages"

shopt -s nullglob
debs=("$out"/*.deb)
rpms=("$out"/*.rpm)
want_rpms=0
[[ " ${formats[*]} " != *" RPM "* ]] || want_rpms=1
if [ "${#debs[@]}" -ne 1 ] || [ "${#rpms[@]}" -ne "$want_rpms" ]; then
  die "expected one .deb and $want_rpms .rpm in $out, found: $(ls "$out")"
fi

# lintian: errors, warnings and info tags fail (pedantic ones are shown, not judged). Overrides are
# in the package itself (/usr/share/lintian/overrides/slurm-auto-resume).
echo "package.sh: lintian ${debs[0]##*/}"
lintian --fail-on error,warning,info --display-info --pedantic "${debs[0]}" ||
  die "lintian found tags in ${debs[0]##*/} (above; lintian --info explains each): fix them, or override one in packaging/debian/lintian-overrides with a comment saying why"

echo "package.sh: built in $out:"
printf '  %s\n' "${debs[0]##*/}" "${rpms[@]##*/}"
dpkg-deb -f "${debs[0]}" Version Depends | sed 's/^/  /'
