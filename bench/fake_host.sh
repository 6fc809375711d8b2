#!/usr/bin/env bash
# fake_host.sh DIR: a large, healthy fake node for the check-cost and footprint benchmarks, built at the
# hardware boundary (files, a fake library, fake programs), never through a mode inside healthd:
#   DIR/host/var/log/kern.log                             a busy kernel log (BENCH_KMSG_LINES, 20000), no fault
#   DIR/host/sys/class/infiniband/rdmapNs0/...            32 EFA devices (vendor 0x1d0f, port 1 ACTIVE, hw_counters)
#   DIR/host/sys/devices/virtual/neuron_device/neuronN    16 Neuron devices, 8 cores each, ECC counters at 0,
#   DIR/host/dev/neuronN                                  and their device nodes
#   DIR/host/sys/devices/system/cpu/online, proc/meminfo  192 CPUs, 2 TiB of memory (a p5.48xlarge)
#   DIR/host/proc/N/comm                                  BENCH_PROCS (1000) processes, munged and slurmd among them
#   DIR/host/proc/mounts, DIR/host/fsx                    the checkpoint filesystem (lustre) the storage check probes
#   DIR/host/proc/sys/kernel/random/boot_id, dev/shm      as a booted node has them
#   DIR/nvml-scenario.json                                8 healthy H100 GPUs for tests/fakes/libfake-nvml.so
#   DIR/dcgmi                                             a dcgmi whose `diag -r 1 -j` passes every test
#   DIR/admin-check.sh                                    an admin's [[checks.script]] that reports ok
#   DIR/imds/                                             EC2 metadata for tests/fakes/imds_server.py: no event
#   DIR/healthd.toml.in   the config, every [checks.*] section with the node's real counts; its EC2 endpoint
#                         has @IMDS_PORT@, filled in by fake_node_start (bench/lib.sh) once the server listens
#   DIR/healthd.env       VAR=VALUE words for healthd's environment (FAKE_NVML_SCENARIO)
# BENCH_EXTRA_TOML names a file appended to the config as is. The config keys are those of
# healthd/config/config.cpp and healthd/checks/*/*_config.cpp; healthd refuses a config it does not know, and fake_node_start fails with
# its message.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
dir=${1:?usage: fake_host.sh DIR}
dir=$(cd "$dir" && pwd)
need_built "$HEALTHD"
GPUS=${BENCH_GPUS:-8} EFAS=${BENCH_EFAS:-32} NEURONS=${BENCH_NEURONS:-16} NEURON_CORES=8
CPUS=${BENCH_CPUS:-192} MEM_GIB=${BENCH_MEM_GIB:-2048} PROCS=${BENCH_PROCS:-1000}
fake_nvml=$BUILD/tests/fakes/libfake-nvml.so
[ -e "$fake_nvml" ] || bench_die "$fake_nvml is missing: build the release preset (bench/run.sh does)"

rm -rf "$dir/host" "$dir/imds" && mkdir -p "$dir/host/var/log"
host=$dir/host

# A busy kernel log: the benign traffic of a big node (none of it matches a fault rule).
awk -v n="${BENCH_KMSG_LINES:-20000}" 'BEGIN {
  split("eth0: renamed from veth1a2b|audit: type=1400 audit(1700000000.123:42): apparmor=\"STATUS\"|EXT4-fs (nvme0n1p1): mounted filesystem with ordered data mode|IPv6: ADDRCONF(NETDEV_CHANGE): eni2: link becomes ready|nvidia-nvswitch0: open (major=507)|efa 0000:31:00.0: Setup irq:0x82 name:efa-mgmnt@pci:0000:31:00.0|TCP: request_sock_TCP: Possible SYN flooding on port 22|neuron: loading neuron driver version 2.19", m, "|")
  for (i = 0; i < n; i++) printf "<6>[%d.%06d] %s\n", 1000 + i / 100, (i * 7919) % 1000000, m[i % 8 + 1]
}' >"$host/var/log/kern.log"

