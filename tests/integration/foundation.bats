#!/usr/bin/env bats
# The foundation on a real cluster: the option, its validation, step reporting to each node's
# healthd, and jobs running normally when healthd is down.

load helpers

@test "--auto-resume is listed by sbatch, srun and salloc --help" {
  for cmd in sbatch srun salloc; do
    run as_user "$cmd" --help
    [ "$status" -eq 0 ]
    [[ "$output" == *"--auto-resume"* ]] || { echo "$cmd --help lacks --auto-resume"; return 1; }
  done
}

# The value of a constant of the installed Slurm headers, as the compiler reads them.
slurm_constant() {
  printf '#include <stdio.h>\n#include <slurm/slurm.h>\n#include <slurm/spank.h>\nint main(void) { printf("%%ld\\n", (long)(%s)); return 0; }\n' "$1" >"$BATS_TEST_TMPDIR/c.c"
  cc -o "$BATS_TEST_TMPDIR/c" "$BATS_TEST_TMPDIR/c.c" && "$BATS_TEST_TMPDIR/c"
}

@test "from Slurm 25.05 the plugin tells Slurm a failed init fails the job, never drains the node" {
  local version
  version=$(slurm_constant SLURM_VERSION_NUMBER)
  if ((version >= 0x190500)); then
    # Exported (what slurmstepd's dlsym finds), and its initial value in the file is
    # ESPANK_JOB_FAILURE: the symbol's address, through its section's offset, to the int there.
    nm -D --defined-only "$AR_PLUGIN" | grep -qw slurm_spank_init_failure_mode
    run python3 - "$AR_PLUGIN" <<'PY'
import re, struct, subprocess, sys
path = sys.argv[1]
syms = subprocess.run(["readelf", "-W", "--dyn-syms", path], capture_output=True, text=True, check=True).stdout
addr, ndx = next((int(f[1], 16), int(f[6])) for f in (l.split() for l in syms.splitlines())
                 if len(f) >= 8 and f[7] == "slurm_spank_init_failure_mode")
secs = subprocess.run(["readelf", "-W", "-S", path], capture_output=True, text=True, check=True).stdout
for line in secs.splitlines():
    m = re.match(r"\s*\[\s*(\d+)\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
    if m and int(m.group(1)) == ndx:
        with open(path, "rb") as f:
            f.seek(addr - int(m.group(3), 16) + int(m.group(4), 16))
            print(struct.unpack("<i", f.read(4))[0])
PY
    [ "$status" -eq 0 ]
    [ "$output" = "$(slurm_constant ESPANK_JOB_FAILURE)" ]
  else
    # Before 25.05 Slurm has no such setting (spank.h): nothing of the name is exported.
    ! nm -D --defined-only "$AR_PLUGIN" | grep -qw slurm_spank_init_failure_mode
  fi
}

@test "a bad --auto-resume value is refused before anything is submitted" {
  local tag; tag=$(test_tag)
  for bad in yes 2 -1 ""; do
    run as_user sbatch --job-name="$tag" --auto-resume="$bad" --wrap true
    [ "$status" -ne 0 ]
    [[ "$output" == *"invalid value '$bad' for --auto-resume: expected 0 or 1"* ]]
    run as_user srun --job-name="$tag" --auto-resume="$bad" true
    [ "$status" -ne 0 ]
    [[ "$output" == *"invalid value '$bad' for --auto-resume"* ]]
  done
  run squeue -h -n "$tag"
  [ -z "$output" ]
  run scontrol show job -o
  [[ "$output" != *"JobName=$tag "* ]]
}

@test "an auto-resume job's failing srun step is reported to the healthd of each of its nodes" {
  local job
  job=$(submit -N2 -w n2,n3 --auto-resume=1 -o /dev/null --wrap 'srun -N2 -n2 bash -c "exit 3"; exit 0')
  wait_until 60 job_finished "$job"
  for node in n2 n3; do
    wait_until 10 job_field "$node" "$job" 'job["job_id"]'
    [ "$(job_field "$node" "$job" 'job["auto_resume"]')" = True ]
    # step 0 carries the flag from sbatch although srun did not repeat it, and its task exited 3
    [ "$(job_field "$node" "$job" '[s["auto_resume"] for s in job["steps"] if s["step"] == "0"][0]')" = True ]
    [ "$(job_field "$node" "$job" '[e["wait_status"] for s in job["steps"] if s["step"] == "0" for e in s["task_exits"]]')" = "[768]" ]
    [ "$(job_field "$node" "$job" '[s["running"] for s in job["steps"] if s["step"] == "0"][0]')" = False ]
  done
  # the batch step runs on the first node only
  [ "$(job_field n2 "$job" '[s["step"] for s in job["steps"]]')" = "['0', 'batch']" ]
  run healthctl_on n2 jobs
  [ "$status" -eq 0 ]
  [[ "$output" == *"$job"*"yes"* ]]
  [[ "$output" == *"task 0: exit 3"* ]]
}

@test "a job without the flag is reported as not auto-resume" {
  local job
  job=$(submit -N1 -w n1 -o /dev/null --wrap 'srun true')
  wait_until 60 job_finished "$job"
  wait_until 10 job_field n1 "$job" 'job["job_id"]'
  [ "$(job_field n1 "$job" 'job["auto_resume"]')" = False ]
  [ "$(job_field n1 "$job" '[s["auto_resume"] for s in job["steps"]]')" = "[False, False]" ]
}

@test "srun --auto-resume=0 opts one step out of an auto-resume job" {
  local job
  job=$(submit -N1 -w n1 --auto-resume -o /dev/null --wrap 'srun --auto-resume=0 true; srun true')
  wait_until 60 job_finished "$job"
  wait_until 10 job_field n1 "$job" '[s for s in job["steps"] if s["step"] == "1"][0]'
  [ "$(job_field n1 "$job" 'job["auto_resume"]')" = True ]
  [ "$(job_field n1 "$job" '[s["auto_resume"] for s in job["steps"] if s["step"] == "0"][0]')" = False ]
  [ "$(job_field n1 "$job" '[s["auto_resume"] for s in job["steps"] if s["step"] == "1"][0]')" = True ]
}

@test "a restarted healthd still knows the jobs it saw" {
  local job
  job=$(submit -N1 -w n1 --auto-resume=1 -o /dev/null --wrap 'srun true')
  wait_until 60 job_finished "$job"
  wait_until 10 job_field n1 "$job" 'job["job_id"]'
  cluster restart-healthd n1
  [ "$(job_field n1 "$job" 'job["auto_resume"]')" = True ]
}

@test "with healthd stopped on a node, jobs there run and finish normally, and healthctl says it is down" {
  local job out
  cluster stop-healthd n3
  WORK="${AR_CLUSTER_DIR}/work/foundation-${BATS_TEST_NUMBER}-$$"
  make_work "$WORK"
  out="$WORK/nohealthd.out"
  job=$(submit -N1 -w n3 --auto-resume=1 -o "$out" --wrap 'srun bash -c "echo step-ran"; echo script-ran')
  wait_until 60 job_finished "$job"
  local state; state=$(job_state "$job")
  run healthctl_on n3 ping
  local ping_status=$status ping_output=$output
  cluster start-healthd n3
  [ "$state" = COMPLETED ]
  grep -q step-ran "$out"
  grep -q script-ran "$out"
  [ "$ping_status" -eq 3 ]  # healthctl: 3 = the daemon is unreachable
  [ "$(echo "$ping_output" | wc -l)" -eq 1 ]
  [[ "$ping_output" == "healthctl: ping: healthd at "*"not answering"* ]]
  # the plugin logged the outage once per step, with its prefix, to slurmd's log
  grep -q "auto-resume: healthd at .*healthd-n3.sock not reachable" "${AR_CLUSTER_DIR}"/log/slurmd-n3.log
}

@test "healthd answers a malformed message with an error reply on the cluster socket" {
  run python3 - "$(socket_of n1)" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile("rwb")
for line in [b"not json\n", b'{"v":7,"type":"ping"}\n', b'{"v":1,"type":"nope"}\n']:
    f.write(line); f.flush(); print(json.loads(f.readline())["error"]["code"])
PY
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = malformed ]
  [ "${lines[1]}" = unsupported_version ]
  [ "${lines[2]}" = unknown_type ]
}

