# `gpufeed build SRC OUT --format wds`: an image folder written as
# WebDataset tar shards, read back with Python's tarfile (the standard
# library's, /usr/bin/python3) and compared with what the default build
# and `inspect` say of the same folder: sample i is the same file (sha256)
# with the same label in KEY.cls; member names KEY.EXT (extension
# lower-cased, other dots of the name made '_', taken keys given _1),
# adjacent, in one shard; tar headers (mode 0644, mtime 0, owner 0, no
# names); the split (a shard ends where the next sample would pass
# --shard-size); byte-identical output for any thread count; a labels
# file; --skip-bad skipping what the default build skips; shards already
# in OUT refused without --force and replaced with it; --json; no
# temporary file left, and no shard of a failed or interrupted build
# (SIGINT: exit 130); usage errors. With the webdataset package importable
# by GPUFEED_WDS_PYTHON (default python3), webdataset.WebDataset reads the
# shards too.
# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

PY=/usr/bin/python3
[ -x "$PY" ] || skip "$PY (Python's standard library tarfile) not found"
gf 0 build --help
for t in "--format F" "wds" "KEY.cls" "--json"; do
  has out "$t"
done

# The checker: shards of OUT against the sources, in the order and with
# the labels of a default build's records (inspect --json --samples).
cat >"$T/check.py" <<'EOF'
import hashlib, json, os, sys, tarfile

out, src, records, limit = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
classes_rule = len(sys.argv) > 5 and sys.argv[5] == "imagefolder"
recs = json.load(open(records))["records"]
bad = []

def kind(path):
    head = open(path, "rb").read(8)
    return "png" if head.startswith(b"\x89PNG") else "jpg"

def want_key(rel, taken):
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    base = parts[-1]
    stem, dot, ext = base.rpartition(".")
    if dot and ext.lower() in ("png", "jpg", "jpeg"):
        field = ext.lower()
    else:
        stem, field = base, kind(os.path.join(src, rel))
    stem = stem.replace(".", "_") or "_"
    key = "/".join(parts[:-1] + [stem])
    k, n = key, 0
    while k in taken:
        n += 1
        k = "%s_%d" % (key, n)
    taken.add(k)
    return k, field

taken = set()
want = []
for r in recs:
    key, field = want_key(r["source"], taken)
    data = open(os.path.join(src, r["source"]), "rb").read()
    want.append((key, field, hashlib.sha256(data).hexdigest(), r["label"], r["source"]))

names = sorted(n for n in os.listdir(out) if not n.startswith("."))
others = [n for n in os.listdir(out) if n.startswith(".")]
if others:
    bad.append("left in OUT: %s" % others)
expect_names = ["shard-%06d.tar" % i for i in range(len(names))]
if names != expect_names:
    bad.append("shard names %s" % names)

got = []          # (key, field, sha, cls, shard)
spans = []        # per shard: [(start, end)] of each sample
sizes = []
for si, name in enumerate(names):
    path = os.path.join(out, name)
    size = os.path.getsize(path)
    sizes.append(size)
    if size % 10240:
        bad.append("%s: %d bytes, not a multiple of 10240" % (name, size))
    members = []
    with tarfile.open(path) as t:
        for m in t:
            if not m.isreg():
                bad.append("%s: %s is not a regular file" % (name, m.name))
            if (m.mode, m.mtime, m.uid, m.gid, m.uname, m.gname) != (0o644, 0, 0, 0, "", ""):
                bad.append("%s: %s header %o %d %d %d %r %r" % (name, m.name, m.mode,
                           m.mtime, m.uid, m.gid, m.uname, m.gname))
            members.append((m.name, m.offset, m.offset_data, m.size,
                            t.extractfile(m).read()))
    # Samples: runs of adjacent members with one key (webdataset's rule).
    samples = []
    for n, off, doff, sz, data in members:
        d = n.rfind("/") + 1
        dot = n.find(".", d)
        key, field = n[:dot], n[dot + 1:]
        if not samples or samples[-1][0] != key:
            samples.append([key, {}, off, 0])
        if field in samples[-1][1]:
            bad.append("%s: field %s twice in %s" % (name, field, key))
        samples[-1][1][field] = data
        samples[-1][3] = doff + (sz + 511) // 512 * 512
    spans.append([(s[2], s[3]) for s in samples])
    if samples and size != (samples[-1][3] + 1024 + 10239) // 10240 * 10240:
        bad.append("%s: %d bytes; its members end at %d" % (name, size, samples[-1][3]))
    if size > limit and len(samples) != 1:
        bad.append("%s: %d bytes, over %d with %d samples" % (name, size, limit, len(samples)))
    for key, fields, _, _ in samples:
        img = [f for f in fields if f != "cls"]
        if len(img) != 1 or "cls" not in fields or len(fields) != 2:
            bad.append("%s: sample %s has fields %s" % (name, key, sorted(fields)))
            continue
        got.append((key, img[0], hashlib.sha256(fields[img[0]]).hexdigest(),
                    fields["cls"].decode("ascii"), si))
