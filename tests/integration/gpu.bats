#!/usr/bin/env bats
# NVIDIA GPU faults on a real cluster, through the fake NVML library at the hardware boundary: each
# node's healthd loads tests/fakes/libfake-nvml.so (its configured NVML path) and reads the node's
# scenario file, which these tests rewrite while everything runs.

load helpers

HEALTHY='{"devices": [{}, {}]}'

# set_nvml NODE JSON: the node's GPUs from now on (written whole, then renamed into place).
set_nvml() {
  local f="${AR_CLUSTER_DIR}/host/$1/nvml.json"
  printf '%s\n' "$2" >"$f.tmp" && mv "$f.tmp" "$f"
}

# check_field NODE CHECK FIELD...: fields of one check's result in the node's `healthctl status`, space-separated.
check_field() {
  healthctl_on "$1" status --json | python3 -c '
import json, sys
data = json.load(sys.stdin)
for r in data.get("health", {}).get("checks", []):
    if r["check"] == sys.argv[1]:
        print(" ".join(str(r[f]) for f in sys.argv[2:]))
        sys.exit(0)
sys.exit("no check %s" % sys.argv[1])' "${@:2}"
}
check_code_is() { [ "$(check_field "$1" "$2" code)" = "$3" ]; }
check_status_is() { [ "$(check_field "$1" "$2" status)" = "$3" ]; }
# check_code_and_status_is NODE CHECK CODE STATUS: both in one snapshot. Two looks could straddle the
# end of a hold (xid_hold_s, 3 s here): in CI's run of 2026-12-06 the second look no longer saw "warn".
check_code_and_status_is() { [ "$(check_field "$1" "$2" code status)" = "$3 $4" ]; }

setup() {
  for n in n1 n2 n3; do
    set_nvml "$n" "$HEALTHY"
    rm -f "${AR_CLUSTER_DIR}/host/$n/etc/gpu-reset" "${AR_CLUSTER_DIR}/host/$n/gpu-reset.log"
  done
  reset_cluster
  WORK="${AR_CLUSTER_DIR}/work/gpu-${BATS_TEST_NUMBER}-$$"
  make_work "$WORK"
}

teardown() {
  for n in n1 n2 n3; do set_nvml "$n" "$HEALTHY"; done
  # A test that took the cluster's RebootProgram away or gave a node a config of its own (the cure
  # tests without means) puts them back, passed or failed.
  if [ -f "${AR_CLUSTER_DIR}/etc/slurm.conf.with-reboot" ]; then
    mv "${AR_CLUSTER_DIR}/etc/slurm.conf.with-reboot" "${AR_CLUSTER_DIR}/etc/slurm.conf"
    scontrol reconfigure
    wait_until 30 reboot_program_is_set
  fi
  # A node held for an admin (a cure step that cannot run here) is resumed as the admin would.
  local n
  for n in ${HELD_NODES:-}; do
    healthctl_on "$n" resume 2>/dev/null || true
    wait_until 30 bash -c "! sinfo -h -n $n -o %T | grep -q drain" || true
  done
  if [ -n "${OWN_CONFIG_NODE:-}" ]; then cluster restart-healthd "$OWN_CONFIG_NODE"; fi  # the shared healthd.toml again
  if [ -n "${SAMPLER_PID:-}" ]; then kill "$SAMPLER_PID" 2>/dev/null || true; fi
  reset_cluster
}

# Whether slurmctld has a RebootProgram, as `scontrol show config` gives it ("(null)" when none).
reboot_program_unset() { scontrol show config | grep -Eq '^RebootProgram +=( +\(null\))?$'; }
reboot_program_is_set() { ! reboot_program_unset; }
# A cluster whose slurm.conf has no RebootProgram, as the site of issue 31 (teardown puts it back).
without_reboot_program() {
  cp "${AR_CLUSTER_DIR}/etc/slurm.conf" "${AR_CLUSTER_DIR}/etc/slurm.conf.with-reboot"
  sed -i '/^RebootProgram=/d' "${AR_CLUSTER_DIR}/etc/slurm.conf"
  scontrol reconfigure
  wait_until 30 reboot_program_unset
}
# with_reset_command NODE WORDS: NODE's healthd restarted with [cure] reset_command = WORDS (a TOML array).
with_reset_command() {
  local config="$WORK/healthd-$1.toml"
  sed "s|^reset_command = .*|reset_command = $2|" "${AR_CLUSTER_DIR}/etc/healthd.toml" >"$config"
  chmod 0644 "$config"
  OWN_CONFIG_NODE=$1
  AR_HEALTHD_NODE_CONFIG="$config" cluster restart-healthd "$1"
}
# hooks_log_lacks PATTERN NODE: no line of NODE's hooks.log matches (a function: a bare "! cmd" line
# never fails a bats test).
hooks_log_lacks() { ! grep -q "$1" "${AR_CLUSTER_DIR}/host/$2/hooks.log" 2>/dev/null; }

