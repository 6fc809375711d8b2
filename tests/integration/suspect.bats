#!/usr/bin/env bats
# The node behind a hang (issue 34), on a real cluster, jobs of an ordinary user: each task touches
# its own heartbeat file ($AUTO_RESUME_HEARTBEAT_FILE under --auto-resume-heartbeat-dir); when the
# job stops moving, each node's healthd judges its own tasks, the node the evidence points to says so
# in the job's admin comment, and the batch node's healthd requeues the job with that node kept off
# its next attempt (its ExcNodeList). The cluster has three nodes, so the jobs here have two: one
# node kept off leaves exactly enough. (Stall times of seconds; the check interval is 1 s.)
# Stragglers too: each rank writes its step into its file; a rank at half speed is reported by its
# node's healthd, and under straggler_action = "exclude" its node is kept off the job's next attempt
# once the job's next checkpoint is complete.

load helpers

setup() {
  reset_cluster
  WORK="${AR_CLUSTER_DIR}/work/${BATS_TEST_NUMBER}-$$"
  make_work "$WORK"
  as_user mkdir "$WORK/beats"
  RANK="${BATS_TEST_DIRNAME}/rank_hang.py"
}

teardown() {
  local n
  for n in ${OWN_POLICY_NODES:-}; do cluster restart-healthd "$n"; done  # the shared healthd.toml again
  if [ -n "${OWN_CONFIG_NODE:-}" ]; then
    wait_until 60 bash -c "! sinfo -h -n $OWN_CONFIG_NODE -o %T | grep -q drain" || scontrol update nodename="$OWN_CONFIG_NODE" state=resume
    cluster restart-healthd "$OWN_CONFIG_NODE"  # the shared healthd.toml again
  fi
  reset_cluster
}

# The whole admin comment: healthd's lines after the first are printed by scontrol at the start of a line.
admin_comment() { scontrol show job "$1" | awk 'on && /^   [A-Za-z]+=/ {exit} /^   AdminComment=/ {sub(/^   AdminComment=/, ""); on=1} on {print}'; }
job_excluded() { scontrol show job "$1" -o | grep -o ' ExcNodeList=[^ ]*' | cut -d= -f2; }
# Both ranks have beaten (each writes its own file at its first step; either may come first).
ranks_beating() { [ -e "$WORK/beats/rank-0" ] && [ -e "$WORK/beats/rank-1" ]; }
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
  wait_until 30 ranks_beating
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
  wait_until 30 ranks_beating
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

# NODE's healthd restarted with the lemon rule counting one user's jobs (the cluster's jobs are all
# AR_USER's) and a deep check that passes (tests/integration/admin_check.sh with no verdict file).
with_lemon_config() {
  local config="$WORK/healthd-$1.toml"
  sed -e "/^\[policy\]$/a lemon_suspicions = 3\nlemon_distinct_users = false" \
      -e "/^\[cure\]$/a deep_check = [\"${BATS_TEST_DIRNAME}/admin_check.sh\", \"$WORK/no-verdict\"]" \
      "${AR_CLUSTER_DIR}/etc/healthd.toml" >"$config"
  chmod 0644 "$config"
  OWN_CONFIG_NODE=$1
  AR_HEALTHD_NODE_CONFIG="$config" cluster restart-healthd "$1"
}
# How many stalls NODE was named the suspect of (its status, whatever its checks say: healthctl's
# exit status follows the node's verdict); empty while its healthd does not answer.
suspicions_of() {
  { healthctl_on "$1" status --json || true; } |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["health"]["node"].get("suspicions", {}).get("in_window", 0))' 2>/dev/null
}
answers() { [ -n "$(suspicions_of "$1")" ]; }
suspected_or_drained() { [ "$(suspicions_of "$1")" = "$2" ] || node_drained "$1"; }

# Every node's healthd restarted with LINES added to the shared healthd.toml's [policy].
with_policy() {
  local n config
  for n in n1 n2 n3; do
    config="$WORK/healthd-$n.toml"
    sed -e "/^\[policy\]$/a $1" "${AR_CLUSTER_DIR}/etc/healthd.toml" >"$config"
    chmod 0644 "$config"
    OWN_POLICY_NODES+=" $n"
    AR_HEALTHD_NODE_CONFIG="$config" cluster restart-healthd "$n"
  done
  for n in n1 n2 n3; do wait_until 30 answers "$n"; done
}
# The jobs NODE's ranks straggle in now (its status, as every user sees it).
straggling_on() {
  { healthctl_on "$1" status --json || true; } |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["health"]["node"].get("stragglers", {}).get("jobs", 0))' 2>/dev/null
}
straggles() { [ "$(straggling_on "$1")" = 1 ]; }
submit_paced() {
  submit -N2 -o "$WORK/job.out" --open-mode=append --auto-resume=1 --auto-resume-heartbeat-dir="$WORK/beats" \
    --auto-resume-stall=30,60 "$@" --wrap "srun -N2 --ntasks-per-node=1 python3 $RANK $WORK/hang 0.2"
}

