# What `gpufeed build` says about its source: an empty class (kept, and
# said, as torchvision's ImageFolder refuses it), a flat folder given
# without --labels, symbolic links leading out of SRC (refused with the
# rule, skipped with --skip-bad, followed with --follow-symlinks), a labels
# file listing a file twice, --labels naming a folder, a dataset folder
# inside SRC (no class), empty path arguments (usage errors), and the
# temporary folders of killed builds (removed when their process is gone,
# named when it cannot be told).
# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

gf 0 synth "$T/src" --count 6 --size 8x8 --classes 2 --quiet || finish
gf 0 synth "$T/gen" --count 4 --size 8x8 --classes 1 --quiet || finish
cp "$T/gen/class_000/img_000000.png" "$T/outside.png"

# --help states the rules.
gf 0 build --help
for t in "--follow-symlinks" "symbolic link" "outside SRC" "--skip-bad" \
         "empty class" "index.gfi" "PID"; do
  has out "$t"
done

# 1. An empty class folder: kept as a label with no samples, and said.
mkdir "$T/src/zz_empty"
if gf 0 build "$T/src" "$T/ds1"; then
  has out "classes       3"
  has out "empty classes"
  has out "zz_empty (label 2)"
  has out "torchvision"
fi
gf 0 build "$T/gen" "$T/ds1b" && hasnt out "empty classes"
rmdir "$T/src/zz_empty"

# 2. A flat folder of PNGs without --labels.
mkdir "$T/flat"
cp "$T/gen/class_000/"*.png "$T/flat/"
if gf 1 build "$T/flat" "$T/ds2"; then
  has err "holds 4 image files (.png, .jpg, .jpeg) but no class folders"
  has err "a flat folder needs a labels file (--labels FILE"
  has err "one folder per class"
fi
[ -e "$T/ds2" ] && fail "a refused build left OUT"

# 3. Symbolic links: one leading out of SRC, one broken, one to a folder.
cp -r "$T/src" "$T/lnk"
ln -s "$T/outside.png" "$T/lnk/class_000/out.png"
if gf 1 build "$T/lnk" "$T/ds3"; then
  has err "out.png"
  has err "outside the source folder"
  has err "--follow-symlinks"
fi
if gf 0 build "$T/lnk" "$T/ds3" --skip-bad; then
  has out "wrote 6 samples"
  has out "skipped       1"
  has out "out.png"
fi
rm -rf "$T/ds3"
gf 0 build "$T/lnk" "$T/ds3" --follow-symlinks && has out "wrote 7 samples"
rm -rf "$T/ds3"
ln -s "$T/nowhere.png" "$T/lnk/class_001/broken.png"
ln -s "$T/gen" "$T/lnk/class_001/dirlink"
gf 1 build "$T/lnk" "$T/ds3" --follow-symlinks
if gf 0 build "$T/lnk" "$T/ds3" --skip-bad; then
  has out "skipped       3"
  has out "broken.png"
  has out "dirlink"
fi
rm -rf "$T/ds3"
gf 0 build "$T/lnk" "$T/ds3" --skip-bad --quiet && has err "skipped "
rm -rf "$T/ds3"
# ... and through a labels file.
ln -s "$T/outside.png" "$T/flat/far.png"
printf 'img_000000.png 1\nfar.png 2\n' >"$T/far.txt"
gf 1 build "$T/flat" "$T/ds3" --labels "$T/far.txt" && has err "line 2"
if gf 0 build "$T/flat" "$T/ds3" --labels "$T/far.txt" --skip-bad; then
  has out "wrote 1 samples"
  has out "line 2"
fi
rm -rf "$T/ds3"
gf 0 build "$T/flat" "$T/ds3" --labels "$T/far.txt" --follow-symlinks &&
  has out "wrote 2 samples"
# '..' stays refused, --skip-bad or not.
printf 'img_000000.png 1\n../outside.png 2\n' >"$T/up.txt"
gf 1 build "$T/flat" "$T/ds4" --labels "$T/up.txt" --skip-bad &&
  has err "line 2"

