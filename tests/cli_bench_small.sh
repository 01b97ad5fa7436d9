# gpufeed bench drops each epoch's last partial batch: --help says so, and
# a source smaller than one batch (which once answered only "rank 0 of 1
# gets no batch") is refused with the reason and the way out (--batch).
# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

gf 0 bench --help && has out "partial batch"
gf 0 synth "$T/png" --count 12 --size 8x8 --classes 2 --quiet || finish
gf 0 build "$T/png" "$T/ds" --quiet || finish
for src in "$T/ds" "$T/png"; do
  if gf 1 bench "$src" --device cpu --epochs 1 --quiet; then
    has err "$src"
    has err "12 samples"
    has err "drops the last partial batch"
    has err "--batch 12"
    [ "$(wc -l <"$T/err")" -eq 1 ] || fail "bench $src: not one line"
  fi
  gf 1 bench "$src" --device cpu --epochs 1 --batch 13 --quiet &&
    has err "--batch 12"
  # One sample short of two batches: the run delivers one.
  gf 0 bench "$src" --device cpu --epochs 1 --batch 7 --quiet --json &&
    has out '"images":7'
done
# Other errors get no such hint, on a source smaller than a batch too.
gf 1 bench "$T/nope" --device cpu --quiet && hasnt err "partial batch"
gf 2 bench "$T/ds" --device cpu --worker-sched bogus --quiet &&
  has err "--worker-sched" && hasnt err "partial batch"
finish