@test "healthd refuses a config with an unknown key, naming file, line and key" {
  local cfg="${AR_CLUSTER_DIR}/bad-$$.toml"
  printf '[daemon]\nlog_level = "info"\nsokcet = "/tmp/x"\n' > "$cfg"
  run "$AR_HEALTHD" --config "$cfg" --node nx --socket "${AR_CLUSTER_DIR}/run/bad.sock"
  [ "$status" -ne 0 ]
  [[ "$output" == *"$cfg:3:"*"unknown key 'sokcet' in [daemon]"* ]]
}

@test "healthd --check-config FILE checks a file and its drop-ins without starting, and prints each key's origin" {
  local dir="${AR_CLUSTER_DIR}/check-config-$$"
  mkdir -p "$dir/healthd.toml.d"
  printf '[policy]\nmax_resumes = 5\n' > "$dir/healthd.toml"
  printf '[policy]\nrecovery_passes = 4\n' > "$dir/healthd.toml.d/10-site.toml"
  run "$AR_HEALTHD" --check-config "$dir/healthd.toml" --node nx --state-dir "$dir/state"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"config $dir/healthd.toml: ok (with $dir/healthd.toml.d/10-site.toml)"* ]]
  [[ "$output" == *"policy.max_resumes = 5  # $dir/healthd.toml:2:"* ]]
  [[ "$output" == *"policy.recovery_passes = 4  # $dir/healthd.toml.d/10-site.toml:2:"* ]]
  [[ "$output" == *"policy.flap_max_faults = 3  # default"* ]]
  [ ! -e "$dir/state" ]  # nothing started, no state made
  printf '[policy]\nrecovery_pases = 4\n' > "$dir/healthd.toml.d/10-site.toml"
  run "$AR_HEALTHD" --check-config "$dir/healthd.toml"
  [ "$status" -eq 2 ]
  [[ "$output" == *"$dir/healthd.toml.d/10-site.toml:2:1: unknown key 'recovery_pases' in [policy]; did you mean 'recovery_passes'?"* ]]
}

