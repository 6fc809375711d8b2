#!/usr/bin/env python3
"""A training rank as tests/integration/suspect.bats needs it: one heartbeat file per rank
($AUTO_RESUME_HEARTBEAT_FILE, touched once per step), until the test names the hang in HANG_FILE:
  "one NODE [J]": the rank on NODE stops (blocked, no CPU: a driver call that never returns), and
              every other rank waits for it in the collective, spinning as NCCL's ranks do (after
              up to J seconds more of steps, a random share of it: ranks that reach the collective
              at different times; bench/suspect.sh);
  "all":      every rank stops together (a deadlock in the code): no CPU anywhere;
  "slow NODE F": the rank on NODE takes F times as long a step (a straggler), the others run on.
Each beat writes the rank's step number into its file, as examples/pytorch/train.py does. With
RANK_JITTER=J in the environment, each step takes a random share of up to J more or less.
Usage: rank_hang.py HANG_FILE [STEP_SECONDS]"""
import os
import random
import sys
import time

hang_file = sys.argv[1]
step_s = float(sys.argv[2]) if len(sys.argv) > 2 else 0.2
beat = os.environ["AUTO_RESUME_HEARTBEAT_FILE"]
node = os.environ["SLURMD_NODENAME"]
step = 0


def beat_once():
    global step
    step += 1
    with open(beat, "w") as f:
        f.write(f"{step}\n")


print(f"rank {os.environ.get('SLURM_PROCID')} on {node} beats {beat}", flush=True)
while True:
    try:
        with open(hang_file) as f:
            hang = f.read().split()
    except FileNotFoundError:
        hang = []
    if hang == ["all"] or hang[:2] == ["one", node]:
        time.sleep(1e6)
    elif hang and hang[0] != "slow":
        late = time.monotonic() + random.uniform(0, float(hang[2])) if len(hang) > 2 else 0
        while time.monotonic() < late:  # a few more steps before it reaches the collective
            beat_once()
            time.sleep(step_s)
        while True:  # waiting for the stopped rank in the collective
            pass
    beat_once()
    slow = len(hang) == 3 and hang[0] == "slow" and hang[1] == node
    jitter = float(os.environ.get("RANK_JITTER", "0"))
    time.sleep(step_s * (float(hang[2]) if slow else 1) * random.uniform(1 - jitter, 1 + jitter))
