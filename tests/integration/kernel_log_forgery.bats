#!/usr/bin/env bats
# Issue 31: no user can forge a hardware fault through the kernel log. The kernel reports a crashed
# program with the name of the file it crashed in (debug.exception-trace=1), at KERN_INFO: a user who
# names a file "NVRM: Xid (PCI:0000:17:00): 79, ..." and crashes in a mapping of it put that text in
# the kernel log, and healthd drained the node. A message written to /dev/kmsg from user space has
# the facility LOG_USER. A standalone healthd (no Slurm: report only) reads the real /dev/kmsg here.

load helpers

# A file name that is an XID 79 line, and one that is a machine check line (no '/': a name).
XID_NAME='NVRM: Xid (PCI:0000:17:00): 79, pid=1, name=x, GPU has fallen off the bus.'
MCE_NAME='mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 5: be00000000800400'

setup() {
  work=$(mktemp -d "${AR_CLUSTER_DIR}/forgery-XXXXXX")
  pid=
}

teardown() {
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  [ -n "${nobody_dir:-}" ] && rm -rf "$nobody_dir"
  rm -rf "$work"
}

# start_healthd HOST_ROOT PATH: a healthd of its own reading PATH under HOST_ROOT, sweeping every second.
start_healthd() {
  cat >"$work/healthd.toml" <<TOML
[daemon]
node_name = "forgery-nx"
host_root = "$1"
[policy]
check_interval_s = 1
report_only = true
[checks.kernel_log]
path = "$2"
poll_interval_ms = 50
[checks.gpu]
library = "$work/no-such-libnvidia-ml.so.1"
[checks.node]
enabled = false
[checks.ec2]
enabled = false
TOML
  "$AR_HEALTHD" --config "$work/healthd.toml" --socket "$work/h.sock" --state-dir "$work/state" \
    </dev/null >"$work/healthd.log" 2>&1 3>&- &
  pid=$!
  wait_until 30 records_field read '>= 0'
}

# check_field CHECK PYTHON-EXPR: EXPR with `c` bound to CHECK's result in `healthctl status --json`.
check_field() {
  "$AR_HEALTHCTL" --socket "$work/h.sock" status --json 2>/dev/null | python3 -c '
import json, sys
try:
    health = json.load(sys.stdin)["health"]
except (ValueError, KeyError):
    sys.exit("no status from healthd yet")
checks = [c for c in health.get("checks", []) if c["check"] == sys.argv[1]]
if not checks:
    sys.exit("no result of " + sys.argv[1] + " yet")
c = checks[0]
print(eval(sys.argv[2]))' "$1" "$2"
}

# field_is CHECK PYTHON-EXPR VALUE: EXPR (see check_field) prints VALUE.
field_is() { [ "$(check_field "$1" "$2")" = "$3" ]; }
# next_sweep: waits for a sweep after this moment (the XID check judges after the kernel-log check read).
next_sweep() {
  local at; at=$(check_field gpu_xid 'c["at_ms"]')
  wait_until 10 field_changed gpu_xid 'c["at_ms"]' "$at"
}
field_changed() { [ "$(check_field "$1" "$2")" != "$3" ]; }

# records_field KEY CONDITION: the kernel-log check's count KEY (detail.records) meets CONDITION.
records_field() {
  local v
  v=$(check_field kernel_log "c[\"detail\"][\"records\"].get(\"$1\", 0)") || return 1
  python3 -c "import sys; sys.exit(0 if $v $2 else 1)"
}

# kmsg_seq TEXT: the sequence number, level and facility ("SEQ LEVEL FACILITY") of the last /dev/kmsg
# record whose message contains TEXT; fails when there is none.
kmsg_seq() {
  python3 - "$1" <<'PY'
import errno, os, sys
fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
found = None
while True:
    try:
        rec = os.read(fd, 8192).decode("utf-8", "replace")
    except OSError as e:
        if e.errno == errno.EPIPE:
            continue  # overwritten before it was read
        if e.errno == errno.EAGAIN:
            break
        raise
    prefix, _, message = rec.partition(";")
    pri, seq = prefix.split(",")[:2]
    if sys.argv[1] in message.split("\n")[0]:
        found = "%s %d %d" % (seq, int(pri) & 7, int(pri) >> 3)
if found is None:
    sys.exit("no /dev/kmsg record holds: " + sys.argv[1])
print(found)
PY
}

