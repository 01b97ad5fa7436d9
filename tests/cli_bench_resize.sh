# gpufeed bench's resize transforms: --rrc N (RandomResizedCrop NxN +
# flip), --eval-crop N (shorter side to round(N*256/224), central NxN),
# --resize HxW, and --mean/--std: --help names them, bad values and
# combinations are usage errors, and a run reports the transform it ran
# (or, in a build without the resize code, the library refuses the resize
# field by name).
# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

gf 0 bench --help || finish
for o in "--rrc N" "--eval-crop N" "--resize HxW" "--mean M" "--std S" \
         "RandomResizedCrop" "round(N*256/224)"; do
  has out "$o"
done
gf 0 synth "$T/png" --count 16 --size 40x36 --classes 2 --quiet || finish
gf 0 build "$T/png" "$T/ds" --quiet || finish

# Usage errors.
gf 2 bench "$T/ds" --rrc 0 && has err "--rrc"
gf 2 bench "$T/ds" --rrc x && has err "--rrc"
gf 2 bench "$T/ds" --eval-crop 0 && has err "--eval-crop"
gf 2 bench "$T/ds" --resize 3x && has err "--resize"
gf 2 bench "$T/ds" --resize 0x4 && has err "--resize"
gf 2 bench "$T/ds" --rrc 8 --size 8 && has err "exclude each other"
gf 2 bench "$T/ds" --rrc 8 --eval-crop 8 && has err "exclude each other"
gf 2 bench "$T/ds" --resize 8x4 --rrc 8 && has err "exclude each other"
gf 2 bench "$T/ds" --mean 1,2,3,4,5 && has err "--mean"
gf 2 bench "$T/ds" --mean 1,,2 && has err "--mean"
gf 2 bench "$T/ds" --mean 1, && has err "--mean"
gf 2 bench "$T/ds" --std 0 && has err "--std"
gf 2 bench "$T/ds" --std nan && has err "--std"

# Normalisation with a crop: the report says what ran.
gf 0 bench "$T/ds" --device cpu --batch 4 --epochs 1 --dtype f16 \
  --layout nchw --size 32 --mean 123.675,116.28,103.53 \
  --std 58.395,57.12,57.375 --json --quiet &&
  has out '"transform":"crop/pad 32x32, f16 nchw, normalised (mean/std)"'

# run_resize FLAG VALUE DESCRIPTION
run_resize() {
  "$GPUFEED" bench "$T/ds" --device cpu --batch 4 --epochs 1 --dtype f16 \
    --layout nchw --mean 120 --std 60 "$1" "$2" --json --quiet \
    >"$T/out" 2>"$T/err"
  local rc=$?
  if [ $rc = 0 ]; then
    has out "\"transform\":\"$3, f16 nchw, normalised (mean/std)\""
    has out '"images":16'
  elif [ $rc = 1 ] && grep -qF "resize is not supported" "$T/err"; then
    # This build has no resize code: the flag reached the loader as a
    # resize mode, refused by its field's name.
    has err "transform"
  else
    fail "bench $1 $2: exit $rc"
    sed 's/^/  err| /' "$T/err" >&2
  fi
}
run_resize --rrc 24 "RandomResizedCrop 24x24 + flip"
run_resize --eval-crop 24 "Resize 27 + CenterCrop 24x24"
run_resize --eval-crop 224 "Resize 256 + CenterCrop 224x224"
run_resize --eval-crop 100 "Resize 114 + CenterCrop 100x100"
run_resize --resize 20x30 "Resize 20x30"
finish
