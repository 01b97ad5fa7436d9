# `gpufeed index --verify`: verification sums of WebDataset shards.
#   - every image member that decodes is listed in x.sums with the CRC32C
#     of its bytes (checked here against tarfile's offsets and a CRC32C
#     computed in Python); one that does not (cut short and closed with an
#     end marker) is named with its shard, member and byte, left out, and
#     counted; other members are not listed;
#   - the summary, --json and `inspect` count the verified images and
#     shards;
#   - sums there are left alone unless --force; an index there without
#     sums gets its sums and keeps its index;
#   - loading: a shard whose image changed after --verify (same size) is
#     still read whole (its changed image decoded on the CPU, a warning
#     said once), not failed; sums that do not match their shard (another
#     size, a bad line) are refused with a warning naming them, and the
#     shard is read as an unverified one.
# (That verified images go to the GPU's JPEG engines under gpu_decode
# auto, and changed ones to the CPU, is tested on a GPU: test_shards.py.)
# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3) || skip "no python3"

gf 0 synth "$T/img" --count 12 --sizes 40-80 --format jpeg --seed 3 --quiet ||
  finish

cat >"$T/tools.py" <<'PYEOF'
import io, json, os, sys, tarfile

def crc32c(b):
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    c = 0xFFFFFFFF
    for x in b:
        c = t[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF

def add(t, name, data):
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    ti.mtime = 1700000000
    t.addfile(ti, io.BytesIO(data))

def make(img, out, bad):
    files = sorted(os.path.join(r, f) for r, _, fs in os.walk(img)
                   for f in fs)
    with tarfile.open(out, "w", format=tarfile.GNU_FORMAT) as t:
        for i, f in enumerate(files):
            data = open(f, "rb").read()
            add(t, "s%03d.jpg" % i, data)
            add(t, "s%03d.cls" % i, str(i % 3).encode())
            if i == 4 and bad:
                # Cut in its entropy-coded data and closed with an end
                # marker: the JPEG engines would take it, libjpeg does not.
                add(t, "bad.jpg", data[: len(data) * 2 // 3] + b"\xff\xd9")
                add(t, "bad.cls", b"1")
                add(t, "bad.txt", b"a caption")

def expect(shard):
    # The image members that should be listed: all but bad.jpg.
    with tarfile.open(shard) as t:
        raw = open(shard, "rb").read()
        return [(m.offset_data, m.size,
                 crc32c(raw[m.offset_data:m.offset_data + m.size]))
                for m in t.getmembers()
                if m.name.endswith(".jpg") and m.name != "bad.jpg"]

def check(shard, sums):
    want = expect(shard)
    lines = open(sums).read().splitlines()
    head = "gpufeed-sums v1 %d %d" % (os.path.getsize(shard), len(want))
    if lines[0] != head:
        sys.exit("header %r, wanted %r" % (lines[0], head))
    got = [tuple(l.split(" ")) for l in lines[1:]]
    exp = [(str(o), str(s), "%08x" % c) for o, s, c in want]
    if got != exp:
        sys.exit("sums differ:\n%s\nwanted\n%s" % (got, exp))

def poke(shard, member, at, byte):
    # One byte of a member's data changed, the shard's size kept.
    with tarfile.open(shard) as t:
        off = t.getmember(member).offset_data
    with open(shard, "r+b") as f:
        f.seek(off + at)
        f.write(bytes([byte]))

cmd = sys.argv[1]
if cmd == "make":
    make(sys.argv[2], sys.argv[3], sys.argv[4] == "bad")
elif cmd == "check":
    check(sys.argv[2], sys.argv[3])
elif cmd == "poke":
    poke(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
elif cmd == "json":
    d = json.load(open(sys.argv[2]))
    for k in sys.argv[3:]:
        name, want = k.split("=")
        if str(d[name]) != want:
            sys.exit("%s is %r, wanted %s" % (name, d[name], want))
PYEOF

mkdir -p "$T/s"
S=$T/s/train-0.tar
"$PY" "$T/tools.py" make "$T/img" "$S" bad || fail "making the shard"

# Verified: 12 images listed, bad.jpg named and left out.
if gf 0 index --verify "$S"; then
  has out "12 images decoded and summed, 1 did not decode"
  has err "member 'bad.jpg' (data at byte"
  has err "does not decode"
  [ -f "$T/s/train-0.idx" ] || fail "no index written beside the shard"
  "$PY" "$T/tools.py" check "$S" "$T/s/train-0.sums" || fail "the sums"
fi
ls -a "$T/s" | grep -q 'tmp' && fail "a temporary file left in $T/s"

# inspect counts the verified shard.
if gf 0 inspect "$S" --json; then
  "$PY" "$T/tools.py" json "$T/out" verified=1 sums_refused=0 ||
    fail "inspect --json's verified count"
fi
gf 0 inspect "$S" && has out "1 verified"

# Left alone unless --force; sums added beside an index that is there.
gf 0 index --verify "$S" && has out "0 indexed, 1 already indexed"
idx_before=$(stat -c '%i %Y' "$T/s/train-0.idx")
rm "$T/s/train-0.sums"
sleep 1
if gf 0 index --verify "$S" --json; then
  "$PY" "$T/tools.py" json "$T/out" indexed=1 verified=12 unverified=1 ||
    fail "index --json's counts"
  [ -f "$T/s/train-0.sums" ] || fail "the sums were not written again"
  [ "$(stat -c '%i %Y' "$T/s/train-0.idx")" = "$idx_before" ] ||
    fail "the index was rewritten though it was there"
fi
cp "$T/s/train-0.sums" "$T/sums.good"
gf 0 index --verify --force "$S" && has out "1 indexed"
cmp -s "$T/s/train-0.sums" "$T/sums.good" || fail "--force wrote other sums"

# Loading the verified shard: bad.jpg meets the error policy (bench's:
# fail), named, as it would unverified.
gf 1 bench "$S" --batch 4 --epochs 1 && has err "sample 'bad'" &&
  has err "premature end of data segment"

# A shard without it: the 12 samples, no word about the sums.
G=$T/s/good.tar
"$PY" "$T/tools.py" make "$T/img" "$G" good || fail "making the good shard"
gf 0 index --verify "$G" && has out "12 images decoded and summed, 0 did"
cp "$T/s/good.sums" "$T/good.sums"
if gf 0 bench "$G" --batch 4 --epochs 1 --json; then
  "$PY" "$T/tools.py" json "$T/out" images=12 skipped=0 ||
    fail "bench over the verified shard"
  hasnt err "verification sums"
  hasnt err "changed after"
fi

# An image changed after --verify, its size kept (a byte of its JFIF
# header's density, which decoders ignore), in two samples: still read,
# said once.
"$PY" "$T/tools.py" poke "$G" s002.jpg 14 7 &&
  "$PY" "$T/tools.py" poke "$G" s007.jpg 14 9 || fail "poking the shard"
if gf 0 bench "$G" --batch 4 --epochs 1 --json; then
  "$PY" "$T/tools.py" json "$T/out" images=12 skipped=0 ||
    fail "bench over the changed shard"
  has err "changed after \`gpufeed index --verify\`"
  [ "$(grep -c 'changed after' "$T/err")" = 1 ] ||
    fail "the change was said more than once"
fi

# Sums that do not match their shard: refused, named, the shard read.
printf 'gpufeed-sums v1 1024 0\n' >"$T/s/good.sums"
if gf 0 inspect "$G" --json; then
  "$PY" "$T/tools.py" json "$T/out" verified=0 sums_refused=1 ||
    fail "inspect counts refused sums"
  has err "good.sums"
  has err "made for a shard of 1024 bytes"
fi
sed '2s/ [0-9a-f]*$/ 0000000Z/' "$T/good.sums" >"$T/s/good.sums"
if gf 0 bench "$G" --batch 4 --epochs 1 --json; then
  "$PY" "$T/tools.py" json "$T/out" images=12 skipped=0 ||
    fail "bench with refused sums"
  has err "the verification sums do not match the shard"
  has err "line 2"
fi
no_crash
finish
