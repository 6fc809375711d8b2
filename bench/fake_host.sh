#!/usr/bin/env bash
# fake_host.sh DIR: a large fake node for the check-cost and footprint benchmarks, built at the hardware
# boundary (files and a fake library), never through a mode inside healthd:
#   DIR/host/var/log/kern.log                                   a busy kernel log (BENCH_KMSG_LINES, 20000)
#   DIR/host/sys/class/infiniband/rdmapNs0/ports/1/...          32 EFA devices: state, rate, hw_counters
#   DIR/host/sys/devices/virtual/neuron_device/neuronN/...      16 Neuron devices, 8 cores each, counters
#   DIR/nvml-scenario.json                                      8 GPUs for the fake NVML library
#   DIR/healthd.toml    host_root = DIR/host, and a section for every check this healthd accepts
#   DIR/healthd.env     VAR=VALUE words for healthd's environment (the fake NVML library and scenario)
#   DIR/areas.txt       one line per area: "AREA configured SECTION" or "AREA not-configured WHY"
# The config sections are found by asking the daemon itself: each candidate is tried with a throwaway
# healthd (a config it does not know makes it exit at once with the key named), so this script keeps
# working while checks are being added. BENCH_EXTRA_TOML names a file appended to the config as is.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
dir=${1:?usage: fake_host.sh DIR}
need_built "$HEALTHD"
GPUS=${BENCH_GPUS:-8} EFAS=${BENCH_EFAS:-32} NEURONS=${BENCH_NEURONS:-16} NEURON_CORES=8

rm -rf "$dir/host" && mkdir -p "$dir/host/var/log"
host=$dir/host

# A busy kernel log: the benign traffic of a big node (none of it matches a fault rule).
awk -v n="${BENCH_KMSG_LINES:-20000}" 'BEGIN {
  split("eth0: renamed from veth1a2b|audit: type=1400 audit(1700000000.123:42): apparmor=\"STATUS\"|EXT4-fs (nvme0n1p1): mounted filesystem with ordered data mode|IPv6: ADDRCONF(NETDEV_CHANGE): eni2: link becomes ready|nvidia-nvswitch0: open (major=507)|efa 0000:31:00.0: Setup irq:0x82 name:efa-mgmnt@pci:0000:31:00.0|TCP: request_sock_TCP: Possible SYN flooding on port 22|neuron: loading neuron driver version 2.19", m, "|")
  for (i = 0; i < n; i++) printf "[%d.%06d] %s\n", 1000 + i / 100, (i * 7919) % 1000000, m[i % 8 + 1]
}' >"$host/var/log/kern.log"

# EFA: what /sys/class/infiniband/<dev> holds on a p5 (port state, rate, the hw_counters the checks read).
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
done

# Neuron: /sys/devices/virtual/neuron_device/neuronN with per-core status and hardware error counters.
for ((i = 0; i < NEURONS; i++)); do
  d=$host/sys/devices/virtual/neuron_device/neuron$i
  mkdir -p "$d"
  echo "$NEURON_CORES" >"$d/core_count"
  echo "$(((i + 1) % NEURONS)), $(((i + NEURONS - 1) % NEURONS))" >"$d/connected_devices"
  for ((c = 0; c < NEURON_CORES; c++)); do
    for s in hardware/mem_ecc_corrected hardware/mem_ecc_uncorrected hardware/sram_ecc_uncorrected \
      status/exec_hw_error status/exec_sw_error status/exec_timeout status/exec_bad_input; do
      mkdir -p "$d/neuron_core$c/stats/$s"
      echo 0 >"$d/neuron_core$c/stats/$s/total"
      echo 0 >"$d/neuron_core$c/stats/$s/present"
    done
  done
done

