#!/usr/bin/env bash
# ctest fixture: the fake host tree of every node (kernel log, sysfs, /dev, /proc), then the real cluster.
set -euo pipefail
dir=$1
for node in $(seq -f "n%g" 1 "${AR_NODES:-3}"); do  # cluster.sh reads AR_NODES too
  mkdir -p "$dir/host/$node/var/log"
  : >"$dir/host/$node/var/log/kern.log"
  # A healthy node for the EFA, Neuron and node checks (tests/integration/node_checks.bats), laid out
  # as the newest documented drivers do: two EFA devices (efa r2.17: PCI id 0xefa1, device counters,
  # the network port counters) with port 1 ACTIVE; two Trainium2 devices on Neuron driver 2.30.2
  # (stats/hardware with the correctable counters, health_status with unhealthy_components and
  # healthcheck_heartbeat; tests/unit/neuron_fixtures.hpp cites the source of each path); 8 CPUs,
  # munged and slurmd.
  h="$dir/host/$node"
  rm -rf "$h/sys" "$h/dev" "$h/proc"
  mkdir -p "$h/sys/module/efa" "$h/sys/module/neuron"
  echo 2.17.3g >"$h/sys/module/efa/version"
  echo 2.30.2.0 >"$h/sys/module/neuron/version"
  for efa in rdmap16s27 rdmap32s27; do
    mkdir -p "$h/sys/class/infiniband/$efa/device" "$h/sys/class/infiniband/$efa/hw_counters" \
      "$h/sys/class/infiniband/$efa/ports/1/hw_counters"
    echo 0x1d0f >"$h/sys/class/infiniband/$efa/device/vendor"
    echo 0xefa1 >"$h/sys/class/infiniband/$efa/device/device"
    echo "4: ACTIVE" >"$h/sys/class/infiniband/$efa/ports/1/state"
    for c in submitted_cmds completed_cmds cmds_err no_completion_cmds keep_alive_rcvd; do
      echo 0 >"$h/sys/class/infiniband/$efa/hw_counters/$c"
    done
    for c in rdma_read_wr_err rdma_write_wr_err rx_drops retrans_timeout_events unresponsive_remote_events \
      impaired_remote_conn_events; do
      echo 0 >"$h/sys/class/infiniband/$efa/ports/1/hw_counters/$c"
    done
  done
  mkdir -p "$h/dev/shm"
  for n in 0 1; do
    nd="$h/sys/devices/virtual/neuron_device/neuron$n"
    mkdir -p "$nd/info/architecture" "$nd/stats/hardware/health_status" "$nd/neuron_core0/stats/status/hw_error"
    echo Trainium2 >"$nd/info/architecture/device_name"
    echo 0 >"$nd/neuron_core0/stats/status/hw_error/total"
    for c in mem_ecc_uncorrected mem_ecc_repairable_uncorrected sram_ecc_uncorrected mem_ecc_corrected \
      sram_ecc_corrected; do
      echo 0 >"$nd/stats/hardware/$c"
    done
    : >"$nd/stats/hardware/health_status/unhealthy_components"
    echo 1 >"$nd/stats/hardware/health_status/healthcheck_heartbeat"
    : >"$h/dev/neuron$n"
  done
  # Host memory as the kernel's EDAC driver shows it (sysfs-devices-edac): one controller, two DIMMs.
  for d in 0 1; do
    mkdir -p "$h/sys/devices/system/edac/mc/mc0/dimm$d"
    echo 0 >"$h/sys/devices/system/edac/mc/mc0/dimm$d/dimm_ue_count"
    echo 0 >"$h/sys/devices/system/edac/mc/mc0/dimm$d/dimm_ce_count"
    echo "CPU_SrcID#0_MC#0_Chan#${d}_DIMM#0" >"$h/sys/devices/system/edac/mc/mc0/dimm$d/dimm_label"
  done
  echo 0 >"$h/sys/devices/system/edac/mc/mc0/ue_count"
  echo 0 >"$h/sys/devices/system/edac/mc/mc0/ce_count"
  echo "Skylake Socket#0 IMC#0" >"$h/sys/devices/system/edac/mc/mc0/mc_name"
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
# The tests' jobs are submitted by an ordinary account, as on a real cluster (root is the admin);
# arother is another ordinary user of the same queue; see tests/integration/helpers.bash.
if ! id arjob >/dev/null 2>&1; then
  useradd --create-home --shell /bin/bash --comment "slurm-auto-resume test jobs" arjob
fi
if ! id arother >/dev/null 2>&1; then
  useradd --create-home --shell /bin/bash --comment "slurm-auto-resume tests, another user" arother
fi
# The examples the jobs run, where that user can read them (a checkout under /root is not).
if [ -n "${AR_EXAMPLES:-}" ]; then
  rm -rf "$dir/examples"
  cp -r "$AR_EXAMPLES" "$dir/examples"
  chmod -R a+rX "$dir/examples"
fi
mkdir -p "$dir/work"
chmod 0755 "$dir" "$dir/work"
rm -f "$dir/etc/healthd.toml"  # cluster.sh writes it from AR_HEALTHD_CONFIG only when missing
exec "$(dirname "$0")/../cluster/cluster.sh" start "$dir"
