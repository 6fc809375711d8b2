#!/usr/bin/env bash
# Installs what the project needs, from Debian's registry only, by part: each script asks for its
# own (the demo: build run; the tests: everything). Safe to run again.
#
# usage: scripts/install-deps.sh [PART...]   (no PART: every part)
#   build    compile the plugin, healthd and healthctl (release build, no tests, no man pages)
#   run      the local Slurm cluster the demo and the tests run (slurmctld, slurmd, munge, clients)
#   test     the unit, integration and docs tests, and the man pages they check
#   package  the package tier: build and check the .deb and .rpm
#   fuzz     the fuzz and sanitizer tiers (clang 16)
#   example  the user guide's PyTorch example
set -euo pipefail

declare -A parts=(
  # toolchain; Slurm 22.05's spank.h/slurm.h and libslurm; the daemon's libraries (README
  # "Dependencies"): JSON, logging, formatting, TOML, command lines, systemd, curl (IMDS, webhooks),
  # asio (the event loop), RE2 (linear-time kernel-log rules), the Prometheus registry
  [build]="build-essential cmake pkg-config libslurm-dev
           nlohmann-json3-dev libspdlog-dev libfmt-dev libtomlplusplus-dev libcli11-dev
           libsystemd-dev libcurl4-openssl-dev libasio-dev libre2-dev prometheus-cpp-dev"
  # the test cluster (and the demo's): daemons, clients, munge; python3 (tests/cluster/cluster.sh
  # picks free ports with it), bc for the timings, procps for ps
  [run]="slurmctld slurmd slurm-client munge python3 bc procps"
  # unit and integration tests; promtool (the `prometheus` package ships it) checks the served metrics
  # and the alert rules; man pages from one Markdown source each (docs/man/), and `man` to read them
  [test]="googletest libgtest-dev libgmock-dev bats python3 prometheus pandoc man-db"
  # build and check the .deb and .rpm (lintian, rpm -qp), and read the man pages in them
  [package]="lintian rpm file pandoc man-db"
  # libFuzzer: clang 16 compiles std::expected with libstdc++ 12 (clang 14 cannot), its
  # fuzzer/sanitizer runtimes, and llvm-symbolizer for readable crash stacks
  [fuzz]="clang-16 libclang-rt-16-dev llvm-16"
  # the user guide's PyTorch example, run on CPU on the test cluster (a tiny model)
  [example]="python3-torch"
)
order=(build run test package fuzz example)

wanted=("$@")
[ "${#wanted[@]}" -gt 0 ] || wanted=("${order[@]}")
packages=()
for part in "${wanted[@]}"; do
  [ -n "${parts[$part]+x}" ] || { echo "install-deps: unknown part '$part' (known: ${order[*]})" >&2; exit 2; }
  # shellcheck disable=SC2206 # word splitting of the package lists is the point
  packages+=(${parts[$part]})
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages of ${wanted[*]} present"
  exit 0
fi
echo "install-deps (${wanted[*]}): installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
# The Debian packages enable and try to start system-wide munge/slurm services; the project runs its
# own instances under a temp dir, so stop any that a package start-up left running (no systemd here is fine).
for svc in slurmctld slurmd munge prometheus; do
  $SUDO systemctl disable --now "$svc" >/dev/null 2>&1 || true
done