@test "SIGHUP reloads the config; a broken config is refused and the running one kept" {
  local pid log cfg="${AR_CLUSTER_DIR}/etc/healthd.toml" saved
  pid=$(cat "${AR_CLUSTER_DIR}/run/healthd-n1.pid")
  log="${AR_CLUSTER_DIR}/log/healthd-n1.log"
  saved=$(cat "$cfg")
  printf '[daemon]\nlog_level = "loud"\n' > "$cfg"
  kill -HUP "$pid"
  wait_until 10 grep -q "reload: keeping the running config: ${cfg}:2:" "$log"
  healthctl_on n1 ping
  printf '[daemon]\nlog_level = "debug"\n' > "$cfg"
  kill -HUP "$pid"
  wait_until 10 grep -q "reload: config ${cfg} reloaded" "$log"
  printf '%s\n' "$saved" > "$cfg"
  kill -HUP "$pid"
  healthctl_on n1 ping
}

@test "healthd tells systemd it is ready, and stops cleanly on SIGTERM" {
  local dir="${AR_CLUSTER_DIR}/notify-$$"
  mkdir -p "$dir"
  printf '[daemon]\nnode_name = "nx"\n' > "$dir/healthd.toml"
  run python3 - "$AR_HEALTHD" "$dir" <<'PY'
import os, signal, socket, subprocess, sys, time
healthd, d = sys.argv[1], sys.argv[2]
ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); ns.bind(d + "/notify.sock"); ns.settimeout(10)
env = dict(os.environ, NOTIFY_SOCKET=d + "/notify.sock")
p = subprocess.Popen([healthd, "--config", d + "/healthd.toml", "--socket", d + "/h.sock", "--state-dir", d + "/state"],
                     env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(ns.recv(256).decode().strip())
assert os.path.exists(d + "/h.sock")
p.send_signal(signal.SIGTERM)
print(ns.recv(256).decode().strip())
print("exit", p.wait(timeout=10))
print("socket left" if os.path.exists(d + "/h.sock") else "socket removed")
PY
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "READY=1" ]
  [ "${lines[1]}" = "STOPPING=1" ]
  [ "${lines[2]}" = "exit 0" ]
  [ "${lines[3]}" = "socket removed" ]
}

