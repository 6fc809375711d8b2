#!/usr/bin/env bash
# ctest fixture: the fake host tree of every node (kernel log, sysfs, /dev, /proc), then the real cluster.
set -euo pipefail
dir=$1
for node in n1 n2 n3; do
  mkdir -p "$dir/host/$node/var/log"
  : >"$dir/host/$node/var/log/kern.log"
  # A healthy node for the EFA, Neuron and node checks (tests/integration/node_checks.bats): two EFA
  # devices with port 1 ACTIVE, two Neuron devices without ECC errors, 8 CPUs, munged and slurmd.
  h="$dir/host/$node"
  rm -rf "$h/sys" "$h/dev" "$h/proc"
  for efa in rdmap16s27 rdmap32s27; do
    mkdir -p "$h/sys/class/infiniband/$efa/device" "$h/sys/class/infiniband/$efa/ports/1/hw_counters"
    echo 0x1d0f >"$h/sys/class/infiniband/$efa/device/vendor"
    echo "4: ACTIVE" >"$h/sys/class/infiniband/$efa/ports/1/state"
    for c in rdma_read_wr_err rdma_write_wr_err rx_drops retrans_timeout_events; do
      echo 0 >"$h/sys/class/infiniband/$efa/ports/1/hw_counters/$c"
    done
  done
  mkdir -p "$h/dev/shm"
  for n in 0 1; do
    mkdir -p "$h/sys/devices/virtual/neuron_device/neuron$n/stats/hardware"
    for c in mem_ecc_uncorrected mem_ecc_repairable_uncorrected sram_ecc_uncorrected; do
      echo 0 >"$h/sys/devices/virtual/neuron_device/neuron$n/stats/hardware/$c"
    done
    : >"$h/dev/neuron$n"
  done
  mkdir -p "$h/sys/devices/system/cpu" "$h/proc/101" "$h/proc/102"
  echo 0-7 >"$h/sys/devices/system/cpu/online"
  printf 'MemTotal:       16384000 kB\nMemFree:        8192000 kB\n' >"$h/proc/meminfo"
  echo munged >"$h/proc/101/comm"
  echo slurmd >"$h/proc/102/comm"
  # Two healthy GPUs (fake NVML) and a boot id, as a fresh boot would have.
  printf '{"devices": [{}, {}]}\n' >"$dir/host/$node/nvml.json"
  mkdir -p "$dir/host/$node/proc/sys/kernel/random"
  cat /proc/sys/kernel/random/uuid >"$dir/host/$node/proc/sys/kernel/random/boot_id"
  # The checkpoint filesystem as the storage check sees it: a mount table entry and a directory.
  mkdir -p "$dir/host/$node/proc" "$dir/host/$node/fsx" "$dir/host/$node/etc"
  printf 'fsx@tcp:/fsx /fsx lustre rw,flock 0 0\n' >"$dir/host/$node/proc/mounts"
  rm -f "$dir/host/$node/etc/admin-check"
done
rm -f "$dir/etc/healthd.toml"  # cluster.sh writes it from AR_HEALTHD_CONFIG only when missing
exec "$(dirname "$0")/../cluster/cluster.sh" start "$dir"
