# Sourced by the benches that compare whole variants side by side
# (bench/uprobe.sh, bench/eprobe.sh): runs the caller's `variant NAME`
# (which prints one figure) for every NAME in ROUNDS interleaved rounds,
# the names in a shuffled order each round, then prints each one's median
# and min..max, labelled with UNIT.
#   interleaved_rounds UNIT NAME...
interleaved_rounds() {
  local unit=$1 r v
  shift
  declare -A figures=()
  for r in $(seq "$ROUNDS"); do
    for v in $(printf '%s\n' "$@" | shuf); do figures[$v]+="$(variant "$v") "; done
    echo "round $r done" >&2
  done
  for v in "$@"; do
    python3 - "$v" "$unit" ${figures[$v]} <<'PY'
import statistics, sys
v, unit, xs = sys.argv[1], sys.argv[2], sorted(int(x) for x in sys.argv[3:])
print(f"{v:9s} {statistics.median(xs):7.0f} {unit} ({xs[0]}..{xs[-1]})")
PY
  done
}