# The split: each shard ends because the next sample would pass the limit.
for si in range(len(spans) - 1):
    used = spans[si][-1][1]
    start, end = spans[si + 1][0]
    if (used + (end - start) + 1024 + 10239) // 10240 * 10240 <= limit:
        bad.append("shard %d closed though the next sample (%d bytes) fit" % (si, end - start))

if len(got) != len(want):
    bad.append("%d samples in the shards, %d records" % (len(got), len(want)))
for i, (g, w) in enumerate(zip(got, want)):
    if g[0] != w[0] or g[1] != w[1]:
        bad.append("sample %d: %s.%s, wanted %s.%s (from %s)" % (i, g[0], g[1], w[0], w[1], w[4]))
    if g[2] != w[2]:
        bad.append("sample %d (%s): bytes differ from %s" % (i, g[0], w[4]))
    if g[3] != str(w[3]):
        bad.append("sample %d (%s): cls %r, the record's label %d" % (i, g[0], g[3], w[3]))
    if classes_rule:
        cls = sorted(e for e in os.listdir(src) if os.path.isdir(os.path.join(src, e))
                     and not e.startswith("."))
        if g[3] != str(cls.index(w[4].split("/")[0])):
            bad.append("sample %d: cls %s is not its folder's index" % (i, g[3]))
json.dump({"keys": [g[0] for g in got], "fields": [g[1] for g in got],
           "cls": [g[3] for g in got], "sha": [g[2] for g in got],
           "shards": len(names), "per_shard": [len(s) for s in spans]},
          open(os.path.join(os.path.dirname(records), "seen.json"), "w"))
for b in bad[:20]:
    print("FAIL:", b)
print("checked %d samples in %d shards%s" % (len(got), len(names),
      "" if not bad else ", %d problems" % len(bad)))
sys.exit(1 if bad else 0)
EOF

# check OUT SRC DATASET LIMIT [imagefolder]: the shards of OUT against the
# records of the gpufeed dataset DATASET built from SRC.
check() {
  "$GPUFEED" inspect "$3" --json --samples 1000000 >"$T/records.json" ||
    fail "inspect $3"
  "$PY" "$T/check.py" "$1" "$2" "$T/records.json" "$4" "${5:-}" >"$T/check.out" 2>&1 ||
    fail "the shards of $1: $(cat "$T/check.out")"
}

# An ImageFolder: PNG files, JPEG files (.jpg, .JPG, .jpeg), a file name
# with dots, two files one key would name (x.jpg, x.png), a sub-folder.
gf 0 synth "$T/png" --count 12 --size 24x20 --classes 3 --quiet || finish
gf 0 synth "$T/jpg" --count 4 --size 16x16 --classes 1 --format jpeg --quiet ||
  finish
S="$T/src"
cp -r "$T/png" "$S"
cp "$T/jpg/class_000/img_000000.jpg" "$S/class_001/j0.jpg"
cp "$T/jpg/class_000/img_000001.jpg" "$S/class_001/a.b.JPG"
cp "$T/jpg/class_000/img_000002.jpg" "$S/class_002/x.jpeg"
cp "$T/png/class_000/img_000000.png" "$S/class_002/x.png"
mkdir "$S/class_000/sub"
cp "$T/png/class_001/img_000001.png" "$S/class_000/sub/deep.v2.png"
N=17
LIMIT=20480

