#!/usr/bin/python3
"""A small resumable PyTorch training job for slurm-auto-resume (see examples/pytorch/README.md).

It fits a linear regression to synthetic data that is a pure function of the step number, so a run
that is killed and resumed any number of times ends with the same parameters as one that never
stopped. Launch it directly (one process) or with torchrun (DistributedDataParallel on gloo, CPU).

Checkpoints follow the rule the auto-resume plugin uses for $AUTO_RESUME_CHECKPOINT: a checkpoint is
a direct subdirectory of --checkpoint-dir holding a regular file named COMPLETE, written last; the
newest is the one whose COMPLETE has the newest modification time (ties: the name sorting last).

Exit status: 0 done and OK; 1 done but BAD (or an I/O error); 2 bad arguments; 3 the checkpoint to
resume from is incomplete or unreadable (it never silently starts over); 128+N stopped by signal N
(SIGUSR1 138, SIGTERM 143, SIGINT 130) after writing a checkpoint of the last step it finished.
"""

import argparse
import json
import os
import shutil
import signal
import stat
import sys
import tempfile
import time

EXIT_BAD = 1
EXIT_USAGE = 2
EXIT_CHECKPOINT = 3
FORMAT = 1  # of state.pt; bumped when its layout changes
STATE_FILE = "state.pt"
MARKER = "COMPLETE"
STALE_S = 60  # leftovers of a killed write older than this are removed

# Set by the signal handler, acted on at the next step boundary (never in the middle of a write).
caught = 0


def on_signal(signum, _frame):
    global caught
    if not caught:
        caught = signum


def say(text, stream=None):
    """One line, in one write: the ranks of a job share its output."""
    stream = stream or sys.stdout
    stream.write(f"train: {text}\n")
    stream.flush()


def warn(text):
    say(text, sys.stderr)


class CheckpointError(Exception):
    """The checkpoint to resume from cannot be used."""


# ------------------------------------------------------------------------------------- arguments
def positive(text):
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0 or value > 10**9:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def seconds(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"expected 0 to 3600 seconds, got {text!r}")
    return value


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="train.py",
        description="Resumable linear regression with checkpoints by the COMPLETE rule.",
        epilog="Resumes from $AUTO_RESUME_CHECKPOINT when set (set by the auto-resume plugin), otherwise "
        "from the newest complete checkpoint in --checkpoint-dir, otherwise from scratch.",
    )
    p.add_argument("--steps", type=positive, required=True, help="optimizer steps in total")
    p.add_argument("--checkpoint-dir", required=True, help="where checkpoints live (created if missing)")
    p.add_argument("--checkpoint-every", type=positive, default=10, help="steps between checkpoints (default 10)")
    p.add_argument("--keep", type=positive, default=3, help="complete checkpoints to keep (default 3)")
    p.add_argument("--step-seconds", type=seconds, default=0.0, help="extra seconds per step, to watch it (default 0)")
    p.add_argument("--batch", type=positive, default=32, help="global batch size, split across ranks (default 32)")
    p.add_argument("--result", help="also write the final 'train: done ...' line to this file (atomically)")
    args = p.parse_args(argv)
    if not args.checkpoint_dir:
        p.error("--checkpoint-dir: must not be empty")
    if args.result is not None:
        parent = os.path.dirname(os.path.abspath(args.result))
        if not args.result or os.path.isdir(args.result) or not os.access(parent, os.W_OK):
            p.error(f"--result: {args.result!r} is not a file in a writable directory")
    return args


