#!/usr/bin/env bash
# `gpufeed index s3://...` against moto's server checking every SigV4
# signature, through the fault proxy (its -v log: every request):
#   - shards made with Python's tarfile, uploaded under a prefix, indexed by
#     a brace pattern: each index is an object beside its shard (x.tar ->
#     x.idx) holding what tarfile's own offsets give, sent with one PUT;
#   - indexes there are left alone (not even the shard is read) unless
#     --force, which puts the right ones back;
#   - a truncated shard and gzip data fail, named with the s3:// shard and
#     the byte, while the good shards are indexed; --out DIR writes them
#     locally instead;
#   - a wrong secret: refused by the store, named, nothing written;
#   - no output holds the secret.
# Skips (77) without moto and boto3, fails instead under GPUFEED_REQUIRE_S3=1.
. "$GPUFEED_SOURCE_DIR/tests/s3/lib.sh"
s3_init
s3_start train
s3_proxy -v
export AWS_ENDPOINT_URL_S3=$PURL
LOG=$T/proxy.err
lines() { wc -l <"$LOG"; }
since() { tail -n "+$(($1 + 1))" "$LOG"; }
objects() { "$PY" "$MOTO" ls "$1"; }

cat >"$T/tools.py" <<'PYEOF'
import io, os, sys, tarfile


def ref(path):
    """The v1.2 index of a plain tar, as wds2idx.py makes it."""
    lines, last = [], None
    with tarfile.open(path, "r:") as t:
        for m in t:
            if not m.isreg():
                continue
            name = m.name
            d = name.find(".", name.rfind("/") + 1)
            key, ext = name[:d], name[d + 1:]
            if not key or key.endswith("/"):
                continue
            group = "%s %d %d %s" % (ext, m.offset_data, m.size, name)
            if lines and key == last:
                lines[-1] += " " + group
            else:
                lines.append(group)
                last = key
    return ("v1.2 %d\n" % len(lines) + "".join(l + "\n" for l in lines)).encode()


def mk(folder):
    os.makedirs(folder, exist_ok=True)
    for k in range(4):
        with tarfile.open(os.path.join(folder, "s-%06d.tar" % k), "w",
                          format=tarfile.PAX_FORMAT) as t:
            for i in range(20 + k):
                for ext, data in (("jpg", os.urandom(100 + 900 * i)),
                                  ("cls", b"%d" % i)):
                    ti = tarfile.TarInfo("d%d/s%03d.%s" % (k, i, ext))
                    ti.size = len(data)
                    t.addfile(ti, io.BytesIO(data))


