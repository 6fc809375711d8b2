#!/usr/bin/env bats
# The PyTorch example (examples/pytorch: train.sbatch running train.py under torchrun, 2 nodes, gloo
# on CPU) on the real cluster: a fault injected under the running job, its requeue, and the resume
# from the checkpoint the plugin names; and the checkpoint signal as healthd delivers it. Each run
# must end with the parameters of the same training run without any interruption.

load helpers

STEPS=30

setup() {
  reset_cluster
  WORK="${AR_CLUSTER_DIR}/work/${BATS_TEST_NUMBER}-$$"
  make_work "$WORK"
  TORCH_PY=""
  local p
  for p in "${AR_TORCH_PYTHON:-}" python3 /usr/bin/python3; do
    if [ -n "$p" ] && "$p" -c 'import torch' 2>/dev/null; then TORCH_PY=$p; break; fi
  done
  [ -n "$TORCH_PY" ] || { echo "PyTorch is needed (python3-torch, installed by scripts/install-deps.sh)" >&2; return 1; }
  command -v torchrun >/dev/null || { echo "torchrun is needed (python3-torch)" >&2; return 1; }
}

teardown() { reset_cluster; }

# submit_pytorch FLAGS...: the example's batch script on 2 nodes, one torchrun (one worker) each.
submit_pytorch() {
  TRAIN_PY="${AR_EXAMPLES}/pytorch/train.py" submit -o "$WORK/job.out" "$@" \
    --auto-resume-checkpoint-dir="$WORK/ckpt" "${AR_EXAMPLES}/pytorch/train.sbatch" \
    --steps "$STEPS" --checkpoint-every 3 --step-seconds 0.3 --result "$WORK/result"
}

complete_checkpoints() { find "$WORK/ckpt" -mindepth 2 -maxdepth 2 -name COMPLETE -type f 2>/dev/null | wc -l; }
checkpoints_at_least() { [ "$(complete_checkpoints)" -ge "$1" ]; }

# The parameters of the same training without any interruption: one process, outside Slurm.
reference_params() {
  "$TORCH_PY" "${AR_EXAMPLES}/pytorch/train.py" --steps "$STEPS" --checkpoint-every 3 \
    --checkpoint-dir "$WORK/reference" | sed -n 's/^train: done .* params=\(\[.*\]\) result=OK$/\1/p'
}

# same_params A B: two JSON lists of numbers, equal to 1e-9 (2 ranks sum their gradients in another
# order than 1 process).
same_params() {
  python3 -c '
import json, math, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
sys.exit(0 if len(a) == len(b) and all(math.isclose(x, y, rel_tol=0, abs_tol=1e-9) for x, y in zip(a, b)) else 1)' "$1" "$2"
}

result_params() { sed -n 's/^train: done .* params=\(\[.*\]\) result=OK$/\1/p' "$WORK/result"; }

@test "a fault under a torchrun job: one requeue, resumed from the checkpoint AUTO_RESUME_CHECKPOINT names, the result of an uninterrupted run" {
  local job victim ref k
  ref=$(reference_params)
  [ -n "$ref" ]
  job=$(submit_pytorch --auto-resume=1)
  wait_until 90 job_running_attempt "$job" 0
  wait_until 120 checkpoints_at_least 2
  victim=$(ready_victim "$job")
  inject_fault "$victim" "$(xid48)"
  wait_until 60 job_running_again "$job" 1 "$victim"
  [[ "$(node_state "$victim")" == drain* ]]
  job_not_on "$job" "$victim"
  wait_until 180 job_finished "$job"
  cat "$WORK/job.out" >&3
  [ "$(job_state "$job")" = COMPLETED ]
  [ "$(job_restarts "$job")" = 1 ]
  # the second attempt was told why, and resumed from the checkpoint the plugin found for it
  grep -q "train.sbatch: job $job attempt 1 (AUTO_RESUME_ATTEMPT=2) .*last: GPU-XID-48 on $victim" "$WORK/job.out"
  k=$(sed -n "s|^train: attempt 1: starting at step \([0-9]*\) from $WORK/ckpt/step-[0-9]* (AUTO_RESUME_CHECKPOINT; world size 2)$|\1|p" "$WORK/job.out")
  [ -n "$k" ] && [ "$k" -gt 0 ]
  grep -q "^train: attempt 0: starting at step 0 from scratch (world size 2)$" "$WORK/job.out"
  # every step once, and the parameters of the uninterrupted run
  grep -q "^train: done steps=$STEPS attempts=0,1 params=.* result=OK$" "$WORK/result"
  same_params "$(result_params)" "$ref"
}

@test "the checkpoint signal as healthd sends it (steps, then the batch shell): train.py checkpoints and stops, a requeue resumes from there" {
  local job ref stopped
  ref=$(reference_params)
  [ -n "$ref" ]
  job=$(submit_pytorch --auto-resume=1)
  wait_until 90 job_running_attempt "$job" 0
  wait_until 120 checkpoints_at_least 1
  # What healthd does for an EC2 maintenance notice to a job that asked for --signal=USR1@...:
  # every step's processes (torchrun and its workers), then the batch shell alone.
  scancel --signal=USR1 "$job"
  scancel --signal=USR1 --batch "$job"
  wait_until 60 job_finished "$job"
  stopped=$(sed -n 's/^train: caught SIGUSR1; stopping at step \([0-9]*\) (checkpoint step-[0-9]* is written)$/\1/p' "$WORK/job.out")
  [ -n "$stopped" ] && [ "$stopped" -lt "$STEPS" ]
  [ -f "$WORK/ckpt/$(printf 'step-%08d' "$stopped")/COMPLETE" ]
  grep -q "train.sbatch: the training step ended with exit status" "$WORK/job.out"
  [ ! -e "$WORK/result" ]
  # healthd requeues it after checkpoint_grace_s; here by hand, released from Slurm's hold at once
  # (a second later than the job's end: slurmd refuses a job relaunched within the second its
  # credential was revoked, "Job credential revoked")
  scontrol requeue "$job"
  wait_until 30 bash -c "[ \"\$(squeue -h -j $job -o %T)\" = PENDING ]"
  scontrol update jobid="$job" starttime=now+1
  wait_until 90 job_running_attempt "$job" 1
  wait_until 180 job_finished "$job"
  cat "$WORK/job.out" >&3
  [ "$(job_state "$job")" = COMPLETED ]
  grep -q "^train: attempt 1: starting at step $stopped from $WORK/ckpt/$(printf 'step-%08d' "$stopped") (AUTO_RESUME_CHECKPOINT; world size 2)$" "$WORK/job.out"
  grep -q "^train: done steps=$STEPS attempts=0,1 params=.* result=OK$" "$WORK/result"
  same_params "$(result_params)" "$ref"
}
