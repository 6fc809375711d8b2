#!/usr/bin/env bats
# healthctl against the real cluster's daemons, as an admin uses it: its exit codes (healthy 0,
# warning 1, fault 2, daemon unreachable 3, refused 4, conflict 5, usage 64), --version, the global
# options before the command, 80 columns and colour on a pseudo-terminal, the per-GPU table, user
# names and dates, events, watch, and drain / resume / clear through the daemon.
#
# n1's healthd runs with a config of its own for this file: the shared one with the EC2 check off
# (nothing serves the metadata endpoint here, and a check that cannot run is a warning), the clock
# sync not judged (a test machine's clock may well be unsynchronised: a warning) and a
# kernel-log hold of 10 minutes (a fault stays until `healthctl clear` forgets it). n1 gets the
# shared config back at the end, with its state wiped (a fault journalled under the long hold must
# not outlive this file).

load helpers

OWN="${AR_CLUSTER_DIR}/healthctl-bats"
N1_CONFIG="$OWN/healthd-n1.toml"
ADMIN_CHECK="${AR_CLUSTER_DIR}/host/n1/etc/admin-check"
MCE="<0>mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 5: be00000000800400"

setup_file() {
  mkdir -p "$OWN"
  python3 - "${AR_CLUSTER_DIR}/etc/healthd.toml" "$N1_CONFIG" <<'EOF'
import re, sys
src, dst = sys.argv[1:]
text = open(src).read()
def in_section(text, section, key, value):
    # key = value inside [section] (before the next table header), added when absent
    m = re.search(r'^\[' + re.escape(section) + r'\]\s*$', text, re.M)
    if not m:
        return text + '\n[%s]\n%s = %s\n' % (section, key, value)
    end = re.search(r'^\[', text[m.end():], re.M)
    body_end = m.end() + (end.start() if end else len(text) - m.end())
    body = text[m.end():body_end]
    body, n = re.subn(r'^' + key + r'\s*=.*$', '%s = %s' % (key, value), body, flags=re.M)
    if n == 0:
        body = '\n%s = %s' % (key, value) + body
    return text[:m.end()] + body + text[body_end:]
text = in_section(text, 'checks.ec2', 'enabled', 'false')
text = in_section(text, 'checks.kernel_log', 'hold_s', '600')
text = in_section(text, 'checks.node', 'clock_action', '"none"')
open(dst, 'w').write(text)
EOF
  chmod 0644 "$N1_CONFIG"
  restart_n1_clean "$N1_CONFIG"
}

teardown_file() {
  rm -f "$ADMIN_CHECK"
  restart_n1_clean ""
  scontrol update nodename=n1 state=resume 2>/dev/null || true
}

setup() {
  reset_cluster
  WORK="${AR_CLUSTER_DIR}/work/healthctl-${BATS_TEST_NUMBER}-$$"
  make_work "$WORK"
}

teardown() {
  rm -f "$ADMIN_CHECK"
  # A fault held for 10 minutes, or an admin drain, left by a failed test: n1 starts afresh.
  if ! node_idle n1 || [ "$(exit_of healthctl_on n1 status)" != 0 ]; then
    restart_n1_clean "$N1_CONFIG"
    scontrol update nodename=n1 state=resume 2>/dev/null || true
  fi
  reset_cluster
}

# restart_n1_clean CONFIG: n1's healthd with its state wiped, on CONFIG ("" = the shared one).
restart_n1_clean() {
  cluster stop-healthd n1
  rm -rf "${AR_CLUSTER_DIR:?}/state/n1"
  if [ -n "$1" ]; then AR_HEALTHD_NODE_CONFIG="$1" cluster start-healthd n1; else cluster start-healthd n1; fi
  wait_until 20 healthctl_on n1 ping >/dev/null
}