gf 0 build "$S" "$T/ds" --quiet || finish
if gf 0 build "$S" "$T/w" --format wds --shard-size 20K --threads 3; then
  has out "wrote $N samples in"
  has out "WebDataset shard"
  has out "renamed keys  3"
  has out "class_001/a.b.JPG -> class_001/a_b.jpg (a '.' in the name)"
  has out "class_002/x.png -> class_002/x_1.png (the key was taken)"
  has out "class_000/sub/deep.v2.png -> class_000/sub/deep_v2.png"
fi
check "$T/w" "$S" "$T/ds" $LIMIT imagefolder
"$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d['shards'] >= 3 else 1)" \
  "$T/seen.json" || fail "expected the 20 KiB limit to give 3 shards or more"
cp "$T/seen.json" "$T/seen_main.json"

# The same build with one thread: byte-identical shards.
gf 0 build "$S" "$T/w1" --format wds --shard-size 20K --threads 1 --quiet
for f in "$T/w"/shard-*.tar; do
  cmp -s "$f" "$T/w1/$(basename "$f")" || fail "$(basename "$f") differs between builds"
done
[ "$(ls "$T/w1" | wc -l)" = "$(ls "$T/w" | wc -l)" ] || fail "shard counts differ"

# Shards already in OUT: refused without --force, OUT untouched.
sum_before=$(cat "$T/w"/shard-*.tar | sha256sum)
if gf 1 build "$S" "$T/w" --format wds; then
  has err "already holds"
  has err "--force"
fi
[ "$(cat "$T/w"/shard-*.tar | sha256sum)" = "$sum_before" ] ||
  fail "a refused build changed OUT"
# A gpufeed dataset is no place for shards.
gf 1 build "$S" "$T/ds" --format wds && has err "is a gpufeed dataset"
# --force with a larger limit: one shard, the old ones gone; --json.
if gf 0 build "$S" "$T/w" --format wds --force --json; then
  "$PY" - "$T/out" <<'EOF' || fail "the --json summary: $(cat "$T/out")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "wds" and d["samples"] == 17 and d["shards"] == 1, d
assert d["renamed_keys"]["count"] == 3 and d["renamed_keys"]["dots"] == 2, d
assert d["renamed_keys"]["taken"] == 1 and d["skipped"] == 0, d
assert len(d["renamed_keys"]["first"]) == 3 and d["classes"] == 3, d
EOF
fi
check "$T/w" "$S" "$T/ds" $((1 << 30)) imagefolder
[ "$(ls -A "$T/w")" = "shard-000000.tar" ] ||
  fail "--force left other files: $(ls -A "$T/w")"

# A labels file: a flat folder, labels of any value, a file with no
# extension (its content says png).
mkdir -p "$T/flat/sub"
cp "$T/png/class_000/img_000003.png" "$T/flat/b.png"
cp "$T/jpg/class_000/img_000003.jpg" "$T/flat/sub/c.jpg"
cp "$T/png/class_002/img_000002.png" "$T/flat/noext"
printf 'b.png 5\nsub/c.jpg -3\n./noext 123456789012\n' >"$T/labels.txt"
gf 0 build "$T/flat" "$T/flat_ds" --labels "$T/labels.txt" --quiet
gf 0 build "$T/flat" "$T/flat_out" --labels "$T/labels.txt" --format wds &&
  has out "labels from $T/labels.txt"
check "$T/flat_out" "$T/flat" "$T/flat_ds" $((1 << 30))
"$PY" -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert d['keys'] == ['b', 'sub/c', 'noext'] and d['cls'] == ['5', '-3', '123456789012'], d
assert d['fields'] == ['png', 'jpg', 'png'], d" "$T/seen.json" ||
  fail "the labels file's samples: $(cat "$T/seen.json")"

# A corrupt file: the build stops naming it (leaving nothing: OUT did
# not exist); --skip-bad skips what the default build skips.
cp -r "$S" "$T/badsrc"
printf 'not an image at all' >"$T/badsrc/class_001/broken.png"
if gf 1 build "$T/badsrc" "$T/bad_out" --format wds --threads 2; then
  has err "broken.png"
fi
[ -e "$T/bad_out" ] && fail "a failed build left OUT: $(ls -A "$T/bad_out")"
gf 0 build "$T/badsrc" "$T/bad_ds" --skip-bad --quiet
if gf 0 build "$T/badsrc" "$T/bad_out" --format wds --skip-bad --shard-size 20K; then
  has out "skipped       1"
  has out "broken.png"
