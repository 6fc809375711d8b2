#!/usr/bin/env bats
# Every promise of an incident kept under faults, on the real cluster: healthd SIGKILLed at every
# point between two Slurm calls of an incident (and at random points), slurmctld stopped mid-incident,
# the state filesystem full. An incident here is an XID 48 under a hung 2-node auto-resume job; it
# ends with the faulty node drained (reason "healthd: ..."), no other node drained, exactly one
# requeue, Slurm's ~120 s requeue hold released (the job RUNNING again within seconds, off the faulty
# node), the job's comment naming the attempt, and the node given back once it checks healthy.
#
# The exact points come from libkill-at-call.so (tests/fakes), preloaded into every node's healthd
# between it and libslurm, and from kill_at_call.sh, which stands in for the one forked command left
# (scontrol reboot; the daemons run with a copy of the cluster's config whose [slurm] scontrol points
# at it). Both SIGKILL the daemon just before its Nth Slurm call or just after that call returned.

load helpers

WRAP="${AR_CLUSTER_DIR}/faults"
CTLD_LOG="${AR_CLUSTER_DIR}/log/slurmctld.log"
NODES=(n1 n2 n3)

# ---------------------------------------------------------------------------------------------
# The Slurm-call wrapper and the daemons that use it
# ---------------------------------------------------------------------------------------------

# wrapped_config: the cluster's healthd.toml with [slurm] scontrol pointing at the wrapper.
write_wrapped_config() {
  mkdir -p "$WRAP/bin"
  local c
  for c in scontrol squeue scancel; do ln -sfn "${BATS_TEST_DIRNAME}/kill_at_call.sh" "$WRAP/bin/$c"; done
  python3 - "${AR_CLUSTER_DIR}/etc/healthd.toml" "$WRAP/healthd.toml" "$WRAP/bin/scontrol" <<'EOF'
import re, sys
src, dst, scontrol = sys.argv[1:]
text = open(src).read()
line = 'scontrol = "%s"' % scontrol
if re.search(r'^\[slurm\]\s*$', text, re.M):
    text = re.sub(r'^\[slurm\]\s*$', '[slurm]\n' + line, text, count=1, flags=re.M)
else:
    text += '\n[slurm]\n' + line + '\n'
# Dozens of incidents an hour on the same nodes are this file's point, not a flapping node.
text, n = re.subn(r'^flap_max_faults\s*=.*$', 'flap_max_faults = 1000', text, flags=re.M)
if n == 0:
    text = re.sub(r'^\[policy\]\s*$', '[policy]\nflap_max_faults = 1000', text, count=1, flags=re.M)
open(dst, 'w').write(text)
EOF
}

# healthd reaches Slurm through libslurm: libkill-at-call.so, preloaded, stands between the two and
# counts, kills and stops exactly as kill_at_call.sh does for a forked scontrol (reboot), sharing its
# files, so one count covers both.
start_wrapped_healthd() {
  AR_HEALTHD_NODE_CONFIG="$WRAP/healthd.toml" \
    AR_HEALTHD_ENV="${AR_HEALTHD_ENV:-} LD_PRELOAD=${AR_KILL_AT_CALL_LIB} AR_KILL_AT_CALL_DIR=$WRAP" \
    cluster start-healthd "$1"
}

healthd_pid() { tr -dc '0-9' <"${AR_CLUSTER_DIR}/run/healthd-$1.pid" 2>/dev/null; }

# proc_alive PID: the process exists and is no zombie (this machine's pid 1 may not reap orphans).
proc_alive() {
  local st
  st="$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)" || return 1
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}
proc_gone() { ! proc_alive "$1"; }