# A 2-node auto-resume job whose first attempt hangs (a training step stuck on a dead GPU does not
# exit) and whose second finishes after 3 s (long enough to be seen running again).
submit_hung_job() {
  submit -N2 -o "$WORK/job.out" --open-mode=append --auto-resume=1 --wrap "
    srun -N2 --ntasks-per-node=1 bash -c 'if [ \"\${AUTO_RESUME_ATTEMPT:-1}\" -gt 1 ]; then echo resumed-on-\$SLURMD_NODENAME; sleep 3; exit 0; fi; sleep 600'"
}

@test "XID 79 from NVML under a hung auto-resume job: reboot through Slurm, one requeue, running again, node back after its reboot" {
  local job victim t0 t1
  job=$(submit_hung_job)
  wait_until 60 job_running_attempt "$job" 0
  victim=$(ready_victim "$job")
  # Let the node's healthd register its NVML event set first: events present when it does are old.
  wait_until 30 check_status_is "$victim" gpu.nvml ok
  sleep 1
  t0=$(date +%s.%N)
  set_nvml "$victim" '{"devices": [{}, {}], "events": [{"id": 1, "gpu": 1, "type": "xid", "xid": 79}]}'
  wait_until 30 job_running_again "$job" 1 "$victim"
  t1=$(date +%s.%N)
  echo "XID 79 to running again: $(echo "$t1 - $t0" | bc) s" >&3
  job_not_on "$job" "$victim"
  [ "$(job_restarts "$job")" = 1 ]
  # Slurm was asked for a reboot (the reason names the GPU), carried it out once the node was idle
  # (fake-reboot.sh: slurmd -b, new boot id, healthd restarted); the node came back drained, and
  # healthd returned it once its checks passed.
  grep -q "reboot" "${AR_CLUSTER_DIR}/log/slurmctld.log"
  wait_until 90 grep -q "$victim is back" "${AR_CLUSTER_DIR}/log/fake-reboot-$victim.log"
  wait_until $((90 + SLURM_SETTLE_S)) node_idle "$victim"
  # The rebooted node's healthd does not drain it again for the XID that the reboot cured.
  wait_until 30 check_status_is "$victim" gpu_xid ok
  sleep 3
  node_idle "$victim"
  wait_until 60 job_finished "$job"
  [ "$(job_state "$job")" = COMPLETED ]
  grep -q "resumed-on" "$WORK/job.out"
  run healthctl_on "$victim" explain "$job"
  echo "$output" >&3
}

@test "the drain reason of an XID names the GPU by index, PCI bus id and UUID" {
  set_nvml n3 '{"devices": [{}, {"uuid": "GPU-test-board-7"}]}'
  wait_until 30 check_status_is n3 gpu.nvml ok
  sleep 1
  set_nvml n3 '{"devices": [{}, {"uuid": "GPU-test-board-7"}], "events": [{"id": 5, "gpu": 1, "type": "xid", "xid": 48}]}'
  wait_until 30 bash -c "sinfo -h -n n3 -o %T | grep -q drain"
  [[ "$(node_reason n3)" == "healthd: GPU-XID-48: XID 48 on GPU 1 (00000000:28:00.0, GPU-test-board-7): double-bit ECC error"* ]]
}

@test "XID 13, an application fault, does not drain the node nor requeue the job" {
  local job victim
  job=$(submit_hung_job)
  wait_until 60 job_running_attempt "$job" 0
  victim=$(ready_victim "$job")
  wait_until 30 check_status_is "$victim" gpu.nvml ok
  sleep 1
  set_nvml "$victim" '{"devices": [{}, {}], "events": [{"id": 2, "gpu": 0, "type": "xid", "xid": 13}]}'
  wait_until 30 check_code_and_status_is "$victim" gpu_xid GPU-XID-13 warn
  sleep 3
  [[ "$(node_state "$victim")" != drain* ]]
  [ "$(job_state "$job")" = RUNNING ]
  [ "$(job_restarts "$job")" = 0 ]
}