# exit_of CMD...: CMD's exit status, printed (its output dropped).
exit_of() { local rc=0; "$@" >/dev/null 2>&1 || rc=$?; echo "$rc"; }
status_exits() { [ "$(exit_of healthctl_on "$1" status)" = "$2" ]; }
# result_of NODE CHECK: the status word of the node's latest result of CHECK.
result_of() {
  healthctl_on "$1" --json status | python3 -c '
import json, sys
rs = [r["status"] for r in json.load(sys.stdin)["health"].get("checks", []) if r["check"] == sys.argv[1]]
print(rs[0] if rs else "none")' "$2"
}
result_is() { [ "$(result_of "$1" "$2")" = "$3" ]; }
kernel_log_holds() {
  healthctl_on "$1" --json status | python3 -c '
import json, sys
rs = [r for r in json.load(sys.stdin)["health"].get("checks", []) if r["check"] == "kernel_log"]
codes = sorted(f["code"] for r in rs for f in r.get("detail", {}).get("active", []))
sys.exit(0 if codes == sorted(sys.argv[1:]) else 1)' "${@:2}"
}
node_drained() { [[ "$(node_state "$1")" == drain* ]]; }
# lacks FILE PATTERN: no line of FILE matches. A function: a bare "! grep" never fails a bats test.
lacks() { ! grep -q "$2" "$1"; }
# widest FILE: the columns of the file's widest line (colour sequences and the pty's CRs left out).
widest() {
  python3 -c '
import re, sys
text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
print(max(len(re.sub(r"\x1b\[[0-9;]*m", "", line).rstrip("\r")) for line in text.split("\n")))' "$1"
}
# on_pty FILE CMD: CMD run on a pseudo-terminal (script(1)), its output (CRLF) in FILE; returns its status.
on_pty() { local file=$1; shift; script -qec "$*" /dev/null >"$file" 2>&1 </dev/null; }

# ---------------------------------------------------------------------------------------------
# Exit codes
# ---------------------------------------------------------------------------------------------

@test "--version prints healthctl and the project's version, with no subcommand" {
  run "$AR_HEALTHCTL" --version
  [ "$status" -eq 0 ]
  [ "$output" = "healthctl $("$AR_HEALTHD" --version | awk '{print $2}')" ]
}

@test "a usage error exits 64: no command, an unknown one, a bad value, --node elsewhere without a template" {
  run "$AR_HEALTHCTL"
  [ "$status" -eq 64 ]
  run "$AR_HEALTHCTL" frobnicate
  [ "$status" -eq 64 ]
  run "$AR_HEALTHCTL" explain 0
  [ "$status" -eq 64 ]
  run env -u HEALTHD_SOCKET_TEMPLATE "$AR_HEALTHCTL" --node n2 ping
  [ "$status" -eq 64 ]
  [[ "$output" == *"HEALTHD_SOCKET_TEMPLATE"* ]]
}

@test "a healthy node: status and check exit 0, with --json before or after the command" {
  wait_until 30 status_exits n1 0
  run healthctl_on n1 status
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [[ "$output" == *"verdict:      healthy"* ]]
  # "not applicable" checks say so instead of "ok"
  run healthctl_on n1 check
  [ "$status" -eq 0 ]
  run healthctl_on n1 --json status
  [ "$status" -eq 0 ]
  echo "$output" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["node"] == "n1", d'
  run "$AR_HEALTHCTL" --json status --socket "$(socket_of n1)"
  [ "$status" -eq 0 ]
  echo "$output" | python3 -c 'import json,sys; json.load(sys.stdin)'
}

@test "a warning exits 1 (status and check), and the table says warn" {
  echo "1 fan 3 is slow" >"$ADMIN_CHECK"
  wait_until 20 result_is n1 script:admin-check warn
  run healthctl_on n1 status
  [ "$status" -eq 1 ]
  echo "$output" | grep -Eq '^script:admin-check +warn +[0-9]+s ago +SCRIPT-ADMIN-CHECK'
  run healthctl_on n1 check
  [ "$status" -eq 1 ]
  rm -f "$ADMIN_CHECK"
  wait_until 20 status_exits n1 0
}