# arm NODE [SPEC]: from now on count NODE's Slurm calls from 1; SPEC "N before|after" kills there.
arm() {
  local dir="$WRAP/$1"
  mkdir -p "$dir"
  rm -f "$dir/kill-at" "$dir/kills.log" "$dir/stop-ctld-at" "$dir/ctld-stopped"
  echo 0 >"$dir/count"
  : >"$dir/calls.log"
  if [ -n "${2:-}" ]; then echo "$2" >"$dir/kill-at"; fi
}
calls_made() { cat "$WRAP/$1/count" 2>/dev/null || echo 0; }
made_a_call() { [ "$(calls_made "$1")" -ge 1 ]; }
# call_text NODE N: "requeue 12", the Nth call since arm.
call_text() { awk -v n="$2" '$2 == n { $1 = ""; $2 = ""; sub(/^  /, ""); print; exit }' "$WRAP/$1/calls.log"; }

setup_file() {
  rm -f "$WRAP/baseline-calls.log"
  write_wrapped_config
  local n
  for n in "${NODES[@]}"; do
    cluster stop-healthd "$n"
    start_wrapped_healthd "$n"
  done
}

# The daemons go back to the shared config with their state wiped: this file's dozens of incidents
# an hour stay in each journal's fault history, and under the shared config's flap_max_faults the
# next fault in another file would keep its node out "until an admin resumes it". Every node is
# idle by now (teardown), so nothing else of that state is needed.
teardown_file() {
  local n
  for n in "${NODES[@]}"; do
    cluster stop-healthd "$n"
    rm -rf "${AR_CLUSTER_DIR:?}/state/$n"
    cluster start-healthd "$n"
  done
}

setup() {
  reset_cluster
  WORK="${AR_CLUSTER_DIR}/work/faults-${BATS_TEST_NUMBER}-$$"
  make_work "$WORK"
  FAILS="$WORK/failures"
  : >"$FAILS"
  : >"$WORK/fired"
}

teardown() {
  release_small_state_dir
  local n
  for n in "${NODES[@]}"; do
    rm -f "$WRAP/$n/kill-at"
    # A test that ended with a daemon down leaves the next ones a whole cluster.
    if ! proc_alive "$(healthd_pid "$n")"; then start_wrapped_healthd "$n"; fi
  done
  reset_cluster
}

# ---------------------------------------------------------------------------------------------
# One incident and its promises
# ---------------------------------------------------------------------------------------------

all_idle() { local n; for n in "${NODES[@]}"; do node_idle "$n" || return 1; done; }
# Each attempt's batch script leaves a mark as it starts: a job cancelled within a moment of its
# launch has been seen to keep its batch node allocated (COMPLETING) for a minute in Slurm 22.05,
# so an incident cancels its job only once the restarted script runs (script_started).
submit_hung() {
  submit -N2 -o "$WORK/job-%j.out" --auto-resume=1 "$@" \
    --wrap "touch $WORK/started-\$SLURM_JOB_ID-\${SLURM_RESTART_COUNT:-0}; srun -N2 sleep 600"
}
script_started() { test -e "$WORK/started-$1-$2"; }
ctld_log_size() { stat -c %s "$CTLD_LOG"; }
ctld_log_since() { tail -c +"$(($1 + 1))" "$CTLD_LOG"; }
job_summary() { scontrol show job "$1" -o 2>&1 | grep -oE '(^| )(JobState|Reason|Restarts|BeginTime|NodeList)=[^ ]*' | tr -d '\n'; }
# ctld_second LINE: the epoch second of a slurmctld log line ("[2026-12-06T05:25:38.849] ...").
ctld_second() { date -d "$(sed 's/^\[\([^].]*\).*/\1/' <<<"$1")" +%s; }
# start_second JOB: the epoch second of the job's StartTime (0 when there is none).
start_second() { date -d "$(job_start "$1")" +%s 2>/dev/null || echo 0; }
# started_again JOB CTLD_OFFSET VICTIM: the job's second attempt was started by slurmctld after the
# offset and runs. (Just after `scontrol requeue` a job still reads RUNNING with Restarts=1 for a
# moment, with the old nodes or none, and a StartTime that is only the expected start.) The start is
# slurmctld's log line or, where there is none (Slurm 26.05 logs a start by the backfill scheduler
# only under DebugFlags=HetJob), a StartTime later than the second of the requeue on a node list
# that is set and holds no VICTIM.
started_again() {
  [ "$(job_state "$1")" = RUNNING ] && [ "$(job_restarts "$1")" = 1 ] || return 1
  local log requeued nodes
  log="$(ctld_log_since "$2")"
  grep -qE "(Started|Allocate) JobId=$1 " <<<"$log" && return 0
  requeued="$(grep -m1 "Requeuing JobId=$1\$" <<<"$log")" || return 1
  nodes="$(job_nodes "$1")"
  [ -n "$nodes" ] && ! grep -qx "$3" <<<"$nodes" || return 1
  [ "$(start_second "$1")" -gt "$(ctld_second "$requeued")" ]
}

