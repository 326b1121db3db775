#!/usr/bin/env bash
# The published systems' experiments in the twin (`make reproduce`):
#   scripts/reproduce.sh BINARY OUTDIR [EXPERIMENT...]
# Each experiment is a sweep file under scenarios/published/experiments/ (the
# paper's benchmark, parameters and process counts on the system's scenario);
# it runs as `piotwin sweep FILE --out OUTDIR/<name>` (table sweep.csv, every
# metric in sweep.json, plots/, index.html; resumed if stopped). Then
# OUTDIR/tables.md gathers every experiment's table under its description.
# Exits non-zero as soon as a sweep fails (what finished is kept).
set -euo pipefail
bin=$(realpath "$1"); out=$2; shift 2
cd "$(dirname "$0")/.."
dir=scenarios/published/experiments
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for f in "$dir"/*.toml; do names+=("$(basename "$f" .toml)"); done
fi
for n in "${names[@]}"; do
  [ -f "$dir/$n.toml" ] || { echo "reproduce: no experiment \`$n\` (no $dir/$n.toml)" >&2; exit 2; }
done
mkdir -p "$out"
for n in "${names[@]}"; do
  f=$dir/$n.toml
  t0=$(date +%s)
  echo "== $n: piotwin sweep $f --out $out/$n" >&2
  "$bin" sweep "$f" --out "$out/$n" >&2
  echo "== $n: $(( $(date +%s) - t0 )) s" >&2
done
tables=$out/tables.md.tmp
{
  echo "# The published systems in the twin"
  echo
  echo "Predictions from hardware descriptions (scenarios/published/), not fits."
  for n in "${names[@]}"; do
    echo
    echo "## $n"
    echo
    sed -n 's/^# \{0,1\}//p' "$dir/$n.toml"
    echo "Scenario: \`$(sed -n 's/^scenario *= *"\(.*\)"/\1/p' "$dir/$n.toml")\`; every metric in \`$n/sweep.json\`, plots in \`$n/plots/\`."
    echo
    awk -F, 'NR == 1 { printf "|"; for (i = 1; i <= NF; i++) printf " %s |", $i; printf "\n|"; for (i = 1; i <= NF; i++) printf "---|"; printf "\n"; next }
             { printf "|"; for (i = 1; i <= NF; i++) { v = $i; if (v ~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/ && v ~ /[.e]/) v = (v + 0 >= 1000 || v + 0 <= -1000) ? sprintf("%.0f", v) : sprintf("%.4g", v); printf " %s |", v }; printf "\n" }' "$out/$n/sweep.csv"
  done
} > "$tables"
mv "$tables" "$out/tables.md"
echo "wrote $out/tables.md" >&2
