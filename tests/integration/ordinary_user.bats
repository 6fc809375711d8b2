#!/usr/bin/env bats
# Jobs of an ordinary user, as on a real cluster (every suite submits as AR_USER; this one follows one
# job through several attempts): a job resumes after each fault up to the cap, whether its fault hits
# an srun step or the batch script alone, its stall watchdog works on every attempt, and nothing the
# user sets in the job's environment changes what healthd records of it.
# healthd runs here with max_resumes = 3 (the suite's other files use the cluster's 1).

load helpers

setup_file() {
  local node config
  for node in n1 n2 n3; do
    config="${AR_CLUSTER_DIR}/etc/healthd-ordinary-$node.toml"
    sed 's/^max_resumes = .*/max_resumes = 3/' "${AR_CLUSTER_DIR}/etc/healthd.toml" >"$config"
    grep -q '^max_resumes = 3$' "$config"
    chmod 0644 "$config"
    AR_HEALTHD_NODE_CONFIG="$config" cluster restart-healthd "$node"
  done
}

teardown_file() {
  local node
  for node in n1 n2 n3; do cluster restart-healthd "$node"; done
}

setup() {
  reset_cluster
  WORK="${AR_CLUSTER_DIR}/work/user-${BATS_TEST_NUMBER}-$$"
  make_work "$WORK"
}

teardown() { reset_cluster; }

fail() { echo "$*" >&2; return 1; }

# registry_restart NODE JOB: the restart count NODE's healthd holds for JOB.
registry_restart() { job_field "$1" "$2" 'job["restart_count"]'; }
registry_says() { [ "$(registry_restart "$1" "$2" 2>/dev/null)" = "$3" ]; }
job_owner() { job_field "$1" "$2" 'job["uid"]'; }
only_node() { job_nodes "$1" | head -1; }

# others_in_service NODE: no node but NODE is drained. Each fault drains the job's node, and a node
# comes back only seconds after the job restarted elsewhere: a fault injected before then would find
# 2 of the 3 nodes drained and its drain withheld by max_drained_share (0.7), as it should be (seen
# on 26.05, where the restarted job reached its third node first).
others_in_service() {
  local n
  for n in $AR_CLUSTER_NODES; do [ "$n" = "$1" ] || ! node_drained "$n" || return 1; done
}

# fault_each_attempt JOB N: N faults in a row, one on the node of each attempt, each answered by a
# requeue; the registry of the node that saw the fault knew the attempt it ran.
fault_each_attempt() {
  local job=$1 n=$2 attempt victim start
  for ((attempt = 0; attempt < n; attempt++)); do
    wait_until 90 job_running_attempt "$job" "$attempt"
    victim=$(only_node "$job")
    start=$(job_start "$job")
    wait_until 30 registry_says "$victim" "$job" "$attempt"
    [ "$(job_owner "$victim" "$job")" = "$(id -u "$AR_USER")" ]
    wait_until 60 others_in_service "$victim"
    inject_fault "$victim" "$(xid48)"
    wait_until 90 job_started_again "$job" $((attempt + 1)) "$start" ||
      fail "attempt $attempt of job $job on $victim not requeued: $(scontrol show job "$job" -o)"
    [[ "$(job_admin_comment "$job")" == "auto-resume: attempt $((attempt + 1)) ended: GPU-XID-48 on $victim"* ]]
  done
}

# not_resumed_past_the_cap JOB: one fault more leaves the job where it is, and says why.
not_resumed_past_the_cap() {
  local job=$1 victim
  wait_until 90 job_running_attempt "$job" 3
  victim=$(only_node "$job")
  wait_until 30 registry_says "$victim" "$job" 3
  wait_until 60 others_in_service "$victim"
  inject_fault "$victim" "$(xid48)"
  wait_until 30 bash -c "scontrol show job $job -o | grep -q 'AdminComment=auto-resume: not resumed: the cap of 3 resumes is reached'"
  [ "$(job_restarts "$job")" = 3 ]
}

@test "an ordinary user's job with an srun step is resumed after three faults in a row, not after a fourth" {
  local job
  # The user's own SLURM_RESTART_COUNT, in the submission and on the srun: Slurm's count wins.
  job=$(as_user env SLURM_RESTART_COUNT=7 sbatch --parsable -N1 -o "$WORK/job.out" --open-mode=append --auto-resume=1 \
    --wrap 'echo "attempt ${SLURM_RESTART_COUNT:-none} AUTO_RESUME_ATTEMPT=$AUTO_RESUME_ATTEMPT"; SLURM_RESTART_COUNT=7 srun sleep 600')
  [ "$(squeue -h -j "$job" -o %u)" = "$AR_USER" ]
  fault_each_attempt "$job" 3
  not_resumed_past_the_cap "$job"
  for attempt in 1 2 3; do
    grep -q "attempt $attempt AUTO_RESUME_ATTEMPT=$((attempt + 1))\$" "$WORK/job.out"
  done
  # The first attempt ran with the user's 7 in its environment, and still counted as attempt 1.
  grep -q "attempt 7 AUTO_RESUME_ATTEMPT=1\$" "$WORK/job.out"
  run grep -c "forbidden" "$WORK/job.out"
  [ "$output" = 0 ]
}

@test "an ordinary user's job without an srun step (the batch script alone) is resumed after three faults in a row" {
  local job
  job=$(as_user env SLURM_RESTART_COUNT=7 sbatch --parsable -N1 -o "$WORK/job.out" --open-mode=append --auto-resume=1 \
    --wrap 'echo "attempt ${SLURM_RESTART_COUNT:-none} AUTO_RESUME_ATTEMPT=$AUTO_RESUME_ATTEMPT"; sleep 600')
  fault_each_attempt "$job" 3
  not_resumed_past_the_cap "$job"
  for attempt in 1 2 3; do
    grep -q "attempt $attempt AUTO_RESUME_ATTEMPT=$((attempt + 1))\$" "$WORK/job.out"
  done
  run grep -c "forbidden" "$WORK/job.out"
  [ "$output" = 0 ]
}

@test "an ordinary user's stalled job is requeued for its stall on its second and third attempts too" {
  local job host attempt
  as_user mkdir "$WORK/hb"  # there from the start: a heartbeat healthd never saw is never judged
  # Attempts 1 to 3 never beat; the fourth finishes.
  job=$(as_user sbatch --parsable -N1 -o "$WORK/job.out" --open-mode=append --auto-resume=1 \
    --auto-resume-heartbeat="$WORK/hb" --auto-resume-stall=2,2 \
    --wrap 'echo "attempt ${SLURM_RESTART_COUNT:-0}"; [ "${SLURM_RESTART_COUNT:-0}" -ge 3 ] && exit 0; srun sleep 600')
  for attempt in 0 1 2; do
    wait_until 90 job_running_attempt "$job" "$attempt"
    host=$(batch_node "$job")
    wait_until 30 registry_says "$host" "$job" "$attempt"
    wait_until 90 bash -c "[ \"\$(scontrol show job $job -o | grep -o ' Restarts=[0-9]*' | head -1)\" = ' Restarts=$((attempt + 1))' ]" ||
      fail "attempt $attempt of job $job not requeued for its stall: $(scontrol show job "$job" -o)"
    [[ "$(job_admin_comment "$job")" == "auto-resume: attempt $((attempt + 1)) ended: STALL on $host"* ]]
  done
  wait_until 90 job_finished "$job"
  [ "$(job_state "$job")" = COMPLETED ]
  grep -q "attempt 3" "$WORK/job.out"
}