# fail WHAT: records a broken promise of the current incident (all are reported at the end).
fail() {
  echo "[$CASE] $*" >>"$FAILS"
  echo "  BROKEN: $*" >&3
}

# promises_kept JOB VICTIM CTLD_OFFSET [DEADLINE_S]: checks every promise of the incident of JOB on
# VICTIM; slurmctld's log from CTLD_OFFSET on is what Slurm was asked. Returns 1 if any was broken.
promises_kept() {
  local job=$1 victim=$2 off=$3 deadline=${4:-20} broken=0 t0=$SECONDS comment_wait=10
  if ! wait_until "$deadline" started_again "$job" "$off" "$victim" 2>/dev/null; then
    comment_wait=0
    local s
    s="$(job_summary "$job")"
    if [[ "$s" == *"Reason=BeginTime"* ]]; then
      fail "job $job not RUNNING within $deadline s and still held by Slurm's requeue hold (the hold was never released): $s"
    else
      fail "job $job not RUNNING again (attempt 2) within $deadline s: $s"
    fi
    broken=1
  else
    echo "  running again $((SECONDS - t0)) s later on $(job_nodes "$job" | tr '\n' ' ')" >&3
    if ! job_not_on "$job" "$victim"; then
      fail "job $job runs again on the faulty node $victim ($(job_summary "$job")); slurmctld: $(ctld_log_since "$off" | grep -E "node $victim state set|JobId=$job( |\$)" | sed 's/^\[[0-9-]*T//; s/\] /: /' | tr '\n' '|')"
      broken=1
    fi
  fi
  local want="auto-resume: attempt 1 ended: GPU-XID-48 on $victim"
  if ! wait_until "$comment_wait" bash -c "[[ \"\$(scontrol show job $job -o)\" == *'AdminComment=$want'* ]]" 2>/dev/null; then
    fail "job $job: admin comment not set to '$want...' (waited $comment_wait s): AdminComment=$(job_admin_comment "$job")"
    broken=1
  fi
  local log requeues
  log="$(ctld_log_since "$off")"
  requeues="$(grep -c "Requeuing JobId=$job\$" <<<"$log" || true)"
  if [ "$requeues" != 1 ] || [ "$(job_restarts "$job")" != 1 ]; then
    fail "job $job requeued $requeues time(s) by slurmctld's log, Restarts=$(job_restarts "$job") (want exactly one)"
    broken=1
  fi
  if ! grep -q "update_node: node $victim reason set to: healthd: GPU-XID-48: " <<<"$log"; then
    fail "faulty node $victim never drained with a 'healthd: GPU-XID-48: ' reason (slurmctld: $(grep "node $victim" <<<"$log" | tail -3 | tr '\n' '|'))"
    broken=1
  else
    # Never released while the node that failed it could still take it (item 13 of issue 10).
    local drained_at started_at drain_line
    drain_line="$(grep -m1 "update_node: node $victim reason set to: healthd:" <<<"$log")"
    drained_at="$(grep -n "update_node: node $victim reason set to: healthd:" <<<"$log" | head -1 | cut -d: -f1)"
    started_at="$(grep -nE "(Started|Allocate) JobId=$job " <<<"$log" | head -1 | cut -d: -f1)"
    if [ -n "$started_at" ] && [ "$started_at" -lt "$drained_at" ]; then
      fail "job $job started again before its faulty node $victim was drained"
      broken=1
    elif [ -z "$started_at" ] && [ "$(job_restarts "$job")" = 1 ] &&
      [ "$(start_second "$job")" -lt "$(ctld_second "$drain_line")" ]; then
      # no start line (26.05's backfill): the StartTime, to the second, against the drain's
      fail "job $job started again ($(job_start "$job")) before its faulty node $victim was drained ($drain_line)"
      broken=1
    fi
  fi
  local others
  others="$(grep -E "update_node: node n[0-9]+ (state set to DRAIN|reason set to)" <<<"$log" | grep -v "node $victim " || true)"
  if [ -n "$others" ]; then
    fail "other nodes than $victim drained: $(tr '\n' '|' <<<"$others")"
    broken=1
  fi
  return "$broken"
}

