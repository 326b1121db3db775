# piotwin — the two commands a newcomer needs: `make demo` and `make test`.
SHELL := /bin/bash
CARGO ?= cargo
RANKS ?= 4
BIN := target/release/piotwin
DEMO_IOR := -a MPIIO -b 4m -t 256k -s 4 -i 3

.PHONY: demo validate test bench deps build reference-check reproduce

# Install the system packages real mode needs (MPICH and libclang for rsmpi, gfortran for
# the Fortran units of BTIO's fortran and epio subtypes), if missing.
deps:
	@need=""; command -v mpiexec >/dev/null 2>&1 || need="$$need mpich libmpich-dev"; \
	command -v clang >/dev/null 2>&1 || need="$$need clang"; \
	ls /usr/lib/llvm-*/lib/libclang.so* >/dev/null 2>&1 || need="$$need libclang-dev"; \
	command -v gfortran >/dev/null 2>&1 || need="$$need gfortran"; \
	if [ -n "$$need" ]; then \
	  SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  echo "installing:$$need"; \
	  $$SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y mpich libmpich-dev clang libclang-dev gfortran; \
	fi

build: deps
	$(CARGO) build --release

# This host's calibrated scenario: `make demo` writes it (quick calibration) and reuses it while fresh.
HOST := $(shell hostname)
CAL ?= scenarios/calibrated/$(HOST).toml
DEMO_BEFF := -T 10 -MB 256
# Real runs per comparison: the measured value is their median, shown with its min-max band
# (run-to-run noise here is tens of percent; one run cannot judge a prediction).
DEMO_REPEAT ?= 3

# Quick calibration of this host, then IOR and a short b_eff_io run for real and in the
# calibrated twin, side by side: each real side run DEMO_REPEAT times (median and min-max
# band), the twin's rates measured again right before each real run (compare --refresh-rates). $(CAL) is reused while `piotwin calibrate --check` finds it
# fresh (same host, processor, cores and memory as its probes file recorded, at most 30 days
# old, and a quick memcpy inside its calibrated interval); a stale one is kept as
# $(CAL).stale and this host is calibrated anew.
demo: build
	@if [ -f $(CAL) ] && $(BIN) calibrate --check $(CAL); then echo "== reusing $(CAL)"; \
	else if [ -f $(CAL) ]; then mv $(CAL) $(CAL).stale; \
	    if [ -f $(CAL).probes.json ]; then mv $(CAL).probes.json $(CAL).stale.probes.json; fi; \
	    echo "== $(CAL) kept as $(CAL).stale; calibrating this host anew"; fi; \
	  scratch=$$(mktemp -d -t piotwin-cal.XXXXXX); \
	  echo "== piotwin calibrate --quick --dir $$scratch --out $(CAL)"; \
	  $(BIN) calibrate --quick --dir $$scratch --out $(CAL) || exit 1; rmdir $$scratch; fi
	@out=$$(mktemp -d -t piotwin-demo.XXXXXX); \
	echo; echo "== piotwin compare ior --scenario $(CAL) --ranks $(RANKS) --repeat $(DEMO_REPEAT) --refresh-rates $(DEMO_IOR)"; \
	$(BIN) compare ior --scenario $(CAL) --ranks $(RANKS) --repeat $(DEMO_REPEAT) --refresh-rates --out $$out/ior $(DEMO_IOR) -o ior.dat || exit 1; \
	echo; echo "== piotwin compare b_eff_io --scenario $(CAL) --ranks 2 --repeat $(DEMO_REPEAT) --refresh-rates $(DEMO_BEFF)"; \
	$(BIN) compare b_eff_io --scenario $(CAL) --ranks 2 --repeat $(DEMO_REPEAT) --refresh-rates --out $$out/b_eff_io $(DEMO_BEFF) || exit 1

