# `gpufeed index`: the sidecar indexes of WebDataset tar shards.
#   - shards made with Python's tarfile (ustar, GNU and PAX: long names,
#     dotted folders, multi-dot fields, a name without a dot, hidden files,
#     links, folders, a member past the 64 KiB read block, an empty one)
#     and with GNU tar (gnu, posix, ustar): each index equals the one
#     computed here from tarfile's own offsets (wds2idx.py's rules), named
#     x.idx beside x.tar (and y.shard.idx beside y.shard); shards of real
#     images indexed so are read by `bench --shard-index require`;
#   - brace patterns, '::' lists and @list files (comments, blank lines,
#     CRLF, paths relative to the list's folder, a shard named twice);
#   - an index there is left alone (counted as skipped) unless --force,
#     which replaces it by a rename; no temporary file is ever left; the
#     mode follows the umask; with the testing CLI, a failing write, fsync
#     or rename leaves the old index and no temporary file;
#   - a truncated shard, a bad checksum, gzip data (by name and by bytes),
#     a file that is no tar and a name with a space fail, named with the
#     byte (and the last member read), exit 1, while the good shards are
#     indexed;
#   - --out DIR (and its collisions), --json's fields, --threads;
#   - an http:// URL with user:password@ and ?token=: refused without
#     --out, a closed port with it, a slow server interrupted by SIGINT
#     (exit 130, the indexes written whole, no temporary file): no output
#     holds a secret.
# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3) || skip "no python3"

cat >"$T/tools.py" <<'PYEOF'
import http.server, io, json, os, socket, sys, tarfile, threading, time


def add(t, name, data=b"", kind=tarfile.REGTYPE, link=""):
    ti = tarfile.TarInfo(name)
    ti.type = kind
    ti.linkname = link
    ti.size = len(data) if kind == tarfile.REGTYPE else 0
    ti.mtime = 1700000000
    t.addfile(ti, io.BytesIO(data) if kind == tarfile.REGTYPE else None)


def members(t):
    long_dir = "deep-" + "d" * 110
    add(t, "a.jpg", b"j" * 100)
    add(t, "a.cls", b"3")
    add(t, "b.jpg", os.urandom(70000))  # past the 64 KiB read block
    add(t, "b.json", b"")                # empty
    add(t, "d.v1", kind=tarfile.DIRTYPE)
    add(t, "d.v1/x.seg.png", b"p" * 10)
    add(t, "d.v1/x.cls", b"1")
    add(t, "noext", b"n" * 5)            # wds2idx's quirk: key 'noex'
    add(t, "d.v1/.hidden", b"h" * 3)     # key 'd.v1/': left out
    add(t, "lnk.jpg", kind=tarfile.SYMTYPE, link="a.jpg")
    add(t, "hl.jpg", kind=tarfile.LNKTYPE, link="a.jpg")
    add(t, "a.txt", b"tx")               # key 'a' again: a new sample
    add(t, "UP.JPG", b"u" * 7)
    add(t, long_dir + "/k.jpg", b"k" * 9)
    add(t, long_dir + "/k.cls", b"2")


def mk(folder):
    os.makedirs(folder, exist_ok=True)
    for name, fmt in (("py-ustar.tar", tarfile.USTAR_FORMAT),
                      ("py-gnu.tar", tarfile.GNU_FORMAT),
                      ("py-pax.tar", tarfile.PAX_FORMAT)):
        with tarfile.open(os.path.join(folder, name), "w", format=fmt) as t:
            members(t)
            if fmt != tarfile.USTAR_FORMAT:
                add(t, "n" * 150 + ".jpg", b"l" * 11)  # a long name
            if fmt == tarfile.PAX_FORMAT:
                add(t, "caf\u00e9.jpg", b"c" * 4)
    with tarfile.open(os.path.join(folder, "y.shard"), "w") as t:
        add(t, "only.jpg", b"o")
    with tarfile.open(os.path.join(folder, "many.tar"), "w") as t:
        for i in range(3000):
            add(t, "s%05d.jpg" % i, b"x" * (i % 7))
            add(t, "s%05d.cls" % i, b"%d" % (i % 10))