@test "a segfault in a file named like a driver's fault, and LOG_USER writes to /dev/kmsg, fault nothing" {
  [ "$(sysctl -n debug.exception-trace)" = 1 ] || skip "debug.exception-trace is off: the kernel reports no segfault"
  start_healthd / /dev/kmsg

  # A program that calls into a read-only mapping of the file it is given: the fetch faults there, and
  # the kernel's report names the file ("... error 15 in NAME[7f..+1000]").
  nobody_dir=$(mktemp -d /tmp/ar-forgery.XXXXXX)
  chmod 0755 "$nobody_dir"
  cat >"$nobody_dir/crash.c" <<'C'
#include <fcntl.h>
#include <sys/mman.h>
int main(int argc, char** argv) {
  int fd = open(argv[1], O_RDONLY);
  void* code = mmap(0, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
  if (fd < 0 || code == MAP_FAILED) return 2;
  ((void (*)(void))code)();
  return 3;
}
C
  cc -O0 -o "$nobody_dir/crash" "$nobody_dir/crash.c"
  # The user's own directory and files: nothing of root's.
  mkdir "$nobody_dir/u"
  chown nobody "$nobody_dir/u"
  local name status_of
  for name in "$XID_NAME" "$MCE_NAME"; do
    runuser -u nobody -- sh -c 'head -c 4096 /dev/zero >"$1"' sh "$nobody_dir/u/$name"
    [ "$(stat -c %U "$nobody_dir/u/$name")" = nobody ]
    status_of=0
    runuser -u nobody -- "$nobody_dir/crash" "$nobody_dir/u/$name" || status_of=$?
    [ "$status_of" -eq 139 ] || { echo "the crash helper exited $status_of, not by SIGSEGV"; return 1; }
  done
  # The kernel logged both reports, with the names in them, as its own records (facility 0) at
  # KERN_INFO: without them this test would prove nothing.
  local seen
  for name in "$XID_NAME" "$MCE_NAME"; do
    seen=$(kmsg_seq "segfault at ") || { echo "no segfault report in /dev/kmsg"; return 1; }
    seen=$(kmsg_seq " in $name[") || { echo "the kernel's segfault report does not name the file: $name"; return 1; }
    [ "$(echo "$seen" | cut -d' ' -f2-)" = "6 0" ] || { echo "segfault report: level, facility $seen"; return 1; }
  done

  # As root, to /dev/kmsg: the level stays, the facility is LOG_USER.
  printf '<3>%s\n' "$XID_NAME" >/dev/kmsg
  printf '<3>%s\n' "$MCE_NAME" >/dev/kmsg
  [ "$(kmsg_seq "$XID_NAME" | cut -d' ' -f2-)" = "3 1" ]
  # Last, a record to know when healthd has read past all of the above (/dev/kmsg is read in order).
  local sentinel="ar-forgery-sentinel-$$-$RANDOM" sentinel_seq
  printf '<6>%s\n' "$sentinel" >/dev/kmsg
  sentinel_seq=$(kmsg_seq "$sentinel" | cut -d' ' -f1)
  wait_until 30 records_field last_seq ">= $sentinel_seq"
  next_sweep

  run check_field gpu_xid '(c["status"], c["code"], len(c["detail"]["events"]))'
  [ "$output" = "('ok', '', 0)" ]
  run check_field kernel_log '(c["status"], c["code"], c["detail"]["active"])'
  [ "$output" = "('ok', '', [])" ]
  records_field not_kernel '>= 3'  # the two forged lines and the sentinel, at least
  run grep -q "XID 79" "$work/healthd.log"
  [ "$status" -ne 0 ]
  grep -q "records not from the kernel are ignored" "$work/healthd.log"
}

@test "in a forwarded log, the driver's own XID and machine check lines fault, the same text in a segfault report does not" {
  : >"$work/kern.log"
  start_healthd "$work" /kern.log
  # The kernel's report of a program that crashed in files named after the faults (KERN_INFO).
  printf '<6>python3[99]: segfault at 0 ip 00007f0c12345678 sp 00007ffd87654321 error 14 in %s[7f0c12345000+1000]\n' \
    "$XID_NAME" "$MCE_NAME" >>"$work/kern.log"
  # A line without its priority: origin unknown, never counted.
  printf '%s\n' "$XID_NAME" >>"$work/kern.log"
  wait_until 30 records_field read '>= 2'
  wait_until 30 records_field without_priority '>= 1'
  next_sweep
  run check_field gpu_xid '(c["status"], len(c["detail"]["events"]))'
  [ "$output" = "('ok', 0)" ]
  run check_field kernel_log '(c["status"], c["detail"]["active"])'
  [ "$output" = "('ok', [])" ]
  grep -q "lines without a priority are ignored" "$work/healthd.log"

  # The driver's own: NVRM prints XIDs at the kernel's default level (KERN_WARNING), the machine
  # check code at KERN_EMERG.
  printf '<4>%s\n<0>%s\n' "$XID_NAME" "$MCE_NAME" >>"$work/kern.log"
  wait_until 30 field_is gpu_xid 'c["code"]' GPU-XID-79
  wait_until 30 field_is kernel_log 'c["code"]' KMSG-MCE
  field_is gpu_xid 'c["status"]' fault
  field_is kernel_log 'c["status"]' fault
}
