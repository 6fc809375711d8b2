# Shared helpers for the cluster tests. The cluster is started once per ctest run by the
# "cluster_start" fixture (tests/cluster/cluster.sh); each test file only sources its environment.

: "${AR_CLUSTER_DIR:?AR_CLUSTER_DIR must name the running test cluster}"
: "${AR_HEALTHCTL:?AR_HEALTHCTL must name the healthctl binary}"
CLUSTER_SH="${BATS_TEST_DIRNAME}/../cluster/cluster.sh"
# shellcheck disable=SC1091
source "${AR_CLUSTER_DIR}/env.sh"

# cluster SUBCOMMAND ARGS...: tests/cluster/cluster.sh on this cluster's directory. fd 3 is bats' own
# output channel: a daemon started from a test must not inherit it, or bats waits for it forever.
cluster() { local sub=$1; shift; "$CLUSTER_SH" "$sub" "$AR_CLUSTER_DIR" "$@" 3>&-; }

socket_of() { echo "${AR_CLUSTER_DIR}/run/healthd-$1.sock"; }
healthctl_on() { local node=$1; shift; "$AR_HEALTHCTL" --socket "$(socket_of "$node")" "$@"; }

# wait_until SECONDS CMD...: polls CMD every 0.2 s until it succeeds; fails after SECONDS.
wait_until() {
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do
    if ((SECONDS >= deadline)); then
      echo "timed out after waiting for: $*" >&2
      return 1
    fi
    sleep 0.2
  done
}

# scontrol's text does not escape free text (a --comment holding "JobState=PENDING Restarts=9"): the
# first match of a key is Slurm's own field, which comes before Comment= on the line.
job_state() { scontrol show job "$1" -o 2>/dev/null | grep -o 'JobState=[A-Z_]*' | head -1 | cut -d= -f2; }
job_finished() { case "$(job_state "$1")" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY) return 0;; *) return 1;; esac; }

# Jobs are submitted by AR_USER, an ordinary account made by the test setup (start_cluster.sh), as
# users submit them on a real cluster; root is the admin. The examples are its readable copy.
AR_USER=arjob
# AR_OTHER_USER, a second ordinary account (start_cluster.sh): another user of the same queue. Not
# `nobody`: Slurm 26.05 reserves that name (squeue -u nobody: "Invalid user"; src/common/uid.c).
AR_OTHER_USER=arother
AR_EXAMPLES="${AR_CLUSTER_DIR}/examples"

# as_user CMD...: CMD as AR_USER, in the environment of the test (SLURM_CONF and the rest), from a
# directory the user may enter (sbatch makes the submit directory the job's).
as_user() { (cd "${WORK:-${AR_CLUSTER_DIR}/work}" && runuser -u "$AR_USER" -- "$@"); }

# make_work DIR: a test's work directory, the user's own (its jobs write their output and
# checkpoints there; root, the test, reads them).
make_work() { mkdir -p "$1" && chown "$AR_USER:" "$1" && chmod 0755 "$1"; }

# submit ARGS...: sbatch --parsable as AR_USER, prints the job id.
submit() { as_user sbatch --parsable "$@" | cut -d';' -f1; }

# A unique name per test, so tests can tell their jobs apart.
test_tag() { echo "t${BATS_TEST_NUMBER}-$$"; }

# jobs_json NODE: the node daemon's view of its jobs.
jobs_json() { healthctl_on "$1" jobs --json; }

# job_field NODE JOBID PYTHON-EXPR: evaluates EXPR with `job` bound to the job's JSON object.
job_field() {
  jobs_json "$1" | python3 -c '
import json, sys
data = json.load(sys.stdin)
jobs = [j for j in data["jobs"] if j["job_id"] == int(sys.argv[1])]
if not jobs:
    sys.exit("job %s not known on this node" % sys.argv[1])
job = jobs[0]
print(eval(sys.argv[2]))' "$2" "$3"
}

# inject_fault NODE LINE: a kernel-log line on NODE, the way the kernel would write it: with its
# priority first ("<4>NVRM: Xid ...", as dmesg -r prints it), at the level the driver writes it. A line
# without one never counts (its origin is unknown: issue 31), so a test that forgot it would wait in vain.
inject_fault() {
  [[ "$2" =~ ^\<[0-9]+\> ]] || { echo "inject_fault: the line carries no <PRI>: $2" >&2; return 1; }
  printf '%s\n' "$2" >>"${AR_CLUSTER_DIR}/host/$1/var/log/kern.log"
}
# An XID whose cure is a GPU reset: the node is drained (XID 79 would ask Slurm for a reboot: gpu.bats).
# The NVIDIA driver prints XIDs at the kernel's default level, KERN_WARNING (4).
xid48() { echo "<4>NVRM: Xid (PCI:0000:17:00): 48, pid=4242, name=python, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer."; }
# A machine check as the kernel reports it: KERN_EMERG (0).
mce_line() { echo "<0>mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 5: be00000000800400"; }

