#!/usr/bin/env bash
# ctest fixture: the fake host tree of every node (its kernel log), then the real cluster.
set -euo pipefail
dir=$1
for node in n1 n2 n3; do
  mkdir -p "$dir/host/$node/var/log"
  : >"$dir/host/$node/var/log/kern.log"
  # Two healthy GPUs (fake NVML) and a boot id, as a fresh boot would have.
  printf '{"devices": [{}, {}]}\n' >"$dir/host/$node/nvml.json"
  mkdir -p "$dir/host/$node/proc/sys/kernel/random"
  cat /proc/sys/kernel/random/uuid >"$dir/host/$node/proc/sys/kernel/random/boot_id"
done
rm -f "$dir/etc/healthd.toml"  # cluster.sh writes it from AR_HEALTHD_CONFIG only when missing
exec "$(dirname "$0")/../cluster/cluster.sh" start "$dir"
