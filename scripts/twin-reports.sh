#!/usr/bin/env bash
# Twin reports of a fixed set of runs, for checking that a refactor keeps results
# bit-identical: scripts/twin-reports.sh BINARY OUTDIR [quick|full]
# then `diff -r` two OUTDIRs. The JSON's host/time fields are dropped (they vary
# between runs of the same binary); everything else must match byte for byte.
set -euo pipefail
bin=$(realpath "$1"); out=$2; set=${3:-full}
mkdir -p "$out"; out=$(realpath "$out")
cd "$(dirname "$0")/.."
S=$(pwd)/scenarios
run() {  # name, then the arguments of `piotwin run`
  local name=$1; shift
  local t0=$(date +%s.%N)
  "$bin" run "$@" --json "$out/$name.json" > "$out/$name.txt" 2> "$out/$name.err" || echo "exit $?" >> "$out/$name.txt"
  printf '%-28s %6.1f s\n' "$name" "$(echo "$(date +%s.%N) - $t0" | bc)" >&2
}
work=$out/scratch; rm -rf "$work"; mkdir "$work"; cd "$work"
run ior-4-nfs ior -a MPIIO -b 4m -t 256k -s 4 -i 2 --sim $S/nfs-raid5.toml --ranks 4
run ior-8-coll-pvfs ior -a MPIIO -b 1m -t 64k -s 2 -c --sim $S/pvfs2-jbod.toml --ranks 8
run ior-8-fpp-default ior -a POSIX -b 8m -t 1m -F --sim $S/default.toml --ranks 8
run ior-64-strided ior -a MPIIO -b 1m -t 32k -s 4 -c --sim $S/lustre-hdd.toml --ranks 64
run beff-4-default b_eff_io --sim $S/default.toml --ranks 4 -T 30 -MB 512 -f "b4"
run beff-8-nfs b_eff_io --sim $S/nfs-raid5.toml --ranks 8 -T 60 -MB 1024 -f "b8"
run btio-S-4 btio --class S --sim $S/default.toml --ranks 4
run btio-A-16-simple btio --class A --subtype simple --sim $S/pvfs2-jbod.toml --ranks 16
run btio-W-9-epio btio --class W --subtype epio --sim $S/nfs-raid5.toml --ranks 9
run btiok-S-4 btio-kernel --sim $S/default.toml --ranks 4
run ftio-4 ftio -i 4 --sim $S/default.toml --ranks 4
run iozone iozone --sim $S/default.toml --ranks 1
run pingpong-4 pingpong --sim $S/nfs-raid5.toml --ranks 4
if [ "$set" = full ]; then
  run ior-1024 ior -a MPIIO -b 16m -t 1m -e --sim $S/lustre-hdd.toml --ranks 1024
  run beff-16 b_eff_io --sim $S/lustre-hdd.toml --ranks 16 -MB 2048 -T 1800 -f "b16"
  run beff-128 b_eff_io --sim $S/lustre-hdd.toml --ranks 128 -N 128 -T 600 -MB 2048 -f "b128"
  run beff-128-exact b_eff_io --sim $S/lustre-hdd.toml --ranks 128 -N 128 -T 600 -MB 2048 --exact -f "b128x"
  run beff-1024 b_eff_io --sim $S/lustre-hdd.toml --ranks 1024 -MB 2048 -T 1800 -f "b1024"
  run btio-C-1024 btio --class C --sim $S/lustre-hdd.toml --ranks 1024
  run ftio-256 ftio -i 16 --sim $S/lustre-hdd.toml --ranks 256
fi
mv "$work"/*.prot "$out"/ 2>/dev/null || true; rm -rf "$work"
