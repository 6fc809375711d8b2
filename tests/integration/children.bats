#!/usr/bin/env bats
# What healthd's children inherit (issue 10, item 11): a child still running when healthd is
# SIGKILLed held the listening socket, and the restarted daemon refused to start ("another daemon is
# listening"); children got healthd's whole environment. The admin check of the test config
# (admin_check.sh reading host/NODE/etc/admin-check) is made to block by a FIFO in that file's place:
# the script waits in open() until its 3 s timeout.

load helpers

NODE=n2

check_file() { echo "${AR_CLUSTER_DIR}/host/$NODE/etc/admin-check"; }

# blocked_check_pid: the admin script now blocked on the FIFO, if any.
blocked_check_pid() { pgrep -f -x "/bin/sh .*admin_check.sh $(check_file)" | head -1; }
has_blocked_check() { [ -n "$(blocked_check_pid)" ]; }

setup() {
  rm -f "$(check_file)"
  mkdir -p "$(dirname "$(check_file)")"
  mkfifo "$(check_file)"
}

teardown() {
  local pid
  rm -f "$(check_file)"
  for pid in $(pgrep -f -x "/bin/sh .*admin_check.sh $(check_file)"); do kill -KILL "$pid" 2>/dev/null || true; done
  healthctl_on "$NODE" ping >/dev/null 2>&1 || cluster start-healthd "$NODE"
}

@test "a child of healthd holds stdio only and gets the fixed environment" {
  wait_until 30 has_blocked_check
  local pid fds env
  pid=$(blocked_check_pid)
  # Every descriptor but stdio is the shell's own handle on its script (dash reads it through fd 10).
  fds=$(for fd in /proc/"$pid"/fd/*; do
    [ "$(readlink "$fd")" = "$BATS_TEST_DIRNAME/admin_check.sh" ] || echo "${fd##*/}"
  done | sort -n | tr '\n' ' ')
  env=$(tr '\0' '\n' </proc/"$pid"/environ | sort)
  ls -l /proc/"$pid"/fd >&2  # shown if the test fails
  [ "$fds" = "0 1 2 " ]
  # No socket, not healthd's own variables (FAKE_NVML_SCENARIO is set for healthd by cluster.sh).
  # (counted: a bare `! cmd` cannot fail a bats test, set -e ignores it)
  [ "$(ls -l /proc/"$pid"/fd | grep -c socket)" = 0 ]
  grep -qx "PATH=/usr/sbin:/usr/bin:/sbin:/bin" <<<"$env"
  grep -qx "LANG=C" <<<"$env"
  grep -qx "LC_ALL=C" <<<"$env"
  grep -qx "HOME=/" <<<"$env"
  grep -qx "SLURM_CONF=$SLURM_CONF" <<<"$env"
  [ "$(grep -c "^FAKE_NVML_SCENARIO=" <<<"$env")" = 0 ]
  ! grep -vE "^(PATH|LANG|LC_ALL|HOME|SLURM_CONF|TZ)=" <<<"$env"
}

@test "a child outliving a SIGKILLed healthd does not stop it from starting again" {
  local pid
  wait_until 30 has_blocked_check
  pid=$(blocked_check_pid)
  cluster stop-healthd "$NODE" KILL
  # The child must still be there (its own process group, out of healthd's), or this proves nothing.
  kill -0 "$pid"
  cluster start-healthd "$NODE"
  wait_until 20 healthctl_on "$NODE" ping
}
