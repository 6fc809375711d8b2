#!/usr/bin/env bats
# The progress watchdog on a real cluster: a job whose heartbeat stands still while every node of it
# checks healthy is requeued once, with STALL, by the node of its batch script; one whose heartbeat
# moves is left alone. (Stall times of seconds here; the check interval of the test cluster is 1 s.)

load helpers

setup() {
  reset_cluster
  WORK="${AR_CLUSTER_DIR}/work/${BATS_TEST_NUMBER}-$$"
  make_work "$WORK"
}

teardown() { reset_cluster; }


@test "a job whose heartbeat moves is never taken for stalled" {
  local job
  job=$(submit -N1 -o "$WORK/job.out" --auto-resume=1 --auto-resume-heartbeat="$WORK/hb" --auto-resume-stall=2,2 \
    --wrap "srun bash -c 'while :; do touch $WORK/hb; sleep 0.3; done'")
  wait_until 60 job_running_attempt "$job" 0
  # Several times the stall time and the settle time (check interval + deadline: 6 s) together.
  sleep 15
  [ "$(job_state "$job")" = RUNNING ]
  [ "$(job_restarts "$job")" = 0 ]
  run healthctl_on "$(batch_node "$job")" explain "$job"
  [[ "$output" != *stall* ]]
  scancel "$job"
}

@test "a heartbeat that stands still on healthy nodes: one requeue with STALL, no drain, the job running again" {
  local job host t0 t1
  mkdir -p "$WORK/ckpt"  # there from the start: a heartbeat healthd never saw is never judged
  job=$(submit -N2 -o "$WORK/job.out" --open-mode=append --auto-resume=1 --auto-resume-heartbeat="$WORK/ckpt" \
    --auto-resume-stall=3,3 --wrap "echo attempt \$SLURM_RESTART_COUNT last=\$AUTO_RESUME_LAST_CODE; srun -N2 sleep 600")
  wait_until 60 job_running_attempt "$job" 0
  host=$(batch_node "$job")
  t0=$(date +%s.%N)
  # First-beat time 3 s, then the settle time (6 s) for the other node to act first if it were faulty,
  # or the heartbeat to move again.
  wait_until 60 job_running_attempt "$job" 1
  t1=$(date +%s.%N)
  echo "running to requeued and running again: $(echo "$t1 - $t0" | bc) s" >&3
  [[ "$(job_admin_comment "$job")" == "auto-resume: attempt 1 ended: STALL on $host"* ]]
  for n in $(sinfo -h -N -o '%N' | sort -u); do
    [[ "$(node_state "$n")" != *drain* ]]
  done
  run healthctl_on "$host" explain "$job"
  echo "$output" >&3
  [[ "$output" == *"stall"*"no first beat of heartbeat $WORK/ckpt"*"acted on in 6 s"*"requeued"* ]]
  wait_until 30 grep -q "attempt 1 last=STALL" "$WORK/job.out"
  scancel "$job"
}