# incident KILL: a hung auto-resume job, an XID 48 on its second node, and its healthd killed per
# KILL: "N before" / "N after" (at Slurm call N, by the wrapper), "random S" (SIGKILL S seconds after
# the daemon's first Slurm call of the incident), "" (no kill). The daemon is started again at once.
# Broken promises go to $FAILS. Prints "fired" on fd 4 when a kill struck.
incident() {
  local spec=$1 job victim off pid what=""
  CASE="kill ${spec:-none}"
  if ! wait_until $((40 + SLURM_SETTLE_S)) all_idle 2>/dev/null; then
    fail "before the incident: not every node is idle $((40 + SLURM_SETTLE_S)) s after the last one: $(sinfo -h -N -o '%N %T %E' | tr '\n' '|')"
    return 1
  fi
  job=$(submit_hung)
  wait_until 60 job_running_attempt "$job" 0
  victim=$(ready_victim "$job")
  echo "$victim" >"$WORK/last-victim"
  pid=$(healthd_pid "$victim")
  off=$(ctld_log_size)
  case "$spec" in
    *before | *after) arm "$victim" "$spec" ;;
    *) arm "$victim" ;;
  esac
  echo "# $CASE: job $job, fault on $victim (healthd pid $pid)" >&3
  inject_fault "$victim" "$(xid48)"
  case "$spec" in
    *before | *after)
      if wait_until 15 test -s "$WRAP/$victim/kills.log" 2>/dev/null; then
        what="$(cut -d' ' -f2- "$WRAP/$victim/kills.log")"
      else
        rm -f "$WRAP/$victim/kill-at"
        fail "the kill never struck: healthd made only $(calls_made "$victim") Slurm call(s) in 15 s"
      fi
      ;;
    random*)
      wait_until 15 made_a_call "$victim"
      sleep "${spec#random }"
      # As `cluster stop-healthd NODE KILL` does (the daemon leads its own process group), without
      # that script's start-up time between the chosen moment and the kill.
      kill -KILL -- "-$pid"
      wait_until 10 proc_gone "$pid"
      # Counted once it is dead: the daemon may have gone on while it was being killed.
      what="killed ${spec#random } s after its first Slurm call, by then $(calls_made "$victim") call(s) made, the last: $(call_text "$victim" "$(calls_made "$victim")")"
      ;;
  esac
  if [ -n "$what" ]; then
    CASE="$CASE: $what"
    echo "  $what" >&3
    echo fired >&4
    if ! wait_until 10 proc_gone "$pid" 2>/dev/null; then fail "healthd $victim (pid $pid) still alive after SIGKILL"; fi
    start_wrapped_healthd "$victim"
  fi
  promises_kept "$job" "$victim" "$off" || true
  wait_until 10 script_started "$job" 1 2>/dev/null || true
  scancel "$job"
  # and the node is given back once it passes its checks again (hold 3 s, 3 healthy passes)
  if ! wait_until $((40 + SLURM_SETTLE_S)) node_idle "$victim" 2>/dev/null; then
    fail "node $victim not given back within $((40 + SLURM_SETTLE_S)) s: $(sinfo -h -n "$victim" -o '%T %E')"
  fi
}

