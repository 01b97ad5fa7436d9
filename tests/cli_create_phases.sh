# GPUFEED_LOG=debug shows where gf_loader_create's time goes: one line with
# its phases (source, sizing, stage, slots, workers) as ms since create
# began, in order, and each worker's read buffer made ready (its pages and
# its registration) on the worker's own thread; the default level shows
# neither, and --json's create_ms is still there.
# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

gf 0 synth "$T/png" --count 16 --size 8x8 --classes 2 --quiet || finish
gf 0 build "$T/png" "$T/ds" --quiet || finish
bench=(bench "$T/ds" --device cpu --batch 4 --threads 3 --epochs 1 --quiet)
if GPUFEED_LOG=debug gf 0 "${bench[@]}"; then
  has err "create: source "
  line=$(grep "create: source " "$T/err" | head -n 1)
  [ "$(grep -c "create: source " "$T/err")" -eq 1 ] ||
    fail "not one create phases line"
  # The five phases in order, each a number of ms not below the one before.
  nums=$(printf '%s\n' "$line" |
    sed -n 's/.*source \([0-9.]*\) ms, sizing \([0-9.]*\), stage \([0-9.]*\), slots \([0-9.]*\), workers \([0-9.]*\) (ms since create began.*/\1 \2 \3 \4 \5/p')
  [ -n "$nums" ] || fail "phases line not as expected: $line"
  awk -v s="$nums" 'BEGIN { n = split(s, a, " ");
    if (n != 5) exit 1;
    for (i = 2; i <= n; i++) if (a[i] + 0 < a[i - 1] + 0) exit 1 }' ||
    fail "phases not in order: $nums"
  has err "3 workers"
  [ "$(grep -c "read buffer of [0-9]* bytes ready in" "$T/err")" -eq 3 ] ||
    fail "not one read buffer line per worker"
fi
if gf 0 "${bench[@]}"; then
  hasnt err "create: source "
fi
gf 0 "${bench[@]}" --json && has out '"create_ms":'
finish
