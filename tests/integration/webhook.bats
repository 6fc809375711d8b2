#!/usr/bin/env bats
# The [notify] webhook on the real cluster: n1's healthd runs with a config of its own that names an
# endpoint on 127.0.0.1 (tests/integration/webhook_server.py). A fault under an auto-resume job on n1
# must reach a recording endpoint as a drain and a requeue notice; a hung endpoint must cost the
# requeue nothing and leave a warning per failed try in n1's log. n1 gets the shared config back at
# the end.

load helpers

HOOK_DIR="${AR_CLUSTER_DIR}/webhook"
N1_LOG="${AR_CLUSTER_DIR}/log/healthd-n1.log"

teardown_file() {
  cluster restart-healthd n1  # the shared DIR/etc/healthd.toml again
}

setup() {
  reset_cluster
  WORK="${AR_CLUSTER_DIR}/work/w${BATS_TEST_NUMBER}-$$"
  make_work "$WORK"
  mkdir -p "$HOOK_DIR"
}

teardown() {
  if [ -e "$WORK/server.pid" ]; then kill "$(cat "$WORK/server.pid")" 2>/dev/null || true; fi
  reset_cluster
}

# start_endpoint MODE: webhook_server.py in MODE (record into $WORK/bodies, or blackhole); sets PORT.
start_endpoint() {
  python3 "${BATS_TEST_DIRNAME}/webhook_server.py" "$1" "$WORK/bodies" --port-file "$WORK/port" \
    >"$WORK/server.log" 2>&1 3>&- &
  echo $! >"$WORK/server.pid"
  wait_until 10 test -s "$WORK/port"
  PORT=$(cat "$WORK/port")
}

# restart_n1_with_webhook KEY=VALUE...: n1's healthd on the shared config plus a [notify] section
# pointing at the endpoint (the path stands for a Slack hook's secret), with the given keys.
restart_n1_with_webhook() {
  local config="$HOOK_DIR/healthd-n1.toml" kv
  cp "${AR_CLUSTER_DIR}/etc/healthd.toml" "$config"
  {
    echo
    echo "[notify]"
    echo "webhook_url = \"http://127.0.0.1:${PORT}/services/T000/B000/SECRETPATH\""
    for kv in "$@"; do echo "$kv"; done
  } >>"$config"
  chmod 0644 "$config"
  AR_HEALTHD_NODE_CONFIG="$config" cluster restart-healthd n1
}

# An auto-resume job on n1 and n2 (Slurm picks the lowest idle nodes first); prints its id.
submit_on_n1() {
  local job
  job=$(submit -N2 -o "$WORK/job.out" --auto-resume=1 --wrap "srun -N2 sleep 600")
  wait_until 60 job_running_attempt "$job" 0
  job_nodes "$job" | grep -qx n1 || { echo "job $job is not on n1: $(job_nodes "$job" | tr '\n' ' ')" >&2; return 1; }
  echo "$job"
}

# notice_received KIND PYTHON-EXPR: a body of KIND in $WORK/bodies for which EXPR (over `b`) holds.
notice_received() {
  [ -s "$WORK/bodies" ] || return 1
  python3 - "$WORK/bodies" "$1" "$2" <<'EOF'
import json, sys
path, kind, expr = sys.argv[1:]
for line in open(path, encoding="utf-8"):
    b = json.loads(line)
    if isinstance(b, dict) and b.get("kind") == kind and eval(expr):
        sys.exit(0)
sys.exit(1)
EOF
}

@test "a fault under an auto-resume job on n1: the endpoint gets a drain and a requeue notice" {
  start_endpoint record
  restart_n1_with_webhook "timeout_ms = 2000" "attempts = 3" "max_backoff_s = 1"
  local job
  job=$(submit_on_n1)
  inject_fault n1 "$(xid48)"
  wait_until 30 job_running_attempt "$job" 1
  wait_until 30 notice_received drain 'b["node"] == "n1" and b["code"] == "GPU-XID-48" and b["text"].startswith(":rotating_light: healthd on n1: drained")'
  # The job's owner, the ordinary user who submitted it, by name and uid.
  local uid
  uid=$(id -u "$AR_USER")
  wait_until 30 notice_received requeue "b['node'] == 'n1' and b['job_id'] == $job and b['user'] == '$AR_USER' and b['uid'] == $uid and b['code'] == 'GPU-XID-48' and 'job $job ($AR_USER)' in b['text']"
  cat "$WORK/bodies" >&3
  # the body's time is RFC 3339 UTC with milliseconds
  notice_received requeue '__import__("re").fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", b["time"])'
}

@test "a hung webhook endpoint: the requeue is not delayed, and n1's log has a warning per failed try" {
  start_endpoint blackhole
  restart_n1_with_webhook "timeout_ms = 3000" "attempts = 3"
  local job t0 t1
  job=$(submit_on_n1)
  t0=$(date +%s.%N)
  inject_fault n1 "$(xid48)"
  wait_until 30 job_running_attempt "$job" 1
  t1=$(date +%s.%N)
  echo "fault to running again with a hung webhook: $(echo "$t1 - $t0" | bc) s" >&3
  # A webhook in the way would cost the drain notice's three 3 s timeouts before the requeue.
  [ "$(echo "$t1 - $t0 < 9" | bc)" = 1 ]
  job_not_on "$job" n1
  # Each try of the drain notice timed out and said so in one line, naming the endpoint's host only.
  local origin="webhook http://127.0.0.1:${PORT}: drain notice"
  wait_until 60 grep -q "${origin}: .*(try 3 of 3); given up" "$N1_LOG"
  grep "$origin" "$N1_LOG" >&3
  [ "$(grep -c "${origin}: .*(try [0-9] of 3); next try in" "$N1_LOG")" = 2 ]
  [ "$(grep -c " warning ${origin}: " "$N1_LOG")" = 3 ]
  [ "$(grep -c "SECRETPATH" "$N1_LOG")" = 0 ]
}