def get(url):
    import boto3
    from botocore.config import Config
    s3 = boto3.client("s3", endpoint_url=os.environ["GF_S3_ENDPOINT"],
                      region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"}))
    bucket, _, key = url[5:].partition("/")
    sys.stdout.buffer.write(s3.get_object(Bucket=bucket, Key=key)["Body"].read())


cmd, arg = sys.argv[1:3]
if cmd == "ref":
    sys.stdout.buffer.write(ref(arg))
elif cmd == "mk":
    mk(arg)
elif cmd == "get":
    get(arg)
PYEOF
tools() { "$PY" "$T/tools.py" "$@"; }
# same_s3 URL SHARD: the object URL holds the index tarfile gives SHARD.
same_s3() {
  tools ref "$2" >"$T/ref.idx"
  if ! tools get "$1" >"$T/got.idx" 2>"$T/get.err"; then
    fail "no object $1: $(tail -1 "$T/get.err")"
  elif ! cmp -s "$T/got.idx" "$T/ref.idx"; then
    fail "$1 differs from the index tarfile gives:"
    diff "$T/got.idx" "$T/ref.idx" | head -10 >&2
  fi
}

tools mk "$T/up/wds" || fail "making the shards"
head -c 30000 "$T/up/wds/s-000002.tar" >"$T/up/wds/cut.tar"
gzip -c "$T/up/wds/s-000001.tar" >"$T/up/wds/zipped.tar"
"$PY" "$MOTO" upload "$T/up" s3://train >/dev/null || fail "upload"

# Four shards by a pattern: four objects, one PUT each.
m0=$(lines)
run 0 index "$G" index 's3://train/wds/s-{000000..000003}.tar' --json
since "$m0" >"$T/index.log"
for k in 0 1 2 3; do
  same_s3 "s3://train/wds/s-00000$k.idx" "$T/up/wds/s-00000$k.tar"
done
puts=$(grep -c ': PUT /train/wds/' "$T/index.log")
[ "$puts" = 4 ] || fail "$puts PUTs for 4 indexes: $(grep ': PUT' "$T/index.log")"
grep -q ': PUT /train/wds/s-000003.idx' "$T/index.log" || fail "no PUT of s-000003.idx"
grep -q '"shards":4,"indexed":4,"skipped_existing":0,"failed":0,"samples":86,' "$T/index.out" ||
  fail "--json: $(cat "$T/index.out")"

# There already: left alone, the shards not read; --force writes them.
tools ref "$T/up/wds/s-000001.tar" | head -2 >"$T/stale.idx"
"$PY" "$MOTO" put s3://train/wds/s-000001.idx "$T/stale.idx" || fail "put stale"
m0=$(lines)
run 0 again "$G" index 's3://train/wds/s-{000000..000003}.tar'
since "$m0" >"$T/again.log"
grep -q "0 indexed, 4 already indexed" "$T/again.out" || fail "again: $(cat "$T/again.out")"
grep -qE ': (PUT|GET) /train/wds/' "$T/again.log" && fail "an index there: the shard read or its index written: $(grep -E ': (PUT|GET)' "$T/again.log")"
tools get s3://train/wds/s-000001.idx | cmp -s - "$T/stale.idx" || fail "the index there was changed without --force"
run 0 force "$G" index 's3://train/wds/s-{000000..000003}.tar' --force --quiet
[ -s "$T/force.out" ] && fail "--quiet printed: $(cat "$T/force.out")"
same_s3 s3://train/wds/s-000001.idx "$T/up/wds/s-000001.tar"

# Shards that fail, beside good ones.
run 1 bad "$G" index s3://train/wds/cut.tar s3://train/wds/zipped.tar \
  s3://train/wds/s-000000.tar --force
grep -qF "s3://train/wds/cut.tar: offset " "$T/bad.err" && grep -q "the shard ends inside a tar header at byte\|past the shard's end at 30000" "$T/bad.err" ||
  fail "cut.tar not named with its byte: $(cat "$T/bad.err")"
grep -qF "s3://train/wds/zipped.tar: compressed shards are not read: decompress them (gunzip) to plain .tar first" "$T/bad.err" ||
  fail "gzip data not named: $(cat "$T/bad.err")"
grep -q "2 of 3 shards failed" "$T/bad.err" || fail "bad: $(cat "$T/bad.err")"
objects s3://train/wds/ | grep -q 'cut.idx\|zipped.idx' && fail "a failed shard got an index"
same_s3 s3://train/wds/s-000000.idx "$T/up/wds/s-000000.tar"

# --out DIR: local files, nothing written to the bucket.
m0=$(lines)
run 0 out "$G" index 's3://train/wds/s-00000{2,3}.tar' --out "$T/local"
since "$m0" | grep -q ': PUT ' && fail "--out: something was written to the bucket"
for k in 2 3; do
  tools ref "$T/up/wds/s-00000$k.tar" | cmp -s - "$T/local/s-00000$k.idx" || fail "--out: s-00000$k.idx"
done

# A wrong secret: refused by the store, named; nothing written.
"$PY" "$MOTO" upload "$T/up/wds" s3://train/w2 >/dev/null || fail "upload w2"
run 1 wrong env AWS_SECRET_ACCESS_KEY=not-the-secret "$G" index s3://train/w2/s-000000.tar
grep -qF "s3://train/w2/s-000000.tar: " "$T/wrong.err" && grep -q "403" "$T/wrong.err" ||
  fail "wrong secret: $(cat "$T/wrong.err")"
grep -qF "not-the-secret" "$T/wrong.out" "$T/wrong.err" && fail "the wrong secret is printed"
objects s3://train/w2/ | grep -q '\.idx' && fail "wrong secret: an index was written"
s3_done
