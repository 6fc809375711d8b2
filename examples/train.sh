#!/usr/bin/env bash
# train.sh: a sample resumable "training" job for slurm-auto-resume (see examples/README.md).
#
# It counts steps instead of training a model: after each step it writes a checkpoint holding
# `step` (steps completed), `sum` (1+2+...+step) and `attempts` (which attempts contributed), and at
# the end it checks sum == N*(N+1)/2, so a step that was lost or counted twice across a kill and a
# restart shows up as result=BAD. It can be killed (SIGTERM or SIGKILL) at any moment.
#
# Exit status: 0 done and OK; 1 done but BAD (or an I/O error); 2 bad arguments;
# 3 the checkpoint to resume from is missing, incomplete or unreadable; 130/143 stopped by SIGINT/SIGTERM.
set -euo pipefail
set -o errtrace
# A kill is harmless at any point, but a polite one (SIGTERM from scancel or a requeue, which Slurm
# sends to every process of the step) is only noted here and acted on between steps: at once while
# sleeping, never in the middle of a checkpoint write (see the main loop).
caught=''
trap 'caught=TERM' TERM
trap 'caught=INT' INT
# shellcheck disable=SC2317 # called from the ERR trap
on_err() {
  # A command cut short by the signal (Slurm signals the whole step) is no error: stop as planned.
  if [[ -n $caught ]]; then stop_if_signalled; fi
  printf 'train: error: line %d: command failed (exit %d): %s\n' "$2" "$1" "$3" >&2
}
trap 'on_err "$?" "$LINENO" "$BASH_COMMAND"' ERR

usage() {
  cat <<'EOF'
Usage: train.sh --steps N --checkpoint-dir DIR [--step-seconds S] [--keep K] [--result FILE]

  --steps N            steps to train in total (positive integer)
  --checkpoint-dir DIR where checkpoints live (created if missing)
  --step-seconds S     seconds per step, fractional allowed (default 1)
  --keep K             complete checkpoints to keep (default 3)
  --result FILE        also write the final "train: done ..." line to FILE (atomically)

Resumes from $AUTO_RESUME_CHECKPOINT when set (set by the auto-resume plugin), otherwise from the
newest complete checkpoint in DIR: a direct subdirectory holding a regular file COMPLETE, the newest
being the one whose COMPLETE has the newest modification time (ties: the name that sorts last);
symlinks are followed.
EOF
}

# One line on stderr naming the argument, exit 2.
bad_arg() {
  printf 'train: error: %s (try --help)\n' "$*" >&2
  exit 2
}

die() {
  local code=$1
  shift
  printf 'train: error: %s\n' "$*" >&2
  exit "$code"
}

# ---------------------------------------------------------------------------------------- arguments
steps='' ckdir='' step_seconds=1 keep=3 result=''
have_steps=0 have_ckdir=0 have_result=0
while (($# > 0)); do
  opt=$1
  case $opt in
    -h | --help)
      usage
      exit 0
      ;;
    --steps | --checkpoint-dir | --step-seconds | --keep | --result)
      if (($# < 2)) || [[ $2 == --* ]]; then bad_arg "$opt needs a value"; fi
      val=$2
      shift 2
      ;;
    --steps=* | --checkpoint-dir=* | --step-seconds=* | --keep=* | --result=*)
      val=${opt#*=}
      opt=${opt%%=*}
      shift
      ;;
    *) bad_arg "unknown argument '$opt'" ;;
  esac
  case $opt in
    --steps) steps=$val have_steps=1 ;;
    --checkpoint-dir) ckdir=$val have_ckdir=1 ;;
    --step-seconds) step_seconds=$val ;;
    --keep) keep=$val ;;
    --result) result=$val have_result=1 ;;
  esac
done

