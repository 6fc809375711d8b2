#!/usr/bin/env bats
# The auto-resume loop on a real cluster: a fault injected at the hardware boundary (a kernel-log line
# on one node), the verdict, the drain, one requeue, the restart on healthy nodes within seconds, the
# resume from the newest checkpoint, and the node's way back.

load helpers

setup() {
  reset_cluster
  WORK="${AR_CLUSTER_DIR}/work/${BATS_TEST_NUMBER}-$$"
  make_work "$WORK"
}

teardown() { reset_cluster; }

# submit_training FLAGS...: a 2-node job whose step runs examples/train.sh on both nodes (rank 0
# checkpoints), with its srun step third in the script so the failing step is not the first.
submit_training() {
  submit -N2 -o "$WORK/job.out" --open-mode=append "$@" --wrap "
    echo attempt \$SLURM_RESTART_COUNT AUTO_RESUME_ATTEMPT=\$AUTO_RESUME_ATTEMPT last=\$AUTO_RESUME_LAST_CODE@\$AUTO_RESUME_LAST_NODE
    srun true
    srun -N1 true
    srun -N2 --ntasks-per-node=1 ${AR_EXAMPLES}/train.sh --steps 16 --step-seconds 0.4 \
      --checkpoint-dir $WORK/ckpt --result $WORK/result"
}

checkpoints_at_least() { ls "$WORK/ckpt" 2>/dev/null | grep -c '^step-' | { read -r n; [ "$n" -ge "$1" ]; }; }

@test "a fault under a running auto-resume job: drain, one requeue, running again in seconds, resumed from its checkpoint" {
  local job victim t0 t1
  job=$(submit_training --auto-resume=1 --auto-resume-checkpoint-dir="$WORK/ckpt")
  wait_until 60 job_running_attempt "$job" 0
  wait_until 60 checkpoints_at_least 3
  victim=$(ready_victim "$job")
  t0=$(date +%s.%N)
  inject_fault "$victim" "$(xid48)"
  # The step is hung on the dead GPU in real life: nothing exits, healthd acts on the event.
  wait_until 30 job_running_again "$job" 1 "$victim"
  t1=$(date +%s.%N)
  echo "fault to running again: $(echo "$t1 - $t0" | bc) s" >&3
  [ "$(echo "$t1 - $t0 < 15" | bc)" = 1 ]
  # drained with the right reason, and not part of the new allocation
  [[ "$(node_state "$victim")" == drain* ]]
  [[ "$(node_reason "$victim")" == "healthd: GPU-XID-48: "*"double-bit ECC error"* ]]
  job_not_on "$job" "$victim"
  # resumed from a checkpoint, and finished with every step counted once
  wait_until 90 job_finished "$job"
  [ "$(job_state "$job")" = COMPLETED ]
  [ "$(job_restarts "$job")" = 1 ]
  grep -q "result=OK" "$WORK/result"
  grep -q "attempt 1 AUTO_RESUME_ATTEMPT=2 last=GPU-XID-48@$victim" "$WORK/job.out"
  grep -Eq "train: attempt 1: starting at step [1-9][0-9]* from $WORK/ckpt/step-" "$WORK/job.out"
  [[ "$(job_admin_comment "$job")" == "auto-resume: attempt 1 ended: GPU-XID-48 on $victim"* ]]
  # the timeline on the faulty node tells the story in order
  run healthctl_on "$victim" explain "$job"
  [ "$status" -eq 0 ]
  echo "$output" >&3
  [[ "$output" == *"fault seen"*"requeued"*"hold released"*"running again"* ]]
  # and healthd gives its own drain back once the node passes its checks again
  wait_until $((40 + SLURM_SETTLE_S)) node_idle "$victim"
}