@test "an NVML call that hangs is a verdict within its deadline, and healthd keeps answering" {
  local t0 t1 i
  set_nvml n2 '{"devices": [{}, {}], "hang": ["nvmlDeviceGetTemperature"]}'
  t0=$(date +%s.%N)
  wait_until 30 check_code_is n2 gpu.nvml GPU-NVML-HANG
  t1=$(date +%s.%N)
  echo "hang to verdict: $(echo "$t1 - $t0" | bc) s (deadline 1.5 s, sweeps every 1 s)" >&3
  [[ "$(check_field n2 gpu.nvml message)" == *"nvmlDeviceGetTemperature"* ]]
  # The plugin's socket and healthctl are served while the NVML call is stuck.
  for i in 1 2 3 4 5; do timeout 2 "$AR_HEALTHCTL" --socket "$(socket_of n2)" ping; done
  wait_until 30 bash -c "sinfo -h -n n2 -o %T | grep -q drain"
  [[ "$(node_reason n2)" == "healthd: GPU-NVML-HANG: NVML not answering: nvmlDeviceGetTemperature"* ]]
  # Released: NVML answers again, and healthd gives its drain back.
  set_nvml n2 "$HEALTHY"
  wait_until $((60 + SLURM_SETTLE_S)) node_idle n2
}

@test "a GPU missing from NVML drains the node with the count" {
  set_nvml n1 '{"devices": [{}]}'
  wait_until 30 bash -c "sinfo -h -n n1 -o %T | grep -q drain"
  [[ "$(node_reason n1)" == "healthd: GPU-COUNT: 1 of 2 GPUs visible to NVML"* ]]
  set_nvml n1 "$HEALTHY"
  wait_until $((60 + SLURM_SETTLE_S)) node_idle n1
}

@test "a pending row remap drains the node and says to reset the GPU" {
  set_nvml n1 '{"devices": [{}, {"remap": {"pending": true}}]}'
  wait_until 30 bash -c "sinfo -h -n n1 -o %T | grep -q drain"
  [[ "$(node_reason n1)" == "healthd: GPU-ROW-REMAP-PENDING: GPU 1 "*"reset the GPU"* ]]
  set_nvml n1 "$HEALTHY"
  wait_until $((60 + SLURM_SETTLE_S)) node_idle n1
}

# cure_field NODE FIELD: a field of the node's cure (or "held": its drain's) in `healthctl status --json` ("" when none).
cure_field() {
  healthctl_on "$1" status --json | python3 -c '
import json, sys
d = json.load(sys.stdin).get("health", {}).get("node", {}).get("own_drain", {})
print(d.get("cure", {}).get(sys.argv[1], "") if sys.argv[1] != "held" else d.get("held", ""))' "$2"
}
reset_log() { cat "${AR_CLUSTER_DIR}/host/$1/gpu-reset.log" 2>/dev/null; }

@test "cure: a pending row remap under an auto-resume job: drained, job requeued, the GPU reset once idle, the node back" {
  local job victim
  job=$(submit_hung_job)
  wait_until 60 job_running_attempt "$job" 0
  victim=$(ready_victim "$job")
  local reboots replaces
  reboots=$(grep -c "is back" "${AR_CLUSTER_DIR}/log/fake-reboot-$victim.log" 2>/dev/null || true)
  # Counted from here: the host directory outlives a cluster restart, so an earlier run may have left lines.
  replaces=$(grep -c "^replace " "${AR_CLUSTER_DIR}/host/$victim/hooks.log" 2>/dev/null || true)
  local start0
  start0=$(job_start "$job")
  set_nvml "$victim" '{"devices": [{}, {"remap": {"pending": true}}]}'
  wait_until 30 job_started_again "$job" 1 "$start0"
  job_not_on "$job" "$victim"
  # The reset ran once, on GPU 1 by NVML's bus id, after the job had left; it cured the scenario.
  wait_until 30 bash -c "grep -q '00000000:28:00.0 cure' '${AR_CLUSTER_DIR}/host/$victim/gpu-reset.log'"
  wait_until $((60 + SLURM_SETTLE_S)) node_idle "$victim"
  [ "$(reset_log "$victim" | wc -l)" = 1 ]
  # No reboot and no replacement: the first step cured it.
  [ "$(grep -c "is back" "${AR_CLUSTER_DIR}/log/fake-reboot-$victim.log" 2>/dev/null || true)" = "$reboots" ]
  [ "$(grep -c "^replace " "${AR_CLUSTER_DIR}/host/$victim/hooks.log" 2>/dev/null || true)" = "$replaces" ]
  grep -q "^reset_gpu $victim GPU-ROW-REMAP-PENDING" "${AR_CLUSTER_DIR}/host/$victim/hooks.log"
  # The node's events show the step.
  run healthctl_on "$victim" events --json
  [ "$status" -eq 0 ]
  echo "$output" | grep -q '"kind": *"cure"'
  # And the job's story on the node that failed it tells the reset.
  run healthctl_on "$victim" explain "$job"
  [ "$status" -eq 0 ]
  echo "$output" | grep -q "node cure.*reset"
  wait_until 60 job_finished "$job"
  [ "$(job_state "$job")" = COMPLETED ]
}

