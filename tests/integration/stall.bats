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

# An ordinary user's jobs (issue 31): nobody submits from a directory of their own (1777), and the
# heartbeat is read with their rights, counting their files only.
user_dir() { mkdir -p "$WORK/user"; chmod 1777 "$WORK/user"; echo "$WORK/user"; }
submit_as_nobody() {
  local dir=$1; shift
  runuser -u nobody -- sbatch --parsable --chdir="$dir" "$@" | cut -d';' -f1
}
healthd_log() { echo "${AR_CLUSTER_DIR}/log/healthd-$1.log"; }

@test "an ordinary user's heartbeat that stands still: requeued with STALL, read with the user's rights" {
  local job dir host
  dir=$(user_dir)
  runuser -u nobody -- mkdir "$dir/ckpt"
  job=$(submit_as_nobody "$dir" -N1 -o "$dir/job.out" --auto-resume=1 --auto-resume-heartbeat="$dir/ckpt" \
    --auto-resume-stall=3,3 --wrap "srun sleep 600")
  wait_until 60 job_running_attempt "$job" 0
  host=$(batch_node "$job")
  wait_until 60 job_running_attempt "$job" 1
  [[ "$(job_admin_comment "$job")" == "auto-resume: attempt 1 ended: STALL on $host"* ]]
  scancel "$job"
}

@test "no oracle: a heartbeat in a directory only root may search is not judged for an ordinary user" {
  local job dir host
  dir=$(user_dir)
  mkdir -m 0700 "$WORK/secret"
  touch "$WORK/secret/hb"  # read as root, it is there and never moves: a stall, requeued
  job=$(submit_as_nobody "$dir" -N1 -o "$dir/job.out" --auto-resume=1 --auto-resume-heartbeat="$WORK/secret/hb" \
    --auto-resume-stall=2,2 --wrap "srun sleep 600")
  wait_until 60 job_running_attempt "$job" 0
  host=$(batch_node "$job")
  wait_until 30 grep -q "job $job: heartbeat not judged: $WORK/secret/hb: Permission denied" "$(healthd_log "$host")"
  # Several times the first-beat time and the settle time (6 s) together.
  sleep 15
  [ "$(job_restarts "$job")" = 0 ]
  run healthctl_on "$host" explain "$job"
  [[ "$output" != *stall* ]]
  scancel "$job"
}

@test "a co-writer's file dated 2035 in a shared heartbeat directory does not pin the owner's beat" {
  local job dir host
  dir=$(user_dir)
  mkdir -m 1777 "$dir/shared"
  touch -d 2035-01-01 "$dir/shared/planted"  # root's here: another user of the shared directory
  job=$(submit_as_nobody "$dir" -N1 -o "$dir/job.out" --auto-resume=1 --auto-resume-heartbeat="$dir/shared" \
    --auto-resume-stall=2,2 --wrap "srun bash -c 'while :; do touch $dir/shared/hb; sleep 0.3; done'")
  wait_until 60 job_running_attempt "$job" 0
  host=$(batch_node "$job")
  sleep 15
  [ "$(job_state "$job")" = RUNNING ]
  [ "$(job_restarts "$job")" = 0 ]
  run healthctl_on "$host" explain "$job"
  [[ "$output" != *stall* ]]
  scancel "$job"
}
