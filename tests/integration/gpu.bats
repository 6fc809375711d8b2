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

# check_field NODE CHECK FIELD: a field of one check's result in the node's `healthctl status`.
check_field() {
  healthctl_on "$1" status --json | python3 -c '
import json, sys
data = json.load(sys.stdin)
for r in data.get("health", {}).get("checks", []):
    if r["check"] == sys.argv[1]:
        print(r[sys.argv[2]])
        sys.exit(0)
sys.exit("no check %s" % sys.argv[1])' "$2" "$3"
}
check_code_is() { [ "$(check_field "$1" "$2" code)" = "$3" ]; }
check_status_is() { [ "$(check_field "$1" "$2" status)" = "$3" ]; }

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
  reset_cluster
}

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
  victim=$(job_nodes "$job" | tail -1)
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
  # (fake-reboot.sh: slurmd -b, new boot id, healthd restarted) and resumed the node by itself.
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
  victim=$(job_nodes "$job" | tail -1)
  wait_until 30 check_status_is "$victim" gpu.nvml ok
  sleep 1
  set_nvml "$victim" '{"devices": [{}, {}], "events": [{"id": 2, "gpu": 0, "type": "xid", "xid": 13}]}'
  wait_until 30 check_code_is "$victim" gpu_xid GPU-XID-13
  [ "$(check_field "$victim" gpu_xid status)" = warn ]
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
  victim=$(job_nodes "$job" | tail -1)
  local reboots
  reboots=$(grep -c "is back" "${AR_CLUSTER_DIR}/log/fake-reboot-$victim.log" 2>/dev/null || true)
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
  [ "$(grep -c "^replace " "${AR_CLUSTER_DIR}/host/$victim/hooks.log" 2>/dev/null || true)" = 0 ]
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
