# shellcheck shell=bash
# Sourced by the scripts that fetch from Debian's registry (slurm-chroot.sh, real-nvml.sh).

# The Debian mirror to fetch from: AR_DEBIAN_MIRROR where set (a site's own mirror), else the one
# this machine's apt uses (the registry).
mirror() {
  local uri=${AR_DEBIAN_MIRROR:-}
  if [ -n "$uri" ]; then
    echo "$uri"
    return
  fi
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    uri=$(awk '/^URIs:/ && $2 ~ /\/debian\/?$/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
  fi
  if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
    uri=$(awk '$1 == "deb" && $2 ~ /\/debian\/?$/ {print $2; exit}' /etc/apt/sources.list)
  fi
  echo "${uri:-http://deb.debian.org/debian}"
}