def pack(folder, out, per):
    """An ImageFolder's PNG files into shards OUT-K.tar of PER samples:
    <class>/<stem>.png and .cls."""
    files = sorted(os.path.join(c, f) for c in sorted(os.listdir(folder))
                   for f in sorted(os.listdir(os.path.join(folder, c))))
    classes = sorted(os.listdir(folder))
    for k in range(0, len(files), int(per)):
        with tarfile.open("%s-%d.tar" % (out, k // int(per)), "w") as t:
            for f in files[k:k + int(per)]:
                key = f[:-len(".png")]
                add(t, key + ".png", open(os.path.join(folder, f), "rb").read())
                add(t, key + ".cls", b"%d" % classes.index(os.path.dirname(f)))


def ref(path):
    """The v1.2 index of a plain tar, as wds2idx.py makes it."""
    lines, last = [], None
    with tarfile.open(path, "r:") as t:
        for m in t:
            if not m.isreg():
                continue
            name = m.name
            d = name.find(".", name.rfind("/") + 1)
            key, ext = name[:d], name[d + 1:]  # no dot: name[:-1], name
            if not key or key.endswith("/"):
                continue
            group = "%s %d %d %s" % (ext, m.offset_data, m.size, name)
            if lines and key == last:
                lines[-1] += " " + group
            else:
                lines.append(group)
                last = key
    text = "v1.2 %d\n" % len(lines) + "".join(l + "\n" for l in lines)
    return text.encode("utf-8", "surrogateescape")


def counts(paths):
    """samples and regular members of the shards, as 'S M'."""
    s = m = 0
    for p in paths:
        s += int(ref(p).split(b"\n", 1)[0].split()[1])
        with tarfile.open(p, "r:") as t:
            m += sum(1 for x in t if x.isreg())
    return "%d %d" % (s, m)


def offsets(path):
    """'HEADER DATA SIZE NAME' for each member."""
    with tarfile.open(path, "r:") as t:
        for m in t:
            print(m.offset, m.offset_data, m.size, m.name)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def serve(root, portfile, delay):
    """GET and HEAD of ROOT's files with Range, each reply after DELAY s."""
    class H(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def reply(self, body):
            time.sleep(float(delay))
            path = os.path.join(root, self.path.split("?")[0].lstrip("/"))
            if not os.path.isfile(path):
                self.send_error(404)
                return
            data = open(path, "rb").read()
            st = os.stat(path)
            rng = self.headers.get("Range")
            lo, hi = 0, len(data) - 1
            if rng:
                a, b = rng.split("=")[1].split("-")
                lo, hi = int(a), min(int(b) if b else len(data) - 1, len(data) - 1)
                self.send_response(206)
                self.send_header("Content-Range", "bytes %d-%d/%d" % (lo, hi, len(data)))
            else:
                self.send_response(200)
            self.send_header("Content-Length", str(hi - lo + 1))
            self.send_header("ETag", '"%x-%x"' % (st.st_ino, st.st_mtime_ns))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            if body:
                self.wfile.write(data[lo:hi + 1])

        def do_GET(self):
            self.reply(True)

        def do_HEAD(self):
            self.reply(False)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(portfile + ".tmp", portfile)
    srv.serve_forever()


def check_json(path, want):
    doc = json.load(open(path, encoding="utf-8"))
    for k, v in json.loads(want).items():
        if doc.get(k) != v:
            sys.exit("%s: %r, wanted %r" % (k, doc.get(k), v))
    if not isinstance(doc.get("seconds"), float) or doc["seconds"] < 0:
        sys.exit("seconds: %r" % doc.get("seconds"))
    print(" ".join(sorted(f["shard"] for f in doc["failures"])))


cmd, args = sys.argv[1], sys.argv[2:]
if cmd == "mk":
    mk(*args)
elif cmd == "pack":
    pack(*args)
elif cmd == "ref":
    sys.stdout.buffer.write(ref(args[0]))
elif cmd == "counts":
    print(counts(args))
elif cmd == "offsets":
    offsets(args[0])
elif cmd == "port":
    print(free_port())
elif cmd == "serve":
    serve(*args)
elif cmd == "json":
    check_json(*args)
PYEOF
tools() { "$PY" "$T/tools.py" "$@"; }

# same IDX SHARD: IDX holds the index computed from SHARD here.
same() {
  tools ref "$2" >"$T/ref.idx" || { fail "tarfile cannot read $2"; return; }
  if [ ! -f "$1" ]; then
    fail "no index $1"
  elif ! cmp -s "$1" "$T/ref.idx"; then
    fail "$1 differs from the index tarfile gives:"
    diff "$1" "$T/ref.idx" | head -10 >&2
  fi
}
# no_tmp: no temporary file of an index anywhere under $T.
no_tmp() {
  local left
  left=$(find "$T" -name '.*.tmp-*' -o -name '.gpufeed-index.tmp-*')
  [ -z "$left" ] || fail "${1:-}: temporary files left: $left"
}

# ---- usage -----------------------------------------------------------------
gf 0 --help && has out "  index "
gf 0 index --help && has out "Usage: gpufeed index SHARD..."
for o in --out --force --threads --json --quiet skipped_existing @FILE 130 \
         "--endpoint-url"; do
  has out "$o"
done
[ -s "$T/err" ] && fail "index --help wrote to stderr"
gf 2 index && has err "index needs at least one SHARD; see 'gpufeed index --help'"
gf 2 index x.tar --bogus && has err "unknown option '--bogus' for index"
gf 2 index x.tar --threads 0 && has err "invalid value '0' for --threads"
gf 2 index "" && has err "SHARD is an empty string"
gf 2 index x.tar --out= && has err "the value of --out is an empty string"
gf 2 index x.tar --json=1 && has err "option '--json' takes no value"

# ---- shards made by Python and by GNU tar ----------------------------------
S=$T/shards
tools mk "$S" || finish
LONG=$(printf 'p%.0s' {1..60})/$(printf 'q%.0s' {1..60})
mkdir -p "$T/gsrc/sub.d" "$T/gsrc/$LONG"
printf 'jpeg' >"$T/gsrc/x.jpg"
printf '7' >"$T/gsrc/x.cls"
head -c 100000 /dev/urandom >"$T/gsrc/big.png"
printf '1' >"$T/gsrc/big.cls"
printf 's' >"$T/gsrc/sub.d/q.seg.png"
printf 'l' >"$T/gsrc/$LONG/long.jpg"
ln -s x.jpg "$T/gsrc/link.jpg"
for f in gnu posix ustar; do
  (cd "$T/gsrc" && tar --format=$f -cf "$S/gnutar-$f.tar" x.jpg x.cls \
    big.png big.cls sub.d link.jpg "${LONG%%/*}") ||
    fail "GNU tar --format=$f"
done
GOOD=(py-ustar py-gnu py-pax gnutar-gnu gnutar-posix gnutar-ustar many)

gf 0 index "$S"/*.tar "$S/y.shard" --threads 3
has out "index: 8 shards: 8 indexed, 0 already indexed, 0 failed"
for s in "${GOOD[@]}"; do same "$S/$s.idx" "$S/$s.tar"; done
same "$S/y.shard.idx" "$S/y.shard"
no_tmp "first run"
# The quirks are in (and so checked against tarfile's offsets above).
grep -q " noext$" "$S/py-gnu.idx" || fail "the member without a dot is not indexed"
grep -q "seg.png [0-9]* 10 d.v1/x.seg.png cls" "$S/py-gnu.idx" || fail "d.v1/x: $(cat "$S/py-gnu.idx")"
grep -q "hidden\|lnk.jpg\|hl.jpg" "$S/py-gnu.idx" && fail "a hidden file or a link is indexed"
grep -q "$(printf 'caf\xc3\xa9.jpg')" "$S/py-pax.idx" || fail "the PAX UTF-8 name is not indexed"
[ "$(head -1 "$S/many.idx")" = "v1.2 3000" ] || fail "many.tar: $(head -1 "$S/many.idx")"

# The loader takes them: shards of real images, indexed here, read with
# --shard-index require.
gf 0 synth "$T/img" --count 12 --size 16 --classes 3 --quiet || finish
mkdir -p "$T/e"
tools pack "$T/img" "$T/e/e" 5 || fail "packing images"
gf 0 index "$T/e/e-{0..2}.tar" --quiet
for k in 0 1 2; do same "$T/e/e-$k.idx" "$T/e/e-$k.tar"; done
gf 0 bench "$T/e/e-{0..2}.tar" --shard-index require --device cpu --batch 4 \
  --epochs 1 --json --quiet && has out '"images":12,'
rm "$T/e/e-1.idx"
gf 1 bench "$T/e/e-{0..2}.tar" --shard-index require --device cpu --batch 4 \
  --epochs 1 --quiet && has err "e-1.idx"

# An index there is left alone, unless --force (a new file, renamed in).
echo "SENTINEL" >"$S/py-gnu.idx"
rm "$S/py-pax.idx"
ino=$(stat -c %i "$S/py-ustar.idx")
want=$(tools counts "$S/py-pax.tar")
gf 0 index "$S/py-{ustar,gnu,pax}.tar" --json
[ "$(cat "$S/py-gnu.idx")" = SENTINEL ] || fail "an index there was rewritten without --force"
[ "$(stat -c %i "$S/py-ustar.idx")" = "$ino" ] || fail "an index there was replaced without --force"
tools json "$T/out" '{"shards":3,"indexed":1,"skipped_existing":2,"failed":0,"samples":'"${want% *}"',"members":'"${want#* }"',"failures":[]}' >/dev/null ||
  fail "--json with 2 indexes there: $(cat "$T/out")"
gf 0 index "$S/py-{ustar,gnu,pax}.tar" --force --quiet
[ -s "$T/out" ] && fail "--quiet printed: $(cat "$T/out")"
same "$S/py-gnu.idx" "$S/py-gnu.tar"
[ "$(stat -c %i "$S/py-ustar.idx")" != "$ino" ] || fail "--force did not rename a new index in"
no_tmp "--force"

# The mode follows the umask, for a new index and one replaced.
for mask in 022 027 077 002; do
  want=$(printf '%o' $((0666 & ~8#$mask)))
  rm -f "$S/y.shard.idx"
  for force in "" --force; do
    (umask $mask && "$GPUFEED" index "$S/y.shard" $force --quiet) 2>"$T/err" ||
      fail "umask $mask $force: $(cat "$T/err")"
    got=$(stat -c %a "$S/y.shard.idx")
    [ "$got" = "$want" ] || fail "umask $mask ${force:-(new)}: mode $got, wanted $want"
  done
done

# ---- patterns, '::' lists and list files -----------------------------------
B=$T/braces
mkdir -p "$B/sub" "$B/lists"
for i in 000 001 002 003 004 005; do cp "$S/py-pax.tar" "$B/s-$i.tar"; done
cp "$S/py-gnu.tar" "$B/sub/r-1.tar"
cp "$S/py-gnu.tar" "$B/sub/r-2.tar"
gf 0 index "$B/s-{000..002}.tar::$B/s-00{3,4}.tar" --json
tools json "$T/out" '{"shards":5,"indexed":5,"failed":0}' >/dev/null || fail "braces: $(cat "$T/out")"
for i in 000 001 002 003 004; do same "$B/s-$i.idx" "$B/s-$i.tar"; done
[ -e "$B/s-005.idx" ] && fail "a shard outside the pattern was indexed"
printf '# shards of the test\n\n../sub/r-{1..2}.tar\r\n  %s/s-005.tar  \n#%s/s-000.tar\n%s/s-00{5,5}.tar\n' \
  "$B" "$B" "$B" >"$B/lists/list.txt"
gf 0 index "@$B/lists/list.txt" --json
tools json "$T/out" '{"shards":3,"indexed":3,"skipped_existing":0}' >/dev/null ||
  fail "@list (a shard twice): $(cat "$T/out")"
same "$B/sub/r-1.idx" "$B/sub/r-1.tar"
same "$B/sub/r-2.idx" "$B/sub/r-2.tar"
same "$B/s-005.idx" "$B/s-005.tar"
gf 1 index "@$B/lists/nothere.txt" && has err "nothere.txt"
gf 1 index "$B/s-{000..002.tar" && has err "unbalanced braces"
gf 1 index "$B/s-{7..9}.tar" && has err "s-7.tar" && has err "3 of 3 shards failed"

# ---- --out DIR -------------------------------------------------------------
gf 0 index "$S/py-gnu.tar" "$S/y.shard" "$B/sub/r-1.tar" --out "$T/idx" --json
tools json "$T/out" '{"shards":3,"indexed":3}' >/dev/null || fail "--out: $(cat "$T/out")"
same "$T/idx/py-gnu.idx" "$S/py-gnu.tar"
same "$T/idx/y.shard.idx" "$S/y.shard"
same "$T/idx/r-1.idx" "$B/sub/r-1.tar"
gf 0 index "$S/py-gnu.tar" --out "$T/idx" && has out "0 indexed, 1 already indexed"
mkdir -p "$B/other" && cp "$S/y.shard" "$B/other/r-1.tar"
gf 1 index "$B/sub/r-1.tar" "$B/other/r-1.tar" --out "$T/idx2" &&
  has err "would both have their index at $T/idx2/r-1.idx"
[ -e "$T/idx2/r-1.idx" ] && fail "a colliding --out wrote an index"
gf 1 index "$S/many.tar" "$S/many" --force && has err "would both have their index at $S/many.idx"
echo x >"$T/afile"
gf 1 index "$S/y.shard" --out "$T/afile" && has err "not a folder"

# ---- shards that fail -------------------------------------------------------
D=$T/bad
mkdir -p "$D"
cp "$S/py-gnu.tar" "$D/good.tar"
cp "$S/many.tar" "$D/good2.tar"
tools offsets "$S/py-gnu.tar" >"$T/offsets"
# Cut inside the header of a.txt: the scan ends there.
read -r hdr _ _ _ < <(grep ' a.txt$' "$T/offsets")
head -c $((hdr + 100)) "$S/py-gnu.tar" >"$D/cut.tar"
# Cut inside b.jpg's data.
read -r bh bd bsz _ < <(grep ' b.jpg$' "$T/offsets")
head -c $((bd + 1000)) "$S/py-gnu.tar" >"$D/cutdata.tar"
# A bad checksum: a byte of a.cls's header name changed.
read -r ch _ _ _ < <(grep ' a.cls$' "$T/offsets")
cp "$S/py-gnu.tar" "$D/sum.tar"
printf 'Z' | dd of="$D/sum.tar" bs=1 seek=$((ch + 2)) conv=notrunc 2>/dev/null
gzip -c "$S/py-gnu.tar" >"$D/zipped.tar.gz"
gzip -c "$S/py-gnu.tar" >"$D/gzdata.tar"
echo "not a tar at all" >"$D/text.tar"
(cd "$S" && "$PY" -c 'import tarfile,io,sys
with tarfile.open(sys.argv[1], "w") as t:
    i = tarfile.TarInfo("a b.jpg"); i.size = 1; t.addfile(i, io.BytesIO(b"x"))' "$D/space.tar")
gf 1 index "$D/"{good,cut,cutdata,sum,gzdata,text,space,good2}.tar "$D/zipped.tar.gz" --json --threads 4
no_crash
# The byte named: the cut header's, or where the shard ends.
grep -qE "$D/cut.tar: offset ($hdr|$((hdr + 100))): the shard ends inside a tar header at byte ($hdr|$((hdr + 100)))" "$T/err" ||
  fail "cut.tar: not named with its byte: $(cat "$T/err")"
has err "the last member read before it: 'd.v1/.hidden'"
has err "$D/cutdata.tar"
has err "member 'b.jpg' (header at byte $bh) holds $bsz bytes from byte $bd, past the shard's end at $((bd + 1000))"
has err "$D/sum.tar: offset $ch: a tar header with a bad checksum at byte $ch"
has err "$D/zipped.tar.gz: compressed shards are not read: decompress them (gunzip) to plain .tar first"
has err "$D/gzdata.tar: compressed shards are not read: decompress them (gunzip) to plain .tar first (this one is gzip data"
has err "$D/text.tar: offset 0: not a tar file"
has err "member 'a b.jpg' has white space in its name"
has err "7 of 9 shards failed"
tools json "$T/out" '{"shards":9,"indexed":2,"failed":7,"skipped_existing":0}' >"$T/failed.txt" ||
  fail "--json with failures: $(cat "$T/out")"
for b in cut cutdata sum gzdata text space; do
  grep -qF "$D/$b.tar" "$T/failed.txt" || fail "--json does not list $b.tar: $(cat "$T/failed.txt")"
  [ -e "$D/$b.idx" ] && fail "$b.tar got an index"
done
same "$D/good.idx" "$D/good.tar"
same "$D/good2.idx" "$D/good2.tar"
no_tmp "failures"
# A shard whose index is there is not read at all (a damaged one then
# passes as already indexed).
echo "OLD" >"$D/cut.idx"
gf 0 index "$D/cut.tar" --json
tools json "$T/out" '{"shards":1,"indexed":0,"skipped_existing":1,"failed":0}' >/dev/null ||
  fail "a shard with its index there was read: $(cat "$T/out" "$T/err")"
[ "$(cat "$D/cut.idx")" = OLD ] || fail "the index of cut.tar changed"
rm "$D/cut.idx"

# ---- the write path's failures (the testing CLI's fault sites) -------------
GT=${GPUFEED_TESTING_CLI:-}
if [ -x "$GT" ]; then
  cp "$S/y.shard" "$D/f.tar"
  for fault in write:1:ENOSPC fsync:1:EIO rename:1:EIO; do
    echo "OLD" >"$D/f.idx"
    GPUFEED_FAULT=$fault "$GT" index "$D/f.tar" --force >"$T/out" 2>"$T/err" &&
      fail "$fault: exit 0"
    grep -qF "$D/f.tar: its index $D/f.idx:" "$T/err" || fail "$fault: $(cat "$T/err")"
    [ "$(cat "$D/f.idx")" = OLD ] || fail "$fault: the old index changed"
    no_tmp "$fault"
  done
  rm -f "$D/f.idx"
  GPUFEED_FAULT=fsync:1:EIO "$GT" index "$D/f.tar" >"$T/out" 2>"$T/err" && fail "fsync fault: exit 0"
  [ -e "$D/f.idx" ] && fail "fsync fault: an index is in place"
  no_tmp "fsync fault, new index"
else
  echo "note: no testing CLI (\$GPUFEED_TESTING_CLI): fault sites not driven" >&2
fi

# ---- http:// shards, secrets ------------------------------------------------
SECRETS=(agent007 PASSW0RD T0KEN)
secrets_none() { # NAME: no secret in the last run's outputs
  local s
  for s in "${SECRETS[@]}"; do
    grep -qF -- "$s" "$T/out" "$T/err" && fail "$1: an output holds the secret $s"
  done
}
port=$(tools port)
URL="http://agent007:PASSW0RD@127.0.0.1:$port/x/s-{0..2}.tar?token=T0KEN"
gf 1 index "$URL" "$S/y.shard" && has err "use --out DIR"
has err "http://127.0.0.1:$port/x/s-0.tar"
secrets_none "http without --out"
gf 1 index "$URL" --out "$T/hidx" --max-attempts 1 --json
has err "http://127.0.0.1:$port/x/s-1.tar"
has err "3 of 3 shards failed"
secrets_none "http closed port"
tools json "$T/out" '{"shards":3,"failed":3}' >/dev/null || fail "http --json: $(cat "$T/out")"

# A slow server: every shard indexed by URL as by path; then SIGINT.
mkdir -p "$T/www"
for i in $(seq 0 19); do cp "$S/py-pax.tar" "$T/www/w-$i.tar"; done
"$PY" "$T/tools.py" serve "$T/www" "$T/port" 0.05 &
srv=$!
trap 'kill $srv 2>/dev/null' EXIT
for i in $(seq 1 100); do [ -s "$T/port" ] && break; sleep 0.05; done
P=$(cat "$T/port")
URL="http://agent007:PASSW0RD@127.0.0.1:$P/w-{0..3}.tar?token=T0KEN"
gf 0 index "$URL" --out "$T/www-idx"
has out "4 shards: 4 indexed"
for i in 0 1 2 3; do same "$T/www-idx/w-$i.idx" "$T/www/w-$i.tar"; done
secrets_none "http --out"
URL="http://agent007:PASSW0RD@127.0.0.1:$P/w-{0..19}.tar?token=T0KEN"
rm -rf "$T/www-idx"
"$GPUFEED" index "$URL" --out "$T/www-idx" --threads 1 >"$T/out" 2>"$T/err" &
pid=$!
for i in $(seq 1 1000); do [ -e "$T/www-idx/w-1.idx" ] && break; sleep 0.02; done
kill -INT $pid
rc=0
wait $pid || rc=$?
[ "$rc" = 130 ] || fail "SIGINT: exit $rc, wanted 130: $(cat "$T/err")"
has err "interrupted by SIGINT"
n=$(find "$T/www-idx" -name '*.idx' | wc -l)
[ "$n" -ge 2 ] && [ "$n" -lt 20 ] || fail "SIGINT: $n indexes written (wanted some, not all)"
for f in "$T/www-idx"/*.idx; do same "$f" "$T/www/$(basename "$f" .idx).tar"; done
no_tmp "SIGINT"
secrets_none "SIGINT"
# SIGINT inside one long scan (3000 members read 64 KiB a request, each
# reply 50 ms late: seconds): it stops at the next member.
cp "$S/many.tar" "$T/www/long.tar"
"$GPUFEED" index "http://127.0.0.1:$P/long.tar" --out "$T/www-idx" >"$T/out" 2>"$T/err" &
pid=$!
sleep 0.6
t0=$(date +%s%N)
kill -INT $pid
rc=0
wait $pid || rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$rc" = 130 ] || fail "SIGINT in a scan: exit $rc, wanted 130: $(cat "$T/err")"
[ "$ms" -lt 1500 ] || fail "SIGINT in a scan: it took $ms ms to stop"
[ -e "$T/www-idx/long.idx" ] && fail "SIGINT in a scan: an index was written"
finish
