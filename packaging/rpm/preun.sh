# %preun of slurm-auto-resume ($1: 0 on erase, 1 or more on upgrade). On erase the unit is disabled
# (works without a running systemd) and a daemon systemd runs is stopped, as %systemd_preun does;
# never on upgrade.
if [ "$1" -eq 0 ]; then
	systemctl --no-reload disable healthd.service >/dev/null 2>&1 || :
	if [ -d /run/systemd/system ]; then
		systemctl stop healthd.service >/dev/null 2>&1 || :
	fi
fi
:
