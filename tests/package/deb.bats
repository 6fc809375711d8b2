#!/usr/bin/env bats
# The .deb's life on this machine, in order: what the file holds, `apt-get install ./file.deb`, the
# installed binaries, man page, config and unit, the installed daemon and plugin on a real Slurm
# cluster, an admin's conffile edits across a reinstall and an upgrade under a running daemon, then
# remove and purge, after which nothing the package installed may be left. Needs root. The machine
# is left as found: teardown_file purges the package whatever failed.

load helpers

CLUSTER=/tmp/ar-package-cluster
# Set aside for the duration where the image drops man pages (Docker-style dpkg excludes).
MAN_INCLUDE=/etc/dpkg/dpkg.cfg.d/zz-slurm-auto-resume-package-test
WANTS_LINK=/etc/systemd/system/multi-user.target.wants/healthd.service

# wait_until SECONDS CMD...: polls CMD every 0.2 s until it succeeds; fails after SECONDS.
wait_until() {
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do
    if ((SECONDS >= deadline)); then echo "timed out waiting for: $*" >&2; return 1; fi
    sleep 0.2
  done
}

# The pid of a running installed healthd (its exe is /usr/sbin/healthd, " (deleted)" once replaced).
installed_daemon_pids() {
  local exe
  for exe in /proc/[0-9]*/exe; do
    case "$(readlink "$exe" 2>/dev/null)" in
      /usr/sbin/healthd | "/usr/sbin/healthd (deleted)") exe=${exe#/proc/}; echo "${exe%/exe}" ;;
    esac
  done
}

setup_file() {
  [ "$(id -u)" -eq 0 ] || { echo "the package tier installs a package: run it as root" >&2; return 1; }
  # Refuse rather than clobber: purge below would take an admin's healthd state or config with it.
  local path
  if dpkg-query -W "$PKG" >/dev/null 2>&1; then
    echo "$PKG is already on this machine ($(dpkg-query -W -f '${db:Status-Abbrev}' "$PKG")); the tier installs and purges it itself: apt-get purge $PKG first" >&2
    return 1
  fi
  for path in /etc/healthd /var/lib/healthd /run/healthd /usr/lib/slurm/auto_resume.so "$WANTS_LINK"; do
    if [ -e "$path" ] || [ -L "$path" ]; then
      echo "$path exists before the package is installed: the tier would remove it at purge; move it away first" >&2
      return 1
    fi
  done
  # Docker-style images drop /usr/share/man at unpack (path-exclude in /etc/dpkg/dpkg.cfg.d/): the
  # man page check needs ours, so they are let in for the tier and the exception removed after.
  if grep -rqs '^path-exclude[= ]/usr/share/man' /etc/dpkg/dpkg.cfg.d/; then
    printf 'path-include=/usr/share/man/*/%s*\n' healthd healthctl auto_resume >"$MAN_INCLUDE"
  fi
  # From here on teardown_file cleans up: all of the above was checked absent.
  touch "$BATS_FILE_TMPDIR/machine-checked"
}

# A failed cluster test stops its cluster here, still holding the cluster lock.
teardown() {
  if [ -d "$CLUSTER" ]; then "$REPO_ROOT/tests/cluster/cluster.sh" stop "$CLUSTER" 3>&- || true; rm -rf "$CLUSTER"; fi
}

teardown_file() {
  [ -e "$BATS_FILE_TMPDIR/machine-checked" ] || return 0
  local pid
  for pid in $(installed_daemon_pids); do kill -TERM "$pid" 2>/dev/null || true; done
  if dpkg-query -W "$PKG" >/dev/null 2>&1; then apt_get purge -y "$PKG" >/dev/null || true; fi
  # setup_file made sure none of these existed before.
  rm -rf /etc/healthd /var/lib/healthd /run/healthd "$CLUSTER" "$MAN_INCLUDE"
  if [ -L "$WANTS_LINK" ]; then rm -f "$WANTS_LINK"; fi
}

