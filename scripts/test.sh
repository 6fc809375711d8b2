#!/usr/bin/env bash
# The README's test command: installs what is missing, builds with the developer preset and runs
# every test tier that this machine can run (unit, then integration on a real local Slurm cluster).
# Needs root for the cluster tier (it starts munge, slurmctld and slurmd).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake --preset dev
cmake --build --preset dev
ctest --preset dev "$@"
