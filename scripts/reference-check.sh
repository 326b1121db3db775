#!/usr/bin/env bash
# Our real b_eff_io and BTIO beside the public reference codes, built by you outside
# this repository (their code never enters it):
#
#   BEFF_IO=/path/to/b_eff_io            b_eff_io release 2.1 (b_eff_io.c, `mpicc -o b_eff_io b_eff_io.c -lm`)
#   NPB_BIN=/path/to/NPB3.3-MPI/bin      NPB 3.3 BT-IO: bt.<CLASS>.<NP>.{mpi_io_full,mpi_io_simple,fortran_io,ep_io}
#                                        (`make bt CLASS=A NPROCS=4 SUBTYPE=full`, … in NPB3.3-MPI),
#                                        and plain BT, bt.<CLASS>.<NP> (no SUBTYPE), for subtype none
#   scripts/reference-check.sh DIR       or: make reference-check REF_DIR=DIR BEFF_IO=… NPB_BIN=…
#
# Each pair runs alternately, ours first, RUNS times (default 3), in DIR (new or empty;
# the scratch files of every run stay inside it). Then, per output row, each program's
# median and min–max band over its runs, the ratio of the medians (ours / reference),
# and whether the two bands overlap. Leave BEFF_IO or NPB_BIN unset to skip that pair.
#
# Knobs: PIOTWIN (default target/release/piotwin), MPIEXEC (default mpiexec), RUNS,
# BEFF_NP (2), BEFF_ARGS ("-MB 1024 -MT 2048 -T 60 -N 1,2"), BT_CLASS (A), BT_NP (4),
# BT_SUBTYPES ("full simple fortran epio"; add "none" for the solver alone: Mop/s).
set -euo pipefail
dir=${1:?usage: scripts/reference-check.sh DIR (new or empty)}
repo=$(cd "$(dirname "$0")/.." && pwd)
piotwin=$(realpath "${PIOTWIN:-$repo/target/release/piotwin}")
mpiexec=${MPIEXEC:-mpiexec}
runs=${RUNS:-3}
beff_np=${BEFF_NP:-2}
beff_args=${BEFF_ARGS:-"-MB 1024 -MT 2048 -T 60 -N 1,2"}
bt_class=${BT_CLASS:-A}
bt_np=${BT_NP:-4}
bt_subtypes=${BT_SUBTYPES:-"full simple fortran epio"}

mkdir -p "$dir"
if [ -n "$(ls -A "$dir")" ]; then echo "reference-check: $dir is not empty" >&2; exit 2; fi
dir=$(realpath "$dir")
[ -x "$piotwin" ] || { echo "reference-check: no $piotwin (make build)" >&2; exit 2; }

if [ -n "${BEFF_IO:-}" ]; then
  ref=$(realpath "$BEFF_IO")
  for i in $(seq 1 "$runs"); do
    for who in ours ref; do
      d=$dir/b_eff_io/$who-$i; mkdir -p "$d"
      echo "b_eff_io run $i: $who" >&2
      if [ $who = ours ]; then
        (cd "$d" && $mpiexec -n "$beff_np" "$piotwin" run b_eff_io $beff_args -p "$d" -f out > stdout.txt)
      else
        (cd "$d" && $mpiexec -n "$beff_np" "$ref" $beff_args -p "$d" -f out > stdout.txt)
      fi
    done
  done
fi

if [ -n "${NPB_BIN:-}" ]; then
  declare -A npb=([full]=.mpi_io_full [simple]=.mpi_io_simple [fortran]=.fortran_io [epio]=.ep_io [none]=)
  lower_class=$(echo "$bt_class" | tr 'A-Z' 'a-z')
  for st in $bt_subtypes; do
    ref=$(realpath "$NPB_BIN/bt.$bt_class.$bt_np${npb[$st]}")
    for i in $(seq 1 "$runs"); do
      for who in ours ref; do
        d=$dir/btio-$st/$who-$i; mkdir -p "$d"
        echo "btio $st run $i: $who" >&2
        if [ $who = ours ]; then
          (cd "$d" && $mpiexec -n "$bt_np" "$piotwin" run btio --class "$lower_class" --subtype "$st" -p "$d" > stdout.txt)
        else
          (cd "$d" && $mpiexec -n "$bt_np" "$ref" > stdout.txt)
        fi
        rm -f "$d"/btio.*out* "$d"/btio*.out.*
      done
    done
  done
