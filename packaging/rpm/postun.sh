# %postun of slurm-auto-resume ($1: 0 on erase, 1 or more on upgrade). The unit file changed or went:
# systemd reads its units again where it runs. RPM has no purge: /var/lib/healthd (healthd's state)
# stays on erase, like the .rpmsave of an edited config.
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || :
fi
:
