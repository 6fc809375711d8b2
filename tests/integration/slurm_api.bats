#!/usr/bin/env bats
# healthd reads Slurm through its C API (issue 11): free text in a node's reason or a job's comment
# steers nothing, the user's --comment is left alone, a requeued job goes first in a full queue, and a
# job that cannot be requeued is told so at its first step.

load helpers

setup() {
  reset_cluster
  WORK="${AR_CLUSTER_DIR}/work/${BATS_TEST_NUMBER}-$$"
  make_work "$WORK"
  chmod 777 "$WORK"
}

# The first test's admin drain is undone here (healthd never resumes it); any other node is left to
# healthd, whose own drains come back by themselves: resuming one by hand would be an admin's
# override of a fault that still holds, and the next test's fault on it would not be drained.
teardown() {
  local n
  for n in n1 n2 n3; do
    if [ "$(node_reason "$n")" = "bad disk State=IDLE see ticket" ]; then scontrol update nodename="$n" state=resume; fi
  done
  reset_cluster
}

timeline_has() { healthctl_on "$1" explain "$2" | grep -q "$3"; }
job_pending() { [ "$(job_state "$1")" = PENDING ]; }
# as_other_user ARGS...: sbatch as another ordinary user (AR_OTHER_USER), whose jobs fill the queue.
as_other_user() { runuser -u "$AR_OTHER_USER" -- sbatch --parsable -o /dev/null "$@" | cut -d';' -f1; }

@test "an admin's drain reason holding State=IDLE: the node stays theirs, the faulty job is requeued once" {
  local job victim
  job=$(submit -N1 --auto-resume=1 -o "$WORK/job.out" --wrap 'sleep 300')
  wait_until 60 job_running_attempt "$job" 0
  victim=$(ready_victim "$job")
  scontrol update nodename="$victim" state=drain reason="bad disk State=IDLE see ticket"
  [[ "$(node_state "$victim")" == *drain* ]]
  inject_fault "$victim" "$(xid48)"
  wait_until 30 job_running_again "$job" 1 "$victim"
  job_not_on "$job" "$victim"
  # requeued once, and the admin's reason was not replaced: the drain was theirs
  sleep 3
  [ "$(job_restarts "$job")" = 1 ]
  [ "$(node_reason "$victim")" = "bad disk State=IDLE see ticket" ]
  run healthctl_on "$victim" explain "$job"
  echo "$output" >&3
  [[ "$output" == *"requeued"*"running again"* ]]
  # healthd never gives back a drain that is not its own, however long the node is healthy
  healthctl_on "$victim" check --now >/dev/null || [ $? -le 2 ]  # 1 warnings, 2 faulty: answered
  sleep 4
  healthctl_on "$victim" check --now >/dev/null || [ $? -le 2 ]
  [[ "$(node_state "$victim")" == *drain* ]]
  [ "$(node_reason "$victim")" = "bad disk State=IDLE see ticket" ]
}

@test "a job whose comment holds 'JobState=PENDING Restarts=9' is requeued once, and its comment is unchanged" {
  local job victim comment='{"policy": "keep-mine"} JobState=PENDING Restarts=9'
  job=$(submit -N1 --auto-resume=1 --comment="$comment" -o "$WORK/job.out" \
    --wrap 'echo attempt=$AUTO_RESUME_ATTEMPT last=$AUTO_RESUME_LAST_CODE; sleep 300')
  wait_until 60 job_running_attempt "$job" 0
  victim=$(ready_victim "$job")
  inject_fault "$victim" "$(xid48)"
  wait_until 30 job_running_attempt "$job" 1
  sleep 2
  [ "$(job_restarts "$job")" = 1 ]
  [ "$(job_user_comment "$job")" = "$comment" ]
  [[ "$(job_admin_comment "$job")" == "auto-resume: attempt 1 ended: GPU-XID-48 on $victim"* ]]
  # the restarted job read why from the admin comment
  wait_until 10 grep -q "attempt=2 last=GPU-XID-48" "$WORK/job.out"
}

