#!/usr/bin/env bats
# The checks beyond the kernel log, on the real cluster: the checkpoint filesystem turning unwritable
# under an auto-resume job, an EC2 maintenance notice (the job is told to checkpoint, then requeued
# off the node), and an admin script whose failure only warns. Faults come from the nodes' fake host
# trees (host/NODE/fsx, host/NODE/proc/mounts) and from a fake EC2 metadata server.

load helpers

IMDS_DIR="${AR_CLUSTER_DIR}/imds"

setup_file() {
  # One fake IMDS for all nodes: /NODE/latest/... reads $IMDS_DIR/NODE/...
  rm -rf "$IMDS_DIR"
  mkdir -p "$IMDS_DIR"/n1 "$IMDS_DIR"/n2 "$IMDS_DIR"/n3
  python3 "${AR_FAKES}/imds_server.py" "$IMDS_DIR" --port "$AR_IMDS_PORT" --port-file "$IMDS_DIR/port" \
    >"${AR_CLUSTER_DIR}/log/imds.log" 2>&1 3>&- &
  echo $! >"$IMDS_DIR/pid"
  wait_until 10 test -e "$IMDS_DIR/port"
}

teardown_file() {
  kill "$(cat "$IMDS_DIR/pid")" 2>/dev/null || true
}

setup() {
  reset_cluster
  WORK="${AR_CLUSTER_DIR}/work/s${BATS_TEST_NUMBER}-$$"
  make_work "$WORK"
}

teardown() {
  # Every node's faults undone first, so reset_cluster sees the nodes come back.
  local node
  for node in n1 n2 n3; do
    local fsx="${AR_CLUSTER_DIR}/host/$node/fsx"
    [ -d "$fsx" ] || { rm -f "$fsx"; mkdir -p "$fsx"; }
    rm -rf "$fsx/.healthd-probe.$node" "$fsx.file" "$fsx.dir"
    chmod 0755 "$fsx"
    rm -f "$IMDS_DIR/$node/events/maintenance/scheduled" "${AR_CLUSTER_DIR}/host/$node/etc/admin-check"
  done
  reset_cluster
}

# The second attempt of these jobs ends at once: wait for the requeue, not for RUNNING.
restarted() { [ "$(job_restarts "$1")" = "$2" ]; }

# check_result NODE CHECK PYTHON-EXPR: EXPR over the list `rs` of the node's last results of CHECK.
check_result() {
  healthctl_on "$1" status --json | python3 -c '
import json, sys
data = json.load(sys.stdin)
rs = [r for r in data["health"].get("checks", []) if r["check"] == sys.argv[1]]
print(eval(sys.argv[2]))' "$2" "$3"
}
check_says() { [ "$(check_result "$1" "$2" "$3")" = True ]; }

@test "the checkpoint filesystem turns unwritable under an auto-resume job: drain and requeue" {
  local job victim
  # healthy to begin with: the mount is there, of the right type, and the probe writes
  check_says n1 storage 'rs[0]["status"] == "ok" and rs[0]["detail"]["fstype"] == "lustre"'
  job=$(submit -N2 -o "$WORK/job.out" --auto-resume=1 --wrap "
    if [ \"\${SLURM_RESTART_COUNT:-0}\" -ge 1 ]; then echo second attempt; exit 0; fi
    srun -N2 sleep 600")
  wait_until 60 job_running_attempt "$job" 0
  victim=$(ready_victim "$job")
  # As root, file modes do not stop a write: the mount point becomes something no file can be
  # created in (a plain file), which the probe finds as a real dead mount would be found. The swap is
  # one atomic exchange: between an rm and a touch, a sweep could find the mount point missing and
  # drain for statvfs instead (CI met that once).
  local fsx="${AR_CLUSTER_DIR}/host/$victim/fsx"
  touch "$fsx.file"
  exchange_paths "$fsx.file" "$fsx"
  rm -rf "$fsx.file"
  wait_until 30 restarted "$job" 1
  [[ "$(node_state "$victim")" == drain* ]]
  [[ "$(node_reason "$victim")" == "healthd: STORAGE-UNWRITABLE: storage: /fsx: probe write failed: open: "* ]]
  wait_until 60 job_finished "$job"
  [ "$(job_state "$job")" = COMPLETED ]
  job_not_on "$job" "$victim"
  grep -q "second attempt" "$WORK/job.out"
  # writable again: healthd gives its drain back
  mkdir "$fsx.dir"
  exchange_paths "$fsx.dir" "$fsx"
  rm -f "$fsx.dir"
  wait_until $((40 + SLURM_SETTLE_S)) node_idle "$victim"
}

# only_entry DIR NAME: NAME is all there is in DIR.
only_entry() { [ "$(ls -A "$1")" = "$2" ]; }
# storage_ok_after NODE MS: the node's storage result is ok and was judged after MS (epoch ms).
storage_ok_after() { check_says "$1" storage "rs[0]['status'] == 'ok' and rs[0]['at_ms'] > $2"; }

@test "a user plants a directory and a FIFO at the old probe paths: no drain, storage stays ok" {
  local n2fsx="${AR_CLUSTER_DIR}/host/n2/fsx" n3fsx="${AR_CLUSTER_DIR}/host/n3/fsx" log2 log3 after
  check_says n2 storage 'rs[0]["status"] == "ok"'
  check_says n3 storage 'rs[0]["status"] == "ok"'
  log2=$(wc -l <"${AR_CLUSTER_DIR}/log/healthd-n2.log")
  log3=$(wc -l <"${AR_CLUSTER_DIR}/log/healthd-n3.log")
  # The checkpoint filesystem's root is open to users, as the root of a shared one often is; what
  # follows is done as an ordinary user. The names are the probe's old, predictable ones: a
  # directory there made the probe fail (STORAGE-UNWRITABLE), a FIFO blocked it (STORAGE-HUNG).
  chmod 1777 "$n2fsx" "$n3fsx"
  runuser -u nobody -- mkdir "$n2fsx/.healthd-probe.n2"
  runuser -u nobody -- mkfifo "$n3fsx/.healthd-probe.n3"
  [ "$(stat -c %U "$n3fsx/.healthd-probe.n3")" = nobody ]
  # Past probe_timeout_s (3 s) and several 1 s sweeps, both are still healthy and in service.
  after=$(( $(date +%s%3N) + 6000 ))
  wait_until 30 storage_ok_after n2 "$after"
  wait_until 30 storage_ok_after n3 "$after"
  node_idle n2
  node_idle n3
  run healthctl_on n3 status
  echo "$output" >&3
  [ "$status" -le 1 ]  # healthy, maybe with warnings (an unsynchronised clock here)
  [[ "$output" == *"verdict:      healthy"* ]]
  echo "$output" | grep -Eq '^storage +ok '
  # Not faulty at any sweep in between either, and what the user planted is left as it was.
  [ "$(tail -n +"$((log2 + 1))" "${AR_CLUSTER_DIR}/log/healthd-n2.log" | grep -cE "STORAGE-|is faulty")" = 0 ]
  [ "$(tail -n +"$((log3 + 1))" "${AR_CLUSTER_DIR}/log/healthd-n3.log" | grep -cE "STORAGE-|is faulty")" = 0 ]
  [ -d "$n2fsx/.healthd-probe.n2" ]
  [ -p "$n3fsx/.healthd-probe.n3" ]
  # The probe itself leaves nothing behind (a probe file lives only within a sweep).
  wait_until 10 only_entry "$n3fsx" .healthd-probe.n3
}

@test "an EC2 maintenance notice: the job is told to checkpoint, then requeued off the node" {
  local job victim
  check_says n2 ec2 'all(r["status"] == "ok" for r in rs) and len(rs) == 2'
  # The job traps the checkpoint signal in its batch script and in its step's tasks (the test
  # cluster's config sets checkpoint_signal = "USR1"; the default sends none).
  cat >"$WORK/job.sh" <<JOB
#!/bin/bash
echo "attempt \${SLURM_RESTART_COUNT:-0}"
if [ "\${SLURM_RESTART_COUNT:-0}" -ge 1 ]; then exit 0; fi
trap 'echo "batch got USR1 in attempt \${SLURM_RESTART_COUNT:-0}" >>$WORK/signalled' USR1
srun -N2 --ntasks-per-node=1 bash -c 'trap "echo task \\\$SLURM_PROCID got USR1 >>$WORK/signalled" USR1; while :; do sleep 0.2; done' &
while :; do sleep 0.2; done
JOB
  job=$(submit -N2 -o "$WORK/job.out" --auto-resume=1 "$WORK/job.sh")
  wait_until 60 job_running_attempt "$job" 0
  wait_until 30 bash -c "squeue -h -s -j $job | grep -q '$job\\.0'"
  victim=$(ready_victim "$job")
  mkdir -p "$IMDS_DIR/$victim/events/maintenance"
  cat >"$IMDS_DIR/$victim/events/maintenance/scheduled" <<'EVENTS'
[{"NotBefore": "21 Jan 2027 09:00:43 GMT", "Code": "system-reboot", "Description": "scheduled reboot",
  "EventId": "instance-event-0d59937288b749b32", "NotAfter": "21 Jan 2027 09:17:23 GMT", "State": "active"}]
EVENTS
  # signalled while the first attempt still runs: the batch script and both tasks see it
  wait_until 30 grep -q "batch got USR1 in attempt 0" "$WORK/signalled"
  wait_until 10 grep -q "task 0 got USR1" "$WORK/signalled"
  wait_until 10 grep -q "task 1 got USR1" "$WORK/signalled"
  sleep 1  # a doubled signal (srun forwarding it too) would show by now
  [ "$(grep -c "task 0 got USR1" "$WORK/signalled")" = 1 ]
  [ "$(grep -c "task 1 got USR1" "$WORK/signalled")" = 1 ]
  [ "$(job_restarts "$job")" = 0 ]
  # after the grace (3 s here): drained, requeued, and running again elsewhere
  wait_until 30 restarted "$job" 1
  [[ "$(node_reason "$victim")" == "healthd: EC2-SYSTEM-REBOOT: ec2: system-reboot scheduled: scheduled reboot"* ]]
  wait_until 60 job_finished "$job"
  [ "$(job_state "$job")" = COMPLETED ]
  job_not_on "$job" "$victim"
  # signalled once: the notice stays up through the grace and after, the signal is not sent again
  [ "$(grep -c "job $job: SIGUSR1 sent" "${AR_CLUSTER_DIR}/log/healthd-$victim.log")" = 1 ]
  run healthctl_on "$victim" explain "$job"
  echo "$output" >&3
  [[ "$output" == *"checkpoint signal"*"SIGUSR1"*"requeued"* ]]
  # the event is over: the node comes back
  rm -f "$IMDS_DIR/$victim/events/maintenance/scheduled"
  wait_until $((40 + SLURM_SETTLE_S)) node_idle "$victim"
}

@test "IMDS not answering is a broken check, not a fault" {
  touch "$IMDS_DIR/n3/.down"
  wait_until 20 check_says n3 ec2 'rs[0]["status"] == "error" and rs[0]["code"] == "EC2-IMDS-UNREACHABLE"'
  rm -f "$IMDS_DIR/n3/.down"
  [ "$(node_state n3)" = idle ]
}

@test "a failing admin script with action warn: reported, no drain, no requeue" {
  local job victim
  job=$(submit -N2 -o "$WORK/job.out" --auto-resume=1 --wrap "srun -N2 sleep 600")
  wait_until 60 job_running_attempt "$job" 0
  victim=$(ready_victim "$job")
  echo "2 fan 3 failed" >"${AR_CLUSTER_DIR}/host/$victim/etc/admin-check"
  wait_until 20 check_says "$victim" script:admin-check \
    'rs[0]["status"] == "warn" and rs[0]["message"] == "script admin-check: fan 3 failed"'
  # several sweeps (1 s apart) later: still in service, the job untouched
  sleep 3
  check_says "$victim" script:admin-check 'rs[0]["status"] == "warn"'
  [ "$(node_state "$victim")" = mixed ] || [ "$(node_state "$victim")" = allocated ]
  [ "$(job_restarts "$job")" = 0 ]
  [ "$(job_state "$job")" = RUNNING ]
  # a broken script (bad exit) is an error of that check only
  echo "7 confused" >"${AR_CLUSTER_DIR}/host/$victim/etc/admin-check"
  wait_until 20 check_says "$victim" script:admin-check 'rs[0]["status"] == "error"'
  check_says "$victim" storage 'rs[0]["status"] == "ok"'
  [[ "$(node_state "$victim")" != drain* ]]
}
