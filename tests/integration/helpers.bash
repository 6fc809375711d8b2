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

job_state() { scontrol show job "$1" -o 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
job_finished() { case "$(job_state "$1")" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY) return 0;; *) return 1;; esac; }

# submit ARGS...: sbatch --parsable, prints the job id.
submit() { sbatch --parsable "$@" | cut -d';' -f1; }

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