@test "under systemd's watchdog healthd pings it from its event loop, and only then" {
  local dir="${AR_CLUSTER_DIR}/watchdog-$$"
  mkdir -p "$dir"
  printf '[daemon]\nnode_name = "nx"\n' > "$dir/healthd.toml"
  run python3 - "$AR_HEALTHD" "$dir" <<'PY'
import os, signal, socket, subprocess, sys, time
healthd, d = sys.argv[1], sys.argv[2]
def run(extra):
    path = d + "/notify-%d.sock" % len(extra)
    ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); ns.bind(path); ns.settimeout(0.2)
    env = dict(os.environ, NOTIFY_SOCKET=path, **extra)
    p = subprocess.Popen([healthd, "--config", d + "/healthd.toml", "--socket", d + "/h.sock", "--state-dir", d + "/state"],
                         env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    got, deadline = [], time.time() + 3
    while time.time() < deadline:
        try:
            got.append(ns.recv(256).decode().strip())
        except socket.timeout:
            pass
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=10)
    return got
with_watchdog = run({"WATCHDOG_USEC": "400000"})
without = run({})
print("with", with_watchdog.count("WATCHDOG=1"))
print("without", without.count("WATCHDOG=1"))
PY
  [ "$status" -eq 0 ]
  echo "$output"
  # every 200 ms for 3 s: well over 5 pings; none when systemd asked for no watchdog
  (( $(echo "${lines[0]}" | cut -d' ' -f2) >= 5 ))
  [ "${lines[1]}" = "without 0" ]
}

@test "a reload's check_interval_s sets the pace of the periodic sweeps from the next one on" {
  local dir="${AR_CLUSTER_DIR}/interval-$$"
  mkdir -p "$dir"
  # No kernel-log events: only the periodic sweeps move the sweep number.
  printf '[daemon]\nnode_name = "nx"\n[policy]\ncheck_interval_s = 1\n[checks.kernel_log]\nenabled = false\n' > "$dir/healthd.toml"
  run python3 - "$AR_HEALTHD" "$AR_HEALTHCTL" "$dir" <<'PY'
import json, signal, subprocess, sys, time
healthd, healthctl, d = sys.argv[1:4]
p = subprocess.Popen([healthd, "--config", d + "/healthd.toml", "--socket", d + "/h.sock", "--state-dir", d + "/state"],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
def seq():
    out = subprocess.run([healthctl, "--socket", d + "/h.sock", "status", "--json"], capture_output=True, text=True)
    try:
        reply = json.loads(out.stdout)
        return reply.get("data", reply)["health"].get("sweep_seq", 0)
    except (ValueError, KeyError, TypeError):
        return -1
deadline = time.time() + 30
while seq() < 3 and time.time() < deadline:
    time.sleep(0.2)
print("every second", seq() >= 3)
with open(d + "/healthd.toml", "w") as f:
    f.write('[daemon]\nnode_name = "nx"\n[policy]\ncheck_interval_s = 3600\n[checks.kernel_log]\nenabled = false\n')
p.send_signal(signal.SIGHUP)
time.sleep(2.5)  # the sweep armed before the reload may still come, once
a = seq()
time.sleep(4)
print("sweeps in 4 s after the reload", seq() - a)
p.send_signal(signal.SIGTERM)
p.wait(timeout=10)
PY
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "every second True" ]
  [ "${lines[1]}" = "sweeps in 4 s after the reload 0" ]
}

