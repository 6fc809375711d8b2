#!/usr/bin/env bats
# A local user attacks the daemons' sockets during an incident: thousands of connections from an
# unprivileged uid (idle, half-written, never reading their answers) must not delay the drain, the
# requeue or root's own requests (slurmstepd's lifecycle messages, healthctl).

load helpers

setup() {
  reset_cluster
  WORK="${AR_CLUSTER_DIR}/work/${BATS_TEST_NUMBER}-$$"
  make_work "$WORK"
  FLOOD_PID=""
}

teardown() {
  [ -z "$FLOOD_PID" ] || kill "$FLOOD_PID" 2>/dev/null || true
  reset_cluster
}

# start_flood PER_SOCKET: floods every node's socket as nobody; sets FLOOD_PID once it holds them.
start_flood() {
  runuser -u nobody -- python3 "$BATS_TEST_DIRNAME/flood_clients.py" --per-socket "$1" \
    "$(socket_of n1)" "$(socket_of n2)" "$(socket_of n3)" >"$WORK/flood.out" 2>"$WORK/flood.err" 3>&- &
  wait_until 120 grep -q '^ready ' "$WORK/flood.out"
  FLOOD_PID=$(sed -n 's/^ready pid=\([0-9]*\) .*/\1/p' "$WORK/flood.out")
  echo "flood: $(cat "$WORK/flood.out")" >&3
}

flood_running() { kill -0 "$FLOOD_PID" 2>/dev/null; }

# ping_within_1s NODE: root's healthctl ping answers, and within a second.
ping_within_1s() {
  local t0 t1
  t0=$(date +%s%N)
  healthctl_on "$1" --timeout-ms 1000 ping >/dev/null
  t1=$(date +%s%N)
  echo "ping $1 during the flood: $(((t1 - t0) / 1000000)) ms" >&3
  [ $(((t1 - t0) / 1000000)) -lt 1000 ]
}

@test "a flood of connections from a user delays neither drain and requeue nor root's ping" {
  local job victim node t0 t1
  start_flood 2100
  # Most of the 6300 connections were turned away at once; what each daemon let the user keep is
  # its per-uid cap.
  local opened refused
  opened=$(sed -n 's/.* opened=\([0-9]*\).*/\1/p' "$WORK/flood.out")
  refused=$(sed -n 's/.* refused=\([0-9]*\).*/\1/p' "$WORK/flood.out")
  [ "$opened" -eq 6300 ]
  [ "$((opened - refused))" -le $((3 * 32)) ]
  for node in n1 n2 n3; do ping_within_1s "$node"; done

  job=$(submit -N2 -o "$WORK/job.out" --auto-resume=1 --wrap "srun -N2 sleep 600")
  wait_until 60 job_running_attempt "$job" 0
  victim=$(ready_victim "$job")
  t0=$(date +%s.%N)
  inject_fault "$victim" "$(xid48)"
  wait_until 30 job_running_attempt "$job" 1
  t1=$(date +%s.%N)
  echo "fault to running again during the flood: $(echo "$t1 - $t0" | bc) s" >&3
  # The same deadline as without a flood (auto_resume.bats).
  [ "$(echo "$t1 - $t0 < 15" | bc)" = 1 ]
  [[ "$(node_state "$victim")" == drain* ]]
  [[ "$(node_reason "$victim")" == "healthd: GPU-XID-48: "* ]]
  job_not_on "$job" "$victim"
  [ "$(job_restarts "$job")" = 1 ]
  for node in n1 n2 n3; do ping_within_1s "$node"; done
  # The flood was on all along, and the refusals it earned cost a bounded log: one line a second.
  flood_running
  local log="${AR_CLUSTER_DIR}/log/healthd-$victim.log"
  [ "$(grep -c 'refused a connection' "$log")" -lt 300 ]
  ! grep -q 'server: accept: ' "$log" || { grep 'server: accept: ' "$log" >&2; false; }
}
