#!/usr/bin/env bash
# NVIDIA's own NVML (libnvidia-ml.so.1) from Debian's registry, for tests/nvml/real_nvml_test.cpp:
# the libnvidia-ml1 package of each suite below is downloaded (not installed: no driver stack, no
# kernel module; the package is the library alone) and unpacked under DIR/SUITE/. A library already
# there is kept. Prints one line per library, "SUITE=PATH", colon-joined: what AR_REAL_NVML_LIBS takes.
#
#   bookworm      535 (Debian 12)
#   trixie        550 (Debian 13)
#   experimental  the newest in the registry (555 when this was written)
#
# apt runs with a configuration of its own (its own source list with the non-free component, its own
# lists and cache under DIR), so the machine's apt sources are not touched.
#
# usage: scripts/real-nvml.sh [DIR]   (default /var/cache/slurm-auto-resume/nvml)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/debian-mirror.sh
source scripts/lib/debian-mirror.sh

dir=${1:-/var/cache/slurm-auto-resume/nvml}
suites=(bookworm trixie experimental)
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

fetch() {
  local suite=$1 apt="$dir/apt-$1" lib
  lib=$(find "$dir/$suite" -name 'libnvidia-ml.so.1' 2>/dev/null | head -1)
  if [ -n "$lib" ]; then
    echo "$lib"
    return
  fi
  rm -rf "$apt" "$dir/$suite"
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$dir/$suite"
  echo "deb [signed-by=$keyring] $(mirror) $suite non-free" >"$apt/sources.list"
  local opts=(-q -o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o Acquire::Check-Valid-Until=false
    -o APT::Sandbox::User=root)
  apt-get "${opts[@]}" update >"$apt/update.log" 2>&1 ||
    { cat "$apt/update.log" >&2; echo "real-nvml.sh: apt-get update of $suite non-free failed" >&2; return 1; }
  (cd "$apt" && apt-get "${opts[@]}" download libnvidia-ml1 >"$apt/download.log" 2>&1) ||
    { cat "$apt/download.log" >&2; echo "real-nvml.sh: libnvidia-ml1 of $suite could not be downloaded" >&2; return 1; }
  dpkg-deb -x "$apt"/libnvidia-ml1_*.deb "$dir/$suite"
  lib=$(find "$dir/$suite" -name 'libnvidia-ml.so.1' | head -1)
  [ -n "$lib" ] || { echo "real-nvml.sh: no libnvidia-ml.so.1 in $suite's libnvidia-ml1" >&2; return 1; }
  rm -rf "$apt"
  echo "$lib"
}

out=()
for suite in "${suites[@]}"; do out+=("$suite=$(fetch "$suite")"); done
(IFS=:; echo "${out[*]}")
