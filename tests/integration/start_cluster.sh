#!/usr/bin/env bash
# ctest fixture: the fake host tree of every node (its kernel log), then the real cluster.
set -euo pipefail
dir=$1
for node in n1 n2 n3; do
  mkdir -p "$dir/host/$node/var/log"
  : >"$dir/host/$node/var/log/kern.log"
  # The checkpoint filesystem as the storage check sees it: a mount table entry and a directory.
  mkdir -p "$dir/host/$node/proc" "$dir/host/$node/fsx" "$dir/host/$node/etc"
  printf 'fsx@tcp:/fsx /fsx lustre rw,flock 0 0\n' >"$dir/host/$node/proc/mounts"
  rm -f "$dir/host/$node/etc/admin-check"
done
rm -f "$dir/etc/healthd.toml"  # cluster.sh writes it from AR_HEALTHD_CONFIG only when missing
exec "$(dirname "$0")/../cluster/cluster.sh" start "$dir"