# report_failures: fails the test with every broken promise recorded, each on its own line.
report_failures() {
  if [ -s "$FAILS" ]; then
    echo "$(wc -l <"$FAILS") broken promise(s):"
    cat "$FAILS"
    return 1
  fi
}

# baseline_call REGEX: the number of the first Slurm call matching REGEX in an undisturbed
# incident (recorded by the first @test, else by a run of its own).
baseline_call() {
  local base="$WRAP/baseline-calls.log"
  if [ ! -s "$base" ]; then
    incident "" 4>/dev/null
    cp "$WRAP/$(cat "$WORK/last-victim")/calls.log" "$base"
  fi
  awk -v re="$1" '$0 ~ re { print $2; exit }' "$base"
}
# The call that releases the hold ("update_job jobid=J starttime=...").
release_call() { baseline_call ' starttime='; }

# ---------------------------------------------------------------------------------------------

@test "an undisturbed incident: drain, one requeue, hold released, comment set; its Slurm calls counted" {
  local job victim off
  job=$(submit_hung)
  wait_until 60 job_running_attempt "$job" 0
  victim=$(ready_victim "$job")
  off=$(ctld_log_size)
  arm "$victim"
  CASE="no kill"
  inject_fault "$victim" "$(xid48)"
  promises_kept "$job" "$victim" "$off" 20 || true
  report_failures
  # Drain, then requeue, then the hold's release: the calls the kill tests go through one by one.
  cp "$WRAP/$victim/calls.log" "$WRAP/baseline-calls.log"
  cat "$WRAP/baseline-calls.log" >&3
  local drain requeue release
  drain=$(awk '/ state=drain / { print $2; exit }' "$WRAP/baseline-calls.log")
  requeue=$(awk '/ requeue / { print $2; exit }' "$WRAP/baseline-calls.log")
  release=$(awk '/ starttime=/ { print $2; exit }' "$WRAP/baseline-calls.log")
  [ -n "$drain" ] && [ -n "$requeue" ] && [ -n "$release" ]
  [ "$drain" -lt "$requeue" ] && [ "$requeue" -lt "$release" ]
}

# kill_at_every_call WHEN: one incident per Slurm call N up to the one after the hold's release.
kill_at_every_call() {
  local last n fired
  last=$(($(release_call) + 1))
  for ((n = 1; n <= last; n++)); do incident "$n $1" 4>>"$WORK/fired"; done
  fired=$(grep -c fired "$WORK/fired" || true)
  echo "# $fired kills struck, at calls 1..$last" >&3
  report_failures
  [ "$fired" -eq "$last" ]
}

@test "healthd SIGKILLed just before each Slurm call of an incident: every promise kept after its restart" {
  kill_at_every_call before
}

@test "healthd SIGKILLed just after each Slurm call of an incident returned: every promise kept after its restart" {
  kill_at_every_call after
}

@test "healthd SIGKILLed at random points of an incident: every promise kept after its restart" {
  # The incident's actions take about half a second from its first Slurm call: the kills fall
  # within 0-0.6 s of it (later ones only interrupt the daemon watching the job start again).
  local s
  for _ in 1 2 3 4 5; do
    s=$(printf '0.%02d' $((RANDOM % 60)))
    incident "random $s" 4>>"$WORK/fired"
  done
  report_failures
  [ "$(grep -c fired "$WORK/fired")" -eq 5 ]
}

