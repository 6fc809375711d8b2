#!/usr/bin/env python3
"""Self-test of examples/pytorch/train.py without Slurm: kills and restarts it, standalone and under
torchrun (2 ranks on gloo), and checks that it always ends where an uninterrupted run ends.

One line per check ("ok - ..." or "FAIL - ..."), then "N passed, M failed"; exit 0 only if all
passed. Needs PyTorch (Debian: python3-torch): train.py runs under $AR_TORCH_PYTHON, else this
interpreter, else /usr/bin/python3, whichever imports torch first; torchrun is found on PATH.
"""

import json
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "train.py")
STEPS = 24
EVERY = 4  # --checkpoint-every in most runs
# torchrun's own default for --redirects and --tee ("0") does not parse under torch 1.13 on Python
# 3.11, as Debian 12 ships them (pytorch/pytorch#92319, fixed in 2.0). A map naming an unused local
# rank is the same setting (no redirect) and parses on every version.
TORCHRUN_COMPAT = ["--redirects", "9:0", "--tee", "9:0"]

passed = 0
failed = 0


def check(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok - {what}", flush=True)
    else:
        failed += 1
        print(f"FAIL - {what}" + (f": {detail}" if detail else ""), flush=True)
    return ok


def torch_python():
    for candidate in (os.environ.get("AR_TORCH_PYTHON"), sys.executable, "/usr/bin/python3"):
        if candidate and subprocess.run([candidate, "-c", "import torch"], capture_output=True).returncode == 0:
            return candidate
    return None


class Run:
    """train.py (or torchrun) in its own process group, its output read as it comes."""

    def __init__(self, argv, env=None):
        self.lines = []
        self.cond = threading.Condition()
        full_env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
        for name in ("AUTO_RESUME_CHECKPOINT", "SLURM_JOB_ID", "SLURM_RESTART_COUNT", "TORCHELASTIC_RESTART_COUNT"):
            full_env.pop(name, None)
        full_env.update(env or {})
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=full_env, start_new_session=True)
        self.err = ""
        self._out = threading.Thread(target=self._read_out, daemon=True)
        self._err = threading.Thread(target=self._read_err, daemon=True)
        self._out.start()
        self._err.start()

    def _read_out(self):
        for line in self.proc.stdout:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def _read_err(self):
        self.err = self.proc.stderr.read()

    def wait_line(self, pattern, timeout=60):
        """The first output line matching pattern (a regex), or None once the run ended or timed out."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for line in self.lines:
                    m = rx.search(line)
                    if m:
                        return m
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._out.is_alive()):
                    return None
                self.cond.wait(min(left, 0.2))

    def signal(self, sig, group=False):
        try:
            if group:
                os.killpg(self.proc.pid, sig)
            else:
                self.proc.send_signal(sig)
        except ProcessLookupError:
            pass  # ended already (a check on the output says whether that was expected)

    def wait(self, timeout=120):
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            rc = self.proc.wait()
        self._out.join()
        self._err.join()
        return rc

    def finish(self, sig=None, timeout=120):
        """Sends sig (SIGKILL: to the whole process group, as Slurm kills a step) and waits."""
        if sig is not None:
            self.signal(sig, group=(sig == signal.SIGKILL))
        return self.wait(timeout)

    def start_line(self):
        m = self.wait_line(r"^train: attempt \S+: starting at step (\d+) from (\S+)", timeout=0)
        return (int(m.group(1)), m.group(2)) if m else (None, None)

    def done(self):
        """(steps, attempts, params, result) of the done line, or None."""
        for line in self.lines:
            m = re.match(r"^train: done steps=(\d+) attempts=(\S+) params=(\[.*\]) result=(OK|BAD)$", line)
            if m:
                return int(m.group(1)), m.group(2).split(","), json.loads(m.group(3)), m.group(4)
        return None

    def tail(self):
        return " | ".join(self.lines[-4:]) + (" || " + self.err.strip().replace("\n", " | ")[-400:] if self.err else "")


def same_params(a, b, tol=1e-9):
    return a is not None and b is not None and len(a) == len(b) and all(math.isclose(x, y, rel_tol=0, abs_tol=tol)
                                                                         for x, y in zip(a, b))


def listing(d):
    """Every entry under d with its modification time: a run that must not write leaves it as it was."""
    out = []
    for root, dirs, files in os.walk(d):
        for name in dirs + files:
            p = os.path.join(root, name)
            out.append((p, os.lstat(p).st_mtime_ns))
    return sorted(out)


def complete(d):
    """Names of the complete checkpoints in d (a subdirectory holding a regular file COMPLETE)."""
    return sorted(e.name for e in os.scandir(d) if e.is_dir() and os.path.isfile(os.path.join(e.path, "COMPLETE")))


def torn(d):
    """Leftovers of a cut-short write: temp directories, or step directories without COMPLETE."""
    return sorted(e.name for e in os.scandir(d)
                  if e.is_dir() and (e.name.startswith(".tmp-") or not os.path.isfile(os.path.join(e.path, "COMPLETE"))))


def main():
    py = torch_python()
    if py is None:
        print("FAIL - PyTorch is needed: no python3 here imports torch (Debian: apt-get install python3-torch, "
              "which scripts/install-deps.sh installs; or set AR_TORCH_PYTHON)")
        return 1
    torchrun = shutil.which("torchrun")
    work = tempfile.mkdtemp(prefix="test-pytorch-train.")
    t0 = time.monotonic()

    def train(*args, env=None):
        return Run([py, TRAIN, *args], env)

    def run(*args, env=None):
        r = train(*args, env=env)
        return r, r.wait()

    # ------------------------------------------------------------------------------ arguments
    for what, bad, word in (("--steps 0", ["--steps", "0", "--checkpoint-dir", work], "--steps"),
                            ("no --steps", ["--checkpoint-dir", work], "--steps"),
                            ("no --checkpoint-dir", ["--steps", "3"], "--checkpoint-dir"),
                            ("--step-seconds 1s", ["--steps", "3", "--checkpoint-dir", work, "--step-seconds", "1s"],
                             "--step-seconds"),
                            ("--bogus", ["--steps", "3", "--checkpoint-dir", work, "--bogus"], "--bogus")):
        r, rc = run(*bad)
        check(rc == 2 and not r.lines and word in r.err, f"bad arguments ({what}): exit 2 naming {word}",
              f"rc={rc} {r.tail()}")

    # ------------------------------------------------------------------------------ reference
    ref = os.path.join(work, "ref")
    r, rc = run("--steps", str(STEPS), "--checkpoint-every", str(EVERY), "--checkpoint-dir", ref)
    done = r.done()
    ref_params = done[2] if done else None
    check(rc == 0 and done and done[0] == STEPS and done[1] == ["standalone"] and done[3] == "OK" and not r.err,
          f"an uninterrupted run of {STEPS} steps ends OK, with nothing on stderr", f"rc={rc} {r.tail()}")
    check(complete(ref) == ["step-00000016", "step-00000020", "step-00000024"] and not torn(ref),
          "it keeps the newest 3 checkpoints (--keep), every 4 steps and the last", str(os.listdir(ref)))
    before = listing(ref)
    r, rc = run("--steps", str(STEPS), "--checkpoint-every", str(EVERY), "--checkpoint-dir", ref)
    check(rc == 0 and r.done() == done and listing(ref) == before,
          "run again once done: the same done line, nothing written", f"rc={rc} {r.tail()}")
    if ref_params is None:
        print("Bail out! no reference parameters")
        return 1

    # ------------------------------------------------------------------- SIGKILL at a few points
    d = os.path.join(work, "kill")
    starts = []
    for kill_after in (6, 13, 20):  # a step past a checkpoint, just before one, the step after one
        r = train("--steps", str(STEPS), "--checkpoint-every", str(EVERY), "--step-seconds", "0.05",
                  "--checkpoint-dir", d)
        hit = r.wait_line(rf"^train: step {kill_after} ")
        r.finish(signal.SIGKILL)
        starts.append(r.start_line()[0])
        if not hit:
            check(False, f"SIGKILL after step {kill_after}", f"the run never reached it: {r.tail()}")
    r, rc = run("--steps", str(STEPS), "--checkpoint-every", str(EVERY), "--checkpoint-dir", d)
    starts.append(r.start_line()[0])
    done = r.done()
    check(rc == 0 and starts == [0, 4, 12, 20] and done and done[0] == STEPS and len(done[1]) == 4 and
          done[3] == "OK" and same_params(done[2], ref_params, tol=0),
          "SIGKILL after steps 6, 13 and 20: each rerun starts at the newest checkpoint (0, 4, 12, 20), "
          "the last ends OK with the reference's parameters", f"starts={starts} rc={rc} {r.tail()}")

    # ------------------------------------------------------- SIGKILL storm (mid-checkpoint-write)
    d = os.path.join(work, "storm")
    rng = random.Random(int(os.environ.get("AR_TEST_SEED", str(os.getpid()))))
    torn_seen, starts = set(), []
    for _ in range(4):
        r = train("--steps", str(STEPS), "--checkpoint-every", "1", "--checkpoint-dir", d)
        if r.wait_line(r"^train: attempt ") is None:
            break
        time.sleep(rng.uniform(0.01, 0.12))  # a checkpoint is written every step: most kills land in one
        r.finish(signal.SIGKILL)
        starts.append(r.start_line()[0])
        if os.path.isdir(d):
            torn_seen.update(torn(d))
    r, rc = run("--steps", str(STEPS), "--checkpoint-every", "1", "--checkpoint-dir", d)
    done = r.done()
    check(rc == 0 and done and done[3] == "OK" and same_params(done[2], ref_params, tol=0) and
          starts == sorted(starts),
          f"4 SIGKILLs while writing a checkpoint every step ({len(torn_seen)} left a torn write): "
          f"the rerun from step {r.start_line()[0]} ends OK with the reference's parameters",
          f"starts={starts} rc={rc} {r.tail()}")

    # ------------------------------------------------------ half-written checkpoints are not loaded
    d = os.path.join(work, "partial")
    other = os.path.join(work, "other")
    run("--steps", "8", "--checkpoint-every", str(EVERY), "--checkpoint-dir", d)
    # A checkpoint of other parameters (another batch size): loading it by mistake changes the result.
    run("--steps", "12", "--checkpoint-every", "12", "--batch", "16", "--checkpoint-dir", other)
    shutil.copytree(os.path.join(other, "step-00000012"), os.path.join(d, "step-00000012"))
    os.unlink(os.path.join(d, "step-00000012", "COMPLETE"))  # killed after the rename, before COMPLETE
    os.makedirs(os.path.join(d, "step-00000016"))  # killed while writing: not even its data
    os.makedirs(os.path.join(d, "nested", "step-00000020"))  # not a direct subdirectory
    open(os.path.join(d, "nested", "step-00000020", "COMPLETE"), "w").close()
    before = listing(d)
    r, rc = run("--steps", str(STEPS), "--checkpoint-every", str(EVERY), "--checkpoint-dir", d,
                env={"AUTO_RESUME_CHECKPOINT": os.path.join(d, "step-00000012")})
    check(rc == 3 and not r.lines and "COMPLETE" in r.err and listing(d) == before,
          "AUTO_RESUME_CHECKPOINT naming a checkpoint without COMPLETE: exit 3 naming it, nothing written",
          f"rc={rc} {r.tail()}")
    shutil.copytree(os.path.join(other, "step-00000012"), os.path.join(d, "corrupt"))
    with open(os.path.join(d, "corrupt", "state.pt"), "r+b") as f:
        f.truncate(100)
    before = listing(d)
    r, rc = run("--steps", str(STEPS), "--checkpoint-dir", d, env={"AUTO_RESUME_CHECKPOINT": os.path.join(d, "corrupt")})
    check(rc == 3 and not r.lines and "unreadable" in r.err and listing(d) == before,
          "AUTO_RESUME_CHECKPOINT with COMPLETE but a truncated state.pt: exit 3, nothing written",
          f"rc={rc} {r.tail()}")
    shutil.rmtree(os.path.join(d, "corrupt"))
    r, rc = run("--steps", str(STEPS), "--checkpoint-every", str(EVERY), "--checkpoint-dir", d)
    done = r.done()
    check(rc == 0 and r.start_line() == (8, os.path.join(d, "step-00000008")) and done and done[3] == "OK" and
          same_params(done[2], ref_params, tol=0),
          "newer directories without COMPLETE (one holding a whole state.pt) are not loaded: the run starts at "
          "step 8 and ends with the reference's parameters", f"rc={rc} {r.tail()}")

    # The newest checkpoint is the one whose COMPLETE is newest, not the highest step; the plugin's
    # choice (AUTO_RESUME_CHECKPOINT) wins over the directory's newest.
    d = os.path.join(work, "order")
    run("--steps", "12", "--checkpoint-every", str(EVERY), "--checkpoint-dir", d)
    old = time.time() - 3600
    os.utime(os.path.join(d, "step-00000012", "COMPLETE"), (old, old))
    r, rc = run("--steps", "12", "--checkpoint-every", str(EVERY), "--checkpoint-dir", d)
    check(rc == 0 and r.start_line() == (8, os.path.join(d, "step-00000008")),
          "the newest checkpoint is the one whose COMPLETE is newest, not the highest step", r.tail())
    r, rc = run("--steps", str(STEPS), "--checkpoint-every", str(EVERY), "--checkpoint-dir", d,
                env={"AUTO_RESUME_CHECKPOINT": os.path.join(d, "step-00000004"), "SLURM_JOB_ID": "77",
                     "SLURM_RESTART_COUNT": "2"})
    done = r.done()
    check(rc == 0 and r.start_line() == (4, os.path.join(d, "step-00000004")) and done and
          done[1] == ["standalone", "2"] and done[3] == "OK" and same_params(done[2], ref_params, tol=0),
          "AUTO_RESUME_CHECKPOINT naming an older checkpoint is the one loaded; the attempt is tagged with "
          "SLURM_RESTART_COUNT", f"rc={rc} {r.tail()}")

    # --------------------------------------------------------------------------- SIGUSR1, once
    d = os.path.join(work, "usr1")
    r = train("--steps", str(STEPS), "--checkpoint-every", "100", "--step-seconds", "0.1", "--checkpoint-dir", d)
    r.wait_line(r"^train: step 5 ")
    t_sig = time.monotonic()
    rc = r.finish(signal.SIGUSR1)
    ms = (time.monotonic() - t_sig) * 1000
    m = r.wait_line(r"^train: caught SIGUSR1; stopping at step (\d+) \(checkpoint (step-\d+) is written\)$", 0)
    stopped = int(m.group(1)) if m else None
    check(rc == 138 and m and complete(d) == [m.group(2)] and not torn(d) and not r.err and ms < 2000,
          f"SIGUSR1 between checkpoints: a checkpoint of the step it finished (step {stopped}), exit 138 "
          f"within {ms:.0f} ms, nothing on stderr", f"rc={rc} {r.tail()}")
    r, rc = run("--steps", str(STEPS), "--checkpoint-every", "100", "--checkpoint-dir", d)
    done = r.done()
    check(rc == 0 and r.start_line()[0] == stopped and done and done[3] == "OK" and
          same_params(done[2], ref_params, tol=0),
          f"the rerun resumes at step {stopped} and ends with the reference's parameters", f"rc={rc} {r.tail()}")

    # ------------------------------------------------------------- torchrun, 2 ranks on gloo
    if torchrun is None:
        check(False, "torchrun is on PATH (python3-torch)")
    else:
        d = os.path.join(work, "ddp")

        def torchrun_train(*args):
            return Run([torchrun, "--standalone", "--nproc_per_node=2", *TORCHRUN_COMPAT, TRAIN, *args])

        common = ("--steps", str(STEPS), "--checkpoint-every", str(EVERY), "--checkpoint-dir", d)
        r = torchrun_train(*common, "--step-seconds", "0.1")
        follower = r.wait_line(r"^train: rank 1 of 2 \(pid (\d+)\)")
        r.wait_line(r"^train: step 6 ")
        if follower:
            os.kill(int(follower.group(1)), signal.SIGUSR1)  # rank 1 only: the ranks must still agree
        rc = r.finish(timeout=60)
        m = r.wait_line(r"^train: caught SIGUSR1; stopping at step (\d+) \(checkpoint (step-\d+) is written\)$", 0)
        stopped = int(m.group(1)) if m else None
        check(follower and rc != 0 and m and m.group(2) in complete(d) and complete(d)[-1] == m.group(2),
              f"torchrun, 2 ranks: SIGUSR1 to rank 1 alone stops both at step {stopped}, rank 0 writing its "
              "checkpoint", f"rc={rc} {r.tail()}")
        r = torchrun_train(*common, "--step-seconds", "0.1")
        hit = r.wait_line(r"^train: step 15 ")
        r.finish(signal.SIGKILL)
        check(hit and r.start_line()[0] == stopped,
              f"torchrun, 2 ranks: the rerun resumes at step {stopped}; SIGKILL to the whole group at step 15",
              r.tail())
        r = torchrun_train(*common)
        rc = r.wait()
        done = r.done()
        check(rc == 0 and r.start_line() == (12, os.path.join(d, "step-00000012")) and done and done[0] == STEPS and
              len(done[1]) == 3 and done[3] == "OK" and same_params(done[2], ref_params),
              "torchrun, 2 ranks: the last run resumes at step 12 and ends OK, its parameters those of the "
              "1-process reference to 1e-9", f"rc={rc} {r.tail()}")

    # ------------------------------------------------------------------------------- lint
    lint = subprocess.run([py, "-m", "pyflakes", TRAIN, os.path.abspath(__file__)], capture_output=True, text=True)
    if "No module named pyflakes" not in lint.stderr:
        check(lint.returncode == 0, "pyflakes: train.py and test_train.py are clean",
              (lint.stdout + lint.stderr).strip().replace("\n", " | "))

    print(f"{passed} passed, {failed} failed ({time.monotonic() - t0:.0f} s)", flush=True)
    if failed == 0:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"work directory kept: {work}", flush=True)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