# control FIELD: a field of the .deb's control file.
control() { dpkg-deb -f "$DEB" "$1"; }

# runtime_package LIB: the Debian package holding the shared library LIB (libslurm: the one whose
# soname this machine's libslurm-dev links to), e.g. libslurm38.
runtime_package() {
  local path
  path=$(ldconfig -p | awk -v lib="$1" '$1 ~ "^" lib "\\.so\\.[0-9]" { print $NF; exit }')
  [ -n "$path" ] || { echo "no $1.so.N in ldconfig's cache" >&2; return 1; }
  dpkg -S "$(readlink -f "$path")" | head -n1 | cut -d: -f1
}

@test "the deb is versioned with the Slurm series of the installed headers and depends on that series" {
  local series next
  series=$(slurm_series)
  next=$(next_series)
  [ "$(control Package)" = "$PKG" ]
  [ "$(control Version)" = "$(project_version)+slurm$series-1" ]
  [ "$(control Section)" = admin ]
  [ "$(control Priority)" = optional ]
  [[ "$(control Maintainer)" =~ ^[^\<]+\ \<[^@\>]+@[^\>]+\>$ ]]
  [[ "$(control Homepage)" == https://* ]]
  # A synopsis and an extended description.
  [ "$(control Description | wc -l)" -gt 5 ]
  local depends want
  depends=$(control Depends)
  # The Slurm series (plugins, scontrol); libslurm of that ABI and the rest from shlibdeps.
  # libslurm is the package of this machine's release that holds the soname the binaries link,
  # found from the library itself: libslurm38 on Debian 12 (22.05), libslurm42t64 on 13 (24.11),
  # libslurm45 on testing (26.05). The other libraries by the start of their names (libcurl4 or
  # libcurl4t64; re2's package name carries its ABI, libre2-9 or libre2-11-absl20240722).
  local libslurm
  libslurm=$(runtime_package libslurm) || return 1
  for want in libcurl4 libsystemd0 libre2-; do
    [[ ", $depends," == *", $want"* ]] || { echo "Depends lacks $want...: $depends"; return 1; }
  done
  for want in "slurm-wlm-basic-plugins (>= $series~)" "slurm-wlm-basic-plugins (<< $next~)" \
    "slurm-client (>= $series~)" "slurm-client (<< $next~)" "$libslurm"; do
    [[ ", $depends," == *", $want"[\ ,]* ]] || { echo "Depends lacks $want: $depends"; return 1; }
  done
}

@test "the deb marks both config files as conffiles, ships stripped binaries, its copyright and changelog" {
  [ "$(dpkg-deb -I "$DEB" conffiles)" = "$(printf '%s\n' /etc/healthd/healthd.toml /etc/slurm/plugstack.conf.d/auto-resume.conf)" ]
  local root=$BATS_TEST_TMPDIR/root bin
  dpkg-deb -x "$DEB" "$root"
  for bin in usr/sbin/healthd usr/bin/healthctl usr/lib/slurm/auto_resume.so; do
    file -b "$root/$bin" | grep -q ', stripped$' || { echo "not stripped: $bin ($(file -b "$root/$bin"))"; return 1; }
    ! readelf -S -W "$root/$bin" | grep -qE '\.comment|\.note[[:space:]]' || { echo "$bin keeps .comment/.note"; return 1; }
  done
  # The plugstack line names the plugin where the package puts it.
  [ "$(awk '!/^#/ && NF { print $2 }' "$root/etc/slurm/plugstack.conf.d/auto-resume.conf")" = /usr/lib/slurm/auto_resume.so ]
  head -1 "$root/usr/share/doc/$PKG/copyright" | grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/'
  # The changelog's newest entry is this very version.
  [ "$(zcat "$root/usr/share/doc/$PKG/changelog.Debian.gz" | head -1)" = "$PKG ($(control Version)) bookworm; urgency=medium" ]
}

@test "the deb's maintainer scripts never start or restart healthd" {
  local ctl=$BATS_TEST_TMPDIR/ctl script
  dpkg-deb -e "$DEB" "$ctl"
  for script in postinst prerm postrm; do
    [ -x "$ctl/$script" ] || { echo "no executable $script"; return 1; }
    sh -n "$ctl/$script"
    if script_code <"$ctl/$script" | grep -E "$STARTS_DAEMON"; then
      echo "$script starts or restarts the daemon"; return 1
    fi
  done
}

@test "apt-get install ./file.deb installs it, and neither enables nor starts healthd" {
  cd "$(dirname "$DEB")"
  run apt_get install -y "./${DEB##*/}"
  [ "$status" -eq 0 ] || { echo "$output"; return 1; }
  installed
  [[ "$output" == *"healthd is installed, not enabled nor started"* ]]
  [ -z "$(installed_daemon_pids)" ]
  [ ! -e "$WANTS_LINK" ]
}

@test "the installed binaries run, find their libraries, and the plugstack line names the installed plugin" {
  [ "$(/usr/sbin/healthd --version)" = "healthd $(project_version)" ]
  run /usr/bin/healthctl --help
  [ "$status" -eq 0 ]
  [[ "$output" == *status* ]]
  local bin
  for bin in /usr/sbin/healthd /usr/bin/healthctl /usr/lib/slurm/auto_resume.so; do
    ! ldd "$bin" | grep 'not found' || { echo "$bin: a library is missing"; return 1; }
  done
  local plugin
  plugin=$(awk '!/^#/ && NF { print $2 }' /etc/slurm/plugstack.conf.d/auto-resume.conf)
  [ -f "$plugin" ]
  # Slurm's own plugstack.conf (slurm-wlm-basic-plugins) reads the directory our line is in.
  grep -qx 'include /etc/slurm/plugstack.conf.d/\*.conf' /etc/slurm/plugstack.conf
}

@test "man healthd and man healthctl show the installed pages" {
  [ "$(man -w healthd)" = /usr/share/man/man8/healthd.8.gz ]
  [ "$(man -w healthctl)" = /usr/share/man/man1/healthctl.1.gz ]
  MANPAGER=cat MANWIDTH=80 man healthd 2>/dev/null | grep -q -- '--check-config'
}

@test "healthd --check-config accepts the installed config" {
  run /usr/sbin/healthd --check-config
  [ "$status" -eq 0 ] || { echo "$output"; return 1; }
  [[ "${lines[0]}" == "config /etc/healthd/healthd.toml: ok" ]]
}

@test "systemd-analyze verify accepts the installed unit" {
  command -v systemd-analyze >/dev/null || skip "no systemd-analyze"
  run systemd-analyze verify /usr/lib/systemd/system/healthd.service
  [ "$status" -eq 0 ] || { echo "$output"; return 1; }
}

@test "the installed daemon and plugin serve an auto-resume job on a Slurm cluster" {
  # One cluster at a time on this machine (other engineers' cluster tests take the same lock).
  local t0=$SECONDS
  exec {lock}>/tmp/ar-cluster.lock
  flock -w 1200 "$lock" || { echo "waited 20 min for /tmp/ar-cluster.lock"; return 1; }
  echo "# waited $((SECONDS - t0)) s for the cluster lock" >&3
  rm -rf "$CLUSTER"
  AR_NODES=1 AR_PLUGIN=/usr/lib/slurm/auto_resume.so AR_HEALTHD=/usr/sbin/healthd \
    AR_HEALTHD_CONFIG=/etc/healthd/healthd.toml "$REPO_ROOT/tests/cluster/cluster.sh" start "$CLUSTER" 3>&-
  # shellcheck disable=SC1091
  source "$CLUSTER/env.sh"
  local sock=$CLUSTER/run/healthd-n1.sock
  run /usr/bin/healthctl --socket "$sock" status
  [ "$status" -le 1 ] || { echo "$output"; return 1; }  # 0 healthy, 1 warnings: not faulty, answering
  [[ "$output" == *"healthd:      $(project_version) "* ]]
  # healthd reached slurmctld through the installed libslurm and knows its node (no "slurm:" line).
  wait_until 30 bash -c "! /usr/bin/healthctl --socket '$sock' status | grep -q '^slurm:'"
  (cd /tmp && runuser -u nobody -- sbatch --help) | grep -q -- --auto-resume
  # The plugin, loaded by slurmstepd, flags the step and tells the installed daemon.
  local out job
  # As an ordinary user, as jobs are run on a real cluster (the plugin loaded by the user's srun).
  out=$(cd /tmp && runuser -u nobody -- timeout 120 srun --auto-resume=1 -N1 bash -c 'echo "$SLURM_JOB_ID $AUTO_RESUME"')
  job=${out% *}
  [ "${out#* }" = 1 ] || { echo "srun printed: $out"; return 1; }
  wait_until 10 bash -c "/usr/bin/healthctl --socket '$sock' jobs --json | grep -Eq '\"job_id\": *$job([^0-9]|\$)'"
  "$REPO_ROOT/tests/cluster/cluster.sh" stop "$CLUSTER" 3>&-
  rm -rf "$CLUSTER"
}

# upgrade_deb: the same package at a higher version whose healthd.toml changed (a new comment), as a
# release that documents a new key would be; auto-resume.conf is unchanged.
upgrade_deb() {
  local root=$BATS_FILE_TMPDIR/upgrade version
  rm -rf "$root"
  dpkg-deb -R "$DEB" "$root"
  version="$(control Version).1"
  sed -i "s/^Version: .*/Version: $version/" "$root/DEBIAN/control"
  echo "# a line the next release added" >>"$root/etc/healthd/healthd.toml"
  (cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | xargs -0 md5sum >DEBIAN/md5sums)
  dpkg-deb --root-owner-group -Zgzip -z1 -b "$root" "$BATS_FILE_TMPDIR/${PKG}_${version}_upgrade.deb" >/dev/null
  echo "$BATS_FILE_TMPDIR/${PKG}_${version}_upgrade.deb"
}

@test "an admin's conffile edits survive a reinstall and an upgrade, and the running healthd is not restarted" {
  local marker="# admin edit $$"
  echo "$marker" >>/etc/healthd/healthd.toml
  sed -i 's/ timeout_ms=200 / timeout_ms=300 /' /etc/slurm/plugstack.conf.d/auto-resume.conf
  grep -q ' timeout_ms=300 ' /etc/slurm/plugstack.conf.d/auto-resume.conf
  # The installed daemon as the unit runs it: default config, socket and state directory.
  setsid /usr/sbin/healthd --node pkgtest </dev/null >>"$BATS_FILE_TMPDIR/healthd.log" 2>&1 3>&- &
  local pid=$!
  wait_until 20 /usr/bin/healthctl ping >/dev/null

  cd "$(dirname "$DEB")"
  run apt_get install -y --reinstall "./${DEB##*/}"
  [ "$status" -eq 0 ] || { echo "$output"; return 1; }
  [[ "$output" == *"the running healthd was not restarted"*"systemctl restart healthd"* ]]
  grep -qxF "$marker" /etc/healthd/healthd.toml
  grep -q ' timeout_ms=300 ' /etc/slurm/plugstack.conf.d/auto-resume.conf
  [ -z "$(compgen -G '/etc/healthd/*.dpkg-*')" ] && [ -z "$(compgen -G '/etc/slurm/plugstack.conf.d/*.dpkg-*')" ]
  # The same process, still answering, its binary replaced under it.
  [ "$(installed_daemon_pids)" = "$pid" ]
  [ "$(readlink "/proc/$pid/exe")" = "/usr/sbin/healthd (deleted)" ]
  /usr/bin/healthctl status | grep -q "(pid $pid,"

  # An upgrade whose healthd.toml changed too: dpkg keeps the admin's file (--force-confold answers
  # its question as a non-interactive upgrade does) and sets the new one beside it.
  local new
  new=$(upgrade_deb)
  run apt_get install -y -o Dpkg::Options::=--force-confold "$new"
  [ "$status" -eq 0 ] || { echo "$output"; return 1; }
  [ "$(dpkg-query -W -f '${Version}' "$PKG")" = "$(control Version).1" ]
  [[ "$output" == *"the running healthd was not restarted"* ]]
  grep -qxF "$marker" /etc/healthd/healthd.toml
  if grep -q "a line the next release added" /etc/healthd/healthd.toml; then echo "the admin's healthd.toml was replaced"; return 1; fi
  grep -q "a line the next release added" /etc/healthd/healthd.toml.dpkg-dist
  # Unchanged in the package: the admin's edit is kept without a word.
  grep -q ' timeout_ms=300 ' /etc/slurm/plugstack.conf.d/auto-resume.conf
  [ -z "$(compgen -G '/etc/slurm/plugstack.conf.d/*.dpkg-*')" ]
  [ "$(installed_daemon_pids)" = "$pid" ]
  /usr/bin/healthctl status | grep -q "(pid $pid,"
}

@test "remove keeps the conffiles and healthd's state; purge leaves nothing the package installed" {
  # An admin's `systemctl enable healthd` (it works without a running systemd, on the files).
  systemctl enable healthd.service 2>/dev/null
  [ -L "$WANTS_LINK" ]
  local pid
  for pid in $(installed_daemon_pids); do kill -TERM "$pid"; done
  wait_until 20 bash -c '[ -z "$(for e in /proc/[0-9]*/exe; do readlink "$e"; done 2>/dev/null | grep "^/usr/sbin/healthd")" ]'
  # What the daemon wrote, where the unit's StateDirectory= and RuntimeDirectory= put it.
  [ -d /var/lib/healthd ] && [ -d /run/healthd ]
  local listed=$BATS_FILE_TMPDIR/dpkg-L
  dpkg -L "$PKG" >"$listed"

  run apt_get remove -y "$PKG"
  [ "$status" -eq 0 ] || { echo "$output"; return 1; }
  [ "$(dpkg-query -W -f '${db:Status-Status}' "$PKG")" = config-files ]
  [ ! -e /usr/sbin/healthd ]
  grep -q "^# admin edit " /etc/healthd/healthd.toml
  [ -d /var/lib/healthd ]

  run apt_get purge -y "$PKG"
  [ "$status" -eq 0 ] || { echo "$output"; return 1; }
  run dpkg-query -W "$PKG"
  [ "$status" -ne 0 ] || { echo "dpkg still knows $PKG: $output"; return 1; }
  # Every path the package listed is gone, or belongs to another package (/etc/slurm, /usr/lib/systemd, ...).
  local path left=()
  while read -r path; do
    [ "$path" != /. ] || continue
    if [ -e "$path" ] || [ -L "$path" ]; then
      dpkg-query -S "$path" >/dev/null 2>&1 || left+=("$path")
    fi
  done <"$listed"
  [ "${#left[@]}" -eq 0 ] || { echo "left after purge: ${left[*]}"; return 1; }
  # The conffiles (and the .dpkg-dist beside one), the state, the socket directory, the enable link.
  for path in /etc/healthd /etc/slurm/plugstack.conf.d/auto-resume.conf /var/lib/healthd /run/healthd "$WANTS_LINK"; do
    if [ -e "$path" ] || [ -L "$path" ]; then echo "left after purge: $path"; return 1; fi
  done
  [ -z "$(compgen -G '/etc/slurm/plugstack.conf.d/auto-resume.conf*')" ]
}