@test "slurmctld stopped just after the fault and started 10 s later: the incident completes" {
  local job victim off ctld restarted
  job=$(submit_hung)
  wait_until 60 job_running_attempt "$job" 0
  victim=$(ready_victim "$job")
  off=$(ctld_log_size)
  CASE="slurmctld down"
  ctld=$(cat "${AR_CLUSTER_DIR}/run/slurmctld.pid")
  inject_fault "$victim" "$(xid48)"
  kill "$ctld"
  wait_until 30 proc_gone "$ctld"
  # The outage itself (not an assertion): Slurm unreachable for 10 s while healthd handles the fault.
  sleep 10
  local log="${AR_CLUSTER_DIR}/log/healthd-$victim.log"
  grep "will retry" "$log" | tail -3 >&3 || true
  slurmctld -f "$SLURM_CONF" 3>&-
  wait_until 60 bash -c "scontrol ping | grep -q UP"
  restarted=$SECONDS
  # healthd retries with a backoff (2 s doubling): allow it 30 s past Slurm's return, far less than
  # the 120 s a requeue hold nobody released would take.
  promises_kept "$job" "$victim" "$off" 30 || true
  echo "# incident completed $((SECONDS - restarted)) s after slurmctld came back" >&3
  report_failures
}

@test "slurmctld stopped between the drain and the requeue, started 10 s later: the incident completes" {
  local job victim off requeue restarted
  requeue=$(baseline_call ' requeue ')
  CASE="slurmctld down before call $requeue"
  job=$(submit_hung)
  wait_until 60 job_running_attempt "$job" 0
  victim=$(ready_victim "$job")
  off=$(ctld_log_size)
  arm "$victim"
  echo "$requeue" >"$WRAP/$victim/stop-ctld-at"
  inject_fault "$victim" "$(xid48)"
  wait_until 20 test -s "$WRAP/$victim/ctld-stopped"
  cat "$WRAP/$victim/ctld-stopped" >&3
  sleep 10  # the outage itself
  slurmctld -f "$SLURM_CONF" 3>&-
  wait_until 60 bash -c "scontrol ping | grep -q UP"
  restarted=$SECONDS
  promises_kept "$job" "$victim" "$off" 30 || true
  echo "# incident completed $((SECONDS - restarted)) s after slurmctld came back" >&3
  report_failures
}

# ---------------------------------------------------------------------------------------------
# A full state filesystem
# ---------------------------------------------------------------------------------------------

# small_state_dir NODE: NODE's healthd state dir on a 4 MiB tmpfs of its own (contents kept), its
# daemon restarted on it. The node is remembered for release_small_state_dir.
small_state_dir() {
  SMALL_NODE=$1
  local dir="${AR_CLUSTER_DIR}/state/$1" keep="$WORK/state-keep"
  echo "$1" >"$WRAP/small-node"
  cluster stop-healthd "$1"
  mkdir -p "$keep"
  cp -a "$dir/." "$keep/"
  mount -t tmpfs -o size=4m,mode=0700 "healthd-state-$1" "$dir"
  cp -a "$keep/." "$dir/"
  start_wrapped_healthd "$1"
}

