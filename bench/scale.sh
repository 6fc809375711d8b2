#!/usr/bin/env bash
# At cluster scale: the local real cluster (tests/cluster/cluster.sh with AR_NODES slurmd, one healthd
# each, the plugin in plugstack) at each node count of BENCH_NODES (default "8 16 32 64"), measuring:
#   idle:    slurmctld's RPCs (sdiag, its own REQUEST_STATS_INFO left out) and CPU over BENCH_IDLE_S
#            (default 60) with every healthd up, then over the same window with every healthd stopped
#            (the baseline, same cluster, same run); healthd's CPU and RSS per node
#   fault:   a job on all but 2 nodes (its step hung, as on a dead device); an EFA driver error line in
#            the kernel log of one of its nodes (not the batch node) -> the job running again off that
#            node; slurmctld's RPCs and CPU from the fault to 3 s after
#   burst:   a job on all but 4 nodes, the same line on 3 of its nodes within a few milliseconds ->
#            running again off all 3, and its restart count 8 s later (exactly one requeue is wanted)
#   fabric:  the same line on half the nodes within a few milliseconds, no job: the most nodes drained at
#            once (sinfo polled every 0.2 s) against floor(max_drained_share x nodes), how long more than
#            that were drained (a drain past the share is undone within about 2 s), the nodes whose
#            healthd reported a withheld or undone drain, and nodes drained twice within BENCH_FABRIC_WATCH_S (30) after the
#            event (flapping); slurmctld's RPCs and CPU over the first 10 s; healthd's node-table reads
#            over the whole watch (healthd_slurm_calls_total{call="load_nodes"} summed over the nodes'
#            metrics files, each rewritten every 5 s, idle parts included: sdiag counts the benchmark's
#            own sinfo polls with them). BENCH_CTLD_CPU=PCT
#            holds slurmctld to PCT % of one core from the event to the end of the watch (a cgroup's CPU
#            quota): a slurmctld as slow to answer as one with thousands of nodes. BENCH_FABRIC_JOBS=1
#            runs a 1-node auto-resume job on every node first, and counts the jobs requeued, and those
#            of them whose node was back in service at the end (their drain undone: a restart for nothing)
#   churn:   BENCH_CHURN_STEPS (default 2000) `srun --auto-resume=1 -n1 true` steps, spread over one
#            1-node job per node, one after the other in each job; then every job's record on its node
#            (healthctl jobs --json): known, every step ended, the newest step the last one run; RPCs and
#            slurmctld CPU per step; healthd CPU per node and its peak RSS. Baseline in the same run: the
#            same steps without --auto-resume (the plugin loaded but idle)
# BENCH_PARTS (default "idle fault burst fabric churn") picks the measurements; the others print "-".
# healthd's settings: check_interval_s = BENCH_CHECK_INTERVAL_S (default 5; a sweep never calls Slurm,
# it only sets how soon a drained node comes back), hold_s = BENCH_HOLD_S (default 2; longer than the
# fabric watch keeps every drain in place until it ends, where an event slowed by BENCH_CTLD_CPU would
# otherwise see its first nodes come back before its last drains), recovery_passes = 1, max_drained_share =
# 0.4 (floor(0.4 x 8) = 3 drains allowed at 8 nodes, 25 at 64), flap_max_faults high. Scheduler: the
# tuned settings (BENCH_SCHED=stock for Slurm's own).
#
# usage: bench/scale.sh [DIR]   (DIR: the cluster's directory, short: unix socket paths)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
dir=${1:-/tmp/ar-bench-scale}
sizes=${BENCH_NODES:-8 16 32 64}
idle_s=${BENCH_IDLE_S:-60}
churn_steps=${BENCH_CHURN_STEPS:-2000}
watch_s=${BENCH_FABRIC_WATCH_S:-30}
ctld_cpu=${BENCH_CTLD_CPU:-}
hold_s=${BENCH_HOLD_S:-2}
fabric_jobs=${BENCH_FABRIC_JOBS:-0}
interval=${BENCH_CHECK_INTERVAL_S:-5}
sched=${BENCH_SCHED:-tuned}
parts=" ${BENCH_PARTS:-idle fault burst fabric churn} "
part() { [[ "$parts" == *" $1 "* ]]; }
share=0.4
need_built "$HEALTHD" "$HEALTHCTL" "$PLUGIN"
[ "$(id -u)" = 0 ] || bench_die "run as root (slurmd and healthd need it)"
trap 'ctld_unthrottle; cluster_down "$dir"' EXIT
export AR_START_TIMEOUT=300