@test "a rank at half speed: its node is reported as a straggler within the window, and only reported" {
  local job victim host started
  with_policy 'straggler_window_s = 10'
  job=$(submit_paced)
  wait_until 60 job_running_attempt "$job" 0
  wait_until 30 ranks_beating
  host=$(batch_node "$job")
  victim=$(other_node "$job")
  started=$(date +%s.%N)
  echo "slow $victim 2" >"$WORK/hang"
  wait_until 60 straggles "$victim"
  echo "reported $(echo "$(date +%s.%N) - $started" | bc) s after the rank slowed (window 10 s)" >&3
  [ "$(straggling_on "$host")" = 0 ]
  run healthctl_on "$victim" explain "$job"
  echo "$output" >&3
  [[ "$output" == *"straggler"*"ranks on $victim straggle: rank "*"a step against"*"on other nodes"*"checks: "* ]]
  run healthctl_on "$victim" status
  [[ "$output" == *"straggling"*"ranks here run slower than the rest of 1 job(s) by more than 15% (report)"* ]]
  # Another user sees that the node straggles, never which job.
  runuser -u "$AR_OTHER_USER" -- "$AR_HEALTHCTL" --socket "$(socket_of "$victim")" status --json |
    python3 -c 'import json,sys; s=json.load(sys.stdin)["health"]["node"]["stragglers"]; print(s); assert sorted(s) == ["action", "jobs", "requeued_without", "share"]' >&3
  # report: the job runs on where it is.
  sleep 5
  [ "$(job_restarts "$job")" = 0 ]
  scancel "$job"
}

@test "a straggler under exclude: the job is requeued without its node at its next checkpoint" {
  local job victim
  with_policy 'straggler_window_s = 10\nstraggler_action = "exclude"'
  as_user mkdir -p "$WORK/ckpt/1"
  as_user touch "$WORK/ckpt/1/COMPLETE"
  job=$(submit_paced --auto-resume-checkpoint-dir="$WORK/ckpt")
  wait_until 60 job_running_attempt "$job" 0
  wait_until 30 ranks_beating
  victim=$(other_node "$job")
  echo "slow $victim 2" >"$WORK/hang"
  wait_until 60 straggles "$victim"
  # Found, but no checkpoint since: the job runs on, on the same nodes.
  sleep 3
  [ "$(job_restarts "$job")" = 0 ]
  # The job's next checkpoint completes (written as the job would, by its user).
  as_user mkdir "$WORK/ckpt/2"
  as_user touch "$WORK/ckpt/2/COMPLETE"
  wait_until 90 job_running_attempt "$job" 1
  echo "admin comment: $(admin_comment "$job")" >&3
  [ "$(job_excluded "$job")" = "$victim" ]
  job_not_on "$job" "$victim"
  [[ "$(admin_comment "$job")" == *"auto-resume: attempt 1 ended: STRAGGLER on $victim: suspect $victim kept off the next attempt; ranks on $victim straggle: rank "* ]]
  [[ "$(admin_comment "$job")" == *"auto-resume suspects: attempt 1: $victim: suspect $victim kept off the next attempt"* ]]
  run healthctl_on "$victim" explain "$job"
  [[ "$output" == *"checkpoint complete"*"requeued without $victim"* ]]
  # Slow is not faulty: the node stays in service.
  [[ "$(node_state "$victim")" != *drain* ]]
  scancel "$job"
}

@test "a node suspected three times is drained for a deep check that passes it back" {
  local job have i
  with_lemon_config n3
  wait_until 30 answers n3
  # Suspicions of earlier tests of this file count too (they are kept): only the ones missing are made.
  have=$(suspicions_of n3)
  [ "$have" -lt 3 ]
  for i in $(seq $((have + 1)) 3); do
    rm -f "$WORK/hang"
    # n3 by name: it stays the job's node (named, never kept off), and keeps the suspicion.
    job=$(submit -N2 -w n1,n3 -o "$WORK/job.out" --open-mode=append --auto-resume=1 \
      --auto-resume-heartbeat-dir="$WORK/beats" --auto-resume-stall=4,30 \
      --wrap "srun -N2 --ntasks-per-node=1 python3 $RANK $WORK/hang")
    wait_until 60 job_running_attempt "$job" 0
    sleep 3
    echo "one n3" >"$WORK/hang"
    wait_until 90 bash -c "[ \"\$(scontrol show job $job -o | grep -o ' Restarts=[0-9]*' | cut -d= -f2)\" = 1 ]"
    [[ "$(admin_comment "$job")" == *"auto-resume suspects: attempt 1: n3: suspect n3 not kept off the job: it asks for n3 by name"* ]]
    scancel "$job"
    wait_until 60 suspected_or_drained n3 "$i"
    if [ "$i" -lt 3 ]; then ! node_drained n3; fi
  done
  wait_until 60 node_drained n3
  echo "n3: $(node_reason n3)" >&3
  [[ "$(node_reason n3)" == "healthd: SUSPECT-LEMON: suspect of 3 stall(s) within 7 day(s)"*"drained for the deep check" ]]
  # No job on it: the deep check runs, passes, and the next healthy sweeps return the node.
  wait_until 90 node_idle n3
  run healthctl_on n3 events
  echo "$output" >&3
  [[ "$output" == *"deep check passed on n3"* ]]
  [ "$(suspicions_of n3)" = 0 ]
}
