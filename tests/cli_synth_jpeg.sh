# `gpufeed synth --format jpeg` writes .jpg files of the requested sizes
# (fixed and --sizes; the SOF headers read back here) that gpufeed decodes
# (synth --from decodes every photo it loads), the same files whatever the
# thread count, smaller at a lower --quality; its usage errors.
# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || skip "no $PY to read the JPEG headers"

# sof_sizes FOLDER: "HxW" of every .jpg under FOLDER, one a line, from the
# SOF marker; fails on a file without one or a .png among them.
sof_sizes() {
  "$PY" - "$1" <<'PYEOF'
import glob, struct, sys
files = sorted(glob.glob(sys.argv[1] + "/*/*"))
assert files, "no files"
for f in files:
    assert f.endswith(".jpg"), f
    d = open(f, "rb").read()
    assert d[:2] == b"\xff\xd8" and d[-2:] == b"\xff\xd9", f
    k = 2
    while True:
        assert d[k] == 0xFF, (f, k)
        m = d[k + 1]
        n = struct.unpack(">H", d[k + 2:k + 4])[0]
        if m == 0xC0:  # baseline
            h, w = struct.unpack(">HH", d[k + 5:k + 9])
            print("%dx%d" % (h, w))
            break
        assert m not in (0xC1, 0xC2, 0xDA), (f, hex(m))
        k += 2 + n
PYEOF
}

gf 0 synth --help && has out "--format F" && has out "--quality Q"
# Fixed size.
gf 0 synth "$T/f" --count 6 --size 30x20 --format jpeg --quiet || finish
sizes=$(sof_sizes "$T/f") || fail "fixed size: no readable JPEG headers"
[ "$(sort -u <<<"$sizes")" = "30x20" ] || fail "fixed size: $sizes"
[ "$(wc -l <<<"$sizes")" -eq 6 ] || fail "fixed size: not 6 files"
# Varied sizes, any thread count, quality 75.
gf 0 synth "$T/a" --count 40 --sizes 17-41 --format jpeg --quality 75 \
  --seed 3 --threads 3 || finish
has out "of JPEG"
gf 0 synth "$T/b" --count 40 --sizes 17-41 --format jpeg --quality 75 \
  --seed 3 --threads 1 --quiet || finish
diff -r "$T/a" "$T/b" >/dev/null || fail "jpeg: thread count changed files"
sizes=$(sof_sizes "$T/a") || fail "--sizes: no readable JPEG headers"
[ "$(wc -l <<<"$sizes")" -eq 40 ] || fail "--sizes: not 40 files"
while IFS=x read -r h w; do
  { [ "$h" -ge 17 ] && [ "$h" -le 41 ] && [ "$w" -ge 17 ] && [ "$w" -le 41 ]; } ||
    fail "--sizes 17-41: an image of ${h}x${w}"
done <<<"$sizes"
[ "$(sort -u <<<"$sizes" | wc -l)" -gt 20 ] || fail "--sizes: sizes do not vary"
# gpufeed decodes them all: synth --from loads (decodes) every photo of a
# folder, and each holds a 17x17 crop.
for d in "$T/a"/class_*; do
  gf 0 synth "$T/from/$(basename "$d")" --count 3 --size 17x17 --from "$d" \
    --quiet || fail "synth --from $d: the JPEGs did not decode"
done
# A lower quality makes smaller files.
gf 0 synth "$T/q30" --count 40 --sizes 17-41 --format jpeg --quality 30 \
  --seed 3 --quiet || finish
s75=$(du -sb "$T/a" | cut -f1)
s30=$(du -sb "$T/q30" | cut -f1)
[ "$s30" -lt "$s75" ] || fail "quality 30 ($s30 bytes) not below 75 ($s75)"
# The default stays PNG.
gf 0 synth "$T/p" --count 2 --quiet && ls "$T/p"/class_000/img_000000.png \
  >/dev/null || fail "the default format is not png"
# A damaged JPEG among the photos: refused naming it.
mkdir -p "$T/bad"
cp "$T/f"/class_000/img_000000.jpg "$T/bad/good.jpg"
head -c 300 "$T/f"/class_001/img_000001.jpg >"$T/bad/cut.jpeg"
gf 1 synth "$T/x" --count 2 --size 8x8 --from "$T/bad" &&
  has err "cut.jpeg" && has err "JPEG"
# Usage errors.
gf 2 synth "$T/x" --count 2 --format webp && has err "png or jpeg"
gf 2 synth "$T/x" --count 2 --format jpeg --quality 0 && has err "--quality"
gf 2 synth "$T/x" --count 2 --format jpeg --quality 101 && has err "--quality"
gf 2 synth "$T/x" --count 2 --quality 50 && has err "--format jpeg only"
finish