hctl() { "$HEALTHCTL" --socket "$dir/run/healthd-$1.sock" "${@:2}"; }
efa_err() { echo "<3>efa 0000:10:1b.0: Admin command timed out"; }
inject() { efa_err >>"$dir/host/$1/var/log/kern.log"; }
ctld_pid() { tr -dc 0-9 <"$dir/run/slurmctld.pid"; }
healthd_pids() { local n; for n in $AR_CLUSTER_NODES; do tr -dc 0-9 <"$dir/run/healthd-$n.pid"; echo; done; }
# ctld_throttle PCT: slurmctld (all its threads) held to PCT % of one core by a CPU cgroup of its own
# (v1 "cpu" hierarchy, else v2); ctld_unthrottle gives it back to the cgroup above.
CTLD_CG=""
ctld_throttle() {
  local quota=$(($1 * 1000))
  if [ -w /sys/fs/cgroup/cpu/cgroup.procs ]; then
    CTLD_CG=/sys/fs/cgroup/cpu/ar-bench-ctld
    mkdir -p "$CTLD_CG" && echo 100000 >"$CTLD_CG/cpu.cfs_period_us" && echo "$quota" >"$CTLD_CG/cpu.cfs_quota_us"
  elif [ -w /sys/fs/cgroup/cgroup.subtree_control ]; then
    echo +cpu >/sys/fs/cgroup/cgroup.subtree_control
    CTLD_CG=/sys/fs/cgroup/ar-bench-ctld
    mkdir -p "$CTLD_CG" && echo "$quota 100000" >"$CTLD_CG/cpu.max"
  else
    bench_die "BENCH_CTLD_CPU: no writable CPU cgroup (/sys/fs/cgroup/cpu or a cgroup v2 root) to hold slurmctld in"
  fi
  ctld_pid >"$CTLD_CG/cgroup.procs" || bench_die "BENCH_CTLD_CPU: could not move slurmctld into $CTLD_CG"
}
ctld_unthrottle() {
  [ -n "$CTLD_CG" ] || return 0
  local p
  while read -r p; do echo "$p" >"${CTLD_CG%/*}/cgroup.procs" 2>/dev/null || true; done <"$CTLD_CG/cgroup.procs"
  rmdir "$CTLD_CG" 2>/dev/null || true
  CTLD_CG=""
}
# node_config_with_metrics NODES: a healthd.toml per node (the shared one plus a metrics textfile of
# its own, $dir/metrics/NODE.prom), for cluster.sh's AR_HEALTHD_NODE_CONFIG
node_config_with_metrics() {
  local i
  mkdir -p "$dir/metrics"
  rm -f "$dir"/metrics/*.prom
  for ((i = 1; i <= $1; i++)); do
    { cat "$dir/healthd.toml"; printf '[metrics]\ntextfile = "%s"\ntextfile_interval_s = %d\n' "$dir/metrics/n$i.prom" "$metrics_s"; } >"$dir/healthd-n$i.toml"
  done
  export AR_HEALTHD_NODE_CONFIG="$dir/healthd-%n.toml"
}
metrics_s=5
# table_reads: healthd's node-table reads so far, every node's (answered or not)
table_reads() {
  cat "$dir"/metrics/*.prom 2>/dev/null | awk '/^healthd_slurm_calls_total\{/ && /call="load_nodes"/ { s += $NF } END { printf "%d", s }'
}
sum_ticks() { local p s=0; for p in "$@"; do s=$((s + $(proc_ticks "$p" 2>/dev/null || echo 0))); done; echo "$s"; }

# The benchmark's own polls of Slurm (job and node states) go as user nobody while a window is open,
# so that root's RPCs in sdiag are the cluster's (healthd, slurmd, the plugin, the jobs' own sruns) and
# the benchmark's submissions only.
AS_NOBODY=0
scontrol() { if [ "$AS_NOBODY" = 1 ]; then runuser -u nobody -- scontrol "$@"; else command scontrol "$@"; fi; }
sinfo() { if [ "$AS_NOBODY" = 1 ]; then runuser -u nobody -- sinfo "$@"; else command sinfo "$@"; fi; }
squeue() { if [ "$AS_NOBODY" = 1 ]; then runuser -u nobody -- squeue "$@"; else command squeue "$@"; fi; }

# sdiag_top: the 4 most frequent RPC types since the reset, "TYPE:COUNT ...", every user's (the
# benchmark's polls as nobody too: shown only for windows without them, idle and churn)
sdiag_top() {
  command sdiag 2>/dev/null | awk '/by message type/ { on = 1; next } /by user/ { on = 0 }
    on && /count:/ && $1 != "REQUEST_STATS_INFO" { for (i = 1; i <= NF; i++) if ($i ~ /^count:/) { c = $i; sub("count:", "", c); print c, $1 } }' |
    sort -rn | head -4 | awk '{ printf "%s%s:%s", (NR > 1 ? " " : ""), $2, $1 }'
}
# sdiag_avg TYPE: slurmctld's mean time (microseconds) to serve an RPC of TYPE since the reset, any user's
sdiag_avg() {
  command sdiag 2>/dev/null | awk -v t="$1" '/by message type/ { on = 1; next } /by user/ { on = 0 }
    on && $1 == t { for (i = 1; i <= NF; i++) if ($i ~ /^ave_time:/) { sub("ave_time:", "", $i); print $i; exit } }'
}
window_start() { command sdiag -r >/dev/null; W_T0=$(now_s); W_CTLD=$(proc_ticks "$(ctld_pid)"); AS_NOBODY=1; }
# window_end: W_S (seconds), W_RPCS, W_CTLD_S (slurmctld CPU seconds), W_TOP
window_end() {
  AS_NOBODY=0
  W_RPCS=$(sdiag_rpcs)
  W_TOP=$(sdiag_top)
  W_S=$(since "$W_T0")
  W_CTLD_S=$(ticks_to_s $(($(proc_ticks "$(ctld_pid)") - W_CTLD)))
}
per_min_node() { awk -v c="$1" -v s="$2" -v n="$3" 'BEGIN { printf "%.2f", c / (s / 60) / n }'; }

known_on() { hctl "$2" jobs --json 2>/dev/null | grep -q "\"job_id\": *$1[,}]"; }
batch_host() { job_field "$1" BatchHost; }
# running_again_off JOB NODE...: the second attempt runs, on a node list that holds none of NODE
# (runs_off in lib.sh: an empty list, shown a moment after a requeue, is not a restart).
running_again_off() {
  local line n
  job_running_attempt "$1" 1 || return 1
  line=$(scontrol show job "$1" -o 2>/dev/null)
  for n in "${@:2}"; do runs_off "$line" "$n" || return 1; done
}
# a job on N nodes whose step hangs; a restarted attempt only sleeps
submit_wide() {
  sbatch --parsable -N"$1" -o /dev/null --auto-resume=1 --wrap "
    if [ \"\${SLURM_RESTART_COUNT:-0}\" -gt 0 ]; then exec sleep 600; fi
    srun -N$1 sleep 600" | cut -d';' -f1
}
# start_wide_job NODES: JOB, running, known to every node's healthd; CANDIDATES: its nodes but the batch host
start_wide_job() {
  JOB=$(submit_wide "$1")
  wait_for 120 job_running_attempt "$JOB" 0 || bench_die "job $JOB did not start"
  local host n
  host=$(batch_host "$JOB")
  mapfile -t CANDIDATES < <(job_nodes "$JOB" | grep -vx "$host")
  for n in "${CANDIDATES[@]}"; do wait_for 60 known_on "$JOB" "$n" || bench_die "healthd on $n never heard of job $JOB"; done
}
drained_nodes() { sinfo -h -N -t drain,draining,drained -o '%N' 2>/dev/null | sort -u; }
# log_lines NODE PATTERN: how many lines of NODE's healthd log match
log_lines() { grep -c "$2" "$dir/log/healthd-$1.log" 2>/dev/null || true; }

: >"$dir.tsv"
for nodes in $sizes; do
  limit=$(awk -v s=$share -v n="$nodes" 'BEGIN { printf "%d", s * n }')
  fault_cluster_prepare "$dir" "$nodes" "$interval" "$share"
  sed -i "s/^hold_s = .*/hold_s = $hold_s/" "$dir/healthd.toml"
  node_config_with_metrics "$nodes"
  fault_cluster_start "$dir" "$sched" "scale"
  machine_mem=$(awk '/MemAvailable/ { printf "%.1f", $2 / 1048576 }' /proc/meminfo)
  bench_log "  $nodes nodes up; memory available: $machine_mem GiB; load $(cut -d' ' -f1-3 /proc/loadavg)"
  mapfile -t hpids < <(healthd_pids)

  idle_rpm=- base_rpm=- idle_ctld=- base_ctld=- h_cpu=- rss=- fault_s=- fault_rpcs=- fault_ctld=- burst_s=- burst_restarts=-
  most=- over_s=- withheld=- flapped=- fabric_rpcs=- fabric_ctld=- fabric_node_us=- fabric_reads=- requeued=- needless=- steps=-
  declare -A churn=([auto_s]=- [plain_s]=- [auto_rps]=- [plain_rps]=- [auto_lost]=-)
  # ---- idle, with healthd and without --------------------------------------------------------------
  if part idle; then
  sleep 5
  h0=$(sum_ticks "${hpids[@]}")
  window_start
  sleep "$idle_s"
  window_end
  h_cpu=$(awk -v t=$(($(sum_ticks "${hpids[@]}") - h0)) -v hz="$CLK_TCK" -v s="$W_S" -v n="$nodes" 'BEGIN { printf "%.3f", 100 * t / hz / s / n }')
  rss=$(for p in "${hpids[@]}"; do proc_kib "$p" VmRSS; done | stat_max)
  idle_rpm=$(per_min_node "$W_RPCS" "$W_S" "$nodes") idle_ctld=$W_CTLD_S idle_top=$W_TOP
  for n in $AR_CLUSTER_NODES; do "$CLUSTER_SH" stop-healthd "$dir" "$n" >/dev/null 2>&1; done
  window_start
  sleep "$idle_s"
  window_end
  base_rpm=$(per_min_node "$W_RPCS" "$W_S" "$nodes") base_ctld=$W_CTLD_S base_top=$W_TOP
  for n in $AR_CLUSTER_NODES; do "$CLUSTER_SH" start-healthd "$dir" "$n" >/dev/null 2>&1 || bench_die "healthd $n did not start again"; done
  mapfile -t hpids < <(healthd_pids)
  printf '  %d nodes idle %ss: with healthd %s RPC/min/node (%s), slurmctld CPU %s s; without %s RPC/min/node (%s), %s s; healthd %s%% CPU/node, RSS max %s KiB\n' \
    "$nodes" "$idle_s" "$idle_rpm" "$idle_top" "$idle_ctld" "$base_rpm" "$base_top" "$base_ctld" "$h_cpu" "$rss"
  fi

  # ---- one fault under a job on all but 2 nodes ----------------------------------------------------
  if part fault; then
  cluster_reset || bench_die "the cluster did not come back to idle"
  start_wide_job $((nodes - 2))
  victim=${CANDIDATES[-1]}
  window_start
  t0=$(now_s)
  inject "$victim"
  wait_for 120 running_again_off "$JOB" "$victim" || bench_log "scale: job $JOB not running again off $victim"
  fault_s=$(since "$t0")
  sleep 3
  window_end
  fault_rpcs=$W_RPCS fault_ctld=$W_CTLD_S
  printf '  %d nodes, fault under a %d-node job: running again after %s s; %s RPCs (root) in %s s, slurmctld CPU %s s\n' \
    "$nodes" $((nodes - 2)) "$fault_s" "$fault_rpcs" "$W_S" "$fault_ctld"
  fi

  # ---- 3 nodes of the job within milliseconds ------------------------------------------------------
  if part burst; then
  cluster_reset || bench_die "the cluster did not come back to idle"
  start_wide_job $((nodes - 4))  # 3 nodes out: the job can run again on the 4 left
  victims=("${CANDIDATES[@]: -3}")
  t0=$(now_s)
  for v in "${victims[@]}"; do inject "$v"; done
  wait_for 120 running_again_off "$JOB" "${victims[@]}" || bench_log "scale: job $JOB not running again off ${victims[*]}"
  burst_s=$(since "$t0")
  sleep 8
  burst_restarts=$(job_restarts "$JOB")
  printf '  %d nodes, 3 faulty nodes of one job: running again after %s s; restarts 8 s later: %s\n' "$nodes" "$burst_s" "$burst_restarts"
  fi

  # ---- fabric-wide event: half the nodes, no job ---------------------------------------------------
  if part fabric; then
  cluster_reset || bench_die "the cluster did not come back to idle"
  declare -A before=() times=()
  for n in $AR_CLUSTER_NODES; do before[$n]=$(log_lines "$n" "withheld\|undone"); times[$n]=0; done
  hit=()
  i=0
  for n in $AR_CLUSTER_NODES; do ((i++ % 2 == 1)) && hit+=("$n"); done
  declare -A was=()
  most=0 first_over="" last_over=""
  declare -A job_on=()
  if [ "$fabric_jobs" = 1 ]; then
    for n in $AR_CLUSTER_NODES; do
      job_on[$n]=$(sbatch --parsable -N1 -w "$n" -o /dev/null --auto-resume=1 --wrap 'sleep 600' | cut -d';' -f1)
    done
    for n in $AR_CLUSTER_NODES; do
      wait_for 120 job_running_attempt "${job_on[$n]}" 0 || bench_die "job ${job_on[$n]} did not start on $n"
      wait_for 60 known_on "${job_on[$n]}" "$n" || bench_die "healthd on $n never heard of job ${job_on[$n]}"
    done
  fi
  sleep $((metrics_s + 1))  # every metrics file written since the reset
  reads0=$(table_reads)
  window_start
  [ -z "$ctld_cpu" ] || ctld_throttle "$ctld_cpu"
  t0=$(now_s)
  for n in "${hit[@]}"; do inject "$n"; done
  ctld_done=0
  while awk -v e="$(since "$t0")" -v l="$watch_s" 'BEGIN { exit !(e < l) }'; do
    now=$(drained_nodes)
    c=$(grep -c . <<<"$now" || true)
    ((c > most)) && most=$c
    if ((c > limit)); then
      last_over=$(since "$t0")
      [ -n "$first_over" ] || first_over=$last_over
    fi
    for n in $AR_CLUSTER_NODES; do
      if grep -qx "$n" <<<"$now"; then
        [ "${was[$n]:-0}" = 1 ] || times[$n]=$((times[$n] + 1))
        was[$n]=1
      else
        was[$n]=0
      fi
    done
    if [ "$ctld_done" = 0 ] && awk -v e="$(since "$t0")" 'BEGIN { exit !(e >= 10) }'; then
      window_end
      fabric_rpcs=$W_RPCS fabric_ctld=$W_CTLD_S fabric_node_us=$(sdiag_avg REQUEST_NODE_INFO)
      ctld_done=1
    fi
    sleep 0.2
  done
  ctld_unthrottle
  if [ "$fabric_jobs" = 1 ]; then
    requeued=0 needless=0
    for n in $AR_CLUSTER_NODES; do
      [ "$(job_restarts "${job_on[$n]}")" = 0 ] && continue
      requeued=$((requeued + 1))
      grep -qx "$n" <<<"$now" || { needless=$((needless + 1)); bench_log "scale: job ${job_on[$n]} requeued, and its node $n is in service"; }
    done
  fi
  sleep $((metrics_s + 1))
  fabric_reads=$(($(table_reads) - reads0))
  # from the first poll seeing more than the limit drained to the last one (polls 0.2 s apart)
  over_s=0
  [ -z "$first_over" ] || over_s=$(awk -v a="$first_over" -v b="$last_over" 'BEGIN { printf "%.1f", b - a + 0.2 }')
  ever=0 flapped=0 withheld=0
  for n in $AR_CLUSTER_NODES; do
    ((times[$n] > 0)) && ever=$((ever + 1))
    ((times[$n] > 1)) && flapped=$((flapped + 1))
    (($(log_lines "$n" "withheld\|undone") > before[$n])) && withheld=$((withheld + 1))
  done
  printf '  %d nodes, fabric event on %d%s: most drained at once %d (limit %d), over the limit for %s s, %d drained at some point, %d reported withheld or undone, %d drained twice in %ss; jobs requeued %s, of them on a node back in service %s; healthd node-table reads %d; first 10 s: %s RPCs (root), slurmctld CPU %s s, %s us per node-table read\n' \
    "$nodes" "${#hit[@]}" "${ctld_cpu:+ (slurmctld held to $ctld_cpu % of a core)}" "$most" "$limit" "$over_s" "$ever" "$withheld" "$flapped" "$watch_s" "$requeued" "$needless" "$fabric_reads" "$fabric_rpcs" "$fabric_ctld" "${fabric_node_us:-?}"
  unset before times was job_on
  fi

  # ---- job churn -------------------------------------------------------------------------------------
  per_job=$(((churn_steps + nodes - 1) / nodes))
  part churn || per_job=0
  for mode in plain auto; do
    [ "$per_job" -gt 0 ] || break
    cluster_reset || bench_die "the cluster did not come back to idle"
    flag=""
    [ "$mode" = auto ] && flag="--auto-resume=1"
    mapfile -t hpids < <(healthd_pids)
    h0=$(sum_ticks "${hpids[@]}")
    jobs=()
    window_start
    t0=$(now_s)
    for ((j = 0; j < nodes; j++)); do
      jobs+=("$(sbatch --parsable -N1 -n1 -o /dev/null $flag --wrap "for i in \$(seq $per_job); do srun $flag -n1 true || exit 1; done" | cut -d';' -f1)")
    done
    # once a second, not more: the polls are RPCs too (as nobody, but slurmctld serves them)
    all=$(IFS=,; echo "${jobs[*]}")
    while [ -n "$(squeue -h -j "$all" -o %i 2>/dev/null)" ] && awk -v e="$(since "$t0")" 'BEGIN { exit !(e < 900) }'; do sleep 1; done
    churn_s=$(since "$t0")
    window_end
    failed=0
    for j in "${jobs[@]}"; do [ "$(job_state "$j")" = COMPLETED ] || failed=$((failed + 1)); done
    steps=$((per_job * nodes))
    h_cpu_s=$(awk -v t=$(($(sum_ticks "${hpids[@]}") - h0)) -v hz="$CLK_TCK" -v n="$nodes" 'BEGIN { printf "%.2f", t / hz / n }')
    hwm=$(for p in "${hpids[@]}"; do proc_kib "$p" VmHWM; done | stat_max)
    lost="-"
    if [ "$mode" = auto ]; then
      lost=0
      for j in "${jobs[@]}"; do
        node=$(job_field "$j" BatchHost)
        # every step of the job known, ended, the newest being the last one run (ids 0..per_job-1)
        ok=$(hctl "$node" jobs --json 2>/dev/null | python3 -c '
import json, sys
want_job, last = int(sys.argv[1]), int(sys.argv[2]) - 1
jobs = [j for j in json.load(sys.stdin)["jobs"] if j["job_id"] == want_job]
if not jobs: print("missing"); sys.exit()
steps = [s for s in jobs[0].get("steps", []) if 0 <= s["step_id"] < 0xFFFFFFF0]
running = [s for s in steps if s.get("running")]
newest = max((s["step_id"] for s in steps), default=-1)
print("ok" if not running and newest == last else "newest %d running %d" % (newest, len(running)))' "$j" "$per_job" 2>&1)
        [ "$ok" = ok ] || { lost=$((lost + 1)); bench_log "scale: job $j on $node: registry says $ok"; }
      done
    fi
    printf '  %d nodes, churn %s: %d steps in %s s (%d jobs not COMPLETED); %s RPCs/step (%s), slurmctld CPU %s ms/step; healthd %s s CPU/node, peak RSS %s KiB; jobs with a wrong record: %s\n' \
      "$nodes" "$mode" "$steps" "$churn_s" "$failed" "$(awk -v r="$W_RPCS" -v s="$steps" 'BEGIN { printf "%.2f", r / s }')" "$W_TOP" \
      "$(awk -v c="$W_CTLD_S" -v s="$steps" 'BEGIN { printf "%.2f", 1000 * c / s }')" "$h_cpu_s" "$hwm" "$lost"
    churn[${mode}_s]=$churn_s churn[${mode}_lost]=$lost churn[${mode}_failed]=$failed
    churn[${mode}_rps]=$(awk -v r="$W_RPCS" -v s="$steps" 'BEGIN { printf "%.2f", r / s }')
  done
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
    "$nodes" "$idle_rpm" "$base_rpm" "$idle_ctld" "$base_ctld" "$h_cpu" "$rss" "$fault_s" "$fault_rpcs" "$fault_ctld" \
    "$burst_s" "$burst_restarts" "$most/$over_s" "$limit" "$withheld" "$flapped" "$fabric_rpcs/$fabric_reads/$requeued/$needless" "$fabric_ctld/$fabric_node_us" \
    "$steps" "${churn[auto_s]}" "${churn[plain_s]}" "${churn[auto_rps]}" "${churn[plain_rps]}" "${churn[auto_lost]}" >>"$dir.tsv"
  cluster_down "$dir"
done

bench_say "scale figures (idle window ${idle_s} s; ${sched} scheduler settings; check_interval_s = $interval)"
while IFS=$'\t' read -r n irpm brpm ictld bctld hcpu rss fs frpc fctld bs br most lim wh fl fabrpc fabctld steps cas cps carps cprps clost; do
  emit scale "$n nodes: slurmctld RPCs/min/node at idle" "$irpm with healthd" "$brpm without healthd" "no more than without" "slurmctld CPU ${ictld} s against ${bctld} s in ${idle_s} s; healthd ${hcpu}% CPU, ${rss} KiB RSS per node"
  emit scale "$n nodes: fault -> running again, job on $((n - 2)) nodes" "$fs s" "-" "< 2 s" "$frpc RPCs to slurmctld, its CPU $fctld s, fault to 3 s after running again"
  emit scale "$n nodes: 3 nodes of a job on $((n - 4)) faulty at once" "restarts $br, running again after $bs s" "-" "restarts 1" ""
  IFS=/ read -r most over <<<"$most"
  IFS=/ read -r fabrpc reads requeued needless <<<"$fabrpc"
  emit scale "$n nodes: fabric event on half the nodes" "at most $most drained at once, over the limit for $over s" "limit $lim" "<= limit within seconds, 0 flaps" "$wh nodes reported a withheld or undone drain, $fl drained twice; jobs requeued $requeued, on a node back in service $needless; healthd's node-table reads $reads${ctld_cpu:+ (slurmctld held to $ctld_cpu % of a core)}; first 10 s: $fabrpc RPCs, slurmctld CPU ${fabctld%/*} s, ${fabctld#*/} us per node-table read"
  emit scale "$n nodes: churn of $steps steps" "$cas s, $carps RPC/step" "$cps s, $cprps RPC/step without --auto-resume" "no wrong record" "$clost jobs with a wrong record"
done <"$dir.tsv"