@test "a kernel-log fault exits 2; every active fault has its line; clear forgets it and the node returns" {
  inject_fault n1 "$MCE"
  inject_fault n1 "<2>EXT4-fs error (device nvme0n1p1): ext4_find_entry:1455: inode #2: comm ls: reading directory lblock 0"
  wait_until 30 kernel_log_holds n1 KMSG-MCE FS-IO-ERR
  wait_until 30 status_exits n1 2
  run healthctl_on n1 status
  echo "$output" >&3
  [ "$status" -eq 2 ]
  [[ "$output" == *"verdict:      FAULTY ("* ]]
  [ "$(echo "$output" | grep -Ec '^kernel_log +fault ')" -eq 2 ]
  echo "$output" | grep -Eq '^kernel_log +fault +.*KMSG-MCE'
  echo "$output" | grep -Eq '^kernel_log +fault +.*FS-IO-ERR'
  run healthctl_on n1 check --now
  [ "$status" -eq 2 ]
  wait_until 30 node_drained n1
  # An admin fixed both: clear each; the node comes back once its sweeps are healthy.
  run healthctl_on n1 clear KMSG-MCE
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [[ "$output" == *"done: "* ]]
  run healthctl_on n1 clear FS-IO-ERR
  [ "$status" -eq 0 ]
  wait_until 30 kernel_log_holds n1
  wait_until 60 status_exits n1 0
  wait_until $((30 + SLURM_SETTLE_S)) node_idle n1
}

@test "clearing a code that is not active is a conflict: exit 5, with the reason" {
  run healthctl_on n1 clear KMSG-NOT-ACTIVE
  echo "$output" >&3
  [ "$status" -eq 5 ]
  [[ "$output" == "healthctl: clear: not done: "* ]]
}

@test "an unreachable daemon exits 3 for every command, and says it is not answering" {
  local sock="$WORK/nobody-listens.sock" cmd
  for cmd in ping status "check" gpus jobs "explain 1" events; do
    # shellcheck disable=SC2086
    run "$AR_HEALTHCTL" --socket "$sock" $cmd
    [ "$status" -eq 3 ] || { echo "$cmd: exit $status: $output"; return 1; }
    [[ "$output" == "healthctl: ${cmd%% *}: healthd at $sock is not answering: "* ]]
  done
}

@test "a user other than root is refused check --now, drain, resume and clear: exit 4, never 'not answering'" {
  local as_nobody=(setpriv --reuid=nobody --regid=nogroup --clear-groups "$AR_HEALTHCTL" --socket "$(socket_of n1)")
  # the daemon answers anyone's status
  run "${as_nobody[@]}" ping
  [ "$status" -eq 0 ]
  run "${as_nobody[@]}" check --now
  echo "$output" >&3
  [ "$status" -eq 4 ]
  [[ "$output" == "healthctl: check: refused: "*"(forbidden)" ]]
  [[ "$output" != *"not answering"* ]]
  for cmd in drain resume "clear KMSG-MCE"; do
    # shellcheck disable=SC2086
    run "${as_nobody[@]}" $cmd
    [ "$status" -eq 4 ] || { echo "$cmd: exit $status: $output"; return 1; }
    [[ "$output" == *"refused: "* ]]
  done
  [ "$(node_state n1)" = idle ]
}

# ---------------------------------------------------------------------------------------------
# What it shows
# ---------------------------------------------------------------------------------------------