@test "a fault while the step fails: still exactly one requeue" {
  local job victim
  job=$(submit -N2 -o "$WORK/job.out" --auto-resume=1 --wrap "
    if [ \"\$SLURM_RESTART_COUNT\" = 1 ]; then echo second attempt; exit 0; fi
    srun -N2 bash -c 'while [ ! -e $WORK/go ]; do sleep 0.1; done; exit 7'")
  wait_until 60 job_running_attempt "$job" 0
  victim=$(ready_victim "$job")
  inject_fault "$victim" "$(xid48)"
  touch "$WORK/go"
  wait_until 60 job_finished_attempt "$job" 1
  [ "$(job_state "$job")" = COMPLETED ]
  [ "$(job_restarts "$job")" = 1 ]
  grep -q "second attempt" "$WORK/job.out"
}

@test "the same fault under a job without the flag: node drained, job not requeued" {
  local job victim
  job=$(submit -N2 -o "$WORK/job.out" --wrap "srun -N2 sleep 600")
  wait_until 60 job_running_attempt "$job" 0
  victim=$(ready_victim "$job")
  inject_fault "$victim" "$(xid48)"
  wait_until 30 bash -c "[[ \"\$(sinfo -h -n $victim -o %T)\" == drain* ]]"
  sleep 3
  [ "$(job_restarts "$job")" = 0 ]
  [ "$(job_state "$job")" = RUNNING ]
  run healthctl_on "$victim" explain "$job"
  [[ "$output" != *"requeued"* ]]
}

@test "an application failure on healthy nodes: no drain, no requeue, the job ends as it would" {
  local job
  job=$(submit -N2 -o "$WORK/job.out" --auto-resume=1 --wrap 'srun -N2 bash -c "exit 3"; exit 3')
  wait_until 60 job_finished "$job"
  [ "$(job_state "$job")" = FAILED ]
  [ "$(job_restarts "$job")" = 0 ]
  [ -z "$(sinfo -h -R)" ]
  local node
  for node in $(job_nodes "$job"); do
    run healthctl_on "$node" explain "$job"
    [[ "$output" == *"no fault here"* ]]
    [[ "$output" != *"requeued"* ]]
  done
}

@test "the resume cap: the job is not requeued past it, and says why" {
  local job first second
  job=$(submit -N2 -o "$WORK/job.out" --auto-resume=1 --wrap "srun -N2 sleep 600")
  wait_until 60 job_running_attempt "$job" 0
  first=$(ready_victim "$job")
  inject_fault "$first" "$(xid48)"
  wait_until 30 job_running_again "$job" 1 "$first"
  second=$(ready_victim "$job")
  inject_fault "$second" "<4>NVRM: Xid (PCI:0000:3b:00): 48, pid=1, An uncorrectable double bit error"
  wait_until 30 bash -c "scontrol show job $job -o | grep -q 'AdminComment=auto-resume: not resumed: the cap of 1 resumes is reached'"
  # the job, hung on the second faulty node, ends instead of holding its nodes forever
  wait_until 30 job_finished "$job"
  [ "$(job_state "$job")" = CANCELLED ]
  [ "$(job_restarts "$job")" = 1 ]
  [[ "$(node_reason "$second")" == "healthd: GPU-XID-48: "* ]]
  grep -q "cap of 1 resumes is reached" "${AR_CLUSTER_DIR}/log/healthd-$second.log"
}

@test "a user's --auto-resume-max lowers the cap for their job; a bad value is refused" {
  run as_user sbatch --auto-resume=1 --auto-resume-max=lots --wrap true
  [ "$status" -ne 0 ]
  [[ "$output" == *"invalid value 'lots' for --auto-resume-max"* ]]
  local job victim
  job=$(submit -N2 -o "$WORK/job.out" --auto-resume=1 --auto-resume-max=0 --wrap "srun -N2 sleep 600")
  wait_until 60 job_running_attempt "$job" 0
  victim=$(ready_victim "$job")
  [ "$(job_field "$victim" "$job" 'job["max_resumes"]')" = 0 ]
  inject_fault "$victim" "$(xid48)"
  wait_until 30 job_finished "$job"
  [ "$(job_restarts "$job")" = 0 ]
  [[ "$(job_admin_comment "$job")" == "auto-resume: not resumed: the cap of 0 resumes is reached"* ]]
}

@test "an admin's drain is never undone by healthd; its own drains are" {
  scontrol update nodename=n3 state=drain reason="admin: replacing a DIMM"
  inject_fault n3 "$(mce_line)"
  inject_fault n2 "$(mce_line)"
  wait_until 30 bash -c '[[ "$(sinfo -h -n n2 -o %T)" == drain* ]]'
  [[ "$(node_reason n2)" == "healthd: KMSG-MCE: "* ]]
  # n2 comes back by itself after the hold and three healthy checks; n3 keeps the admin's reason
  wait_until $((40 + SLURM_SETTLE_S)) node_idle n2
  sleep 3
  [[ "$(node_state n3)" == drain* ]]
  [ "$(node_reason n3)" = "admin: replacing a DIMM" ]
  scontrol update nodename=n3 state=resume
}

@test "healthd killed between deciding and acting finishes the requeue once after its restart" {
  local job victim ctld_pid
  job=$(submit -N2 -o "$WORK/job.out" --auto-resume=1 --wrap "srun -N2 sleep 600")
  wait_until 60 job_running_attempt "$job" 0
  victim=$(ready_victim "$job")
  # Slurm stops answering: healthd decides, journals, and keeps retrying...
  ctld_pid=$(cat "${AR_CLUSTER_DIR}/run/slurmctld.pid")
  kill "$ctld_pid"
  wait_until 30 bash -c "! kill -0 $ctld_pid 2>/dev/null"
  inject_fault "$victim" "$(xid48)"
  wait_until 30 grep -q "will retry" "${AR_CLUSTER_DIR}/log/healthd-$victim.log"
  # ...and is killed before it could act.
  cluster stop-healthd "$victim" KILL
  slurmctld -f "$SLURM_CONF" 3>&-
  # Generous: in CI this ran beside three compilers, and a restarted slurmctld recovers its state and
  # waits for its nodes before it schedules (a 60 s wait timed out there once, on 24.11).
  wait_until 120 bash -c "scontrol ping | grep -q UP"
  cluster start-healthd "$victim"
  wait_until 120 job_running_attempt "$job" 1
  local log="${AR_CLUSTER_DIR}/log/healthd-$victim.log"
  grep -q "journal: 2 action(s) left pending by the last run will be carried out" "$log"
  # the drain and the requeue were carried out by the restarted daemon, once each
  [ "$(sed -n '/left pending by the last run/,$p' "$log" | grep -c "drained node $victim: healthd: GPU-XID-48: ")" = 1 ]
  [ "$(grep -c "job $job: requeued:" "$log")" = 1 ]
  sleep 5
  [ "$(job_restarts "$job")" = 1 ]
}
