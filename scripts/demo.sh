#!/usr/bin/env bash
# The README's main command: sets up this machine, builds, starts a real three-node Slurm cluster
# (munge, slurmctld, slurmd n1..n3, one healthd per node) under a temp directory, runs an
# auto-resume job whose training step fails, and shows what each node's healthd saw.
# Needs root (it starts munge and Slurm daemons). Leaves the cluster running for you to explore;
# `tests/cluster/cluster.sh stop DIR` stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
dir=${AR_DEMO_DIR:-/tmp/ar-demo}

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "installing dependencies and building (release preset)"
bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release

build=$root/build/release
export AR_PLUGIN=$build/plugin/auto_resume.so AR_HEALTHD=$build/healthd/healthd
say "starting a 3-node Slurm cluster in $dir"
tests/cluster/cluster.sh start "$dir"
# shellcheck disable=SC1091
source "$dir/env.sh"
sinfo

say "submitting: sbatch --auto-resume=1 -N2 (its srun step exits 3 on every task)"
# shellcheck disable=SC2016 # expanded by the job, not here
job=$(sbatch --parsable --auto-resume=1 -N2 -o "$dir/demo-%j.out" \
  --wrap 'srun bash -c "echo rank \$SLURM_PROCID on \$SLURMD_NODENAME; exit 3"; echo script done' | cut -d';' -f1)
echo "job $job submitted"
for _ in $(seq 1 300); do
  state=$(scontrol show job "$job" -o | grep -o 'JobState=[A-Z_]*' | cut -d= -f2)
  case "$state" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL) break ;; esac
  sleep 0.2
done
echo "job $job ended: $state"
cat "$dir/demo-$job.out"

nodes=$(scontrol show job "$job" -o | grep -o ' NodeList=[^ ]*' | cut -d= -f2)
for node in $(scontrol show hostnames "$nodes"); do
  say "healthctl jobs on $node"
  "$build/healthd/healthctl" --socket "$dir/run/healthd-$node.sock" jobs
done
say "healthctl status on n1"
"$build/healthd/healthctl" --socket "$dir/run/healthd-n1.sock" status

say "the cluster is still running; stop it with: tests/cluster/cluster.sh stop $dir"
