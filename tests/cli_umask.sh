# A built dataset folder follows the umask like the files in it: it was
# once always 0700 (a private temporary folder renamed into place), so
# other users of a shared machine could not read a dataset anyone may
# read. Checked for a new OUT and for --force replacing one.
# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

gf 0 synth "$T/png" --count 4 --size 8x8 --classes 2 --quiet || finish
for mask in 022 077 027 002; do
  dir=$(printf '%o' $((0777 & ~8#$mask)))
  file=$(printf '%o' $((0666 & ~8#$mask & 0644)))
  for force in "" --force; do
    (umask "$mask" && "$GPUFEED" build "$T/png" "$T/ds$mask" --quiet $force) \
      2>"$T/err" || { fail "build with umask $mask $force failed"; cat "$T/err" >&2; continue; }
    got=$(stat -c %a "$T/ds$mask")
    [ "$got" = "$dir" ] ||
      fail "umask $mask ${force:-(new OUT)}: dataset folder mode $got, wanted $dir"
    for f in "$T/ds$mask"/*; do
      got=$(stat -c %a "$f")
      [ "$got" = "$file" ] || fail "umask $mask: $f mode $got, wanted $file"
    done
  done
  tmp_left "$T" && fail "umask $mask: a temporary folder was left"
done
finish