# GPUs: the fake NVML library's scenario (tests/fakes/libfake-nvml.so reads FAKE_NVML_SCENARIO).
{
  printf '{"driver_version": "550.90.07", "devices": ['
  for ((i = 0; i < GPUS; i++)); do
    ((i == 0)) || printf ','
    printf '\n  {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-bench-%04d", "bus_id": "00000000:%02x:00.0"}' "$i" $((0x18 + i * 0x10))
  done
  printf '\n]}\n'
} >"${BENCH_NVML_SCENARIO_OUT:-$dir/nvml-scenario.json}"
[ -z "${BENCH_NVML_SCENARIO:-}" ] || cp "$BENCH_NVML_SCENARIO" "$dir/nvml-scenario.json"

fake_nvml=""
for f in "$BUILD/tests/fakes/libfake-nvml.so" "$REPO_ROOT/tests/fakes/libfake-nvml.so"; do
  if [ -e "$f" ]; then fake_nvml=$f && break; fi
done
env_words=()
if [ -n "$fake_nvml" ]; then
  # Whatever name the collector dlopens, it finds the fake first.
  mkdir -p "$dir/nvml-lib"
  ln -sf "$fake_nvml" "$dir/nvml-lib/libnvidia-ml.so.1"
  ln -sf "$fake_nvml" "$dir/nvml-lib/libnvidia-ml.so"
  env_words+=("FAKE_NVML_SCENARIO=$dir/nvml-scenario.json" "LD_LIBRARY_PATH=$dir/nvml-lib")
fi
: >"$dir/healthd.env"
for w in "${env_words[@]}"; do printf '%s\n' "$w" >>"$dir/healthd.env"; done

base() {
  cat <<TOML
[daemon]
host_root = "$host"
log_level = "warn"

[checks.kernel_log]
path = "/var/log/kern.log"
TOML
}

# accepts TOML: true when this healthd starts with the base config plus TOML (it exits with status 2
# at once on a config it does not accept).
probe=$dir/probe
accepts() {
  rm -rf "$probe" && mkdir -p "$probe/state"
  { base; printf '\n%s\n' "$1"; } >"$probe/healthd.toml"
  env ${env_words[@]+"${env_words[@]}"} "$HEALTHD" --config "$probe/healthd.toml" --node probe --socket "$probe/s.sock" \
    --state-dir "$probe/state" </dev/null >"$probe/log" 2>&1 &
  local pid=$! i
  for ((i = 0; i < 100; i++)); do
    [ -S "$probe/s.sock" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  if [ -S "$probe/s.sock" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    return 0
  fi
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  return 1
}

# Candidates per area, tried in order; the first one healthd accepts is used.
config_extra=""
: >"$dir/areas.txt"
try_area() {
  local area=$1 cand
  shift
  for cand in "$@"; do
    if accepts "$config_extra"$'\n'"$cand"; then
      config_extra+=$'\n'"$cand"$'\n'
      echo "$area configured $(head -n1 <<<"$cand")" >>"$dir/areas.txt"
      return 0
    fi
  done
  echo "$area not-configured this healthd accepts none of: $(printf '%s; ' "$@" | tr '\n' ' ')" >>"$dir/areas.txt"
}
echo "kernel_log configured [checks.kernel_log]" >>"$dir/areas.txt"
if [ -n "$fake_nvml" ]; then
  try_area gpu "[checks.gpu]"$'\n'"library = \"$fake_nvml\"" "[checks.gpu]"$'\n'"nvml_library = \"$fake_nvml\"" \
    "[checks.gpu]" "[checks.nvml]"$'\n'"library = \"$fake_nvml\"" "[checks.nvml]"
else
  echo "gpu not-configured no fake NVML library (tests/fakes/libfake-nvml.so) in this build" >>"$dir/areas.txt"
fi
try_area efa "[checks.efa]"
try_area neuron "[checks.neuron]"
rm -rf "$probe"

{
  base
  printf '%s\n' "$config_extra"
  [ -z "${BENCH_EXTRA_TOML:-}" ] || cat "$BENCH_EXTRA_TOML"
} >"$dir/healthd.toml"
echo "fake host: $GPUS GPUs (scenario), $EFAS EFA devices, $NEURONS Neuron devices, $(wc -l <"$host/var/log/kern.log") kernel-log lines under $host"
sed 's/^/  area: /' "$dir/areas.txt"
