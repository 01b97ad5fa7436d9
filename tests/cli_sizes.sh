# `gpufeed synth --sizes LO-HI` writes images whose sides are each within
# [LO, HI] and vary (the same files whatever the thread count), and
# `gpufeed inspect` shows the dataset's size histogram: min / median / max
# of height and width, and shorter / longer sides by buckets, in text and
# in --json, matching the PNG headers' own sizes.
# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || skip "no $PY for the JSON checks"

gf 0 synth --help && has out "--sizes LO-HI"
gf 0 synth "$T/a" --count 60 --sizes 17-41 --seed 5 --threads 3 || finish
has out "varied-size (sides 17-41)"
gf 0 synth "$T/b" --count 60 --sizes 17-41 --seed 5 --threads 1 --quiet ||
  finish
diff -r "$T/a" "$T/b" >/dev/null || fail "--sizes: thread count changed files"
gf 0 synth "$T/c" --count 60 --sizes 17-41 --seed 6 --quiet || finish
diff -r "$T/a" "$T/c" >/dev/null && fail "--sizes: the seed changed nothing"
# Usage errors: a reversed or empty range, with --size.
gf 2 synth "$T/x" --count 3 --sizes 41-17 && has err "--sizes"
gf 2 synth "$T/x" --count 3 --sizes 0-5 && has err "--sizes"
gf 2 synth "$T/x" --count 3 --sizes 5- && has err "--sizes"
gf 2 synth "$T/x" --count 3 --sizes 5-9 --size 8 && has err "exclude"
# Photo crops: every photo must hold the largest size.
mkdir -p "$T/photos"
gf 0 synth "$T/p" --count 2 --size 50x60 --classes 1 --quiet &&
  cp "$T/p"/class_000/*.png "$T/photos/"
gf 0 synth "$T/crops" --count 20 --sizes 10-50 --from "$T/photos" --quiet
gf 1 synth "$T/crops2" --count 20 --sizes 10-51 --from "$T/photos" --quiet &&
  has err "smaller than"

gf 0 build "$T/a" "$T/ds" --codec png --quiet || finish
gf 0 inspect "$T/ds" && has out "sizes      height" && has out "shorter"
cp "$T/out" "$T/inspect.txt"
gf 0 inspect "$T/ds" --json || finish
"$PY" - "$T/a" "$T/out" "$T/inspect.txt" <<'PYEOF' || fail "size histogram"
import glob, json, struct, sys
folder, js, txt = sys.argv[1:4]
hw = []
for f in glob.glob(folder + "/*/*.png"):
    with open(f, "rb") as fp:
        h = fp.read(24)
    w_, h_ = struct.unpack(">II", h[16:24])
    hw.append((h_, w_))
n = len(hw)
assert n == 60, n
hs = sorted(h for h, _ in hw)
ws = sorted(w for _, w in hw)
for v in hs + ws:
    assert 17 <= v <= 41, v
assert len(set(hw)) > 20, "sizes do not vary"
med = lambda a: a[(len(a) - 1) // 2]
z = json.load(open(js))["sizes"]
want = {"height": {"min": hs[0], "median": med(hs), "max": hs[-1]},
        "width": {"min": ws[0], "median": med(ws), "max": ws[-1]}}
assert z["height"] == want["height"], (z["height"], want["height"])
assert z["width"] == want["width"], (z["width"], want["width"])
b = z["buckets"]
assert 1 <= len(b) <= 8, b
assert b[0]["lo"] == min(hs[0], ws[0]) and b[-1]["hi"] == max(hs[-1], ws[-1]), b
for k in range(1, len(b)):
    assert b[k]["lo"] == b[k - 1]["hi"] + 1, b
for key, pick in (("shorter", min), ("longer", max)):
    for e in b:
        cnt = sum(1 for p in hw if e["lo"] <= pick(p) <= e["hi"])
        assert e[key] == cnt, (key, e, cnt)
    assert sum(e[key] for e in b) == n
t = open(txt).read()
line = "height %d / %d / %d, width %d / %d / %d" % (
    hs[0], med(hs), hs[-1], ws[0], med(ws), ws[-1])
assert line in t, (line, t)
PYEOF
# A dataset of one size: min = median = max, no bucket table.
gf 0 synth "$T/u" --count 5 --size 9x7 --quiet &&
  gf 0 build "$T/u" "$T/uds" --quiet && gf 0 inspect "$T/uds" &&
  has out "height 9 / 9 / 9, width 7 / 7 / 7" && hasnt out "shorter"
finish
