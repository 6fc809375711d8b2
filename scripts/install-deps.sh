#!/usr/bin/env bash
# Installs everything the project needs to build and test, from Debian's registry only.
# Used by the README's two commands and by CI (.ci/run). Safe to run again.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake pkg-config
  # Slurm 22.05: spank.h/slurm.h to build the plugin; daemons and clients for the test cluster
  libslurm-dev slurmctld slurmd slurm-client munge
  # daemon libraries (see README "Dependencies")
  nlohmann-json3-dev libspdlog-dev libfmt-dev libtomlplusplus-dev libcli11-dev
  libsystemd-dev libcurl4-openssl-dev libasio-dev
  # linear-time regular expressions for kernel-log rules (see README "Dependencies")
  libre2-dev
  # the Prometheus registry and text format (healthd/telemetry/metrics.cpp; the endpoint is our own,
  # on asio), and promtool to check what
  # it serves and the packaged alert rules (the `prometheus` package is the one that ships promtool)
  prometheus-cpp-dev prometheus
  # tests
  googletest libgtest-dev libgmock-dev bats procps python3 bc
  # man pages from one Markdown source each (docs/man/), and `man` to read them
  pandoc man-db
  # the package tier: build and check the .deb and .rpm (lintian, rpm -qp), install the .deb
  lintian rpm file
  # the user guide's PyTorch example, run on CPU on the test cluster (a tiny model)
  python3-torch
  # the fuzz tier (libFuzzer): clang 16 compiles std::expected with libstdc++ 12 (clang 14 cannot),
  # its fuzzer/sanitizer runtimes, and llvm-symbolizer for readable crash stacks
  clang-16 libclang-rt-16-dev llvm-16
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
# The Debian packages enable and try to start system-wide munge/slurm services; the project runs its
# own instances under a temp dir, so stop any that a package start-up left running (no systemd here is fine).
for svc in slurmctld slurmd munge prometheus; do
  $SUDO systemctl disable --now "$svc" >/dev/null 2>&1 || true
done
