#!/usr/bin/env bash
# The README's main command: sets up this machine (the build and run parts of install-deps.sh only),
# builds the three programs it runs, starts a real four-node Slurm cluster (munge, slurmctld, slurmd
# n1..n4, one healthd per node) under a temp directory, runs an auto-resume
# training job, makes a GPU fall off the bus under it (an XID 79 line in that node's kernel log), and
# shows what happened: the drain (a reboot through Slurm: XID 79 is cured by one), the requeue, the job
# running again on healthy nodes from its last checkpoint, the node back after its (simulated) reboot,
# the timeline, and the seconds it took next to what a plain Slurm requeue costs. That baseline (a
# job on n4 requeued with plain `scontrol requeue`, which Slurm holds for minutes) runs beside the
# story from its start, so its wait is not added to the demo's. Prints its own total time at the end.
# Needs root (it starts munge and Slurm daemons). Leaves the cluster running for you to explore;
# `tests/cluster/cluster.sh stop DIR` stops it. AR_DEMO_BASELINE=0 skips the plain-requeue baseline.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
dir=${AR_DEMO_DIR:-/tmp/ar-demo}
demo_start=$SECONDS

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
state_of() { scontrol show job "$1" -o | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
restarts_of() { scontrol show job "$1" -o | grep -o 'Restarts=[0-9]*' | cut -d= -f2; }
# wait_for SECONDS CMD...: polls every 0.05 s.
wait_for() {
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do
    ((SECONDS < deadline)) || { echo "demo: timed out waiting for: $*" >&2; return 1; }
    sleep 0.05
  done
}
running_attempt() { [ "$(state_of "$1")" = RUNNING ] && [ "$(restarts_of "$1")" = "$2" ]; }
finished() { case "$(state_of "$1")" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL) return 0 ;; *) return 1 ;; esac; }
checkpoints() { find "$dir/ckpt" -maxdepth 2 -name COMPLETE 2>/dev/null | wc -l; }

say "installing what the demo needs (scripts/install-deps.sh build run)"
bash scripts/install-deps.sh build run
installed_at=$SECONDS
say "building the plugin, healthd and healthctl (preset demo)"
cmake --preset demo >/dev/null
cmake --build --preset demo
built_at=$SECONDS
build=$root/build/demo
healthctl=$build/healthd/healthctl

say "starting a 4-node Slurm cluster in $dir"
mkdir -p "$dir"
rm -rf "$dir/host" "$dir/ckpt" "$dir/etc/healthd.toml"
for node in n1 n2 n3 n4; do mkdir -p "$dir/host/$node/var/log" && : >"$dir/host/$node/var/log/kern.log"; done
# Each node's "host" is a directory: its kernel log is a file there (on a real node: /dev/kmsg).
cat >"$dir/healthd.toml" <<TOML
[daemon]
host_root = "$dir/host/%n"
[policy]
check_interval_s = 2
[checks.kernel_log]
path = "/var/log/kern.log"
poll_interval_ms = 100
hold_s = 60
# A demo node's "host" holds only its kernel log; on a real node this check reads /proc and /sys.
[checks.node]
enabled = false
TOML
export AR_PLUGIN=$build/plugin/auto_resume.so AR_HEALTHD=$build/healthd/healthd AR_HEALTHD_CONFIG=$dir/healthd.toml
AR_NODES=4 tests/cluster/cluster.sh start "$dir"
# shellcheck disable=SC1091
source "$dir/env.sh"
sinfo

plain=""
if [ "${AR_DEMO_BASELINE:-1}" = 1 ]; then
  say "baseline, beside the story: a job on n4 requeued with plain 'scontrol requeue' (Slurm holds it for minutes)"
  plain=$(sbatch --parsable -w n4 -N1 -o /dev/null --wrap 'srun sleep 600' | cut -d';' -f1)
  wait_for 60 running_attempt "$plain" 0
  b0=$(date +%s.%N)
  scontrol requeue "$plain"
  echo "job $plain requeued at $(date +%T); the demo goes on while Slurm holds it"