@test "cure: a reset that fails goes on to a reboot, and the fault still there after it asks for a replacement" {
  echo fail >"${AR_CLUSTER_DIR}/host/n3/etc/gpu-reset"
  set_nvml n3 '{"devices": [{}, {"remap": {"pending": true}}]}'
  wait_until 30 bash -c "grep -q '00000000:28:00.0 fail' '${AR_CLUSTER_DIR}/host/n3/gpu-reset.log'"
  # The failed reset hands over to a reboot (fake-reboot.sh: a new boot id, healthd restarted) ...
  wait_until 90 grep -q "n3 is back" "${AR_CLUSTER_DIR}/log/fake-reboot-n3.log"
  # ... after which the same fault is found again: the node is drained for good, replacement requested.
  wait_until 90 bash -c "scontrol show node n3 -o | grep -q 'replacement requested'"
  [[ "$(node_reason n3)" == "healthd: GPU-ROW-REMAP-PENDING: GPU 1 "*"(replacement requested)" ]]
  wait_until 30 grep -q "^replace n3 GPU-ROW-REMAP-PENDING" "${AR_CLUSTER_DIR}/host/n3/hooks.log"
  [ "$(cure_field n3 held)" = True ]
  [ "$(cure_field n3 phase)" = exhausted ]
  [ "$(reset_log n3 | wc -l)" = 1 ]  # the reset was not tried again
  # Held: the GPU healthy again does not return it; an admin does.
  set_nvml n3 "$HEALTHY"
  sleep 4
  [[ "$(node_state n3)" == drain* ]]
  healthctl_on n3 resume
  wait_until $((60 + SLURM_SETTLE_S)) node_idle n3
}

# Issue 31: with no reset tool and no RebootProgram, a pending row remap went reset (not found) ->
# reboot (refused) -> "replacement requested" in 0.3 s, and the replace hook ran.
@test "cure: no reset tool and no RebootProgram: a pending row remap holds the node 'needs a GPU reset', no replacement, no replace hook" {
  HELD_NODES=n3
  without_reboot_program
  with_reset_command n3 '["nvidia-smi", "--gpu-reset", "-i", "%g"]'  # not on this machine's PATH
  # --check-config names the steps this site cannot run, and still passes the config.
  run "$AR_HEALTHD" --check-config "$WORK/healthd-n3.toml" --node n3 --state-dir "$WORK/state"
  echo "$output" >&2
  [ "$status" -eq 0 ]
  echo "$output" | grep -q "reset_gpu: \[cure\] reset_command 'nvidia-smi' was not found"
  echo "$output" | grep -q "reboot: slurm.conf has no RebootProgram"
  : >"${AR_CLUSTER_DIR}/host/n3/hooks.log"
  set_nvml n3 '{"devices": [{}, {"remap": {"pending": true}}]}'
  wait_until 60 bash -c "scontrol show node n3 -o | grep -q 'needs a GPU reset'"
  [[ "$(node_reason n3)" == "healthd: GPU-ROW-REMAP-PENDING: GPU 1 "*"(needs a GPU reset: no reset command; set [cure] reset_command)" ]]
  [ "$(cure_field n3 phase)" = cannot_run ]
  [ "$(cure_field n3 held)" = True ]
  # Sweeps later, the fault still there: nothing more happened (no reboot, no replacement, no hook).
  sleep 4
  [[ "$(node_state n3)" == drain* ]]
  [[ "$(node_reason n3)" == *"(needs a GPU reset: no reset command; set [cure] reset_command)" ]]
  hooks_log_lacks "^replace " n3
  hooks_log_lacks "^reset_gpu " n3
  [ -z "$(reset_log n3)" ]
}