# 4. A labels file listing one file twice.
printf 'img_000000.png 1\nimg_000001.png 0\n./img_000000.png 2\n' >"$T/dup.txt"
if gf 1 build "$T/flat" "$T/ds4" --labels "$T/dup.txt"; then
  has err "$T/dup.txt"
  has err "lines 1 and 3"
  has err "img_000000.png"
  has err "different labels (1 and 2)"
fi
printf 'img_000001.png 0\nimg_000001.png 0\n' >"$T/dup2.txt"
gf 1 build "$T/flat" "$T/ds4" --labels "$T/dup2.txt" &&
  has err "lines 1 and 2" && has err "listed once"
[ -e "$T/ds4" ] && fail "a refused build left OUT"

# 5. --labels naming a folder.
gf 1 build "$T/flat" "$T/ds4" --labels "$T/flat" &&
  has err "is a folder; expected a labels file"

# 6. OUT inside SRC: no class for the next build.
gf 0 build "$T/src" "$T/src/ds" --quiet
if gf 0 build "$T/src" "$T/src/ds2"; then
  has out "classes       2"
  has out "not a class   $T/src/ds: a gpufeed dataset folder"
  has out "wrote 6 samples"
fi
gf 0 build "$T/src" "$T/src/ds" --force && has out "classes       2"
gf 0 inspect "$T/src/ds" && has out "classes    2"
rm -rf "$T/src/ds" "$T/src/ds2"

# 7. Empty path arguments: usage errors, no internal names.
for args in "build|''|$T/x" "build|$T/src|''" "build|$T/src|$T/x|--labels|''" \
            "inspect|''" "verify|''" "bench|''" "bench|$T/src|--labels=" \
            "synth|''|--count|1" "synth|$T/x|--count|1|--from|''"; do
  IFS='|' read -r -a argv <<<"$args"
  for k in "${!argv[@]}"; do [ "${argv[$k]}" = "''" ] && argv[$k]=""; done
  if gf 2 "${argv[@]}"; then
    has err "is an empty string (expected a path)"
    grep -q "gf_[a-z_]*:" "$T/err" && fail "internal name in: $(cat "$T/err")"
  fi
done
[ -e "$T/x" ] && fail "a usage error made $T/x"

# 8. Temporary folders of killed builds.
host=$(uname -n | tr -c 'A-Za-z0-9\n-' '_' | cut -c1-32)
dead=$(sh -c 'echo $$')   # a process that has ended
stale="$T/.ds8.gftmp-$dead-$host-abc123"
mkdir "$stale" && : >"$stale/shard-000000.gfs"
live="$T/.ds8.gftmp-$$-$host-def456"       # this shell still runs
mkdir "$live"
old="$T/.ds8.gftmp-Xy12Zq"                 # the older name: no process id
mkdir "$old"
far="$T/.ds8.gftmp-$dead-someotherhost-ghi789"
mkdir "$far"
if gf 0 build "$T/src" "$T/ds8" --quiet; then
  has err "removed $stale"
  has err "no longer runs (process $dead)"
  has err "$live"
  has err "may still run (process $$ exists)"
  has err "$old"
  has err "carries no process id"
  has err "$far"
  has err "on host someotherhost"
fi
[ -e "$stale" ] && fail "the stale temporary folder is still there"
[ -d "$live" ] && [ -d "$old" ] && [ -d "$far" ] ||
  fail "a temporary folder that could not be judged was removed"
rm -rf "$live" "$old" "$far"
# A real SIGKILL: the next build removes what it left.
gf 0 synth "$T/big" --count 40 --size 256x256 --classes 2 --quiet || finish
"$GPUFEED" build "$T/big" "$T/ds9" --codec zstd --level 19 --threads 1 \
  >/dev/null 2>&1 &
pid=$!
for _ in $(seq 200); do
  tmp_left "$T" && break
  sleep 0.05
done
kill -KILL $pid
wait $pid 2>/dev/null
if tmp_left "$T"; then
  gf 0 build "$T/src" "$T/ds9" --quiet && has err "removed " &&
    has err "(process $pid)"
  tmp_left "$T" && fail "the killed build's temporary folder was not removed"
else
  fail "the killed build left no temporary folder (finished too fast?)"
fi
no_crash
finish
