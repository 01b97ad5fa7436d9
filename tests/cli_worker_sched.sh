# bench --worker-sched batch|normal reaches the loader: while bench runs,
# its decode workers are SCHED_BATCH threads by default and with batch,
# none with normal (read from /proc, policy 3 is SCHED_BATCH). The
# variable GPUFEED_WORKER_SCHED, which set it before the option existed,
# is not read any more. --json names the policy.
# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

[ -r /proc/self/task/$$/stat ] || skip "no /proc/PID/task"
gf 0 synth "$T/png" --count 24 --size 12x10 --classes 3 --quiet || finish
gf 0 build "$T/png" "$T/ds" --quiet || finish

# run WANT ARGS...: runs bench with ARGS in the background and samples its
# threads' policies until it ends; then checks the most SCHED_BATCH threads
# seen at once against WANT (batch: at least 2, the workers; normal: 0),
# and that the sampling saw the workers at all (3 threads or more).
run() {
  local want=$1
  shift
  "$GPUFEED" bench "$T/ds" --device cpu --threads 2 --batch 4 --epochs 6 \
    --step-ms 20 --quiet --json "$@" >"$T/out" 2>"$T/err" &
  local pid=$! most=0 threads=0
  while kill -0 "$pid" 2>/dev/null; do
    local n=0 t=0 f
    for f in /proc/"$pid"/task/*/stat; do
      # Field 41, the policy; the fields after the command's ')' start at 3.
      p=$(sed 's/^.*) //' "$f" 2>/dev/null | awk '{print $39}')
      [ -n "$p" ] || continue
      t=$((t + 1))
      [ "$p" = 3 ] && n=$((n + 1))
    done
    [ "$n" -gt "$most" ] && most=$n
    [ "$t" -gt "$threads" ] && threads=$t
    sleep 0.01
  done
  wait "$pid" || fail "bench $*: exit $?: $(cat "$T/err")"
  [ "$threads" -ge 3 ] || fail "bench $*: saw $threads threads, not the workers"
  case "$want" in
    batch) [ "$most" -ge 2 ] || fail "bench $*: $most SCHED_BATCH threads, wanted the 2 workers" ;;
    normal) [ "$most" = 0 ] || fail "bench $*: $most SCHED_BATCH threads, wanted none" ;;
  esac
  echo "bench $*: at most $most of $threads threads SCHED_BATCH"
}
run batch
has out '"worker_sched":"batch"'
run batch --worker-sched batch
run normal --worker-sched normal
has out '"worker_sched":"normal"'
GPUFEED_WORKER_SCHED=normal run batch
GPUFEED_WORKER_SCHED=batch run normal --worker-sched normal
finish
