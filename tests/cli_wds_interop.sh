#!/usr/bin/env bash
# Interop with code no one here wrote (docs/SHARDS.md): shards written by
# the webdataset library's own ShardWriter and by GNU tar (ustar, GNU long
# names, PAX with non-ASCII names; a dotted folder, upper-case extensions,
# a field with a dot, a symbolic link, a name without a dot, webdataset's
# metadata) are read by webdataset's reader and by `gpufeed inspect
# --samples` (which reads and checks each sample as a loader does), and
# compared sample by sample: the same keys in the same order, the same
# fields, labels, image fields and image bytes (CRC-32). The webdataset
# side runs in GPUFEED_WDS_PYTHON (default python3); without webdataset
# there the test skips (77), or fails under GPUFEED_REQUIRE_WDS=1.
. "$GPUFEED_SOURCE_DIR/tests/cli_lib.sh"
PY=${GPUFEED_WDS_PYTHON:-python3}
if ! "$PY" -c 'import webdataset' 2>/dev/null; then
  [ "${GPUFEED_REQUIRE_WDS:-0}" = 1 ] && { echo "FAIL: GPUFEED_REQUIRE_WDS=1 but $PY has no webdataset" >&2; exit 1; }
  skip "$PY has no webdataset (pip install webdataset)"
fi
command -v tar >/dev/null || skip "no tar"
IO=$GPUFEED_SOURCE_DIR/tests/wds/interop.py
"$PY" "$IO" write "$T/s" || fail "interop.py write"

# compare NAME SHARDS...: webdataset's reading against gpufeed's.
compare() {
  local name=$1
  shift
  "$PY" "$IO" read "$@" > "$T/$name.wds" || { fail "$name: webdataset's read"; return; }
  local spec=$1
  shift
  for s in "$@"; do spec="$spec::$s"; done
  gf 0 inspect "$spec" --samples 1000000 --json || return
  cp "$T/out" "$T/$name.gf"
  "$PY" - "$T/$name.wds" "$T/$name.gf" <<'PY' || fail "$name: gpufeed and webdataset differ"
import json, sys
want = [json.loads(l) for l in open(sys.argv[1])]
got = json.load(open(sys.argv[2]))["sample_list"]
bad = 0
if len(want) != len(got):
    print("samples: webdataset %d, gpufeed %d" % (len(want), len(got)))
    bad += 1
for w, g in zip(want, got):
    diffs = []
    if w["key"] != g["key"]:
        diffs.append("key")
    if w["fields"] != sorted(g["fields"]):
        diffs.append("fields %s / %s" % (w["fields"], g["fields"]))
    if "error" in g:
        # gpufeed refuses a sample without one image field: so must it lack one.
        if w["image_field"] is not None:
            diffs.append("gpufeed refused it: " + g["error"])
    else:
        if w["label"] != g["label"]:
            diffs.append("label %d / %d" % (w["label"], g["label"]))
        if w["image_field"] != g["image_field"]:
            diffs.append("image field %s / %s" % (w["image_field"], g["image_field"]))
        if w["image_crc32"] != g["image_crc32"]:
            diffs.append("image bytes differ")
    if diffs:
        bad += 1
        print("%s: %s" % (w["key"], "; ".join(diffs)))
print("%d samples compared, %d differ" % (len(want), bad))
sys.exit(1 if bad else 0)
PY
}
compare writer "$T/s/wds-000000.tar" "$T/s/wds-000001.tar" "$T/s/wds-000002.tar"
compare gnu "$T/s/gnu.tar"
compare pax "$T/s/pax.tar"
# What gpufeed left out, counted: the link and the two names webdataset drops.
gf 0 inspect "$T/s/gnu.tar" --json
has out '"skipped_members": 1'
has out '"dropped_members": 2'
finish