@test "cure: a reset that ran and failed, and no RebootProgram: held 'needs a reboot', no replacement, no replace hook" {
  HELD_NODES=n3
  without_reboot_program
  echo fail >"${AR_CLUSTER_DIR}/host/n3/etc/gpu-reset"
  : >"${AR_CLUSTER_DIR}/host/n3/hooks.log"
  set_nvml n3 '{"devices": [{}, {"remap": {"pending": true}}]}'
  wait_until 30 bash -c "grep -q '00000000:28:00.0 fail' '${AR_CLUSTER_DIR}/host/n3/gpu-reset.log'"
  wait_until 60 bash -c "scontrol show node n3 -o | grep -q 'needs a reboot'"
  [[ "$(node_reason n3)" == "healthd: GPU-ROW-REMAP-PENDING: GPU 1 "*"(needs a reboot: slurm.conf has no RebootProgram)" ]]
  [ "$(cure_field n3 phase)" = cannot_run ]
  sleep 4
  [[ "$(node_state n3)" == drain* ]]
  [[ "$(node_reason n3)" != *"replacement requested"* ]]
  hooks_log_lacks "^replace " n3
}

# Issue 31: after a reboot Slurm put the node back in service itself (nextstate=RESUME), before
# healthd had judged it. It comes back drained now, and healthd returns it once its checks pass.
@test "cure: a node rebooted by its cure comes back drained, and healthd returns it once healthy" {
  local samples="$WORK/states" back
  back=$(grep -c "n3 is back" "${AR_CLUSTER_DIR}/log/fake-reboot-n3.log" 2>/dev/null || true)
  wait_until 30 check_status_is n3 gpu.nvml ok
  sleep 1
  # n3's state every 0.2 s from the fault on: "STATE REASON".
  (while :; do scontrol show node n3 -o | sed -n 's/.* State=\([^ ]*\) .*Reason=\(.*\)/\1 \2/p; s/.* State=\([^ ]*\) .*/\1/p' | head -1 >>"$samples"; sleep 0.2; done) 3>&- &
  SAMPLER_PID=$!
  set_nvml n3 '{"devices": [{}, {}], "events": [{"id": 1, "gpu": 1, "type": "xid", "xid": 79}]}'
  wait_until 90 bash -c "[ \"\$(grep -c 'n3 is back' '${AR_CLUSTER_DIR}/log/fake-reboot-n3.log')\" -gt $back ]"
  wait_until $((90 + SLURM_SETTLE_S)) node_idle n3
  # The sampler looks every 0.2 s: stop it only once it has seen the node in service too, or the
  # last sample can still be the drained one (seen in CI).
  wait_until 10 bash -c "tail -1 '$samples' | grep -q -v -E '^[A-Z_+]*(DRAIN|DOWN|REBOOT)'"
  kill "$SAMPLER_PID"
  SAMPLER_PID=
  cat "$samples" >&2
  # Rebooted, then drained with healthd's reason (no REBOOT flag left) until healthd judged it ...
  grep -q '^IDLE+DRAIN healthd: GPU-XID-79' "$samples"
  # ... and never in service between the reboot and that: the first sample in service (no DRAIN,
  # DOWN or REBOOT flag) comes after every drained one.
  local first_up last_drained
  awk 'out || /DRAIN|REBOOT/ { out = 1; print }' "$samples" >"$samples.since"
  first_up=$(grep -n -v -E '^[A-Z_+]*(DRAIN|DOWN|REBOOT)' "$samples.since" | head -1 | cut -d: -f1)
  last_drained=$(grep -n 'DRAIN' "$samples.since" | tail -1 | cut -d: -f1)
  [ -n "$first_up" ]
  [ "$first_up" -gt "$last_drained" ]
  # healthd returned it itself, as its own drain.
  grep -q "node n3 passed 3 checks in a row: resumed (was: healthd: GPU-XID-79" "${AR_CLUSTER_DIR}/log/healthd-n3.log"
}