@test "a reload rebuilds the checks a drop-in changes, and names what waits for a restart" {
  local dir="${AR_CLUSTER_DIR}/reload-checks-$$"
  mkdir -p "$dir/healthd.toml.d"
  : > "$dir/kern.log"
  printf '[daemon]\nnode_name = "nx"\nhost_root = "%s"\n[checks.kernel_log]\npath = "/kern.log"\npoll_interval_ms = 50\n' "$dir" > "$dir/healthd.toml"
  run python3 - "$AR_HEALTHD" "$AR_HEALTHCTL" "$dir" <<'PY'
import json, signal, subprocess, sys, time
healthd, healthctl, d = sys.argv[1:4]
log = open(d + "/healthd.log", "w")
p = subprocess.Popen([healthd, "--config", d + "/healthd.toml", "--socket", d + "/h.sock", "--state-dir", d + "/state"],
                     stdin=subprocess.DEVNULL, stdout=log, stderr=log)
def status():
    out = subprocess.run([healthctl, "--socket", d + "/h.sock", "status", "--json"], capture_output=True, text=True)
    return out.stdout
def wait_for(what, fn, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if fn():
            return True
        time.sleep(0.2)
    print("timed out waiting for", what)
    return False
wait_for("the daemon", lambda: '"kernel_log"' in status())
# A line no rule knows yet: no fault. The driver writes it at KERN_INFO (netdev_info).
with open(d + "/kern.log", "a") as f:
    f.write("<6>mlx5_core 0000:01:00.0 ib0: Link down\n")
time.sleep(1)
print("before the reload", "IB-LINK-DOWN" in status())
with open(d + "/healthd.toml.d/50-ib.toml", "w") as f:
    f.write('[[checks.kernel_log.rule]]\ncode = "IB-LINK-DOWN"\npattern = \'mlx5_core [0-9a-f:.]+ \\S+: Link down\'\nmax_level = "info"\naction = "warn"\n'
            '[server]\nmax_connections = 2048\n')
p.send_signal(signal.SIGHUP)
wait_for("the reload", lambda: "reloaded" in open(d + "/healthd.log").read())
with open(d + "/kern.log", "a") as f:
    f.write("<6>mlx5_core 0000:01:00.0 ib0: Link down\n")
print("after the reload", wait_for("the new rule's fault", lambda: "IB-LINK-DOWN" in status()))
text = open(d + "/healthd.log").read()
print("restart named", "not applied until healthd restarts: server.max_connections: 1024 -> 2048" in text)
print("rebuilt said", "checks rebuilt" in text)
p.send_signal(signal.SIGTERM)
p.wait(timeout=10)
PY
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "before the reload False" ]
  [ "${lines[1]}" = "after the reload True" ]
  [ "${lines[2]}" = "restart named True" ]
  [ "${lines[3]}" = "rebuilt said True" ]
}

@test "a node without an NVIDIA driver starts without a warning about it, and healthy sweeps log nothing" {
  local dir="${AR_CLUSTER_DIR}/no-gpu-$$"
  mkdir -p "$dir"
  : > "$dir/kern.log"
  # No NVIDIA library where the GPU check looks, and only checks that pass on any machine.
  printf '[daemon]\nnode_name = "nx"\nhost_root = "%s"\n[policy]\ncheck_interval_s = 1\n[checks.kernel_log]\npath = "/kern.log"\n[checks.gpu]\nlibrary = "%s/no-such-libnvidia-ml.so.1"\n[checks.node]\nenabled = false\n[checks.ec2]\nenabled = false\n' \
    "$dir" "$dir" > "$dir/healthd.toml"
  run python3 - "$AR_HEALTHD" "$AR_HEALTHCTL" "$dir" <<'PY'
import json, signal, subprocess, sys, time
healthd, healthctl, d = sys.argv[1:4]
# stdout is thrown away: what healthd has to say goes to stderr (a config error included).
p = subprocess.Popen([healthd, "--config", d + "/healthd.toml", "--socket", d + "/h.sock", "--state-dir", d + "/state"],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(d + "/healthd.log", "w"))
def seq():
    out = subprocess.run([healthctl, "--socket", d + "/h.sock", "status", "--json"], capture_output=True, text=True)
    try:
        return json.loads(out.stdout)["health"].get("sweep_seq", 0)
    except (ValueError, KeyError, TypeError):
        return -1
deadline = time.time() + 30
while seq() < 1 and time.time() < deadline:
    time.sleep(0.2)
lines_after_first = len(open(d + "/healthd.log").read().splitlines())
first = seq()
while seq() < first + 3 and time.time() < deadline + 30:
    time.sleep(0.2)
log = open(d + "/healthd.log").read().splitlines()
p.send_signal(signal.SIGTERM)
p.wait(timeout=10)
for line in log:
    print(line)
print("new lines over 3 healthy sweeps:", len(log) - lines_after_first)
PY
  echo "$output"
  [ "$status" -eq 0 ]
  grep -q "nvml events: not watching" "$dir/healthd.log"  # said, once...
  # ...and not as a warning or an error (this standalone daemon has no Slurm, which it does say)
  [ "$(grep -E " (warning|error|critical) " "$dir/healthd.log" | grep -ciE "nvml|nvidia|gpu")" = 0 ]
  [[ "$output" == *"new lines over 3 healthy sweeps: 0"* ]]
}
