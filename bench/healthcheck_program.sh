#!/usr/bin/env bash
# The HealthCheckProgram way, for comparison: a shell health check in the style of LBNL NHC doing the
# work of one healthd sweep on the fake node that bench/fake_host.sh builds, reading the same files with
# the usual tools (cat, grep, awk, tail), one or more processes per device as such scripts do.
#
# usage: healthcheck_program.sh HOST_ROOT [NVML_SCENARIO]
# Prints one line per failure (NHC's "reason"); exit status 1 when something failed.
# GPUs: without a GPU there is no nvidia-smi to parse; one awk per GPU over the fake NVML scenario
# stands in for the one `nvidia-smi -q -i N` per GPU that such scripts run.
set -u
root=${1:?usage: healthcheck_program.sh HOST_ROOT [NVML_SCENARIO]}
scenario=${2:-}
failures=0
fail() { echo "NHC: $*"; failures=$((failures + 1)); }

# check_kernel_log: fault lines among the recent kernel messages (NHC's check_dmesg_*).
check_kernel_log() {
  local hits
  hits=$(tail -n 20000 "$root/var/log/kern.log" | grep -E -c 'NVRM: Xid|Machine check|mce: \[Hardware Error\]|NEURON_HW_ERR=|I/O error|EXT4-fs error')
  [ "$hits" = 0 ] || fail "kernel log: $hits fault lines"
}

# check_gpus: one query per GPU, parsed with awk (nvidia-smi -q -i N | awk ...).
check_gpus() {
  [ -n "$scenario" ] && [ -r "$scenario" ] || return 0
  local n i
  n=$(grep -o '"uuid"' "$scenario" | wc -l)
  for ((i = 0; i < n; i++)); do
    awk -v want="$i" 'BEGIN { RS = "},"; } NR == want + 1 { if ($0 ~ /"lost"|"xid"|"ecc_uncorrected[^0-9]*[1-9]/) print "bad" }' "$scenario" |
      grep -q bad && fail "GPU $i: unhealthy"
  done
}

# check_efa: per device, the port state, then every hardware error counter against a threshold.
check_efa() {
  local d st
  for d in "$root"/sys/class/infiniband/*; do
    [ -d "$d" ] || continue
    st=$(cat "$d/ports/1/state" "$d/ports/1/phys_state")
    [[ "$st" == *ACTIVE*LinkUp* ]] || fail "EFA ${d##*/}: port not active"
    grep -H . "$d"/ports/1/hw_counters/* | awk -F: '$1 ~ /_err$|drops$|unresponsive|impaired/ && $2 > 1000000 { print $1 }' |
      grep -q . && fail "EFA ${d##*/}: error counters"
  done
}

# check_neuron: per device, every core's hardware and status counters.
check_neuron() {
  local d
  for d in "$root"/sys/devices/virtual/neuron_device/neuron*; do
    [ -d "$d" ] || continue
    grep -r . "$d" --include=total | awk -F: '$1 ~ /uncorrected|hw_error/ && $2 > 0 { print $1 }' |
      grep -q . && fail "Neuron ${d##*/}: hardware errors"
  done
}

check_kernel_log
check_gpus
check_efa
check_neuron
[ "$failures" = 0 ]