# EFA: what /sys/class/infiniband/<dev> holds on a p5 (healthd/collectors/efa_sysfs.hpp): device/vendor
# 0x1d0f marks an EFA device; port state; hw_counters, steady (healthd judges their rise).
counters="alloc_pd_err alloc_ucontext_err cmds_err completed_cmds create_ah_err create_cq_err create_qp_err
keep_alive_rcvd lifespan mmap_err reg_mr_err rx_bytes rx_drops rx_pkts tx_bytes tx_pkts rdma_read_bytes
rdma_read_resp_bytes rdma_read_wr_err rdma_write_bytes rdma_write_recv_bytes rdma_write_wr_err retrans_bytes
retrans_pkts retrans_timeout_events impaired_remote_conn_events unresponsive_remote_events"
for ((i = 0; i < EFAS; i++)); do
  d=$host/sys/class/infiniband/rdmap$((16 + i))s0
  mkdir -p "$d/ports/1/hw_counters" "$d/device"
  echo "4: ACTIVE" >"$d/ports/1/state"
  echo "5: LinkUp" >"$d/ports/1/phys_state"
  echo "100 Gb/sec (4X EDR)" >"$d/ports/1/rate"
  echo "0x1d0f" >"$d/device/vendor"
  echo "0xefa1" >"$d/device/device"
  echo "efa" >"$d/node_type"
  for c in $counters; do echo $((i * 1000 + ${#c})) >"$d/ports/1/hw_counters/$c"; done
  mkdir -p "$d/hw_counters"  # the device level (efa_device_stats_descs)
  for c in submitted_cmds completed_cmds cmds_err no_completion_cmds keep_alive_rcvd; do echo $((i * 10)) >"$d/hw_counters/$c"; done
done

# Neuron, laid out as driver 2.30.2 on Trainium2 (healthd/collectors/neuron_layout.hpp,
# tests/unit/neuron_fixtures.hpp): neuronN/stats/hardware/<counter>, one number per file, all 0, with
# the correctable counters and health_status (unhealthy_components empty, healthcheck_heartbeat);
# per core the driver's 25 status counters and 6 other_info counters (total/present; healthd walks
# past them, reads none); /dev/neuronN; /sys/module/neuron/version.
# BENCH_NEURON_CORE_COUNTERS=1 adds per-core copies of the hardware counters
# (neuron_coreM/stats/hardware/<counter>/total): 16 x 8 x 3 more counters in healthd's status.
mkdir -p "$host/dev/shm" "$host/sys/module/neuron"
echo 2.30.2.0 >"$host/sys/module/neuron/version"
status_counters="success failure timeout exec_bad_input hw_error execute_completed_with_error
  execute_completed_with_num_error generic_error resource_error resource_nc_error execute_failed_to_queue
  invalid_error unsupported_neff_version oob_error hw_collectives_error hw_hbm_ue_error hw_nc_ue_error
  hw_dma_abort_error execute_sw_nq_overflow execute_sw_semaphore_error execute_sw_event_error
  execute_sw_psum_collision execute_sw_sequencer_fatal hw_repairable_hbm_ue_error"
other_counters="model_load_count reset_req_count reset_fail_count inference_count flop_count nc_time_in_use"
for ((i = 0; i < NEURONS; i++)); do
  d=$host/sys/devices/virtual/neuron_device/neuron$i
  mkdir -p "$d/stats/hardware/health_status" "$d/info/architecture"
  : >"$host/dev/neuron$i"
  echo "$NEURON_CORES" >"$d/core_count"
  echo Trainium2 >"$d/info/architecture/device_name"
  echo "$(((i + 1) % NEURONS)), $(((i + NEURONS - 1) % NEURONS))" >"$d/connected_devices"
  for c in mem_ecc_uncorrected mem_ecc_repairable_uncorrected sram_ecc_uncorrected mem_ecc_corrected sram_ecc_corrected; do
    echo 0 >"$d/stats/hardware/$c"
  done
  : >"$d/stats/hardware/health_status/unhealthy_components"
  echo 1 >"$d/stats/hardware/health_status/healthcheck_heartbeat"
  for ((c = 0; c < NEURON_CORES; c++)); do
    stats=""
    for s in $status_counters; do stats+=" status/$s"; done
    for s in $other_counters; do stats+=" other_info/$s"; done
    [ "${BENCH_NEURON_CORE_COUNTERS:-0}" = 1 ] &&
      stats+=" hardware/mem_ecc_uncorrected hardware/mem_ecc_repairable_uncorrected hardware/sram_ecc_uncorrected"
    for s in $stats; do
      mkdir -p "$d/neuron_core$c/stats/$s"
      echo 0 >"$d/neuron_core$c/stats/$s/total"
      echo 0 >"$d/neuron_core$c/stats/$s/present"
    done
  done
done

# The node check (healthd/collectors/node_info.cpp): online CPUs, MemTotal, /dev/shm, /proc/*/comm.
mkdir -p "$host/sys/devices/system/cpu" "$host/proc/sys/kernel/random"
echo "0-$((CPUS - 1))" >"$host/sys/devices/system/cpu/online"
printf 'MemTotal:       %d kB\nMemFree:        %d kB\n' $((MEM_GIB * 1024 * 1024 * 97 / 100)) $((MEM_GIB * 1024 * 1024 / 2)) >"$host/proc/meminfo"
names=(kworker/0:1 systemd-journal sshd bash python3 nv-fabricmanager dcgm-exporter chronyd amazon-ssm-agen
  slurmstepd rsyslogd containerd dockerd pt_main_thread)
for ((p = 0; p < PROCS; p++)); do
  mkdir -p "$host/proc/$((1000 + p))"
  echo "${names[p % ${#names[@]}]}" >"$host/proc/$((1000 + p))/comm"
done
mkdir -p "$host/proc/101" "$host/proc/102"
echo munged >"$host/proc/101/comm"
echo slurmd >"$host/proc/102/comm"
cat /proc/sys/kernel/random/uuid >"$host/proc/sys/kernel/random/boot_id"

# The checkpoint filesystem as the storage check sees it: a mount table entry and a directory (probed).
mkdir -p "$host/fsx"
printf '/dev/nvme0n1p1 / ext4 rw,relatime 0 0\nproc /proc proc rw 0 0\ntmpfs /dev/shm tmpfs rw 0 0\nfsx@tcp:/fsx /fsx lustre rw,flock 0 0\n' >"$host/proc/mounts"

# GPUs: the fake NVML library's scenario (tests/fakes/README.md): 8 healthy H100s, 18 NVLinks each.
{
  printf '{"driver_version": "570.86.15", "devices": ['
  for ((i = 0; i < GPUS; i++)); do
    ((i == 0)) || printf ','
    printf '\n  {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-bench-%04d", "bus_id": "00000000:%02x:00.0"}' "$i" $((0x18 + i * 0x10))
  done
  printf '\n]}\n'
} >"$dir/nvml-scenario.json"
[ -z "${BENCH_NVML_SCENARIO:-}" ] || cp "$BENCH_NVML_SCENARIO" "$dir/nvml-scenario.json"
printf 'FAKE_NVML_SCENARIO=%s\n' "$dir/nvml-scenario.json" >"$dir/healthd.env"

# DCGM: a dcgmi that answers `diag -r N -j` at once with every test passed (DCGM 4 layout). It stands
# for healthd's side of the deep check (start dcgmi, read and judge its JSON); the real diagnostic
# runs for minutes on the GPUs, on an idle node, once a day by default.
{
  echo '#!/bin/sh'
  echo 'cat <<EOF'
  printf '{"DCGM Diagnostic": {"version": "4.1.1", "tests": ['
  t=0
  for name in software memory pcie diagnostic targeted_power; do
    ((t++ == 0)) || printf ','
    printf '{"name": "%s", "results": [' "$name"
    for ((i = 0; i < GPUS; i++)); do ((i == 0)) || printf ','; printf '{"entity_id": %d, "status": "Pass"}' "$i"; done
    printf ']}'
  done
  printf ']}}\n'
  echo 'EOF'
} >"$dir/dcgmi"
chmod +x "$dir/dcgmi"

# An admin's own check ([[checks.script]]): exit 0 and one line, as the simplest such script does.
printf '#!/bin/sh\necho "all good"\nexit 0\n' >"$dir/admin-check.sh"
chmod +x "$dir/admin-check.sh"

# EC2 instance metadata (IMDSv2, served by tests/fakes/imds_server.py): no scheduled event (EC2 answers
# "[]"), no spot interruption (404).
mkdir -p "$dir/imds/events/maintenance"
echo '[]' >"$dir/imds/events/maintenance/scheduled"

# The clock: judged when this machine's clock is synchronised; otherwise (containers often are not) the
# node would warn, so the judgement is left off and the output says so.
clock_action=warn
if ! python3 -c 'import ctypes, sys; b = ctypes.create_string_buffer(512); s = ctypes.CDLL(None).adjtimex(b); sys.exit(0 if 0 <= s < 5 and not (int.from_bytes(b[40:44], "little") & 0x40) else 1)' 2>/dev/null; then
  clock_action=none
fi
echo "clock_action $clock_action" >"$dir/notes.txt"

cat >"$dir/healthd.toml.in" <<TOML
# The large fake node of bench/fake_host.sh: every check configured, with the node's real counts.
[daemon]
host_root = "$host"
log_level = "warn"

[checks.kernel_log]
path = "/var/log/kern.log"

[checks.gpu]
library = "$fake_nvml"
expected_count = $GPUS
nvlink_expected_links = 18

[checks.dcgm]
enabled = true
dcgmi = "$dir/dcgmi"
level = 1

[checks.efa]
expected_devices = $EFAS

[checks.neuron]
expected_devices = $NEURONS

[checks.node]
expected_cpus = $CPUS
min_memory_gib = $((MEM_GIB * 9 / 10))
clock_action = "$clock_action"
required_processes = ["munged", "slurmd"]

[checks.storage]
[[checks.storage.mount]]
path = "/fsx"
fstype = "lustre"

[checks.ec2]
enabled = true
endpoint = "http://127.0.0.1:@IMDS_PORT@"

[[checks.script]]
name = "admin"
command = ["$dir/admin-check.sh"]
TOML
[ -z "${BENCH_EXTRA_TOML:-}" ] || cat "$BENCH_EXTRA_TOML" >>"$dir/healthd.toml.in"
echo "fake host: $GPUS GPUs (fake NVML), $EFAS EFA devices, $NEURONS Neuron devices, $CPUS CPUs, $PROCS processes," \
  "$(wc -l <"$host/var/log/kern.log") kernel-log lines, /fsx (lustre), DCGM, EC2 metadata, an admin script; under $dir" \
  "$([ "$clock_action" = none ] && echo "(this machine's clock is not synchronised: node.clock not judged)")"
