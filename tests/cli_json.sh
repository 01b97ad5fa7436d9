# The CLI's JSON (inspect --json, bench --json) is JSON that Python's json
# module accepts whatever bytes the class names and paths hold: valid
# UTF-8 passes through, control characters are escaped, and each byte of
# an invalid UTF-8 sequence becomes \udcXX (Python's surrogateescape, so
# os.fsencode gives the exact bytes back).
# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || skip "no /usr/bin/python3"

gf 0 inspect --help && has out '\udcXX'
gf 0 bench --help && has out "escaped"
gf 0 synth "$T/gen" --count 3 --size 8x8 --classes 1 --quiet || finish
mkdir -p "$T/src"
# Class names (and file names) with every kind of byte sequence.
names=(
  'caf\xc3\xa9'            # valid 2-byte UTF-8
  'emoji\xf0\x9f\x98\x80'  # valid 4-byte UTF-8
  'bad\xff\xfe'            # bytes that never start UTF-8
  'ctl\x01\x1f\x7f'        # control characters and DEL
  'sur\xed\xa0\x80'        # an encoded surrogate (invalid UTF-8)
  'over\xc0\xaf'           # an overlong encoding
  'trunc\xe2\x82'          # a sequence cut short
  'late\xe2\x82A'          # ... followed by ASCII
  'big\xf4\x90\x80\x80'    # above U+10FFFF
  'quote"back\\slash'      # JSON's own specials
  'tab\tnl\ncr\r'          # escaped as \t \n \r
)
for n in "${names[@]}"; do
  d="$T/src/$(printf "$n")"
  mkdir -p "$d"
  cp "$T/gen/class_000/img_000000.png" "$d/$(printf 'x\xff\x01').png"
  cp "$T/gen/class_000/img_000001.png" "$d/$(printf 'ok\xc3\xa9').png"
done
gf 0 build "$T/src" "$T/ds" --quiet || finish

# check.py JSONFILE SRC: the file is JSON; every class name and source
# path in it, os.fsencode'd, is a name that exists under SRC.
cat >"$T/check.py" <<'PYEOF'
import json, os, sys
doc = json.load(open(sys.argv[1], encoding="utf-8"))
src = os.fsencode(sys.argv[2])
want = set(os.listdir(src))
if "classes" in doc:
    got = [os.fsencode(n) for n in doc["classes"]["names"]]
    if len(got) != min(len(want), 10) or not set(got) <= want:
        sys.exit("class names differ: %r vs %r" % (got, sorted(want)))
    for r in doc.get("records", []):
        p = os.fsencode(r["source"])
        if not os.path.isfile(os.path.join(src, p)):
            sys.exit("record source %r is not a file under the source" % p)
    print(len(got), len(doc.get("records", [])))
else:
    if os.fsencode(doc["source"]) != src:
        sys.exit("source %r is not %r" % (doc["source"], src))
    print("source ok")
PYEOF
if gf 0 inspect "$T/ds" --json --samples 100; then
  cp "$T/out" "$T/inspect.json"
  "$PY" "$T/check.py" "$T/inspect.json" "$T/src" >"$T/py.out" 2>&1 ||
    fail "inspect --json: $(cat "$T/py.out")"
  grep -qx "10 22" "$T/py.out" || fail "inspect --json: $(cat "$T/py.out")"
  # The scheme itself, on known bytes.

  grep -qF '"bad\udcff\udcfe"' "$T/out" || fail "\\xff\\xfe not \\udcff\\udcfe"
  grep -qF '"sur\udced\udca0\udc80"' "$T/out" || fail "surrogate bytes not escaped"
  grep -qF '"ctl\u0001\u001f' "$T/out" || fail "control bytes not escaped"
  grep -qF '"over\udcc0\udcaf"' "$T/out" || fail "overlong not escaped"
  grep -qF '"late\udce2\udc82A"' "$T/out" || fail "cut sequence not escaped"
  grep -qF "$(printf '"caf\xc3\xa9"')" "$T/out" || fail "valid UTF-8 not passed through"
fi
# More than ten classes: the names are cut at ten; all records still load.

# bench --json: the source path is escaped the same way.
bad="$T/$(printf 'd\xffs\x02')"
mv "$T/ds" "$bad"
if gf 0 bench "$bad" --device cpu --batch 2 --epochs 1 --json --quiet; then
  cp "$T/out" "$T/bench.json"
  "$PY" "$T/check.py" "$T/bench.json" "$bad" >"$T/py.out" 2>&1 ||
    fail "bench --json: $(cat "$T/py.out")"
fi
finish