((have_steps)) || bad_arg "--steps is required"
((have_ckdir)) || bad_arg "--checkpoint-dir is required"
if ! [[ $steps =~ ^[0-9]{1,9}$ ]] || ((10#$steps == 0)); then
  bad_arg "--steps: expected a positive integer (at most 9 digits), got '$steps'"
fi
steps=$((10#$steps))
if ! [[ $keep =~ ^[0-9]{1,9}$ ]] || ((10#$keep == 0)); then
  bad_arg "--keep: expected a positive integer, got '$keep'"
fi
keep=$((10#$keep))
[[ $step_seconds =~ ^([0-9]+([.][0-9]*)?|[.][0-9]+)$ ]] ||
  bad_arg "--step-seconds: expected a non-negative number of seconds (e.g. 1 or 0.2), got '$step_seconds'"
[[ -n $ckdir ]] || bad_arg "--checkpoint-dir: must not be empty"
while [[ $ckdir == */ && $ckdir != / ]]; do ckdir=${ckdir%/}; done
if ((have_result)); then
  [[ -n $result ]] || bad_arg "--result: must not be empty"
  [[ ! -d $result ]] || bad_arg "--result: '$result' is a directory"
  result_dir=$(dirname -- "$result")
  [[ -d $result_dir && -w $result_dir ]] || bad_arg "--result: directory '$result_dir' does not exist or is not writable"
fi

# --------------------------------------------------------------------------------- who is running
# Attempt tag recorded in `attempts`: SLURM_RESTART_COUNT under Slurm (0 on the first run, when
# Slurm leaves it unset), "standalone" outside Slurm.
attempt=0
if [[ -n ${SLURM_RESTART_COUNT:-} ]]; then
  if [[ $SLURM_RESTART_COUNT =~ ^[0-9]{1,9}$ ]]; then
    attempt=$((10#$SLURM_RESTART_COUNT))
  else
    printf 'train: warning: ignoring non-numeric SLURM_RESTART_COUNT=%q\n' "$SLURM_RESTART_COUNT" >&2
  fi
  attempt_tag=$attempt
elif [[ -n ${SLURM_JOB_ID:-} ]]; then
  attempt_tag=0
else
  attempt_tag=standalone
fi

# Under `srun -n >1` every task runs this script; only rank 0 writes checkpoints and the result file
# (like a real data-parallel job), the others follow along quietly so that they can be killed too.
writer=1
if [[ -n ${SLURM_PROCID:-} && ${SLURM_PROCID} != 0 ]]; then
  writer=0
fi

say() {
  if ((writer)); then printf '%s\n' "$*"; fi
}

if ((writer)); then
  mkdir -p -- "$ckdir" 2>/dev/null || bad_arg "--checkpoint-dir: cannot create directory '$ckdir'"
  [[ -d $ckdir && -r $ckdir && -w $ckdir && -x $ckdir ]] ||
    bad_arg "--checkpoint-dir: '$ckdir' is not a readable and writable directory"
elif [[ ! -d $ckdir ]]; then
  # Rank 0 may not have created it yet.
  mkdir -p -- "$ckdir" 2>/dev/null || true
fi

# ------------------------------------------------------------------------------------- checkpoints
# Complete checkpoints in $1, oldest first, as NUL-terminated paths. The rule (the plugin applies the
# same one for AUTO_RESUME_CHECKPOINT): a direct subdirectory holding a regular file named COMPLETE;
# ordered by COMPLETE's modification time (nanoseconds), ties by name (byte order). Like the plugin
# (std::filesystem + stat(2)), entries are seen through symlinks: find -L.
list_complete() {
  { find -L "$1" -mindepth 2 -maxdepth 2 -name COMPLETE -type f -printf '%T@\t%h\0' 2>/dev/null || true; } |
    LC_ALL=C sort -z -t $'\t' -k1,1n -k2 | cut -z -f2-
}

# Loads the checkpoint $1 into step/sum/attempts. On failure returns 1 with the reason in load_err.
load_err=''
load_checkpoint() {
  local ck=$1 line s='' m='' a='' have_a=0 name
  if [[ ! -d $ck ]]; then
    load_err='no such directory'
    return 1
  fi
  if [[ ! -f $ck/COMPLETE ]]; then
    load_err='no COMPLETE marker (an incomplete checkpoint)'
    return 1
  fi
  if [[ ! -f $ck/state || ! -r $ck/state ]]; then
    load_err='no readable state file'
    return 1
  fi
  while IFS= read -r line || [[ -n $line ]]; do
    case $line in
      '' | '#'*) ;;
      step=*) s=${line#step=} ;;
      sum=*) m=${line#sum=} ;;
      attempts=*) a=${line#attempts=} have_a=1 ;;
      *)
        load_err="unexpected line in state: '${line:0:60}'"
        return 1
        ;;
    esac
  done <"$ck/state"
  if ! [[ $s =~ ^[0-9]{1,18}$ && $m =~ ^[0-9]{1,18}$ ]] || ((!have_a)) ||
    ! [[ $a =~ ^((standalone|[0-9]+)(,(standalone|[0-9]+))*)?$ ]]; then
    load_err='state is corrupt (needs step=, sum= and attempts= lines)'
    return 1
  fi
  name=${ck##*/}
  if [[ $name =~ ^step-([0-9]+)$ ]] && ((10#${BASH_REMATCH[1]} != 10#$s)); then
    load_err="state says step=$s but the directory is $name"
    return 1
  fi
  step=$((10#$s)) sum=$((10#$m)) attempts=$a
}

# Writes the checkpoint for the current step: state into a temp dir, fsync, rename into place, then
# COMPLETE last. A kill at any point leaves either no new checkpoint or a complete one.
written=''
write_checkpoint() {
  local name tmp final old=''
  printf -v name 'step-%08d' "$step"
  tmp=$ckdir/.tmp-$name-$$
  final=$ckdir/$name
  rm -rf -- "$tmp"
  mkdir -- "$tmp"
  printf '# train.sh checkpoint\nstep=%d\nsum=%d\nattempts=%s\n' "$step" "$sum" "$attempts" >"$tmp/state"
  sync -- "$tmp/state" "$tmp"
  if [[ -e $final || -L $final ]]; then
    # Left by an earlier attempt (normally an incomplete one that crashed before COMPLETE): move it
    # aside, un-completed first so that it never counts as a checkpoint under its temp name.
    old=$ckdir/.tmp-old-$name-$$
    rm -rf -- "$old"
    if [[ -d $final && ! -L $final ]]; then rm -f -- "$final/COMPLETE"; fi
    mv -T -- "$final" "$old"
  fi
  mv -T -- "$tmp" "$final"
  sync -- "$ckdir"
  printf 'step=%d\n' "$step" >"$final/COMPLETE"
  sync -- "$final/COMPLETE" "$final"
  if [[ -n $old ]]; then rm -rf -- "$old"; fi
  written=$final
}

# Deletes our oldest complete checkpoints beyond --keep (never the one just written; only real
# step-* directories, so a user's own checkpoints and symlinks are left alone), temp dirs older than
# a minute and incomplete step-* dirs older than a minute (left by kills).
prune() {
  local -a cks=() ours=()
  local ck i d
  mapfile -d '' -t cks < <(list_complete "$ckdir")
  for ck in "${cks[@]}"; do
    if [[ ${ck##*/} =~ ^step-[0-9]+$ && ! -L $ck ]]; then ours+=("$ck"); fi
  done
  for ((i = 0; i < ${#ours[@]} - keep; i++)); do
    ck=${ours[i]}
    [[ $ck != "$written" ]] || continue
    rm -f -- "$ck/COMPLETE" # no longer a checkpoint, even if the delete below is cut short
    d=$ckdir/.tmp-del-${ck##*/}-$$
    rm -rf -- "$d"
    mv -T -- "$ck" "$d"
    rm -rf -- "$d"
  done
  while IFS= read -r -d '' d; do
    if [[ ${d##*/} == step-* && -e $d/COMPLETE ]]; then continue; fi
    rm -rf -- "$d"
  done < <(find "$ckdir" -mindepth 1 -maxdepth 1 -type d \( -name '.tmp-*' -o -name 'step-*' \) \
    -mmin +1 -print0 2>/dev/null || true)
}

write_result() {
  local tmp=$result.tmp.$$
  printf '%s\n' "$1" >"$tmp"
  sync -- "$tmp"
  mv -fT -- "$tmp" "$result"
  sync -- "$(dirname -- "$result")"
}

finish() {
  local expected=$((steps * (steps + 1) / 2)) res=OK line
  if ((step > steps)); then
    printf 'train: error: the checkpoint is at step %d, beyond --steps %d\n' "$step" "$steps" >&2
  fi
  if ((step != steps || sum != expected)); then res=BAD; fi
  line="train: done steps=$steps sum=$sum expected=$expected attempts=${attempts:-none} result=$res"
  say "$line"
  if ((have_result && writer)); then write_result "$line"; fi
  [[ $res == OK ]] || exit 1
  exit 0
}

started=0 saved=0
# shellcheck disable=SC2317 # also called from the ERR trap
stop_if_signalled() {
  if [[ -n $caught ]]; then
    if ((started)); then
      say "train: caught SIG$caught; exiting at step $saved (its checkpoint is written)"
    else
      say "train: caught SIG$caught before starting; exiting"
    fi
    if [[ $caught == TERM ]]; then exit 143; else exit 130; fi
  fi
}

# ------------------------------------------------------------------------------------------- start
step=0 sum=0 attempts='' from=scratch
# Rank 0 refuses to start over from a checkpoint it cannot load (exit 3). A follower (rank > 0) may
# simply have lost a race with rank 0's pruning, on another node: it warns and follows the newest
# checkpoint there is instead, so that it never fails the step for that.
cannot_load() {
  if ((writer)); then die 3 "$1: $load_err; refusing to start over"; fi
  printf 'train: rank %s: warning: %s: %s; following the newest checkpoint instead\n' \
    "$SLURM_PROCID" "$1" "$load_err" >&2
  load_newest || step=0 sum=0 attempts='' from=scratch
}
newest=''
load_newest() {
  local ck
  newest=''
  while IFS= read -r -d '' ck; do newest=$ck; done < <(list_complete "$ckdir")
  if [[ -z $newest ]]; then return 0; fi
  load_checkpoint "$newest" || return 1
  from=$newest
}
if [[ -n ${AUTO_RESUME_CHECKPOINT:-} ]]; then
  if load_checkpoint "$AUTO_RESUME_CHECKPOINT"; then
    from=$AUTO_RESUME_CHECKPOINT
  else
    cannot_load "AUTO_RESUME_CHECKPOINT=$AUTO_RESUME_CHECKPOINT"
  fi
elif ! load_newest; then
  cannot_load "newest checkpoint $newest"
fi

stop_if_signalled # the scan above may have been cut short by the signal
started=1 saved=$step
if ((!writer)); then
  printf 'train: rank %s: following rank 0, which writes the checkpoints\n' "$SLURM_PROCID"
fi
say "train: attempt $attempt: starting at step $step from $from"
if [[ -n ${AUTO_RESUME_ATTEMPT+x} ]]; then say "train: AUTO_RESUME_ATTEMPT=${AUTO_RESUME_ATTEMPT//$'\n'/ }"; fi
if [[ -n ${AUTO_RESUME_LAST_REASON+x} ]]; then say "train: AUTO_RESUME_LAST_REASON=${AUTO_RESUME_LAST_REASON//$'\n'/ }"; fi

contributed=0
while ((step < steps)); do
  stop_if_signalled
  sleep "$step_seconds" &
  sleep_pid=$!
  wait "$sleep_pid" || true # returns early when a trapped signal arrives
  if [[ -n $caught ]]; then
    kill "$sleep_pid" 2>/dev/null || true
    stop_if_signalled
  fi
  step=$((step + 1))
  sum=$((sum + step))
  if ((!contributed)); then
    attempts=${attempts:+$attempts,}$attempt_tag
    contributed=1
  fi
  if ((writer)); then
    # In a subshell that ignores SIGTERM/SIGINT, as do the commands it runs (ignored signals are
    # inherited), so that a signal sent to the whole step cannot cut a write short; the main shell
    # notes it and stops after this step. Should the signal land before the subshell ignores it,
    # the subshell dies before writing anything, bash's own "Terminated" notice is discarded
    # (2>/dev/null, while the subshell's stderr stays on fd 3) and on_err stops as planned.
    { (
      exec 2>&3 3>&-
      trap '' TERM INT
      write_checkpoint
      prune
    ); } 3>&2 2>/dev/null
  fi
  saved=$step
  say "train: step $step"
done
stop_if_signalled
finish