# Held-out accuracy of the calibrated twin: b_eff_io at -T 60 on 1, 2 and 4 ranks, IOR shapes
# calibration never runs, BTIO class A (full, simple, epio), MADbench2 and FTIO on 4 ranks,
# each compared with VALIDATE_REPEAT real runs (their median, with its min-max band: a
# prediction inside the band is within goal); then one table of every headline metric's error
# (`piotwin report validation`). About 25 minutes on an Intel Xeon guest of 2 cores and 36 on an AMD EPYC one before the refresh also timed the kernels on every core, which adds some 22 s to each of its 45 refreshes on the AMD one: 53 minutes there since (2026-12-07, validation/vm-y). VALIDATE_T="60 300" adds the long runs:
# b_eff_io keeps what it writes until its read pass, and its data grow with T (13 GB at -T 60
# on one rank here, so some 65 GB at -T 300, more with partitions: more than this
# workstation's disk holds). Results go under $(VALIDATE_OUT), replaced each time. Exits 1
# when the median headline |error| is above VALIDATE_LIMIT percent. To store the runs as this
# machine kind's CI gates, see validation/README.md.
VALIDATE_OUT ?= target/validate
VALIDATE_T ?= 60
VALIDATE_N ?= 1 2 4
VALIDATE_LIMIT ?= 25
VALIDATE_REPEAT ?= 3
# Twin runs per compare on parameters drawn from their calibrated intervals: each headline
# metric gets its predicted 95 % interval, and the summary the coverage (0: no intervals).
VALIDATE_SAMPLES ?= 32
VALIDATE_SAMPLING = $(if $(filter-out 0,$(VALIDATE_SAMPLES)),--samples $(VALIDATE_SAMPLES))
# The guest's speed drifts between calibration and the runs: before each real run, compare
# measures calibration's rate probes again and the twin takes the rates moved as their fits
# moved (VALIDATE_REFRESH= judges the calibration as it stands).
VALIDATE_REFRESH ?= --refresh-rates
VALIDATE_COMPARE = $(BIN) compare --scenario $(CAL) --repeat $(VALIDATE_REPEAT) $(VALIDATE_SAMPLING) $(VALIDATE_REFRESH)
# b_eff_io frees all it wrote (~19 GB at -T 60) at its end; a guest with free page reporting
# takes longer than 1.5 x release_time to hand that much back (12 GiB freed: a 4 GiB rewrite
# took 1.74 s 13 s later, 5.21 s 40 s later), so its repetitions wait longer.
VALIDATE_BEFF_SETTLE ?= 45s
VALIDATE_IOR := "-a MPIIO -b 64m -t 1m -s 2" "-a MPIIO -b 8m -t 128k -s 4 -c" \
	"-a POSIX -b 32m -t 256k -F" "-a MPIIO -b 16m -t 32k -s 2 -F"
VALIDATE_BTIO := full simple epio
VALIDATE_MADBENCH2 := 2048 8 1 32 1024 1 1 --iomethod mpi --filetype shared -p .
VALIDATE_FTIO := -i 48 -p .
validate: build
	@test -f $(CAL) || { echo "no $(CAL): run make demo or piotwin calibrate first"; exit 2; }
	@rm -rf $(VALIDATE_OUT); mkdir -p $(VALIDATE_OUT); \
	for t in $(VALIDATE_T); do for n in $(VALIDATE_N); do \
	  d=$(VALIDATE_OUT)/b_eff_io-T$$t-n$$n; \
	  $(VALIDATE_COMPARE) --settle $(VALIDATE_BEFF_SETTLE) b_eff_io --ranks $$n --out $$d -T $$t -MB 1024 -MT 2048 > $$d.txt 2>&1; \
	  echo "b_eff_io -T $$t n=$$n: exit $$?"; done; done; \
	i=0; for shape in $(VALIDATE_IOR); do i=$$((i+1)); for n in 2 4; do \
	  d=$(VALIDATE_OUT)/ior-$$i-n$$n; \
	  $(VALIDATE_COMPARE) ior --ranks $$n --out $$d $$shape -i 3 -o ior.dat > $$d.txt 2>&1; \
	  echo "ior $$shape n=$$n: exit $$?"; done; done; \
	for st in $(VALIDATE_BTIO); do \
	  d=$(VALIDATE_OUT)/btio-A-$$st-n4; \
	  $(VALIDATE_COMPARE) btio --ranks 4 --out $$d --class A --subtype $$st -p . > $$d.txt 2>&1; \
	  echo "btio class A $$st n=4: exit $$?"; done; \
	d=$(VALIDATE_OUT)/madbench2-n4; \
	$(VALIDATE_COMPARE) madbench2 --ranks 4 --out $$d -- $(VALIDATE_MADBENCH2) > $$d.txt 2>&1; \
	echo "madbench2 $(VALIDATE_MADBENCH2) n=4: exit $$?"; \
	d=$(VALIDATE_OUT)/ftio-n4; \
	$(VALIDATE_COMPARE) ftio --ranks 4 --out $$d $(VALIDATE_FTIO) > $$d.txt 2>&1; \
	echo "ftio $(VALIDATE_FTIO) n=4: exit $$?"
	$(BIN) report validation $(VALIDATE_OUT) --limit $(VALIDATE_LIMIT)

