# GPUFEED_LOG with an unknown value is an error in every command (usage
# error, exit 2, naming the variable, its value and the accepted values),
# as GPUFEED_IO's is; the known values run.
# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

gf 0 synth "$T/png" --count 4 --size 8x8 --classes 2 --quiet || finish
gf 0 build "$T/png" "$T/ds" --quiet || finish

# logenv VALUE WANT ARGS...
logenv() {
  local value=$1 want=$2
  shift 2
  GPUFEED_LOG=$value gf "$want" "$@"
}
for value in bogus DEBUG warning 1; do
  for cmd in "synth $T/s2 --count 1 --quiet" "build $T/png $T/ds2 --quiet" \
             "inspect $T/ds" "verify $T/ds --quiet" \
             "bench $T/ds --device cpu --batch 2 --epochs 1 --quiet"; do
    # shellcheck disable=SC2086
    if logenv "$value" 2 $cmd; then
      has err "GPUFEED_LOG=$value"
      has err "expected error, warn, info or debug"
      has err "gpufeed ${cmd%% *}: "
      [ -s "$T/out" ] && fail "GPUFEED_LOG=$value $cmd wrote to stdout"
    fi
  done
  [ -e "$T/s2" ] && fail "synth ran with GPUFEED_LOG=$value"
  [ -e "$T/ds2" ] && fail "build ran with GPUFEED_LOG=$value"
done
for value in error warn info debug ""; do
  logenv "$value" 0 inspect "$T/ds" && has out "samples    4"
  logenv "$value" 0 bench "$T/ds" --device cpu --batch 2 --epochs 1 --quiet
done
gf 0 --help && has out "GPUFEED_LOG=error|warn|info|debug"
# Help still answers, whatever the environment.
logenv bogus 0 inspect --help && has out "Usage: gpufeed inspect"
finish
