#!/usr/bin/env bash
# Accelerator smoke test: healthd against the REAL NVML of this machine (no Slurm, no fakes). Only
# meaningful where an NVIDIA GPU and its driver exist; elsewhere it says so and exits 77 ("skipped").
#
#   tests/smoke/gpu_smoke.sh [BUILD_DIR]      # default build/release (built if missing)
#
# Prints the driver version, every GPU (index, name, PCI bus id, UUID) and every check's result from
# one on-demand sweep (`healthctl check --now --json`), then the same through the XID event watcher's
# registration message in healthd's log. Exit: 0 when NVML loaded and the sweep finished, 1 otherwise.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build/release}"
lib="${AR_NVML_LIBRARY:-libnvidia-ml.so.1}"

if ! ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml.so.1' && [ ! -e "$lib" ]; then
  echo "gpu_smoke: no $lib on this machine: nothing to test (skipped)"
  exit 77
fi
if [ ! -x "$build/healthd/healthd" ] || [ ! -x "$build/healthd/healthctl" ]; then
  cmake --preset release >/dev/null
  cmake --build --preset release --target healthd healthctl
fi

work="$(mktemp -d /tmp/gpu-smoke.XXXXXX)"
cleanup() {
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
cat >"$work/healthd.toml" <<TOML
[daemon]
node_name = "smoke"
socket = "$work/healthd.sock"
state_dir = "$work/state"
[policy]
check_interval_s = 3600
[checks.kernel_log]
enabled = false
[checks.gpu]
library = "$lib"
deadline_ms = 20000
[checks.node]
enabled = false
TOML
"$build/healthd/healthd" --config "$work/healthd.toml" >"$work/healthd.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do [ -S "$work/healthd.sock" ] && break; sleep 0.1; done
t0=$(date +%s.%N)
"$build/healthd/healthctl" --socket "$work/healthd.sock" --timeout-ms 60000 check --now --json >"$work/check.json" || true
t1=$(date +%s.%N)
"$build/healthd/healthctl" --socket "$work/healthd.sock" check || true
python3 - "$work/check.json" "$(echo "$t1 - $t0" | bc)" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
health = data["data"]["health"] if "data" in data else data["health"]
checks = {r["check"]: r for r in health.get("checks", [])}
nvml = checks.get("gpu.nvml", {})
print("\n== NVML:", nvml.get("status"), "-", nvml.get("message"))
print("   missing entry points:", nvml.get("detail", {}).get("missing_symbols"))
for g in checks.get("gpu.count", {}).get("detail", {}).get("gpus", []):
    print("   GPU %s: %s %s %s" % (g["index"], g.get("name"), g.get("bus_id"), g.get("uuid")))
print("== every check (one on-demand sweep, %.2f s end to end, engine %.1f ms):" % (float(sys.argv[2]), health.get("sweep_ms", -1)))
for name, r in checks.items():
    print("   %-16s %-6s %-24s %s" % (name, r["status"], r.get("code", ""), r["message"]))
sys.exit(0 if nvml.get("detail", {}).get("loaded") else 1)
PY
rc=$?
echo "== healthd log:"
cat "$work/healthd.log"
exit $rc
