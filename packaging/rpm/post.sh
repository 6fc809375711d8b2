# %post of slurm-auto-resume ($1: 1 on install, 2 or more on upgrade). As on Debian, healthd is never
# enabled, started or restarted from here: the admin reviews the config first and decides when a
# running daemon picks up a new binary. Must not fail where systemd does not run (a chroot, an image).
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || :
fi
if [ "$1" -eq 1 ]; then
	echo "slurm-auto-resume: healthd is installed, not enabled nor started. Review /etc/healthd/healthd.toml, then run: systemctl enable --now healthd"
else
	# A running healthd: its /proc/PID/exe is /usr/sbin/healthd, " (deleted)" once replaced.
	for exe in /proc/[0-9]*/exe; do
		case "$(readlink "$exe" 2>/dev/null || :)" in
		/usr/sbin/healthd | "/usr/sbin/healthd (deleted)")
			echo "slurm-auto-resume: the running healthd was not restarted and still runs the version it started with. To run this one: systemctl restart healthd"
			break
			;;
		esac
	done
fi
:
