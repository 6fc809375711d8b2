#!/usr/bin/env bats
# Step re-run inside the allocation on a real cluster: an auto-resume srun step of a batch job whose
# node turns faulty runs again on the job's spare node, without a requeue; with no spare the job is
# requeued as before.

load helpers

setup() {
  reset_cluster
  WORK="${AR_CLUSTER_DIR}/work/${BATS_TEST_NUMBER}-$$"
  make_work "$WORK"
}

teardown() { reset_cluster; }

# lines_at_least N PATTERN: the job's output has N lines matching PATTERN (a function, so that
# wait_until reads the file at every try).
lines_at_least() { [ "$(grep -c -- "$2" "$WORK/job.out" 2>/dev/null)" -ge "$1" ]; }
never_pending() { ! grep -qx PENDING "$WORK/states"; }

# The step prints where it runs and what the plugin told it, then works until it is stopped.
STEP='echo "step $SLURM_STEP_ID on $SLURMD_NODENAME attempt=$AUTO_RESUME_ATTEMPT last=${AUTO_RESUME_LAST_CODE:-none} reruns=${AUTO_RESUME_STEP_RERUNS:-0} nnodes=$SLURM_NNODES nodes=$SLURM_JOB_NODELIST"; sleep 600'

@test "a GPU fault under a 2-node step of a 3-node job: the step runs again on the other two, no requeue" {
  local job host victim t0 t1
  printf '#!/bin/bash\nsrun --auto-resume=1 -N2 bash -c %q\necho "srun ended: $?"\n' "$STEP" >"$WORK/job.sh"
  job=$(submit -N3 -o "$WORK/job.out" --auto-resume=1 "$WORK/job.sh")
  wait_until 60 job_running_attempt "$job" 0
  wait_until 30 lines_at_least 2 '^step 0 on'
  host=$(batch_node "$job")
  # The step's node that is not the batch script's (the script's node cannot leave the job).
  victim=$(grep '^step 0 on' "$WORK/job.out" | awk '{print $4}' | grep -vx "$host" | head -1)
  [ -n "$victim" ]
  (while :; do job_state "$job"; sleep 0.1; done >"$WORK/states") &
  local watcher=$!
  t0=$(date +%s.%N)
  inject_fault "$victim" "$(xid48)"
  wait_until 60 lines_at_least 2 '^step 1 on'
  t1=$(date +%s.%N)
  kill "$watcher"
  echo "fault to step running again: $(echo "$t1 - $t0" | bc) s" >&3
  cat "$WORK/job.out" >&3
  # Same job, same attempt of Slurm's, never back in the queue; the faulty node out of it.
  [ "$(job_state "$job")" = RUNNING ]
  [ "$(job_restarts "$job")" = 0 ]
  never_pending
  job_not_on "$job" "$victim"
  [ "$(job_nodes "$job" | wc -l)" = 2 ]
  [[ "$(node_state "$victim")" == *drain* ]] || [[ "$(node_reason "$victim")" == healthd:* ]] ||
    grep -q "drained node $victim" "${AR_CLUSTER_DIR}/log/healthd-$victim.log"
  # The re-run sees the nodes left, its attempt number and why the last one ended.
  run grep '^step 1 on' "$WORK/job.out"
  [[ "$output" == *"attempt=2 last=GPU-XID-48 reruns=1 nnodes=2"* ]]
  ! grep '^step 1 on' "$WORK/job.out" | grep -q " on $victim "
  grep -q "auto-resume: step $job.0 runs again on" "$WORK/job.out"
  [[ "$(job_admin_comment "$job")" == "auto-resume: attempt 1 ended (step 0 re-run on 2 nodes, re-runs 1): GPU-XID-48 on $victim"* ]]
  run healthctl_on "$victim" explain "$job"
  echo "$output" >&3
  [[ "$output" == *"step re-run"*"step $job.0 runs again on"* ]]
  # One re-run for the failure: no later step, no requeue by any node.
  sleep 3
  [ "$(grep -c '^step 2 on' "$WORK/job.out")" = 0 ]
  [ "$(job_restarts "$job")" = 0 ]
  scancel "$job"
}

@test "the same fault with no spare node: the job is requeued, as without step re-run" {
  local job host victim
  printf '#!/bin/bash\necho "attempt $SLURM_RESTART_COUNT"\nsrun --auto-resume=1 -N2 bash -c %q\n' "$STEP" >"$WORK/job.sh"
  job=$(submit -N2 -o "$WORK/job.out" --open-mode=append --auto-resume=1 "$WORK/job.sh")
  wait_until 60 job_running_attempt "$job" 0
  wait_until 30 lines_at_least 2 '^step 0 on'
  host=$(batch_node "$job")
  victim=$(job_nodes "$job" | grep -vx "$host" | head -1)
  inject_fault "$victim" "$(xid48)"
  wait_until 60 job_running_attempt "$job" 1
  [[ "$(job_admin_comment "$job")" == "auto-resume: attempt 1 ended: GPU-XID-48 on $victim"* ]]
  run healthctl_on "$victim" explain "$job"
  echo "$output" >&3
  [[ "$output" == *"not re-run in the allocation"*"1 healthy node left in the job"*"needs 2"*"requeued instead"* ]]
  ! grep -q "runs again on" "$WORK/job.out"
  scancel "$job"
}