node_state() { sinfo -h -n "$1" -o '%T'; }
node_reason() { scontrol show node "$1" -o | grep -o 'Reason=.*' | sed 's/ \[[^]]*\]$//; s/^Reason=//'; }
# node_drained NODE: the node's state has the DRAIN flag (DRAINING or DRAINED). Not its reason: 24.11
# has shown a node IDLE again after healthd's resume with the drain's reason still on it.
node_drained() { scontrol show node "$1" -o | grep -q ' State=[A-Z_+]*DRAIN'; }
# In service and free. "mixed" with no job on the node counts as free: after a job was requeued off
# a draining node, slurmctld 22.05 has been seen to keep one CPU of the node counted as allocated
# for about two minutes (sinfo "mixed", no job on it in squeue) while it schedules new jobs on it.
node_idle() {
  local st
  st=$(node_state "$1")
  [ "$st" = idle ] || { [ "$st" = mixed ] && [ -z "$(squeue -h -w "$1" -o %i 2>/dev/null)" ]; }
}
batch_node() { scontrol show job "$1" -o | grep -o ' BatchHost=[^ ]*' | cut -d= -f2; }
job_restarts() { scontrol show job "$1" -o | grep -o ' Restarts=[0-9]*' | head -1 | cut -d= -f2; }
job_nodes() { scontrol show hostnames "$(scontrol show job "$1" -o | grep -o ' NodeList=[^ ]*' | head -1 | cut -d= -f2)"; }
# healthd's line in the job's admin comment (AdminComment=, its own line of scontrol's long form).
job_admin_comment() { scontrol show job "$1" | sed -n 's/^   AdminComment=//p' | sed 's/ *$//'; }
# The user's own --comment, as squeue prints it (one field, nothing else on the line).
job_user_comment() { squeue -h -t all -j "$1" -o '%k'; }
job_priority() { squeue -h -t all -j "$1" -o '%Q'; }
# job_not_on JOB NODE: the job's allocation does not include NODE. A function, because a bare
# "! cmd" line never fails a bats test (errexit ignores negated commands).
job_not_on() { ! job_nodes "$1" | grep -qx "$2"; }
# exchange_paths A B: A and B swap places in one step (renameat2 RENAME_EXCHANGE), so a daemon
# looking at B never finds it missing, whatever kinds of file the two are.
exchange_paths() {
  python3 - "$1" "$2" <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
if libc.renameat2(AT_FDCWD, os.fsencode(sys.argv[1]), AT_FDCWD, os.fsencode(sys.argv[2]), RENAME_EXCHANGE) != 0:
    sys.exit(f"exchange {sys.argv[1]} {sys.argv[2]}: {os.strerror(ctypes.get_errno())}")
PY
}
job_start() { scontrol show job "$1" -o | grep -o ' StartTime=[^ ]*' | head -1 | cut -d= -f2; }
# job_started_again JOB N START: running attempt N, started after START (the attempt before's StartTime):
# not slurmctld's view of a job just requeued, which has shown Restarts=N beside the old attempt's nodes.
job_started_again() { job_running_attempt "$1" "$2" && [ "$(job_start "$1")" != "$3" ]; }
# job_finished_attempt JOB N: attempt N has ended. A job whose script failed a moment before
# healthd's requeue shows FAILED for a few milliseconds with the attempt before's Restarts, then runs
# again: "finished" alone can catch that moment.
job_finished_attempt() { job_finished "$1" && [ "$(job_restarts "$1")" = "$2" ]; }
job_running_attempt() { [ "$(job_state "$1")" = RUNNING ] && [ "$(job_restarts "$1")" = "$2" ]; }
# step_running_on NODE JOB: NODE's daemon knows a running step of the attempt of JOB that slurmctld
# shows (Restarts=): its batch script or an srun step (not the extern step, which runs before either).
step_running_on() {
  local attempt
  attempt=$(job_restarts "$2")
  [ -n "$attempt" ] || return 1
  job_field "$1" "$2" '[s for s in job["steps"] if (s["step"].isdigit() or s["step"] == "batch") and s["running"] and s["restart_count"] == '"$attempt"'][0]' >/dev/null 2>&1
}
# ready_victim JOB: the job's last node, once that node's daemon knows a running step of the job's
# current attempt (on the second node of a 2-node job: an srun step). A test puts a fault on it only
# then: slurmctld shows a job RUNNING as soon as its batch script starts, before srun's step has
# reached the other nodes, and a daemon acts on the jobs it knows. (CI, Slurm 26.05: an XID two
# seconds after RUNNING, slurmctld stopped next, found the victim's daemon with no step of the job
# yet: it drained the node and had no job to requeue.) It also waits out a node list shown empty
# for a moment (Slurm 24.11, just after a requeue).
ready_victim() {
  local node='' deadline=$((SECONDS + 60))
  while ((SECONDS < deadline)); do
    node=$(job_nodes "$1" | tail -1)
    if [ -n "$node" ] && step_running_on "$node" "$1"; then
      echo "$node"
      return 0
    fi
    sleep 0.2
  done
  echo "ready_victim: job $1: the daemon of its last node (${node:-none shown}) knew no running step of it within 60 s" >&2
  return 1
}
# job_running_again JOB N NODE...: running attempt N on none of NODE. What a test waits for after a
# fault on NODE: slurmctld has shown a job just requeued as RUNNING with Restarts=N beside the old
# attempt's nodes for a moment, so "running attempt N" alone, then "not on NODE", races it.
job_running_again() {
  local job=$1 attempt=$2 node; shift 2
  job_running_attempt "$job" "$attempt" || return 1
  for node in "$@"; do job_not_on "$job" "$node" || return 1; done
}

