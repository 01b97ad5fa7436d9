#!/usr/bin/env bash
# The C sampler against tests/sampler_ref.py (written from sampler.h's
# description alone) over random configurations of every order, partition
# and world size, resumed epochs included: the same batch counts and the
# same samples, position by position.
set -u
dump=$GPUFEED_BINARY_DIR/tests/sampler_dump
ref=$GPUFEED_SOURCE_DIR/tests/sampler_ref.py
py=/usr/bin/python3
[ -x "$py" ] || { echo "skip: no /usr/bin/python3"; exit 77; }
fails=0
runs=0
seed=${GPUFEED_TEST_SEED:-12345}
while read -r args; do
  a=$("$dump" $args) || { echo "sampler_dump failed: $args"; fails=$((fails+1)); continue; }
  b=$("$py" "$ref" $args) || { echo "sampler_ref.py failed: $args"; fails=$((fails+1)); continue; }
  runs=$((runs+1))
  if [ "$a" != "$b" ]; then
    echo "differ: $args"; echo " C:  $a" | head -c 400; echo; echo " py: $b" | head -c 400; echo
    fails=$((fails+1))
  fi
done < <("$py" - "$seed" <<'PY'
import random, sys
r = random.Random(int(sys.argv[1]))
for t in range(160):
    n = r.choice([1, 2, 7, 50, 333, 1000, 4099, r.randint(1, 20000)])
    world = r.choice([1, 1, 2, 3, 4, 7, 8])
    rank = r.randrange(world)
    order = r.choice([0, 1, 2, 2, 2])
    bs = r.randint(1, 40)
    W = r.randint(1, 9)
    batch = r.randint(1, 64)
    part = r.randint(0, 1)
    drop = r.randint(0, 1)
    epoch = r.randint(0, 4)
    seed = r.randrange(1 << 62)
    count = r.randint(1, 300)
    extra = ""
    if r.random() < 0.35 and n > 1:
        start = r.randint(1, n - 1)
        ow = r.choice([1, 2, 3, 5, world])
        extra = f" {start} {ow}"
    if order != 2:
        bs, W = 0, 0
    print(f"{n} {seed} {epoch} {order} {rank} {world} {batch} {part} {drop} {bs} {W} {count}{extra}")
PY
)
echo "$runs configurations compared, $fails differ"
[ "$fails" = 0 ] && [ "$runs" -ge 150 ]