# Our real b_eff_io and BTIO beside the public reference codes, which you build outside
# this repository (b_eff_io 2.1's b_eff_io.c; NPB 3.3-MPI's BT with SUBTYPE=full, simple,
# fortran, epio): make reference-check BEFF_IO=/path/b_eff_io NPB_BIN=/path/NPB3.3-MPI/bin.
# Alternating runs (RUNS=3), then per-row medians, min–max bands and ratios; all scratch
# under REF_DIR (new). About 15 minutes with the defaults (scripts/reference-check.sh).
REF_DIR ?= target/reference-check
reference-check: build
	@test ! -e $(REF_DIR) || { echo "$(REF_DIR) exists: move it away or give another REF_DIR"; exit 2; }
	scripts/reference-check.sh $(REF_DIR)

# The published systems (scenarios/published/README.md) predicted from their hardware
# descriptions: every experiment their papers ran, in the twin, with the papers' parameters
# (b_eff_io, b_eff, FTIO, MADbench2, BTIO class D). One sweep per experiment under
# $(REPRODUCE_OUT)/<name>/ (sweep.csv, sweep.json, plots/, index.html), every table in
# $(REPRODUCE_OUT)/tables.md. Twin only (no MPI run); resumes where a stop left it.
# REPRODUCE="b_eff-t3e ftio-origin2000" runs only those.
REPRODUCE_OUT ?= target/reproduce
REPRODUCE ?=
reproduce:
	CARGO_TARGET_DIR=target/twin $(CARGO) build --release --no-default-features --bin piotwin
	scripts/reproduce.sh target/twin/release/piotwin $(REPRODUCE_OUT) $(REPRODUCE)

# Everything CI checks: the whole workspace's tests (real-mode tests launch mpiexec;
# PIOTWIN_REQUIRE_MPI makes a missing launcher a failure, never a skip), and the
# twin-only build (no MPI): it builds, and its own test (a real run is refused) runs.
test: deps
	PIOTWIN_REQUIRE_MPI=1 $(CARGO) test --workspace
	$(CARGO) build --no-default-features --bin piotwin
	$(CARGO) test --no-default-features --test cli_ior a_build_without_mpi_says_so