# Extra seconds a node may take to leave COMPLETING after its job ends: Slurm 22.05 has been seen to
# keep a job's batch node allocated for 60 s when the job was cancelled within a moment of being
# relaunched after a requeue ("reissued job credential" in slurmd's log just before); slurmctld then
# frees it on its own. Waits for a node to be idle allow for it, so they fail only past it.
SLURM_SETTLE_S=70

# dump_cluster_state: the jobs, the nodes and the last lines of every daemon's log, for a failed test.
dump_cluster_state() {
  echo "--- cluster state after the failure ($(date '+%T.%N'))"
  timeout 10 squeue -h -t all -o '%i %u %T %r %N' 2>&1 | sed 's/^/squeue: /' || true
  # the last three jobs, one line each (a --wrap script's newlines would split a line: cut them)
  timeout 10 scontrol show job -o 2>&1 | grep '^JobId=' | sort -t= -k2 -n | tail -n 3 | cut -c1-900 | sed 's/^/job: /' || true
  timeout 10 sinfo -N -h -o '%N %T %E' 2>&1 | sed 's/^/sinfo: /' || true
  local log
  for log in "${AR_CLUSTER_DIR}"/log/slurmctld.log "${AR_CLUSTER_DIR}"/log/healthd-*.log; do
    [ -f "$log" ] || continue
    echo "--- last lines of ${log##*/} (less debug lines)"
    grep -v '^[0-9T:.-]* debug ' "$log" | tail -n 25 | cut -c1-300
  done
}

# Puts the cluster back as the next test expects it: no jobs, every node idle. healthd's own drains
# come back by themselves once the fault's hold has passed; an admin drain left by a test is undone.
reset_cluster() {
  # Called from the teardown of a failed test: show what the cluster looked like, since CI keeps
  # only the output.
  if [ -n "${BATS_TEARDOWN_STARTED:-}" ] && [ -z "${BATS_TEST_COMPLETED:-}" ]; then
    dump_cluster_state >&2
  fi
  # A test that stopped slurmctld and failed before restarting it must not take the next ones down.
  if ! scontrol ping 2>/dev/null | grep -q UP; then
    slurmctld -f "$SLURM_CONF" 3>&-
    wait_until 60 bash -c "scontrol ping | grep -q UP"
  fi
  scancel --user=root 2>/dev/null || true
  scancel --user="$AR_USER" 2>/dev/null || true
  scancel --user="$AR_OTHER_USER" 2>/dev/null || true  # another user's queue (slurm_api.bats)
  wait_until 60 bash -c '[ -z "$(squeue -h)" ]'
  local node
  for node in n1 n2 n3; do
    if ! wait_until $((30 + SLURM_SETTLE_S)) node_idle "$node"; then
      sinfo -N -o '%N %T %E' >&2
      scontrol update nodename="$node" state=resume 2>/dev/null || true
      wait_until 30 node_idle "$node"
    fi
  done
}