fi

say "submitting a 2-node auto-resume training job (40 steps, a checkpoint after each)"
# -x n4: the baseline's node.
job=$(sbatch --parsable --auto-resume=1 --auto-resume-checkpoint-dir="$dir/ckpt" -N2 -x n4 -o "$dir/demo-%j.out" \
  --wrap "srun -N2 --ntasks-per-node=1 $root/examples/train.sh --steps 40 --step-seconds 0.25 \
          --checkpoint-dir $dir/ckpt --result $dir/result" | cut -d';' -f1)
echo "job $job submitted"
wait_for 60 running_attempt "$job" 0
wait_for 60 bash -c "[ \$(find $dir/ckpt -maxdepth 2 -name COMPLETE 2>/dev/null | wc -l) -ge 3 ]"
victim=$(scontrol show hostnames "$(squeue -h -j "$job" -o %N)" | tail -1)
echo "job $job runs on $(squeue -h -j "$job" -o %N); $(checkpoints) checkpoints written"

say "injecting the fault: GPU on $victim falls off the bus (XID 79 in its kernel log)"
t0=$(date +%s.%N)
echo "<4>NVRM: Xid (PCI:0000:17:00): 79, pid=$$, name=python, GPU has fallen off the bus." \
  >>"$dir/host/$victim/var/log/kern.log"
wait_for 120 running_attempt "$job" 1
t1=$(date +%s.%N)
recovered=$(printf "%.2f" "$(echo "$t1 - $t0" | bc)")
echo "job $job is RUNNING again on $(squeue -h -j "$job" -o %N) (attempt 2), $recovered s after the fault"
sinfo -R
echo "$victim:$(scontrol show node "$victim" -o | grep -o ' State=[^ ]*') (XID 79 is cured by a reboot: Slurm reboots it once idle)"

say "waiting for the training to finish, and for $victim to come back from its reboot"
wait_for 120 bash -c "sinfo -h -n $victim -o %T | grep -qx idle"
echo "$victim is back: $(sinfo -h -n "$victim" -o %T) ($(tail -1 "$dir/log/fake-reboot-$victim.log" 2>/dev/null))"
wait_for 120 finished "$job"
echo "job $job ended: $(state_of "$job"), restarts: $(restarts_of "$job")"
grep '^train: \(attempt\|done\)' "$dir/demo-$job.out" || true
# healthd writes the admin comment (AdminComment=), never the user's own --comment.
echo "scontrol show job $job: $(scontrol show job "$job" -o | grep -o ' AdminComment=.*' | sed 's/^ //; s/ [A-Z][A-Za-z]*=.*$//')"

say "healthctl explain $job (on $victim)"
"$healthctl" --socket "$dir/run/healthd-$victim.sock" explain "$job"
say "healthctl status (on $victim)"
# Exits 2 while the victim is still faulty (its exit code is the verdict): shown, not a failure.
"$healthctl" --socket "$dir/run/healthd-$victim.sock" status || true

baseline="not measured (AR_DEMO_BASELINE=0)"
if [ -n "$plain" ]; then
  say "baseline: waiting for job $plain (requeued with plain 'scontrol requeue') to run again"
  wait_for 400 running_attempt "$plain" 1
  baseline="$(printf "%.1f" "$(echo "$(date +%s.%N) - $b0" | bc)") s"
  scancel "$plain"
fi

say "summary"
printf '  fault -> running again with auto-resume:   %s s\n' "$recovered"
printf '  plain scontrol requeue -> running again:   %s\n' "$baseline"
printf '  result of the training job:                %s\n' "$(cat "$dir/result")"
printf '  this demo took:                            %d min %02d s (install %d s, build %d s, the rest %d s)\n' \
  $(((SECONDS - demo_start) / 60)) $(((SECONDS - demo_start) % 60)) $((installed_at - demo_start)) \
  $((built_at - installed_at)) $((SECONDS - built_at))
echo
echo "the cluster is still running: source $dir/env.sh; stop it with: tests/cluster/cluster.sh stop $dir"