# Engine speed: events/s on micro-benchmarks (engine_bench at $(BENCH_RANKS) ranks), then the
# twin IOR at 64, 1024 and 4096 ranks: wall and CPU (user + sys) seconds, growth of the CPU
# time from the previous size against N log N; then a 128-rank twin b_eff_io with the
# fast-forward and with `--exact`, and the ratio of their wall times; the same for b_eff's
# message loops (lustre-nvme 64 ranks, the mpp-torus 16 ranks); then a 100-point sweep
# on 1 and on 2 worker threads (same results, throughput ratio). Built into its own
# target dir (twin-only, no MPI) so it never replaces the MPI-enabled release binary in
# target/release.
BENCH_DIR := target/bench
BENCH_RANKS ?= 1024 4096
BENCH_IOR := -a MPIIO -b 16m -t 1m -e
BENCH_SCN := scenarios/lustre-hdd.toml
BENCH_BEFF := --ranks 128 -N 128 -T 600 -MB 2048
bench:
	CARGO_TARGET_DIR=$(BENCH_DIR) $(CARGO) build --release -p piotwin-sim --example engine_bench
	CARGO_TARGET_DIR=$(BENCH_DIR) $(CARGO) build --release --no-default-features --bin piotwin
	$(BENCH_DIR)/release/examples/engine_bench $(BENCH_RANKS)
	@set -o pipefail; echo; echo "twin IOR ($(BENCH_IOR), $(BENCH_SCN))"; \
	printf "%6s  %8s  %8s  %8s  %9s\n" ranks "wall s" "cpu s" growth "N log N"; \
	prev=""; prevn=""; TIMEFORMAT="%R %U %S"; \
	for n in 64 1024 4096; do \
	  t=$$( { time $(BENCH_DIR)/release/piotwin run ior $(BENCH_IOR) --sim $(BENCH_SCN) --ranks $$n >/dev/null; } 2>&1 | tail -1 ) || exit 1; \
	  set -- $$t; c=$$(awk -v u=$$2 -v s=$$3 'BEGIN { print u + s }'); \
	  awk -v n=$$n -v w=$$1 -v c=$$c -v p="$$prev" -v pn="$$prevn" 'BEGIN { \
	    if (p == "") { printf "%6d  %8.3f  %8.3f  %8s  %9s\n", n, w, c, "-", "-"; exit } \
	    printf "%6d  %8.3f  %8.3f  %7.1fx  %8.1fx\n", n, w, c, c / (p > 0.001 ? p : 0.001), (n * log(n)) / (pn * log(pn)) }'; \
	  prev=$$c; prevn=$$n; \
	done
	@set -o pipefail; echo; echo "twin b_eff_io ($(BENCH_BEFF), $(BENCH_SCN)): fast-forward against --exact"; \
	d=$$(mktemp -d); TIMEFORMAT="%R"; \
	ff=$$( { time $(BENCH_DIR)/release/piotwin run b_eff_io $(BENCH_BEFF) --sim $(BENCH_SCN) -f $$d/ff >/dev/null 2>&1; } 2>&1 | tail -1 ) || exit 1; \
	ex=$$( { time $(BENCH_DIR)/release/piotwin run b_eff_io $(BENCH_BEFF) --sim $(BENCH_SCN) --exact -f $$d/ex >/dev/null 2>&1; } 2>&1 | tail -1 ) || exit 1; \
	rm -rf $$d; \
	awk -v f=$$ff -v e=$$ex 'BEGIN { printf "fast-forward %7.1f s   --exact %7.1f s   %5.1fx\n", f, e, e / f }'
	@set -o pipefail; echo; echo "twin b_eff: fast-forward of the message loops against --exact"; \
	TIMEFORMAT="%R"; \
	for case in "scenarios/lustre-nvme.toml 64" "scenarios/mpp-torus.toml 16"; do \
	  set -- $$case; \
	  ff=$$( { time $(BENCH_DIR)/release/piotwin run b_eff --sim $$1 --ranks $$2 >/dev/null; } 2>&1 | tail -1 ) || exit 1; \
	  ex=$$( { time $(BENCH_DIR)/release/piotwin run b_eff --sim $$1 --ranks $$2 --exact >/dev/null; } 2>&1 | tail -1 ) || exit 1; \
	  awk -v s=$$1 -v n=$$2 -v f=$$ff -v e=$$ex 'BEGIN { printf "%-28s %4d ranks  fast-forward %6.1f s   --exact %6.1f s   %5.1fx\n", s, n, f, e, e / f }'; \
	done
	@set -o pipefail; echo; echo "sweep of 100 twin IOR points at 1024 ranks (examples/sweep-lustre.toml): 1 worker thread against 2"; \
	d=$$(mktemp -d); TIMEFORMAT="%R"; \
	one=$$( { time $(BENCH_DIR)/release/piotwin sweep examples/sweep-lustre.toml --jobs 1 --out $$d/j1 >/dev/null 2>&1; } 2>&1 | tail -1 ) || exit 1; \
	two=$$( { time $(BENCH_DIR)/release/piotwin sweep examples/sweep-lustre.toml --jobs 2 --out $$d/j2 >/dev/null 2>&1; } 2>&1 | tail -1 ) || exit 1; \
	cmp -s $$d/j1/sweep.csv $$d/j2/sweep.csv || { echo "the two sweeps differ"; exit 1; }; rm -rf $$d; \
	awk -v a=$$one -v b=$$two 'BEGIN { printf "--jobs 1 %7.1f s   --jobs 2 %7.1f s   throughput %4.2fx\n", a, b, a / b }'