fi
check "$T/bad_out" "$T/badsrc" "$T/bad_ds" $LIMIT imagefolder
# A failure after shards were written (the corrupt file last, past the
# first shards): they are removed, and OUT, which existed, stays.
mkdir "$T/late" "$T/late/zz"
cp -r "$S/class_000" "$S/class_001" "$T/late/"
printf 'junk' >"$T/late/zz/zz.png"
mkdir "$T/late_out"
if gf 1 build "$T/late" "$T/late_out" --format wds --shard-size 20K --threads 1; then
  has err "zz.png"
  has err "removed the"
fi
[ -d "$T/late_out" ] || fail "a failed build removed an OUT it did not make"
[ -z "$(ls -A "$T/late_out")" ] || fail "left in OUT: $(ls -A "$T/late_out")"

# Interrupted (SIGINT) once shards are being written: exit 130, nothing
# left (OUT was made by the build, so it is removed).
gf 0 synth "$T/many" --count 1500 --size 128x128 --classes 2 --quiet
"$GPUFEED" build "$T/many" "$T/int_out" --format wds --shard-size 200K \
  --threads 1 >"$T/out" 2>"$T/err" &
pid=$!
for _ in $(seq 1 200); do
  [ -e "$T/int_out/shard-000001.tar" ] && break
  sleep 0.02
done
[ -e "$T/int_out/shard-000001.tar" ] || fail "no shard appeared while building"
kill -INT "$pid"
wait "$pid"
rc=$?
[ "$rc" = 130 ] || fail "interrupted build: exit $rc, wanted 130"
has err "interrupted by SIGINT"
[ -e "$T/int_out" ] && fail "an interrupted build left OUT: $(ls -A "$T/int_out")"

# Usage: wds stores files as they are; --json is wds's; no bucket yet.
gf 2 build "$S" "$T/u" --format wds --codec png && has err "--format gpufeed only"
gf 2 build "$S" "$T/u" --format wds --align 4096 && has err "--format gpufeed only"
gf 2 build "$S" "$T/u" --format tar && has err "gpufeed or wds"
gf 2 build "$S" "$T/u" --json && has err "--format wds only"
gf 2 build "$S" s3://bucket/prefix --format wds &&
  has err "write locally, then upload"
[ -e "$T/u" ] && fail "a usage error made OUT"
tmp_left "$T" && fail "a temporary folder was left"
no_crash

# webdataset itself, in GPUFEED_WDS_PYTHON (default the python3 on PATH;
# CI's venv has it, GPUFEED_REQUIRE_WDS=1 makes its absence a failure).
WPY=${GPUFEED_WDS_PYTHON:-python3}
if "$WPY" -c "import webdataset" 2>/dev/null; then
  last=$(($(ls "$T/w1" | wc -l) - 1))
  "$WPY" - "$T/w1" "$last" "$T/seen_main.json" <<'EOF' >"$T/wds.out" 2>&1 ||
import hashlib, json, sys, warnings
import webdataset as wds
warnings.simplefilter("ignore")
out, last, seen = sys.argv[1], int(sys.argv[2]), json.load(open(sys.argv[3]))
url = "%s/shard-{000000..%06d}.tar" % (out, last)
ds = wds.WebDataset(url, shardshuffle=False)
got = list(ds)
keys = [s["__key__"] for s in got]
assert keys == seen["keys"], (keys, seen["keys"])
for s, field, cls, sha in zip(got, seen["fields"], seen["cls"], seen["sha"]):
    fields = sorted(k for k in s if not k.startswith("__"))
    assert fields == sorted(["cls", field]), (s["__key__"], fields)
    assert int(s["cls"]) == int(cls), (s["__key__"], s["cls"])
    assert hashlib.sha256(s[field]).hexdigest() == sha, s["__key__"]
print("webdataset read %d samples from %d shards" % (len(got), last + 1))
EOF
    fail "webdataset: $(cat "$T/wds.out")"
  cat "$T/wds.out"
elif [ "${GPUFEED_REQUIRE_WDS:-0}" = 1 ]; then
  fail "GPUFEED_REQUIRE_WDS=1 but $WPY has no webdataset"
else
  echo "note: the webdataset package is not importable by $WPY; its part skipped"
fi

finish