fi

python3 - "$dir" <<'EOF'
import glob, os, re, statistics, sys
top = sys.argv[1]

def beff_rows(run):
    """Rows of a b_eff_io .sum: (PEs, pos or total, access) -> the five type columns;
    and the system b_eff_io of the last line."""
    rows = {}
    text = open(os.path.join(run, "out.sum")).read()
    for line in text.splitlines():
        m = re.match(r"\s*(\d+) PEs (\d|\s) +(\d+)? ?(write|rewrite|read)\s+(.*)$", line)
        t = re.match(r"\s*(\d+) PEs\s+total-(write|rewrite|read)\s+(.*)$", line)
        if t:
            vals = t.group(3).split()
            for k, v in enumerate(vals):
                if v != "-":
                    rows[(f"n={t.group(1)}", f"total-{t.group(2)}", f"type {k}")] = float(v)
        elif m:
            vals = m.group(5).split()
            for k, v in enumerate(vals):
                if v != "-":
                    rows[(f"n={m.group(1)}", f"{m.group(4)} l={m.group(3)}", f"type {k}")] = float(v)
    sysline = [l for l in open(os.path.join(run, "stdout.txt")) if l.strip().startswith("b_eff_io =")]
    if sysline:
        rows[("system", "b_eff_io", "MB/s")] = float(sysline[0].split("=")[1].split()[0])
    return rows

def bt_rows(run):
    text = open(os.path.join(run, "stdout.txt")).read()
    rows = {}
    for key, pat in [
        ("I/O timing in seconds", r"I/O timing in seconds\s*:\s*([\d.]+)"),
        ("I/O data rate (MB/sec)", r"I/O data rate\s+\(MB/sec\)\s*:\s*([\d.]+)"),
        ("Time in seconds", r"Time in seconds\s*=\s*([\d.]+)"),
        ("Mop/s total", r"Mop/s total\s*=\s*([\d.]+)"),
    ]:
        m = re.search(pat, text)
        if m:
            rows[(key,)] = float(m.group(1))
    return rows

def report(name, parse):
    base = os.path.join(top, name)
    if not os.path.isdir(base):
        return
    runs = {w: sorted(glob.glob(os.path.join(base, f"{w}-*"))) for w in ("ours", "ref")}
    data = {w: [parse(r) for r in runs[w]] for w in runs}
    keys = [k for k in data["ref"][0] if all(k in d for d in data["ours"] + data["ref"])]
    print(f"\n== {name}: {len(runs['ours'])} runs each, alternating (ours first)")
    print(f"{'row':<44} {'ours median':>12} {'[min – max]':>21} {'ref median':>12} {'[min – max]':>21} {'ours/ref':>8}  bands")
    overlap_all = True
    for k in keys:
        o = [d[k] for d in data["ours"]]; r = [d[k] for d in data["ref"]]
        mo, mr = statistics.median(o), statistics.median(r)
        overlap = min(o) <= max(r) and min(r) <= max(o)
        overlap_all &= overlap
        ratio = mo / mr if mr else float("nan")
        label = " ".join(k)
        print(f"{label:<44} {mo:12.2f} [{min(o):9.2f} –{max(o):9.2f}] {mr:12.2f} [{min(r):9.2f} –{max(r):9.2f}] {ratio:8.3f}  {'overlap' if overlap else 'APART'}")
    print(f"-- {name}: {'every row' if overlap_all else 'NOT every row'}'s bands overlap")

report("b_eff_io", beff_rows)
for st in ("full", "simple", "fortran", "epio", "none"):
    report(f"btio-{st}", bt_rows)
EOF