# ----------------------------------------------------------------------------------- checkpoints
def fsync_dir(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file(path, data):
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def is_complete(path):
    """A checkpoint: a directory holding a regular file COMPLETE (both seen through symlinks)."""
    try:
        return os.path.isdir(path) and stat.S_ISREG(os.stat(os.path.join(path, MARKER)).st_mode)
    except OSError:
        return False


def beat(path, step=None):
    """One step done: touches the heartbeat file or, given the step, writes it there (healthd reads it
    to find a rank slower than the others). A beat that fails (storage away a moment) is skipped."""
    try:
        if step is None:
            with open(path, "a"):
                os.utime(path)
        else:
            with open(path, "w") as f:
                f.write(f"{step}\n")
    except OSError:
        pass


def complete_checkpoints(ckdir):
    """The complete checkpoints in ckdir, oldest first: by COMPLETE's mtime (ns), then by name (bytes)."""
    found = []
    try:
        entries = list(os.scandir(ckdir))
    except FileNotFoundError:
        return []
    for entry in entries:
        try:
            if not entry.is_dir():  # follows symlinks, as stat(2) does
                continue
            st = os.stat(os.path.join(entry.path, MARKER))
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            found.append((st.st_mtime_ns, os.fsencode(entry.name), entry.path))
    found.sort()
    return [path for _, _, path in found]


def step_name(step):
    return f"step-{step:08d}"


def step_of_name(name):
    if name.startswith("step-") and name[5:].isdigit():
        return int(name[5:])
    return None


def load_checkpoint(torch, path):
    """The checkpoint at path, checked; CheckpointError says why it cannot be used."""
    if not os.path.isdir(path):
        raise CheckpointError("no such directory")
    if not is_complete(path):
        raise CheckpointError(f"no {MARKER} marker (an incomplete checkpoint)")
    # weights_only (no arbitrary objects unpickled) from torch 2.0 on: 1.13's first version of it
    # refuses the floats of an optimizer's state ("Unsupported operand 71").
    safe = {"weights_only": True} if int(torch.__version__.split(".")[0]) >= 2 else {}
    try:
        state = torch.load(os.path.join(path, STATE_FILE), map_location="cpu", **safe)
    except Exception as e:  # any unreadable file gets the same answer, whatever the exception
        raise CheckpointError(f"{STATE_FILE} is unreadable: {type(e).__name__}: {e}") from None
    missing = [k for k in ("format", "step", "model", "optimizer", "segments")
               if not isinstance(state, dict) or k not in state]
    if missing:
        raise CheckpointError(f"{STATE_FILE} is corrupt (no {', '.join(missing)})")
    if state["format"] != FORMAT:
        raise CheckpointError(f"{STATE_FILE} has format {state['format']!r}; this train.py reads {FORMAT}")
    step = state["step"]
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise CheckpointError(f"{STATE_FILE} holds a bad step {step!r}")
    named = step_of_name(os.path.basename(os.path.normpath(path)))
    if named is not None and named != step:
        raise CheckpointError(f"{STATE_FILE} says step {step} but the directory is {step_name(named)}")
    return state


def remove_tree(path):
    shutil.rmtree(path, ignore_errors=True)


def write_checkpoint(torch, ckdir, state):
    """Writes state as ckdir/step-N: data into a temp dir (fsynced), renamed into place (ckdir
    fsynced), then COMPLETE, last (fsynced). A kill at any point leaves either the previous newest
    checkpoint or this one complete."""
    name = step_name(state["step"])
    final = os.path.join(ckdir, name)
    tmp = tempfile.mkdtemp(prefix=f".tmp-{name}-", dir=ckdir)
    with open(os.path.join(tmp, STATE_FILE), "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    fsync_dir(tmp)
    aside = None
    if os.path.lexists(final):
        # Left by an earlier attempt (normally one killed before COMPLETE): un-completed first, so it
        # never counts as a checkpoint under its temp name, then moved aside.
        if os.path.isdir(final) and not os.path.islink(final):
            try:
                os.unlink(os.path.join(final, MARKER))
            except FileNotFoundError:
                pass
        aside = tempfile.mkdtemp(prefix=f".tmp-old-{name}-", dir=ckdir)
        os.rename(final, os.path.join(aside, name))
    os.rename(tmp, final)
    fsync_dir(ckdir)
    write_file(os.path.join(final, MARKER), f"step={state['step']}\n".encode())
    fsync_dir(final)
    if aside is not None:
        remove_tree(aside)
    return final


def prune(ckdir, keep, written):
    """Deletes our oldest complete checkpoints beyond keep (real step-* directories only, never the
    one just written; COMPLETE goes first), and leftovers of killed writes older than STALE_S."""
    ours = [p for p in complete_checkpoints(ckdir)
            if step_of_name(os.path.basename(p)) is not None and not os.path.islink(p)]
    for path in ours[:max(0, len(ours) - keep)]:
        if path == written:
            continue
        try:
            os.unlink(os.path.join(path, MARKER))  # no longer a checkpoint, even if the delete is cut short
        except FileNotFoundError:
            pass
        remove_tree(path)
    now = time.time()
    for entry in os.scandir(ckdir):
        leftover = entry.name.startswith(".tmp-") or (
            step_of_name(entry.name) is not None and not is_complete(entry.path))
        if not leftover or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            if now - entry.stat(follow_symlinks=False).st_mtime > STALE_S:
                remove_tree(entry.path)
        except FileNotFoundError:
            pass


def write_result(path, line):
    parent = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".result-", dir=parent)
    with os.fdopen(fd, "wb") as f:
        f.write((line + "\n").encode())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(parent)


# -------------------------------------------------------------------------------------- training
def attempt_tag():
    """SLURM_RESTART_COUNT under Slurm (0 on the first attempt, when Slurm leaves it unset),
    "standalone" outside Slurm."""
    count = os.environ.get("SLURM_RESTART_COUNT", "")
    if count:
        if count.isdigit():
            return str(int(count))
        warn(f"warning: ignoring non-numeric SLURM_RESTART_COUNT={count!r}")
        return "0"
    return "0" if os.environ.get("SLURM_JOB_ID") else "standalone"


def batch_for(torch, step, size, features):
    """The global batch of a step: a pure function of the step, whatever the attempt or world size."""
    g = torch.Generator().manual_seed(1_000_003 * step + 17)
    x = torch.randn(size, features, generator=g, dtype=torch.float64)
    true_w = torch.arange(1, features + 1, dtype=torch.float64) / features
    y = x @ true_w + 0.5 + 0.01 * torch.randn(size, generator=g, dtype=torch.float64)
    return x, y.unsqueeze(1)


def segments_ok(segments, steps):
    """Every step from 1 to steps done once, by the segments [tag, first, last] in order."""
    expect = 1
    for _tag, first, last in segments:
        if first != expect or last < first:
            return False
        expect = last + 1
    return expect == steps + 1


def done_line(state, steps):
    params = [float(v) for v in state["model"]["weight"].flatten().tolist()] + \
        [float(v) for v in state["model"]["bias"].flatten().tolist()]
    attempts = ",".join(str(tag) for tag, _, _ in state["segments"]) or "none"
    ok = state["step"] == steps and segments_ok(state["segments"], steps)
    return (f"train: done steps={state['step']} attempts={attempts} params={json.dumps(params)} "
            f"result={'OK' if ok else 'BAD'}"), ok


class Group:
    """The process group when launched by torchrun (WORLD_SIZE set), else a group of one."""

    def __init__(self, torch):
        self.torch = torch
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.dist = None
        if self.world > 1:
            import torch.distributed as dist
            dist.init_process_group("gloo")
            self.dist = dist

    def broadcast(self, obj):
        """obj of rank 0, on every rank."""
        if self.dist is None:
            return obj
        box = [obj]
        self.dist.broadcast_object_list(box, src=0)
        return box[0]

    def any(self, value):
        """The largest of every rank's integer: ranks agree on a stop or a failure."""
        if self.dist is None:
            return value
        t = self.torch.tensor([value], dtype=self.torch.int64)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX)
        return int(t.item())

    def barrier(self):
        if self.dist is not None:
            self.dist.barrier()

    def leave(self, code):
        """Ends the process with exit status code. A rank of a group leaves with os._exit, once its
        output is flushed (every file it wrote is closed and synced already): Python's own exit
        frees the process group (held by DistributedDataParallel too), and with torch 1.13 on gloo
        that was seen to hang forever on a futex in a rank whose peer had exited first."""
        if self.dist is None:
            return code
        self.dist.destroy_process_group()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def choose_checkpoint(ckdir):
    """(path or None, where it came from): AUTO_RESUME_CHECKPOINT when set, else the newest complete
    checkpoint in ckdir. After an in-job restart by torchrun (TORCHELASTIC_RESTART_COUNT > 0) the
    variable is stale (it was set when the Slurm step started), so the directory decides."""
    env = os.environ.get("AUTO_RESUME_CHECKPOINT", "")
    if env and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") in ("", "0"):
        return env, "AUTO_RESUME_CHECKPOINT"
    newest = complete_checkpoints(ckdir)
    if newest:
        return newest[-1], "newest complete checkpoint in --checkpoint-dir"
    return None, "scratch"


