#!/usr/bin/env bats
# healthd's Prometheus metrics on the real cluster: n1's healthd runs with a config of its own whose
# [metrics] section opens the endpoint on 127.0.0.1 and writes a node_exporter textfile. The scrape
# must pass `promtool check metrics`, show the node's checks, its GPUs (the fake NVML's) under
# dcgm-exporter's labels, its EFA ports and Neuron devices; a GPU fault must show as the node faulty,
# a drain counted and the GPU's health; an XID line must be counted once; a slowloris of an
# unprivileged user on the port must leave root's scrapes answered. n1 gets the shared config back
# at the end.

load helpers

METRICS_DIR="${AR_CLUSTER_DIR}/metrics"
TEXTFILE="${METRICS_DIR}/healthd.prom"
HEALTHY='{"devices": [{}, {}]}'
# The fake NVML's GPU 1 (tests/fakes/fake_nvml.cpp default_device).
GPU1_UUID="GPU-fa4e0000-0000-4000-8000-000000000001"

set_nvml() {
  local f="${AR_CLUSTER_DIR}/host/$1/nvml.json"
  printf '%s\n' "$2" >"$f.tmp" && mv "$f.tmp" "$f"
}

setup_file() {
  mkdir -p "$METRICS_DIR"
  rm -f "$METRICS_DIR"/*
  # A port free now on loopback (the kernel's choice); healthd binds it a moment later.
  PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  export PORT
  local config="$METRICS_DIR/healthd-n1.toml"
  cp "${AR_CLUSTER_DIR}/etc/healthd.toml" "$config"
  printf '\n[metrics]\nlisten = "127.0.0.1:%s"\ntextfile = "%s"\ntextfile_interval_s = 1\n' "$PORT" "$TEXTFILE" >>"$config"
  chmod 0644 "$config"
  set_nvml n1 "$HEALTHY"
  AR_HEALTHD_NODE_CONFIG="$config" cluster restart-healthd n1
}

teardown_file() {
  set_nvml n1 "$HEALTHY"
  cluster restart-healthd n1  # the shared DIR/etc/healthd.toml again
}

setup() {
  for n in n1 n2 n3; do set_nvml "$n" "$HEALTHY"; done
  reset_cluster
  WORK="${AR_CLUSTER_DIR}/work/metrics-${BATS_TEST_NUMBER}-$$"
  make_work "$WORK"
  wait_until 60 metric_holds 'v == 0' healthd_node_faulty
}

teardown() {
  # A flood whose test failed half way: not left running into the next test.
  if [ -n "${FLOOD_PID:-}" ]; then kill "$FLOOD_PID" 2>/dev/null || true; fi
  for n in n1 n2 n3; do set_nvml "$n" "$HEALTHY"; done
  reset_cluster
}

# SLOWLORIS PORT N SECONDS: holds N connections to the port, each sending a request head one byte at
# a time (a header that never ends) every 0.2 s, and opens a new one for each the server closes, for
# SECONDS. Prints "holding N" once all are open, and at the end how many the server closed.
SLOWLORIS='
import signal, socket, sys, time
port, n, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
head = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 100000
def open_one():
    s = socket.create_connection(("127.0.0.1", port))
    s.setblocking(False)
    return [s, 0]
conns = [open_one() for _ in range(n)]
print("holding", n, flush=True)
closed, end = 0, time.monotonic() + seconds
def summary(*_):
    print("closed by the server and opened again:", closed, flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, summary)
while time.monotonic() < end:
    for i, c in enumerate(conns):
        try:
            c[0].send(head[c[1]:c[1] + 1])
            c[1] += 1
            c[0].recv(4096)  # an answer (408, 431) or EOF: the server let go
            gone = True
        except BlockingIOError:
            gone = False
        except OSError:
            gone = True
        if gone:
            c[0].close()
            conns[i] = open_one()
            closed += 1
    time.sleep(0.2)
summary()
'

scrape() { python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=5).read().decode())' "$PORT"; }

# metric_holds EXPR NAME [LABEL=VALUE...]: scrapes n1 and evaluates EXPR with `v` the sum of NAME's
# samples that carry those labels (None when there is none) and `n` their number.
metric_holds() {
  local expr=$1
  shift
  scrape >"$WORK/scrape.txt" || return 1
  python3 - "$WORK/scrape.txt" "$expr" "$@" <<'EOF'
import re, sys
path, expr, name, *want = sys.argv[1:]
want = dict(w.split("=", 1) for w in want)
n, total = 0, 0.0
for line in open(path, encoding="utf-8"):
    m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$', line.rstrip("\n"))
    if not m or m.group(1) != name:
        continue
    labels = {k: v.replace('\\"', '"').replace("\\\\", "\\") for k, v in
              re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2) or "")}
    if all(labels.get(k) == v for k, v in want.items()):
        n += 1
        total += float(m.group(3))
v = total if n else None
sys.exit(0 if eval(expr) else 1)
EOF
}

# metric_value NAME [LABEL=VALUE...]: the sum, 0 when there is no such sample.
metric_value() {
  scrape >"$WORK/scrape.txt" || return 1
  python3 - "$WORK/scrape.txt" "$@" <<'EOF'
import re, sys
path, name, *want = sys.argv[1:]
want = dict(w.split("=", 1) for w in want)
total = 0.0
for line in open(path, encoding="utf-8"):
    m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$', line.rstrip("\n"))
    if m and m.group(1) == name:
        labels = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        if all(labels.get(k) == v for k, v in want.items()):
            total += float(m.group(3))
print(int(total))
EOF
}

# promtool_ok FILE: `promtool check metrics` finds nothing but the one thing allowed: the per-GPU
# families carry dcgm-exporter's label names, which its lint calls camelCase (docs/metrics.md).
promtool_ok() {
  local out rc=0 rest
  out=$(promtool check metrics <"$1" 2>&1) || rc=$?
  rest=$(grep -vE "^healthd_gpu_(health|xid_last) label names should be written in 'snake_case' not 'camelCase'$" <<<"$out" | grep -v '^$' || true)
  if [ -n "$rest" ] || { [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; }; then
    echo "promtool check metrics (exit $rc) on $1:" >&2
    echo "$out" >&2
    return 1
  fi
}

# gpu_series_have_dcgm_labels FILE NODE: healthd_gpu_health has one series per fake GPU, each with
# exactly dcgm-exporter's labels and values.
gpu_series_have_dcgm_labels() {
  python3 - "$1" "$2" <<'EOF'
import re, sys
path, node = sys.argv[1:]
series = []
for line in open(path, encoding="utf-8"):
    m = re.match(r'^healthd_gpu_health\{(.*)\} (\S+)$', line.rstrip("\n"))
    if m:
        series.append(dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(1))))
series.sort(key=lambda s: s.get("gpu", ""))
want = [{"gpu": str(i), "UUID": "GPU-fa4e0000-0000-4000-8000-%012x" % i, "pci_bus_id": "00000000:%02X:00.0" % (0x18 + 0x10 * i),
         "modelName": "NVIDIA H100 80GB HBM3", "Hostname": node} for i in range(2)]
if series != want:
    sys.exit("healthd_gpu_health series %r, expected %r" % (series, want))
EOF
}

@test "n1's endpoint serves what promtool accepts: build, verdict, checks, GPUs under dcgm-exporter's labels, EFA and Neuron" {
  # At least one sweep since the restart, so every check has its result in.
  wait_until 60 metric_holds 'v is not None and v >= 1' healthd_sweep_duration_seconds_count
  scrape >"$WORK/metrics.txt"
  promtool_ok "$WORK/metrics.txt"
  metric_holds 'n == 1 and v == 1' healthd_build_info
  metric_holds 'v == 0' healthd_node_faulty
  metric_holds 'n == 0' healthd_node_fault_info
  metric_holds 'v == 1' healthd_check_status check=gpu.memory status=ok
  metric_holds 'v == 0' healthd_check_status check=gpu.memory status=fault
  metric_holds 'v == 1' healthd_check_status check=kernel_log status=ok
  metric_holds 'n == 1 and v >= 0' healthd_check_duration_seconds check=gpu.memory
  metric_holds 'v > 1.7e9' healthd_check_last_run_timestamp_seconds check=gpu.memory
  gpu_series_have_dcgm_labels "$WORK/metrics.txt" n1
  metric_holds 'n == 2 and v == 0' healthd_gpu_health Hostname=n1
  metric_holds 'n == 2 and v == 0' healthd_gpu_xid_last Hostname=n1
  # The cluster's fake host trees: two EFA devices with one ACTIVE port each, two healthy Neuron devices.
  metric_holds 'n == 2 and v == 2' healthd_efa_device_up
  metric_holds 'v == 1' healthd_efa_device_up device=rdmap16s27 port=1
  metric_holds 'n == 2 and v == 2' healthd_neuron_device_healthy
  metric_holds 'v is not None and v > 1.7e9' healthd_last_sweep_timestamp_seconds
}

@test "a GPU fault on n1: the node faulty for its code, a drain counted, the GPU's health under its UUID, Slurm's calls timed; all back after" {
  local drains0 returns0
  drains0=$(metric_value healthd_drains_total code=GPU-PCIE-WIDTH action=drain)
  returns0=$(metric_value healthd_node_returns_total)
  # A link below its width: drain only (a failed row remap would be drained for good, replacement
  # requested: its cure is new hardware).
  set_nvml n1 '{"devices": [{}, {"pcie": {"gen": 5, "max_gen": 5, "width": 8, "max_width": 16}}]}'
  wait_until 60 metric_holds 'v == 1' healthd_node_faulty
  wait_until 60 metric_holds "v is not None and v >= $((drains0 + 1))" healthd_drains_total code=GPU-PCIE-WIDTH action=drain
  metric_holds 'n == 1 and v == 1' healthd_node_fault_info code=GPU-PCIE-WIDTH
  metric_holds 'v == 1' healthd_check_status check=gpu.pcie status=fault
  metric_holds 'n == 1 and v == 2' healthd_gpu_health gpu=1 UUID="$GPU1_UUID" Hostname=n1
  metric_holds 'n == 1 and v == 0' healthd_gpu_health gpu=0 Hostname=n1
  [ "$(node_state n1)" = drained ] || [ "$(node_state n1)" = draining ]
  # The drain was a call to slurmctld that it answered, timed in the histogram.
  metric_holds 'v is not None and v >= 1' healthd_slurm_calls_total call=update_node answered=true
  metric_holds 'v is not None and v >= 1' healthd_slurm_call_duration_seconds_count call=update_node
  scrape >"$WORK/faulty.txt"
  promtool_ok "$WORK/faulty.txt"

  set_nvml n1 "$HEALTHY"
  wait_until 60 metric_holds 'v == 0' healthd_node_faulty
  metric_holds 'n == 0' healthd_node_fault_info  # gone, not left at its last value
  wait_until 30 metric_holds 'n == 1 and v == 0' healthd_gpu_health gpu=1 UUID="$GPU1_UUID"
  wait_until $((60 + SLURM_SETTLE_S)) node_idle n1
  wait_until 60 metric_holds "v is not None and v >= $((returns0 + 1))" healthd_node_returns_total
}

@test "an XID line for a GPU of n1 is counted once, under its number, however many sweeps see it" {
  local before seq
  before=$(metric_value healthd_xid_events_total xid=48)
  inject_fault n1 "<4>NVRM: Xid (PCI:0000:18:00): 48, pid=4242, name=python, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer."
  wait_until 30 metric_holds "v == $((before + 1))" healthd_xid_events_total xid=48
  # Three more sweeps see the same event in the XID check's detail: still one.
  seq=$(metric_value healthd_sweep_duration_seconds_count)
  wait_until 30 metric_holds "v >= $((seq + 3))" healthd_sweep_duration_seconds_count
  metric_holds "v == $((before + 1))" healthd_xid_events_total xid=48
  wait_until 60 metric_holds 'v is not None and v >= 1' healthd_drains_total code=GPU-XID-48
}

@test "the textfile is rewritten whole every interval, readable by node_exporter's user, and promtool accepts it" {
  wait_until 30 test -s "$TEXTFILE"
  [ "$(stat -c %a "$TEXTFILE")" = 644 ]
  cp "$TEXTFILE" "$WORK/textfile.prom"
  promtool_ok "$WORK/textfile.prom"
  grep -q '^healthd_build_info{version="' "$WORK/textfile.prom"
  gpu_series_have_dcgm_labels "$WORK/textfile.prom" n1
  # Rewritten (a new inode each time: replaced by rename, never written in place).
  local inode
  inode=$(stat -c %i "$TEXTFILE")
  wait_until 10 bash -c "[ \"\$(stat -c %i '$TEXTFILE')\" != '$inode' ]"
  # Nothing else is left in the directory (node_exporter reads every *.prom there).
  [ -z "$(ls "$METRICS_DIR" | grep -v -e '^healthd.prom$' -e '^healthd.prom.tmp$' -e '^healthd-n1.toml$')" ]
}

# Issue 31: 40 slow connections of an unprivileged user starved the civetweb endpoint (two of three
# scrapes timed out at 15 s). The endpoint is now one asynchronous thread with bounded connections and
# a deadline for the request head: root's scrapes go through while user nobody floods the port.
@test "a slowloris of user nobody on the port (100 connections, a byte at a time, reopened as closed) leaves every scrape answered" {
  local out="$WORK/slowloris.out" t
  runuser -u nobody -- env -C / python3 -c "$SLOWLORIS" "$PORT" 100 60 >"$out" 2>"$WORK/slowloris.err" &
  FLOOD_PID=$!
  local flood=$FLOOD_PID
  wait_until 30 grep -q '^holding 100$' "$out"
  for i in 1 2 3; do
    # The flood is still on: its process runs, and curl must have the whole scrape in 5 s.
    kill -0 "$flood"
    t=$(curl -sS --max-time 5 -o "$WORK/flooded-$i.txt" -w '%{time_total}' "http://127.0.0.1:${PORT}/metrics")
    echo "# scrape $i under the flood: ${t} s" >&3
    grep -q '^healthd_build_info{version="' "$WORK/flooded-$i.txt"
    promtool_ok "$WORK/flooded-$i.txt"
    # Pacing, not a wait for anything: the three scrapes span the 5 s deadline of the flood's first
    # connections, so the flood is met both before and after the server starts closing them.
    sleep 3
  done
  kill -0 "$flood"  # it held to the end
  kill "$flood"
  wait "$flood" || true
  cat "$out" "$WORK/slowloris.err" >&3
}
