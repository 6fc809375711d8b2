#!/usr/bin/env bats
# The .rpm, checked from the file (no RPM-based system here to install it on): name and version,
# what it requires, its config files, the directories it owns, its scriptlets.

load helpers

RPM=$(the_one "$AR_PACKAGE_DIR/*.rpm")
rpm_q() { rpm -qp --nosignature "$@" "$RPM" 2>/dev/null; }

@test "the rpm is named and versioned with the Slurm series of the installed headers" {
  [ "$(rpm_q --qf '%{NAME} %{VERSION} %{RELEASE} %{LICENSE}\n')" = "$PKG $(project_version)+slurm$(slurm_series) 1 Apache-2.0" ]
  [ "$(rpm_q --qf '%{URL}\n')" = "https://github.com/slurm-auto-resume/slurm-auto-resume" ]
  # The package's own description (not CPack's stock text), naming the series.
  rpm_q --qf '%{DESCRIPTION}\n' | grep -q "Built for Slurm $(slurm_series)"
  rpm_q --qf '%{SUMMARY}\n' | grep -q "SPANK plugin and node health daemon"
}

@test "the rpm requires Slurm of its series and the libraries the binaries link" {
  run rpm_q --requires
  [ "$status" -eq 0 ]
  local want
  for want in "slurm >= $(slurm_series)" "slurm < $(next_series)" "libslurm.so.38()(64bit)" \
    "libcurl.so.4()(64bit)" "libsystemd.so.0()(64bit)" "libre2.so.9()(64bit)"; do
    grep -qxF "$want" <<<"$output" || { echo "missing Requires: $want"; echo "$output"; return 1; }
  done
}

@test "the rpm holds the binaries, the unit, the configs, the docs and the man pages" {
  run rpm_q --list
  [ "$status" -eq 0 ]
  local want
  for want in /usr/sbin/healthd /usr/bin/healthctl /usr/lib/slurm/auto_resume.so \
    /usr/lib/systemd/system/healthd.service /etc/healthd/healthd.toml \
    /etc/slurm/plugstack.conf.d/auto-resume.conf /usr/share/doc/slurm-auto-resume/copyright \
    /usr/share/man/man8/healthd.8.gz /usr/share/man/man1/healthctl.1.gz; do
    grep -qxF "$want" <<<"$output" || { echo "not in the rpm: $want"; echo "$output"; return 1; }
  done
  # Debian's lintian overrides stay out of it.
  if grep lintian <<<"$output"; then echo "Debian's lintian overrides are in the rpm"; return 1; fi
}

@test "the rpm marks exactly the two config files %config(noreplace)" {
  run rpm_q --configfiles
  [ "$status" -eq 0 ]
  [ "$output" = "$(printf '%s\n' /etc/healthd/healthd.toml /etc/slurm/plugstack.conf.d/auto-resume.conf)" ]
  # --dump: path size mtime digest mode owner group isconfig ...; the file flags say noreplace ("n").
  run rpm_q --dump
  [ "$(awk '$8 == 1 { print $1 }' <<<"$output" | sort)" = "$(printf '%s\n' /etc/healthd/healthd.toml /etc/slurm/plugstack.conf.d/auto-resume.conf)" ]
  run rpm_q --qf '[%{FILENAMES} %{FILEFLAGS:fflags}\n]'
  grep -qx '/etc/healthd/healthd.toml cn' <<<"$output"
  grep -qx '/etc/slurm/plugstack.conf.d/auto-resume.conf cn' <<<"$output"
}

@test "the rpm owns only its own directories, no system one" {
  # --dump: path size mtime digest mode ...; a directory's mode is 040xxx.
  run rpm_q --dump
  [ "$status" -eq 0 ]
  local dirs
  dirs=$(awk '$5 ~ /^040/ { print $1 }' <<<"$output" | sort)
  [ "$dirs" = "$(printf '%s\n' /etc/healthd /usr/lib/slurm /usr/share/doc/slurm-auto-resume /usr/share/slurm-auto-resume)" ] || {
    echo "directories the rpm owns:"; echo "$dirs"; return 1
  }
}

@test "the rpm's binaries are stripped" {
  run rpm_q --fileclass
  [ "$status" -eq 0 ]
  local bin
  for bin in /usr/sbin/healthd /usr/bin/healthctl /usr/lib/slurm/auto_resume.so; do
    grep -qE "^${bin}[[:space:]].*ELF.*, stripped$" <<<"$output" || { echo "not stripped: $bin"; echo "$output"; return 1; }
  done
}

@test "the rpm's scriptlets never start or restart healthd and pass where systemd does not run" {
  local tag script arg
  for tag in POSTIN PREUN POSTUN; do
    script=$(rpm_q --qf "%{$tag}\n")
    [ -n "$script" ] && [ "$script" != "(none)" ] || { echo "no $tag scriptlet"; return 1; }
    sh -n <<<"$script"
    if script_code <<<"$script" | grep -E "$STARTS_DAEMON"; then
      echo "$tag starts or restarts the daemon"; return 1
    fi
  done
  # Run them as rpm would ($1: 1 = install, 2 = upgrade, 0 = erase): each ends 0 on this machine,
  # whose PID 1 is not systemd (the unit is not installed: preun's disable finds nothing to do).
  if [ -d /run/systemd/system ]; then skip "systemd runs this machine: the scriptlets would act on it"; fi
  for tag in POSTIN PREUN POSTUN; do
    script=$(rpm_q --qf "%{$tag}\n")
    for arg in 0 1 2; do
      run sh -c "$script" sh "$arg"
      [ "$status" -eq 0 ] || { echo "$tag \$1=$arg: exit $status: $output"; return 1; }
    done
  done
}