@test "status on an 80-column terminal: no line past 80, the detail cut, colour on the tty only" {
  # A warning with a long message: a line that would run far past 80 columns uncut.
  local long="the fan tray at the back of the chassis reports fan 3 at 900 rpm, below its 2000 rpm floor, for 5 minutes now"
  echo "1 $long" >"$ADMIN_CHECK"
  wait_until 20 result_is n1 script:admin-check warn
  on_pty "$WORK/tty.out" "COLUMNS=80 $AR_HEALTHCTL --socket $(socket_of n1) status" || true
  cat "$WORK/tty.out" >&3
  [ "$(widest "$WORK/tty.out")" -le 80 ]
  grep -q 'script:admin-check' "$WORK/tty.out"
  lacks "$WORK/tty.out" "5 minutes now"
  grep -q $'\x1b\\[33mwarn' "$WORK/tty.out"
  grep -q $'\x1b\\[32mok' "$WORK/tty.out"
  # -l: the whole text
  on_pty "$WORK/long.out" "COLUMNS=80 $AR_HEALTHCTL --socket $(socket_of n1) status -l" || true
  grep -q "5 minutes now" "$WORK/long.out"
  # NO_COLOR, --no-color, a pipe: no colour
  on_pty "$WORK/nocolor.out" "NO_COLOR=1 COLUMNS=80 $AR_HEALTHCTL --socket $(socket_of n1) status" || true
  lacks "$WORK/nocolor.out" $'\x1b\\['
  grep -q 'script:admin-check' "$WORK/nocolor.out"
  on_pty "$WORK/flag.out" "COLUMNS=80 $AR_HEALTHCTL --socket $(socket_of n1) status --no-color" || true
  lacks "$WORK/flag.out" $'\x1b\\['
  # to a pipe: no colour, and nothing cut (a script grepping it sees every word) unless COLUMNS says
  healthctl_on n1 status >"$WORK/pipe.out" || true
  lacks "$WORK/pipe.out" $'\x1b\\['
  grep -q "5 minutes now" "$WORK/pipe.out"
  COLUMNS=80 healthctl_on n1 status >"$WORK/pipe80.out" || true
  [ "$(widest "$WORK/pipe80.out")" -le 80 ]
  lacks "$WORK/pipe80.out" "5 minutes now"
}

@test "the exit status on a pseudo-terminal is the same as on a pipe" {
  echo "1 fan 3 is slow" >"$ADMIN_CHECK"
  wait_until 20 result_is n1 script:admin-check warn
  local rc=0
  on_pty "$WORK/tty.out" "$AR_HEALTHCTL --socket $(socket_of n1) status" || rc=$?
  [ "$rc" -eq 1 ]
}

@test "gpus: a line per GPU the daemon sees, fitting 80 columns" {
  run healthctl_on n1 gpus
  echo "$output" >&3
  [ "$status" -eq 0 ]
  echo "$output" | head -1 | grep -Eq '^INDEX +BUS ID +UUID +HEALTH +ECC U/C +REMAP C/U +XID$'
  # the fake NVML's two GPUs, healthy
  [ "$(echo "$output" | grep -Ec '^ +[0-9]+  \S+ +GPU-\S+ +ok ')" -eq 2 ]
  on_pty "$WORK/gpus.out" "COLUMNS=80 $AR_HEALTHCTL --socket $(socket_of n1) gpus"
  [ "$(widest "$WORK/gpus.out")" -le 80 ]
  run healthctl_on n1 --json gpus
  [ "$status" -eq 0 ]
  echo "$output" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d["gpus"]) == 2, d'
}

@test "jobs names the user; explain dates each event and gives its offset" {
  local job
  job=$(submit -N1 -w n1 --auto-resume=1 -o /dev/null --wrap 'srun bash -c "exit 3"; exit 0')
  wait_until 60 job_finished "$job"
  wait_until 10 job_field n1 "$job" 'job["job_id"]'
  run healthctl_on n1 jobs
  echo "$output" >&3
  [ "$status" -eq 0 ]
  echo "$output" | grep -Eq "^$job +$AR_USER +yes "  # the submitter, an ordinary user
  echo "$output" | head -1 | grep -q USER
  run healthctl_on n1 explain "$job"
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [[ "$output" == *"(local time, UTC"* ]]
  echo "$output" | grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3} +\+0\.000s +step failed'
}