def main(argv):
    args = parse_args(argv)
    for sig in (signal.SIGUSR1, signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)

    import torch  # after the arguments: a bad command line fails fast

    torch.use_deterministic_algorithms(True)
    group = Group(torch)
    writer = group.rank == 0
    if args.batch % group.world:
        if writer:
            warn(f"error: --batch {args.batch} does not split evenly over {group.world} ranks")
        return group.leave(EXIT_USAGE)
    ckdir = os.path.abspath(args.checkpoint_dir)
    if writer:
        try:
            os.makedirs(ckdir, exist_ok=True)
        except OSError as e:
            warn(f"error: --checkpoint-dir: cannot create {ckdir!r}: {e.strerror}")
            ckdir = None
    ckdir = group.broadcast(ckdir)
    if ckdir is None:
        return group.leave(EXIT_USAGE)

    features = 8
    torch.manual_seed(1234)
    model = torch.nn.Linear(features, 1, dtype=torch.float64)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)

    # Rank 0 decides where to start; every rank loads that same checkpoint (the directory must be on
    # storage every node sees), and all give up together if any cannot.
    path, source = choose_checkpoint(ckdir) if writer else (None, None)
    path, source = group.broadcast((path, source))
    state, problem, segments = None, "", []
    if path is not None:
        try:
            state = load_checkpoint(torch, path)
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            segments = [[str(tag), int(first), int(last)] for tag, first, last in state["segments"]]
        except CheckpointError as e:
            problem = str(e)
        except (RuntimeError, KeyError, ValueError, TypeError) as e:
            problem = f"{STATE_FILE} does not fit this model: {type(e).__name__}: {e}"
    if group.any(1 if problem else 0):
        if problem:
            what = "AUTO_RESUME_CHECKPOINT" if source == "AUTO_RESUME_CHECKPOINT" else "checkpoint"
            warn(f"error: rank {group.rank}: {what}={path}: {problem}")
        return group.leave(EXIT_CHECKPOINT)

    tag = attempt_tag()
    start = state["step"] if state else 0
    if writer:
        origin = f"{path} ({source}; world size {group.world})" if path else f"scratch (world size {group.world})"
        say(f"attempt {tag}: starting at step {start} from {origin}")
        for name in ("AUTO_RESUME_ATTEMPT", "AUTO_RESUME_LAST_REASON"):
            if os.environ.get(name):
                say(f"{name}={os.environ[name]}")
    else:
        say(f"rank {group.rank} of {group.world} (pid {os.getpid()}): following rank 0, which writes the checkpoints")
    if start > args.steps:
        if writer:
            warn(f"error: the checkpoint is at step {start}, past --steps {args.steps}")
        return group.leave(EXIT_USAGE)

    net = model
    if group.dist is not None:
        net = torch.nn.parallel.DistributedDataParallel(model)
    per_rank = args.batch // group.world
    lo, hi = group.rank * per_rank, (group.rank + 1) * per_rank

    def snapshot(step):
        done = segments + ([[tag, start + 1, step]] if step > start else [])
        return {"format": FORMAT, "step": step, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "segments": done}

    def save(step):
        if writer:
            written = write_checkpoint(torch, ckdir, snapshot(step))
            prune(ckdir, args.keep, written)
            return os.path.basename(written)
        return None

    final = snapshot(start)
    saved = start
    # --auto-resume-heartbeat-dir: this task's own heartbeat file, written once per step with the
    # step's number (the workers of one torchrun share their node's task, and its file). When the job
    # stops moving, the node whose ranks stopped is found and kept off the next attempt; while it
    # runs, a node whose ranks step slower than the others' is reported.
    heartbeat = os.environ.get("AUTO_RESUME_HEARTBEAT_FILE")
    for step in range(start + 1, args.steps + 1):
        x, y = batch_for(torch, step, args.batch, features)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(net(x[lo:hi]), y[lo:hi])
        loss.backward()
        optimizer.step()
        if args.step_seconds:
            time.sleep(args.step_seconds)
        if heartbeat:
            beat(heartbeat, step)
        written = None
        if step % args.checkpoint_every == 0 or step == args.steps:
            written = save(step)
            saved = step
        if writer:
            say(f"step {step} loss={loss.item():.6f}" + (f" checkpoint={written}" if written else ""))
        # Every rank stops at the same step boundary: a signal may reach the ranks at different steps.
        stop = group.any(caught)
        if stop and step < args.steps:
            if saved != step:
                written = save(step)
            group.barrier()  # no rank leaves before the checkpoint is complete
            if writer:
                say(f"caught SIG{signal.Signals(stop).name[3:]}; stopping at step {step} "
                    f"(checkpoint {step_name(step)} is written)")
            return group.leave(128 + stop)
        final = snapshot(step)

    line, ok = done_line(final, args.steps)
    if writer:
        say(line[len("train: "):])
        if args.result:
            write_result(args.result, line)
    group.barrier()
    return group.leave(0 if ok else EXIT_BAD)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
