#!/usr/bin/env bash
# test_train.sh: a standalone self-test of examples/train.sh (no Slurm needed, no root).
# Prints one line per check, then "N passed, M failed" as its last line; exits 1 if any failed.
set -euo pipefail

here=$(cd -- "$(dirname -- "$0")" && pwd)
train=$here/train.sh

# Run standalone even when started inside a Slurm job or under the plugin: drop their variables.
while IFS= read -r var; do unset "$var"; done < <(compgen -e | grep -E '^(SLURM_|AUTO_RESUME_)' || true)

work=$(mktemp -d "${TMPDIR:-/tmp}/test_train.XXXXXX")
bg_pid=''
cleanup() {
  if [[ -n $bg_pid ]]; then kill -KILL -- "-$bg_pid" 2>/dev/null || kill -KILL "$bg_pid" 2>/dev/null || true; fi
  rm -rf -- "$work"
}
trap cleanup EXIT

passed=0 failed=0
pass() {
  printf 'ok   - %s\n' "$1"
  passed=$((passed + 1))
}
fail() {
  printf 'FAIL - %s: %s\n' "$1" "$2"
  failed=$((failed + 1))
}

# run NAME [ENV=VALUE...] -- ARGS...: runs train.sh; stdout in $work/NAME.out, stderr in
# $work/NAME.err, exit status in $rc.
rc=0
run() {
  local name=$1
  shift
  local -a envs=()
  while [[ $1 != -- ]]; do
    envs+=("$1")
    shift
  done
  shift
  rc=0
  env "${envs[@]}" "$train" "$@" </dev/null >"$work/$name.out" 2>"$work/$name.err" || rc=$?
}
out() { cat -- "$work/$1.out"; }
err() { cat -- "$work/$1.err"; }
last_line() { tail -n 1 -- "$work/$1.out"; }
first_line() { head -n 1 -- "$work/$1.out"; }
# The step a run said it started at, or -1.
start_step() { sed -n 's/^train: attempt [0-9]*: starting at step \([0-9]*\) from .*/\1/p' "$work/$1.out" | head -n 1 | grep . || echo -1; }
done_line() { printf 'train: done steps=%d sum=%d expected=%d attempts=%s result=OK' "$1" $(($1 * ($1 + 1) / 2)) $(($1 * ($1 + 1) / 2)) "$2"; }
# Highest step with a COMPLETE checkpoint in DIR, or 0.
highest_complete() {
  local f n best=0
  for f in "$1"/step-*/COMPLETE; do
    [[ -f $f ]] || continue
    n=${f%/COMPLETE}
    n=$((10#${n##*/step-}))
    if ((n > best)); then best=$n; fi
  done
  echo "$best"
}
# Starts train.sh in the background in its own process group (like a Slurm step), sets bg_pid.
start_bg() {
  local name=$1
  shift
  setsid "$train" "$@" </dev/null >"$work/$name.out" 2>"$work/$name.err" &
  bg_pid=$!
}
# Kills the whole process group of the background run with SIGNAL, reaps it, sets rc.
kill_bg() {
  kill "-$1" -- "-$bg_pid" 2>/dev/null || kill "-$1" "$bg_pid" 2>/dev/null || true
  rc=0
  wait "$bg_pid" 2>/dev/null || rc=$?
  bg_pid=''
}
# Waits (up to 60 s: a loaded CI machine is slow, a passing run does not wait) until DIR holds a
# complete checkpoint at step >= MIN.
wait_for_step() {
  local deadline=$((SECONDS + 60))
  while ((SECONDS < deadline)); do
    if (($(highest_complete "$1") >= $2)); then return 0; fi
    sleep 0.05
  done
  return 1
}
# Waits (up to 60 s) until the background run NAME has printed LINE.
wait_for_output() {
  local deadline=$((SECONDS + 60))
  while ((SECONDS < deadline)); do
    if grep -qxF -- "$2" "$work/$1.out" 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  return 1
}

# ------------------------------------------------------------------------------------ fresh run
d=$work/fresh
run fresh -- --steps 5 --checkpoint-dir "$d" --step-seconds 0.05 --result "$work/fresh.result"
want=$(done_line 5 standalone)
if [[ $rc == 0 && $(last_line fresh) == "$want" ]] &&
  [[ $(first_line fresh) == "train: attempt 0: starting at step 0 from scratch" ]] &&
  [[ $(grep -c '^train: step [1-5]$' "$work/fresh.out") == 5 ]]; then
  pass "fresh run of 5 steps ends with result=OK (sum=15)"
else
  fail "fresh run of 5 steps ends with result=OK (sum=15)" "rc=$rc, output: $(out fresh | tr '\n' '|') $(err fresh)"
fi

if [[ -f $work/fresh.result && $(cat -- "$work/fresh.result") == "$want" ]]; then
  pass "--result FILE holds the done line"
else
  fail "--result FILE holds the done line" "got: $(cat -- "$work/fresh.result" 2>&1)"
fi

listing=$(find "$d" -mindepth 1 -maxdepth 1 -printf '%f\n' | LC_ALL=C sort | tr '\n' ' ')
if [[ $listing == "step-00000003 step-00000004 step-00000005 " ]] &&
  [[ -f $d/step-00000005/COMPLETE && -f $d/step-00000003/COMPLETE ]]; then
  pass "--keep 3 (default) leaves the 3 newest complete checkpoints and no temp dirs"
else
  fail "--keep 3 (default) leaves the 3 newest complete checkpoints and no temp dirs" "DIR holds: $listing"
fi

# ------------------------------------------------------------------------------------ idempotent
before=$(find "$d" -printf '%p %T@\n' | sort)
run again -- --steps 5 --checkpoint-dir "$d" --step-seconds 0.05
after=$(find "$d" -printf '%p %T@\n' | sort)
if [[ $rc == 0 && $(last_line again) == "$want" && $(start_step again) == 5 && $before == "$after" ]] &&
  ! grep -q '^train: step' "$work/again.out"; then
  pass "a rerun after the last step only prints the done line again"
else
  fail "a rerun after the last step only prints the done line again" "rc=$rc, output: $(out again | tr '\n' '|')"
fi

# ------------------------------------------------------------------------------- SIGKILL, resume
d=$work/kill
start_bg kill1 --steps 12 --step-seconds 0.1 --checkpoint-dir "$d"
if wait_for_step "$d" 3; then
  kill_bg KILL
  run kill2 -- --steps 12 --step-seconds 0.02 --checkpoint-dir "$d"
  s=$(start_step kill2)
  if [[ $rc == 0 && $s -gt 0 && $(last_line kill2) == "$(done_line 12 standalone,standalone)" ]]; then
    pass "killed with SIGKILL at step >= 3, the rerun resumes at step $s and ends OK (sum=78)"
  else
    fail "killed with SIGKILL, the rerun resumes and ends OK" "rc=$rc, start=$s, output: $(out kill2 | tr '\n' '|') $(err kill2)"
  fi
else
  kill_bg KILL
  fail "killed with SIGKILL, the rerun resumes and ends OK" "no checkpoint at step 3 within 60 s: $(err kill1)"
fi

# ------------------------------------------------------------------------------- SIGTERM, resume
# A step of 120 s, and SIGTERM a moment into it: the run stops between steps, not at the step's end.
# The bound (20 s) is far below the step and far above a loaded machine's latency: a tighter one (800
# ms after a 1 s step) failed in CI, which ran this beside three Slurm clusters and two compilers.
d=$work/term
run term0 -- --steps 1 --step-seconds 0 --checkpoint-dir "$d"
start_bg term1 --steps 30 --step-seconds 120 --checkpoint-dir "$d"
if wait_for_output term1 "train: attempt 0: starting at step 1 from $d/step-00000001"; then
  sleep 0.2 # into the step's sleep
  t0=$(date +%s%N)
  kill_bg TERM
  term_rc=$rc
  ms=$((($(date +%s%N) - t0) / 1000000))
  n=$(highest_complete "$d")
  run term2 -- --steps 3 --step-seconds 0 --checkpoint-dir "$d"
  s=$(start_step term2)
  if [[ $term_rc == 143 && $n == 1 && $rc == 0 && $s == 1 && $(last_line term2) == "$(done_line 3 standalone,standalone)" ]] &&
    grep -qx "train: caught SIGTERM; exiting at step 1 (its checkpoint is written)" "$work/term1.out" && ((ms < 20000)); then
    pass "SIGTERM in a 120 s step stops it in ${ms} ms (exit 143); the rerun resumes at step $s, ends OK"
  else
    fail "SIGTERM stops it between steps; the rerun resumes and ends OK" \
      "exit $term_rc in ${ms} ms, start=$s, newest=$n, output: $(out term1 | tr '\n' '|') / $(out term2 | tr '\n' '|') $(err term2)"
  fi
else
  kill_bg KILL
  fail "SIGTERM stops it between steps; the rerun resumes and ends OK" "no start at step 1 within 60 s: $(out term1) $(err term1)"
fi

# ----------------------------------------------------------------- SIGKILL storm (mid-checkpoint)
# The storms' runs are given more steps than they can reach (each is killed within 220 ms); the
# rerun after them goes 3 steps past the newest checkpoint and its done line must hold the sum of
# every step once (a step lost or counted twice across the kills shows as a wrong sum). Running the
# rerun to a fixed 120 steps took most of this script's time, 215 s of its 300 s limit in CI.
# done_after_kills N: stdin is the done line of N steps after several attempts.
done_after_kills() {
  grep -qx "train: done steps=$1 sum=$(($1 * ($1 + 1) / 2)) expected=$(($1 * ($1 + 1) / 2)) attempts=standalone\(,standalone\)* result=OK"
}
# --step-seconds 0 so that most kills land while a checkpoint is being written or pruned.
d=$work/storm
torn=0
declare -A seen=()
# Two complete checkpoints first: on a loaded machine (CI, with other clusters beside it) a storm of
# 15 kills 30-220 ms apart can end before the first step is written, and the rerun would then start
# from nothing, which is right but not what this test is about.
run storm-seed -- --steps 2 --step-seconds 0 --checkpoint-dir "$d"
for ((i = 0; i < 15; i++)); do
  start_bg "storm$i" --steps 100000 --step-seconds 0 --checkpoint-dir "$d"
  sleep "$(printf '0.%02d' $((RANDOM % 20 + 3)))" # 30..220 ms
  kill_bg KILL
  # Count the kills that left a new half-done write (a temp dir, or a step dir without COMPLETE).
  new=0
  for e in "$d"/.tmp-* "$d"/step-*; do
    if [[ -d $e && ($e == */.tmp-* || ! -e $e/COMPLETE) && -z ${seen[$e]:-} ]]; then
      seen[$e]=1
      new=1
    fi
  done
  torn=$((torn + new))
done
n=$(highest_complete "$d")
run storm -- --steps $((n + 3)) --step-seconds 0 --checkpoint-dir "$d"
s=$(start_step storm)
if [[ $rc == 0 && $s -gt 0 && $s == "$n" ]] && last_line storm | done_after_kills $((n + 3)); then
  pass "15 SIGKILLs at random moments ($torn mid-write), the rerun resumes at step $s and ends OK (every step counted once)"
else
  fail "15 SIGKILLs at random moments, then a rerun ends OK" "rc=$rc, start=$s, newest=$n, output: $(last_line storm) $(err storm)"
fi

# SIGTERM to the whole process group (as Slurm sends it) at random moments: every run stops with
# exit 143 and no error, the write it was doing (if any) finished, and the rerun ends OK.
d=$work/termstorm
bad=''
for ((i = 0; i < 10; i++)); do
  start_bg "tstorm$i" --steps 100000 --step-seconds 0 --checkpoint-dir "$d"
  sleep "$(printf '0.%02d' $((RANDOM % 20 + 3)))" # 30..220 ms
  kill_bg TERM
  if [[ $rc != 143 || -s $work/tstorm$i.err ]]; then bad+=" run $i: exit $rc $(err "tstorm$i")"; fi
  for e in "$d"/step-*; do
    if [[ -d $e && ! -e $e/COMPLETE ]]; then bad+=" run $i left $e without COMPLETE"; fi
  done
done
n=$(highest_complete "$d")
run tstorm -- --steps $((n + 3)) --step-seconds 0 --checkpoint-dir "$d"
s=$(start_step tstorm)
if [[ -z $bad && $rc == 0 && $s == "$n" ]] && last_line tstorm | done_after_kills $((n + 3)); then
  pass "10 SIGTERMs to the process group: each exits 143 cleanly, no torn write; the rerun from step $s ends OK"
else
  fail "10 SIGTERMs to the process group" "$bad; rc=$rc, start=$s, newest=$n, output: $(last_line tstorm) $(err tstorm)"
fi

# ------------------------------------------------------------------ partial and foreign entries
d=$work/partial
run partial1 -- --steps 3 --step-seconds 0 --checkpoint-dir "$d"
sleep 0.05
mkdir "$d/step-00000004" # a crash after the rename, before COMPLETE: newer, but no COMPLETE
printf 'step=4\nsum=999\nattempts=standalone\n' >"$d/step-00000004/state"
mkdir "$d/step-00000007" # crashed mid-write: not even a state file
run partial2 -- --steps 5 --step-seconds 0 --checkpoint-dir "$d"
if [[ $rc == 0 && $(first_line partial2) == "train: attempt 0: starting at step 3 from $d/step-00000003" ]] &&
  [[ $(last_line partial2) == "$(done_line 5 standalone,standalone)" ]] &&
  [[ -f $d/step-00000004/COMPLETE ]] && grep -qx 'sum=10' "$d/step-00000004/state"; then
  pass "a newer partial checkpoint dir (no COMPLETE) is ignored, then replaced when that step is redone"
else
  fail "a newer partial checkpoint dir (no COMPLETE) is ignored" "rc=$rc, output: $(out partial2 | tr '\n' '|') $(err partial2)"
fi

d=$work/foreign
run foreign1 -- --steps 2 --step-seconds 0 --checkpoint-dir "$d"
sleep 0.05
mkdir -p "$d/step-00000008/COMPLETE"                                           # COMPLETE is a directory
printf 'x' >"$d/step-00000009"                                                 # a file, not a directory
mkdir -p "$d/nested/step-00000012" && touch "$d/nested/step-00000012/COMPLETE" # not a direct subdirectory
ln -s "$work/nowhere" "$d/step-00000013"                                       # a dangling symlink
run foreign2 -- --steps 3 --step-seconds 0 --checkpoint-dir "$d"
if [[ $rc == 0 && $(first_line foreign2) == "train: attempt 0: starting at step 2 from $d/step-00000002" ]] &&
  [[ $(last_line foreign2) == "$(done_line 3 standalone,standalone)" ]]; then
  pass "plain files, a non-regular COMPLETE, deeper dirs and dangling symlinks are not checkpoints"
else
  fail "plain files, a non-regular COMPLETE, deeper dirs and dangling symlinks are not checkpoints" "rc=$rc, output: $(out foreign2 | tr '\n' '|') $(err foreign2)"
fi

# Symlinks are followed, as the plugin's std::filesystem/stat(2) scan does; pruning leaves them alone.
mkdir -p "$work/elsewhere/ck"
printf 'step=3\nsum=6\nattempts=0\n' >"$work/elsewhere/ck/state"
touch "$work/elsewhere/ck/COMPLETE"
ln -s "$work/elsewhere/ck" "$d/linked"
run foreign3 -- --steps 6 --step-seconds 0 --keep 1 --checkpoint-dir "$d"
if [[ $rc == 0 && $(first_line foreign3) == "train: attempt 0: starting at step 3 from $d/linked" ]] &&
  [[ $(last_line foreign3) == "$(done_line 6 0,standalone)" && -f $work/elsewhere/ck/COMPLETE && -L $d/linked ]]; then
  pass "a symlinked checkpoint directory with the newest COMPLETE is used, and not pruned"
else
  fail "a symlinked checkpoint directory with the newest COMPLETE is used" "rc=$rc, output: $(out foreign3 | tr '\n' '|') $(err foreign3)"
fi

# ---------------------------------------------------------------------- newest = newest COMPLETE
d=$work/order
run order1 -- --steps 3 --step-seconds 0 --checkpoint-dir "$d"
touch -d '1 hour ago' "$d/step-00000003/COMPLETE"
run order2 -- --steps 3 --step-seconds 0 --checkpoint-dir "$d"
if [[ $rc == 0 && $(first_line order2) == "train: attempt 0: starting at step 2 from $d/step-00000002" ]] &&
  [[ $(last_line order2) == "$(done_line 3 standalone,standalone)" ]]; then
  pass "the newest checkpoint is the one whose COMPLETE is newest, not the highest step"
else
  fail "the newest checkpoint is the one whose COMPLETE is newest" "rc=$rc, output: $(out order2 | tr '\n' '|') $(err order2)"
fi
touch -d '2020-01-01 00:00:00' "$d"/step-*/COMPLETE
run order3 -- --steps 3 --step-seconds 0 --checkpoint-dir "$d"
if [[ $rc == 0 && $(first_line order3) == "train: attempt 0: starting at step 3 from $d/step-00000003" ]]; then
  pass "equal COMPLETE times: the name that sorts last wins"
else
  fail "equal COMPLETE times: the name that sorts last wins" "rc=$rc, output: $(out order3 | tr '\n' '|') $(err order3)"
fi

# --------------------------------------------------------------------------- AUTO_RESUME_CHECKPOINT
d=$work/env
run env1 -- --steps 4 --step-seconds 0 --checkpoint-dir "$d"
mkdir "$d/step-00000009" && printf 'step=9\nsum=45\nattempts=0\n' >"$d/step-00000009/state"
before=$(find "$d" -printf '%p %T@\n' | sort)
run env2 AUTO_RESUME_CHECKPOINT="$d/step-00000009" -- --steps 4 --step-seconds 0 --checkpoint-dir "$d"
after=$(find "$d" -printf '%p %T@\n' | sort)
if [[ $rc == 3 && -z $(out env2) && $before == "$after" ]] &&
  grep -q "AUTO_RESUME_CHECKPOINT=$d/step-00000009: .*COMPLETE" "$work/env2.err"; then
  pass "AUTO_RESUME_CHECKPOINT without COMPLETE: exit 3 with a message, nothing written ($(err env2))"
else
  fail "AUTO_RESUME_CHECKPOINT without COMPLETE: exit 3 with a message" "rc=$rc, stdout: $(out env2) stderr: $(err env2)"
fi

run env3 AUTO_RESUME_CHECKPOINT="$work/no-such-dir" -- --steps 4 --step-seconds 0 --checkpoint-dir "$d"
if [[ $rc == 3 ]] && grep -q 'AUTO_RESUME_CHECKPOINT=.*no-such-dir' "$work/env3.err"; then
  pass "AUTO_RESUME_CHECKPOINT pointing nowhere: exit 3"
else
  fail "AUTO_RESUME_CHECKPOINT pointing nowhere: exit 3" "rc=$rc, stderr: $(err env3)"
fi

mkdir "$d/corrupt" && printf 'step=banana\n' >"$d/corrupt/state" && touch "$d/corrupt/COMPLETE"
run env4 AUTO_RESUME_CHECKPOINT="$d/corrupt" -- --steps 4 --step-seconds 0 --checkpoint-dir "$d"
if [[ $rc == 3 ]] && grep -q 'corrupt' "$work/env4.err"; then
  pass "AUTO_RESUME_CHECKPOINT with COMPLETE but an unreadable state: exit 3"
else
  fail "AUTO_RESUME_CHECKPOINT with COMPLETE but an unreadable state: exit 3" "rc=$rc, stderr: $(err env4)"
fi
rm -rf -- "$d/corrupt" "$d/step-00000009"

# Under the plugin: it names an older checkpoint; that one is used, not DIR's newest.
run env5 AUTO_RESUME_CHECKPOINT="$d/step-00000002" SLURM_JOB_ID=77 SLURM_RESTART_COUNT=2 \
  AUTO_RESUME_ATTEMPT=2 AUTO_RESUME_LAST_REASON='node n2: gpu xid 79' -- --steps 4 --step-seconds 0 --checkpoint-dir "$d"
if [[ $rc == 0 && $(first_line env5) == "train: attempt 2: starting at step 2 from $d/step-00000002" ]] &&
  grep -qx 'train: AUTO_RESUME_ATTEMPT=2' "$work/env5.out" &&
  grep -qx 'train: AUTO_RESUME_LAST_REASON=node n2: gpu xid 79' "$work/env5.out" &&
  [[ $(last_line env5) == "$(done_line 4 standalone,2)" ]]; then
  pass "AUTO_RESUME_CHECKPOINT set by the plugin is used; attempt and reason are printed"
else
  fail "AUTO_RESUME_CHECKPOINT set by the plugin is used" "rc=$rc, output: $(out env5 | tr '\n' '|') $(err env5)"
fi

# srun -n >1: rank 0 writes; a follower writes nothing and, should the checkpoint it was given have
# been pruned meanwhile by rank 0 on another node, follows the newest one rather than fail the step.
before=$(find "$d" -printf '%p %T@\n' | sort)
run follower AUTO_RESUME_CHECKPOINT="$d/step-00000001" SLURM_JOB_ID=77 SLURM_PROCID=1 -- \
  --steps 6 --step-seconds 0 --checkpoint-dir "$d" --result "$work/follower.result"
after=$(find "$d" -printf '%p %T@\n' | sort)
if [[ $rc == 0 && $before == "$after" && ! -e $work/follower.result ]] &&
  [[ $(out follower) == "train: rank 1: following rank 0, which writes the checkpoints" ]] &&
  grep -q 'rank 1: warning: AUTO_RESUME_CHECKPOINT=.*step-00000001: no such directory; following the newest' "$work/follower.err"; then
  pass "a follower rank (SLURM_PROCID=1) writes nothing and survives a pruned AUTO_RESUME_CHECKPOINT"
else
  fail "a follower rank (SLURM_PROCID=1) writes nothing" "rc=$rc, output: $(out follower | tr '\n' '|') $(err follower)"
fi

# --------------------------------------------------------------------------------- stale temp dirs
d=$work/stale
mkdir -p "$d/.tmp-step-00000099-1" "$d/.tmp-step-00000098-2"
touch -d '2 minutes ago' "$d/.tmp-step-00000099-1"
run stale -- --steps 1 --step-seconds 0 --checkpoint-dir "$d"
if [[ $rc == 0 && ! -e $d/.tmp-step-00000099-1 && -d $d/.tmp-step-00000098-2 ]]; then
  pass "temp dirs older than a minute are deleted, younger ones kept"
else
  fail "temp dirs older than a minute are deleted, younger ones kept" "DIR holds: $(find "$d" -mindepth 1 -printf '%f ')"
fi

# ------------------------------------------------------------------------------------- bad args
bad_case() { # EXPECTED-WORD ARGS...
  local word=$1
  shift
  run bad -- "$@"
  if [[ $rc == 2 && -z $(out bad) && $(wc -l <"$work/bad.err") == 1 ]] && grep -q -- "$word" "$work/bad.err"; then
    pass "bad args ($*): exit 2: $(err bad)"
  else
    fail "bad args ($*): exit 2 naming $word" "rc=$rc, stderr: $(err bad)"
  fi
}
bad_case --steps --checkpoint-dir "$work/bad"
bad_case --checkpoint-dir --steps 3
bad_case --steps --steps abc --checkpoint-dir "$work/bad"
bad_case --steps --steps 0 --checkpoint-dir "$work/bad"
bad_case --steps --checkpoint-dir "$work/bad" --steps
bad_case --step-seconds --steps 3 --checkpoint-dir "$work/bad" --step-seconds 1s
bad_case --keep --steps 3 --checkpoint-dir "$work/bad" --keep -1
bad_case --bogus --steps 3 --checkpoint-dir "$work/bad" --bogus
bad_case --result --steps 3 --checkpoint-dir "$work/bad" --result "$work/no/such/dir/r"

# -------------------------------------------------------------------------------------- shellcheck
if command -v shellcheck >/dev/null; then
  if sc=$(shellcheck "$train" "$here/test_train.sh" 2>&1); then
    pass "shellcheck: train.sh and test_train.sh are clean"
  else
    fail "shellcheck" "$(printf '%s' "$sc" | head -n 5 | tr '\n' '|')"
  fi
fi

printf '%d passed, %d failed\n' "$passed" "$failed"
((failed == 0))