@test "a requeued job starts before a queue of another user's pending jobs, and gets Slurm's priority back" {
  local job victim others=() queue=() p
  job=$(submit -N1 --exclusive --auto-resume=1 -o "$WORK/job.out" --wrap 'sleep 600')
  wait_until 60 job_running_attempt "$job" 0
  victim=$(ready_victim "$job")
  # another user holds the two other nodes, and queues four more jobs behind them
  others+=("$(as_other_user -N1 --exclusive --wrap 'sleep 600')")
  others+=("$(as_other_user -N1 --exclusive --wrap 'sleep 600')")
  wait_until 60 bash -c "[ \"\$(squeue -h -u $AR_OTHER_USER -t RUNNING | wc -l)\" = 2 ]"
  for _ in 1 2 3 4; do queue+=("$(as_other_user -N1 --exclusive --wrap 'sleep 600')"); done
  # and their priority is above this job's (as fair share would put a busy user's): without healthd's
  # raise, the requeued job would start after all four
  for p in "${queue[@]}"; do scontrol update jobid="$p" priority=$(($(job_priority "$job") + 1000)); done
  [ "$(job_priority "${queue[0]}")" -gt "$(job_priority "$job")" ]

  inject_fault "$victim" "$(xid48)"
  wait_until 30 bash -c "[ \"\$(scontrol show job $job -o | grep -o ' Restarts=[0-9]*' | head -1)\" = ' Restarts=1' ]"
  wait_until 30 job_pending "$job"
  wait_until 10 timeline_has "$victim" "$job" "hold released"
  # eligible (its begin second has come: the reason is no longer BeginTime) and waiting for a node
  wait_until 15 bash -c "[ \"\$(squeue -h -j $job -o %r)\" = Resources ]"
  # a node frees up: the requeued job takes it, not the first of the queue
  scancel "${others[0]}"
  wait_until 30 job_running_attempt "$job" 1 || { squeue -o '%i %u %T %Q %r %N %S' >&2; scontrol show job "$job" >&2; false; }
  for p in "${queue[@]}"; do [ "$(job_state "$p")" = PENDING ]; done
  # and once running it is back at the priority Slurm computes, below the raised one
  wait_until 10 bash -c "[ \"\$(squeue -h -j $job -o %Q)\" -lt 4294967293 ]"
  run healthctl_on "$victim" explain "$job"
  echo "$output" >&3
  [[ "$output" == *"top priority until it runs"*"running again"* ]]
}

@test "--no-requeue with --auto-resume=1 is told at its first step, and at a fault it is not requeued" {
  local job victim
  job=$(submit -N1 --no-requeue --auto-resume=1 -o "$WORK/job.out" --wrap 'echo requeue=$AUTO_RESUME_REQUEUE; sleep 300')
  wait_until 60 job_running_attempt "$job" 0
  wait_until 10 grep -q "requeue=0" "$WORK/job.out"
  grep -q "auto-resume: job $job cannot be resumed after a fault: it does not allow requeue (sbatch --no-requeue" "$WORK/job.out"
  victim=$(ready_victim "$job")
  inject_fault "$victim" "$(xid48)"
  wait_until 30 timeline_has "$victim" "$job" "not requeued"
  [[ "$(job_admin_comment "$job")" == "auto-resume: not requeued after GPU-XID-48 on $victim: the job does not allow requeue"* ]]
  [ "$(job_restarts "$job")" = 0 ]
  # the node is drained all the same, and the job that asked for no requeue is left as it is
  [[ "$(node_state "$victim")" == drain* ]]
  [ "$(job_state "$job")" = RUNNING ]
  # a job that allows requeue is not told anything
  local ok
  ok=$(submit -N1 --auto-resume=1 -o "$WORK/ok.out" --wrap 'echo requeue=${AUTO_RESUME_REQUEUE:-unset}')
  wait_until 60 job_finished "$ok"
  grep -q "requeue=unset" "$WORK/ok.out"
  ! grep -q "cannot be resumed" "$WORK/ok.out"
}
