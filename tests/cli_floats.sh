# Floating-point options refuse NaN and infinities: `bench --step-ms nan`
# once passed the range check and spun forever in the sleep loop (an
# invalid time retried), deaf to SIGINT. Each run is bounded by `timeout`
# so a hang fails the test instead of stalling it.
# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"
command -v timeout >/dev/null || skip "no timeout(1)"

gf 0 synth "$T/png" --count 8 --size 8x8 --classes 2 --quiet || finish
gf 0 build "$T/png" "$T/ds" --quiet || finish

# bounded WANT ARGS...: gf with a 20 s bound (exit 124 when it hangs).
bounded() {
  local want=$1
  shift
  timeout -s KILL 20 "$GPUFEED" "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  if [ "$rc" != "$want" ]; then
    fail "gpufeed $*: exit $rc, wanted $want$([ "$rc" = 137 ] && echo ' (hung)')"
    sed 's/^/  err| /' "$T/err" >&2
    return 1
  fi
  return 0
}

for v in nan -nan NaN +nan inf -inf +inf Infinity -infinity 1e999 -1e999 \
         0x1p99999 nan\(1\) 1e6x " 5" ""; do
  for form in sep eq; do
    if [ $form = sep ]; then
      args=(--step-ms "$v")
    else
      args=("--step-ms=$v")
    fi
    if bounded 2 bench "$T/ds" --device cpu --batch 2 --epochs 1 \
         --quiet "${args[@]}"; then
      has err "--step-ms"
      has err "expected a finite number"
      [ "$(wc -l <"$T/err")" -eq 1 ] || fail "--step-ms '$v': not one line"
    fi
  done
done
# Finite values still run (and a tiny step sleeps, not spins).
bounded 0 bench "$T/ds" --device cpu --batch 2 --epochs 1 --quiet \
  --step-ms 0.5 --json && has out '"step_ms":0.500'
bounded 0 bench "$T/ds" --device cpu --batch 2 --epochs 1 --quiet \
  --step-ms 1e-3 --json && has out '"images":8'
bounded 0 bench "$T/ds" --device cpu --batch 2 --epochs 1 --quiet \
  --step-ms 0 --json
bounded 2 bench "$T/ds" --device cpu --step-ms 1000001 &&
  has err "--step-ms"
bounded 2 bench "$T/ds" --device cpu --step-ms -0.5 && has err "--step-ms"
finish
