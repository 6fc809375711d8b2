#!/usr/bin/env bats
# The node behind a hang (issue 34), on a real cluster, jobs of an ordinary user: each task touches
# its own heartbeat file ($AUTO_RESUME_HEARTBEAT_FILE under --auto-resume-heartbeat-dir); when the
# job stops moving, each node's healthd judges its own tasks, the node the evidence points to says so
# in the job's admin comment, and the batch node's healthd requeues the job with that node kept off
# its next attempt (its ExcNodeList). The cluster has three nodes, so the jobs here have two: one
# node kept off leaves exactly enough. (Stall times of seconds; the check interval is 1 s.)

load helpers

setup() {
  reset_cluster
  WORK="${AR_CLUSTER_DIR}/work/${BATS_TEST_NUMBER}-$$"
  make_work "$WORK"
  as_user mkdir "$WORK/beats"
  RANK="${BATS_TEST_DIRNAME}/rank_hang.py"
}

teardown() { reset_cluster; }

# The whole admin comment: healthd's lines after the first are printed by scontrol at the start of a line.
admin_comment() { scontrol show job "$1" | awk 'on && /^   [A-Za-z]+=/ {exit} /^   AdminComment=/ {sub(/^   AdminComment=/, ""); on=1} on {print}'; }
job_excluded() { scontrol show job "$1" -o | grep -o ' ExcNodeList=[^ ]*' | cut -d= -f2; }
# The job's node that does not run its batch script.
other_node() { job_nodes "$1" | grep -vx "$(batch_node "$1")" | head -1; }
submit_ranks() {
  submit -N2 -o "$WORK/job.out" --open-mode=append --auto-resume=1 --auto-resume-heartbeat-dir="$WORK/beats" \
    --auto-resume-stall=4,30 --wrap "srun -N2 --ntasks-per-node=1 python3 $RANK $WORK/hang"
}

@test "a rank that stops while the others wait for it: requeued once without its node, which explain names" {
  local job host victim
  job=$(submit_ranks)
  wait_until 60 job_running_attempt "$job" 0
  wait_until 30 test -e "$WORK/beats/rank-1"
  [ -e "$WORK/beats/rank-0" ]
  sleep 3  # beating for a while: past the first beat, the stall time (4 s) counts
  host=$(batch_node "$job")
  victim=$(other_node "$job")
  echo "one $victim" >"$WORK/hang"
  wait_until 90 job_running_attempt "$job" 1
  echo "admin comment: $(admin_comment "$job")" >&3
  [ "$(job_excluded "$job")" = "$victim" ]
  job_not_on "$job" "$victim"
  [ "$(job_restarts "$job")" = 1 ]
  [[ "$(admin_comment "$job")" == *"auto-resume evidence: attempt 1 on $victim: rank "*"CPU time did not move"* ]]
  [[ "$(admin_comment "$job")" == *"auto-resume: attempt 1 ended: STALL on $host: "*"suspect $victim kept off the next attempt"* ]]
  run healthctl_on "$host" explain "$job"
  echo "$output" >&3
  [[ "$output" == *"suspect $victim"*"CPU time did not move"* ]]
  [[ "$output" == *"kept off"*"suspect $victim kept off the next attempt"* ]]
  # The victim's own daemon said why it pointed at itself; the batch node's ranks were busy.
  run healthctl_on "$victim" explain "$job"
  [[ "$output" == *"stall evidence: points here"* ]]
  run healthctl_on "$host" explain "$job"
  [[ "$output" == *"stall evidence: nothing here"*"busy"* ]]
  # No node is drained for a suspicion alone.
  for n in $(sinfo -h -N -o '%N' | sort -u); do
    [[ "$(node_state "$n")" != *drain* ]]
  done
  scancel "$job"
}

@test "every rank stopping together: a plain STALL requeue, no node kept off" {
  local job host
  job=$(submit_ranks)
  wait_until 60 job_running_attempt "$job" 0
  wait_until 30 test -e "$WORK/beats/rank-1"
  sleep 3
  host=$(batch_node "$job")
  echo all >"$WORK/hang"
  wait_until 90 job_running_attempt "$job" 1
  echo "admin comment: $(admin_comment "$job")" >&3
  [ -z "$(job_excluded "$job")" ] || [ "$(job_excluded "$job")" = "(null)" ]
  [[ "$(admin_comment "$job")" == *"auto-resume: attempt 1 ended: STALL on $host: "*"the job stopped together"* ]]
  run healthctl_on "$host" explain "$job"
  [[ "$output" == *"no node kept off"*"2 of the job's 2 nodes show the same"* ]]
  scancel "$job"
}