@test "--node reaches another node's daemon through HEALTHD_SOCKET_TEMPLATE" {
  run env HEALTHD_SOCKET_TEMPLATE="${AR_CLUSTER_DIR}/run/healthd-%n.sock" "$AR_HEALTHCTL" --node n2 ping
  [ "$status" -eq 0 ]
  [[ "$output" == *"on node n2 is up"* ]]
  run env HEALTHD_SOCKET_TEMPLATE="${AR_CLUSTER_DIR}/run/healthd-%n.sock" "$AR_HEALTHCTL" ping --node n3
  [[ "$output" == *"on node n3 is up"* ]]
  run "$AR_HEALTHCTL" --node n2 --socket "$(socket_of n2)" ping
  [ "$status" -eq 64 ]
}

@test "watch redraws frames until interrupted, and shows a daemon that does not answer" {
  "$AR_HEALTHCTL" --socket "$(socket_of n1)" watch -n 1 >"$WORK/watch.out" 2>&1 3>&- &
  local pid=$!
  "$AR_HEALTHCTL" --socket "$WORK/nobody-listens.sock" status --watch -n 1 >"$WORK/down.out" 2>&1 3>&- &
  local down=$!
  wait_until 20 bash -c "[ \$(grep -c '^CHECK ' '$WORK/watch.out') -ge 2 ]"
  wait_until 20 bash -c "[ \$(grep -c 'is not answering' '$WORK/down.out') -ge 2 ]"
  kill -INT "$pid" "$down"
  local rc=0
  wait "$pid" || rc=$?
  [ "$rc" -eq 0 ]
  rc=0
  wait "$down" || rc=$?
  [ "$rc" -eq 0 ]
  # frames to a pipe follow each other: no screen clearing
  lacks "$WORK/watch.out" $'\x1b\\[2J'
}

# ---------------------------------------------------------------------------------------------
# Admin actions through the daemon
# ---------------------------------------------------------------------------------------------

@test "drain through healthd: Slurm drains with an ADMIN reason, events says so; resume returns the node" {
  local tag; tag=$(test_tag)
  run healthctl_on n1 drain --reason "bats $tag"
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [[ "$output" == "healthd on n1: "* ]]
  [[ "$output" == *"done: "* ]]
  wait_until 20 node_drained n1
  [[ "$(node_reason n1)" == *"ADMIN"*"bats $tag"* ]]
  # the event, newest first, with its date and the admin's name
  run healthctl_on n1 events -n 5
  echo "$output" >&3
  [ "$status" -eq 0 ]
  echo "$output" | sed -n 2p | grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}  admin +- +root '
  run healthctl_on n1 --json events
  echo "$output" | python3 -c '
import json, sys
ev = json.load(sys.stdin)["events"]
assert ev and ev[0]["kind"] == "admin", ev
assert all(a["at_ms"] >= b["at_ms"] for a, b in zip(ev, ev[1:])), "not newest first"'
  # held: healthd does not give it back by itself, whatever its sweeps say
  healthctl_on n1 check --now >/dev/null
  node_drained n1
  run healthctl_on n1 resume
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [[ "$output" == *"done: "* ]]
  wait_until $((30 + SLURM_SETTLE_S)) node_idle n1
}

@test "drain's default reason names who drained; resume of someone else's drain is a conflict unless --force" {
  run healthctl_on n1 drain
  [ "$status" -eq 0 ]
  wait_until 20 node_drained n1
  [[ "$(node_reason n1)" == *"ADMIN"*"drained by root via healthctl"* ]]
  run healthctl_on n1 resume
  [ "$status" -eq 0 ]
  wait_until $((30 + SLURM_SETTLE_S)) node_idle n1
  scontrol update nodename=n1 state=drain reason="admin: replacing a DIMM"
  run healthctl_on n1 resume
  echo "$output" >&3
  [ "$status" -eq 5 ]
  [[ "$output" == "healthctl: resume: not done: "* ]]
  node_drained n1
  run healthctl_on n1 resume --force
  [ "$status" -eq 0 ]
  wait_until $((30 + SLURM_SETTLE_S)) node_idle n1
}