# release_small_state_dir: the node's state back on the ordinary filesystem (what the daemon wrote
# on the tmpfs comes along), daemon restarted. Nothing to do when no tmpfs is mounted there.
release_small_state_dir() {
  local node dir keep
  node="$(cat "$WRAP/small-node" 2>/dev/null)" || return 0
  dir="${AR_CLUSTER_DIR}/state/$node"
  keep="$(mktemp -d)"
  if mountpoint -q "$dir"; then
    cluster stop-healthd "$node"
    rm -f "$dir/fill"
    cp -a "$dir/." "$keep/"
    umount "$dir"
    rm -rf "${dir:?}"/*
    cp -a "$keep/." "$dir/"
    start_wrapped_healthd "$node"
  fi
  rm -rf "$keep" "$WRAP/small-node"
}

fill_state_dir() {
  dd if=/dev/zero of="${AR_CLUSTER_DIR}/state/$SMALL_NODE/fill" bs=64k status=none 2>/dev/null || true
  [ "$(df --output=avail "${AR_CLUSTER_DIR}/state/$SMALL_NODE" | tail -1 | tr -d ' ')" -eq 0 ]
}
free_state_dir() { rm -f "${AR_CLUSTER_DIR}/state/$SMALL_NODE/fill"; }

daemon_knows_job() { job_field "$1" "$2" 'job["job_id"]' >/dev/null 2>&1; }

registry_has_job() {
  python3 - "${AR_CLUSTER_DIR}/state/$SMALL_NODE/jobs.json" "$1" <<'EOF'
import json, sys
try:
    data = json.load(open(sys.argv[1]))
except Exception:
    sys.exit(1)
sys.exit(0 if any(j.get("job_id") == int(sys.argv[2]) for j in data.get("jobs", [])) else 1)
EOF
}

@test "the state filesystem full: the job registry is written again within seconds of space coming back" {
  small_state_dir n3
  local job log="${AR_CLUSTER_DIR}/log/healthd-n3.log" loglines
  loglines=$(wc -l <"$log")
  fill_state_dir
  # A job that starts while the disk is full: healthd knows it, its registry file cannot say so.
  job=$(submit_hung -w "n1,$SMALL_NODE")
  wait_until 60 job_running_attempt "$job" 0
  wait_until 10 daemon_knows_job "$SMALL_NODE" "$job"
  sleep 1
  if registry_has_job "$job"; then
    echo "precondition: the registry on a full filesystem already holds job $job" >&2
    return 1
  fi
  healthctl_on "$SMALL_NODE" ping
  free_state_dir
  local t0=$SECONDS
  if ! wait_until 5 registry_has_job "$job" 2>/dev/null; then
    echo "the registry of $SMALL_NODE does not hold job $job 5 s after space came back (last write failed, never retried):" >&2
    tail -n +$((loglines + 1)) "$log" | grep -iE "jobs.json|registry|no space" | tail -5 >&2
    return 1
  fi
  echo "# registry written again $((SECONDS - t0)) s after space came back" >&3
}

@test "the state filesystem full during an incident: nothing done that the journal does not hold; done once space is back" {
  local job off log loglines
  job=$(submit_hung)
  wait_until 60 job_running_attempt "$job" 0
  small_state_dir "$(ready_victim "$job")"
  log="${AR_CLUSTER_DIR}/log/healthd-$SMALL_NODE.log"
  fill_state_dir
  off=$(ctld_log_size)
  loglines=$(wc -l <"$log")
  CASE="state filesystem full"
  inject_fault "$SMALL_NODE" "$(xid48)"
  wait_until 15 bash -c "tail -n +$((loglines + 1)) '$log' | grep -q 'node $SMALL_NODE is faulty'"
  # While the journal cannot be written, Slurm is asked for nothing (a crash now would forget it):
  # watched for 5 s, the daemon alive and answering all along.
  for _ in $(seq 10); do
    sleep 0.5
    if grep -qE "Requeuing JobId=$job\$|update_node: node $SMALL_NODE (reason|state) set" <<<"$(ctld_log_since "$off")"; then
      fail "acted while its journal could not be written: $(ctld_log_since "$off" | grep -E "JobId=$job|node $SMALL_NODE" | head -3 | tr '\n' '|') (healthd: $(tail -n +$((loglines + 1)) "$log" | grep -E 'journal' | head -2 | tr '\n' '|'))"
      break
    fi
  done
  healthctl_on "$SMALL_NODE" ping
  free_state_dir
  promises_kept "$job" "$SMALL_NODE" "$off" 20 || true
  wait_until 10 script_started "$job" 1 2>/dev/null || true
  scancel "$job"
  if ! wait_until $((40 + SLURM_SETTLE_S)) node_idle "$SMALL_NODE" 2>/dev/null; then
    fail "node $SMALL_NODE not given back within $((40 + SLURM_SETTLE_S)) s: $(sinfo -h -n "$SMALL_NODE" -o '%T %E')"
  fi
  report_failures
}
