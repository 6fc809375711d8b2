#!/usr/bin/env bash
# The HealthCheckProgram way, for comparison: a shell health check in the style of LBNL NHC doing the
# work of one full healthd sweep (`healthctl check --now`) on the fake node that bench/fake_host.sh
# builds, reading the same files and running the same programs with the usual tools (cat, grep, awk,
# tail, df, curl), one or more processes per device as such scripts do.
#
# usage: healthcheck_program.sh NODE_DIR [IMDS_ENDPOINT]
#   NODE_DIR       the directory fake_host.sh built (host/, nvml-scenario.json, dcgmi, admin-check.sh)
#   IMDS_ENDPOINT  the fake EC2 metadata server (bench/lib.sh fake_node_start); without it, no EC2 check
# Prints one line per failure (NHC's "reason"); exit status 1 when something failed.
# GPUs: without a GPU there is no nvidia-smi to parse; one awk per GPU over the fake NVML scenario
# stands in for the one `nvidia-smi -q -i N` per GPU that such scripts run.
set -u
node=${1:?usage: healthcheck_program.sh NODE_DIR [IMDS_ENDPOINT]}
imds=${2:-}
root=$node/host
scenario=$node/nvml-scenario.json
failures=0
fail() { echo "NHC: $*"; failures=$((failures + 1)); }

# check_kernel_log: fault lines among the recent kernel messages (NHC's check_dmesg_*).
check_kernel_log() {
  local hits
  hits=$(tail -n 20000 "$root/var/log/kern.log" | grep -E -c 'NVRM: Xid|Machine check|mce: \[Hardware Error\]|NEURON_HW_ERR=|I/O error|EXT4-fs error|efa .*(Admin command|error state|[Ff]atal error)')
  [ "$hits" = 0 ] || fail "kernel log: $hits fault lines"
}

# check_gpus: the count, then one query per GPU, parsed with awk (nvidia-smi -q -i N | awk ...).
check_gpus() {
  [ -r "$scenario" ] || return 0
  local n i
  n=$(grep -o '"uuid"' "$scenario" | wc -l)
  [ "$n" -ge "${EXPECTED_GPUS:-8}" ] || fail "GPUs: $n found"
  for ((i = 0; i < n; i++)); do
    awk -v want="$i" 'BEGIN { RS = "},"; } NR == want + 1 { if ($0 ~ /"lost"|"xid"|"ecc_uncorrected[^0-9]*[1-9]/) print "bad" }' "$scenario" |
      grep -q bad && fail "GPU $i: unhealthy"
  done
}

# check_dcgm: dcgmi diag, its JSON grepped for a failed test.
check_dcgm() {
  [ -x "$node/dcgmi" ] || return 0
  "$node/dcgmi" diag -r 1 -j | grep -q -E '"status": *"(Fail|Warn)"' && fail "DCGM: a test failed"
}

# check_efa: the count; per device, the port state, then every hardware error counter against a threshold.
check_efa() {
  local d st n=0
  for d in "$root"/sys/class/infiniband/*; do
    [ -d "$d" ] || continue
    [ "$(cat "$d/device/vendor")" = 0x1d0f ] || continue
    n=$((n + 1))
    st=$(cat "$d/ports/1/state" "$d/ports/1/phys_state")
    [[ "$st" == *ACTIVE*LinkUp* ]] || fail "EFA ${d##*/}: port not active"
    grep -H . "$d"/ports/1/hw_counters/* | awk -F: '$1 ~ /_err$|drops$|unresponsive|impaired/ && $2 > 1000000 { print $1 }' |
      grep -q . && fail "EFA ${d##*/}: error counters"
  done
  [ "$n" -ge "${EXPECTED_EFA:-32}" ] || fail "EFA: $n devices"
}

# check_neuron: the count (sysfs and /dev); per device, its hardware counters and its cores'.
# shellcheck disable=SC2012,SC2015 # ls | wc and A && B || C, as such scripts are written
check_neuron() {
  local d n
  n=$(ls -d "$root"/sys/devices/virtual/neuron_device/neuron* 2>/dev/null | wc -l)
  [ "$n" -ge "${EXPECTED_NEURON:-16}" ] && [ "$(ls "$root"/dev/neuron* 2>/dev/null | wc -l)" -ge "${EXPECTED_NEURON:-16}" ] ||
    fail "Neuron: $n devices"
  for d in "$root"/sys/devices/virtual/neuron_device/neuron*; do
    [ -d "$d" ] || continue
    grep -r . "$d/stats/hardware" "$d"/neuron_core*/stats/hardware 2>/dev/null | awk -F: '$1 ~ /uncorrected/ && $2 > 0 { print $1 }' |
      grep -q . && fail "Neuron ${d##*/}: hardware errors"
  done
}

# check_node: CPUs online, memory, the daemons (NHC's check_hw_cpuinfo, check_hw_physmem, check_ps_service).
check_node() {
  local cpus mem p
  cpus=$(awk -F- '{ print $2 + 1 }' "$root/sys/devices/system/cpu/online")
  [ "$cpus" -ge "${EXPECTED_CPUS:-192}" ] || fail "node: $cpus CPUs online"
  mem=$(awk '/^MemTotal:/ { print int($2 / 1048576) }' "$root/proc/meminfo")
  [ "$mem" -ge "${MIN_MEM_GIB:-1843}" ] || fail "node: $mem GiB of memory"
  for p in munged slurmd; do
    cat "$root"/proc/[0-9]*/comm 2>/dev/null | grep -qx "$p" || fail "node: $p is not running"
  done
}

# check_storage: the mount entry, free space (df), a probe write.
check_storage() {
  awk '$2 == "/fsx" && $3 == "lustre" { f = 1 } END { exit !f }' "$root/proc/mounts" || fail "storage: /fsx not mounted"
  df -P "$root/fsx" | awk 'NR == 2 && $4 < 1024 { exit 1 }' || fail "storage: /fsx full"
  { echo probe >"$root/fsx/.nhc-probe" && sync "$root/fsx/.nhc-probe" && rm -f "$root/fsx/.nhc-probe"; } || fail "storage: /fsx not writable"
}

# check_ec2: IMDSv2 token, scheduled events, spot instance-action.
check_ec2() {
  [ -n "$imds" ] || return 0
  local token
  token=$(curl -s -m 1 -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 60' "$imds/latest/api/token") || { fail "ec2: no token"; return; }
  curl -s -m 1 -H "X-aws-ec2-metadata-token: $token" "$imds/latest/meta-data/events/maintenance/scheduled" | grep -q Code && fail "ec2: maintenance event"
  curl -s -m 1 -f -H "X-aws-ec2-metadata-token: $token" "$imds/latest/meta-data/spot/instance-action" >/dev/null && fail "ec2: spot interruption"
}

# The admin's own script.
check_script() {
  [ -x "$node/admin-check.sh" ] || return 0
  "$node/admin-check.sh" >/dev/null || fail "admin check failed"
}

check_kernel_log
check_gpus
check_dcgm
check_efa
check_neuron
check_node
check_storage
check_ec2
check_script
[ "$failures" = 0 ]
