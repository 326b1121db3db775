# piotwin — the two commands a newcomer needs: `make demo` and `make test`.
SHELL := /bin/bash
CARGO ?= cargo
RANKS ?= 4
BIN := target/release/piotwin
DEMO_IOR := -a MPIIO -b 4m -t 256k -s 4 -i 3

.PHONY: demo test bench deps build

# Install the system packages real mode needs (MPICH and libclang for rsmpi), if missing.
deps:
	@need=""; command -v mpiexec >/dev/null 2>&1 || need="$$need mpich libmpich-dev"; \
	command -v clang >/dev/null 2>&1 || need="$$need clang"; \
	ls /usr/lib/llvm-*/lib/libclang.so* >/dev/null 2>&1 || need="$$need libclang-dev"; \
	if [ -n "$$need" ]; then \
	  SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  echo "installing:$$need"; \
	  $$SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y mpich libmpich-dev clang libclang-dev; \
	fi

build: deps
	$(CARGO) build --release

# The IOR probe for real ($(RANKS) MPI ranks, scratch in a fresh temporary directory)
# and in the twin (default scenario), then the two reports side by side.
demo: build
	@scratch=$$(mktemp -d -t piotwin-demo.XXXXXX); \
	echo "== real: mpiexec -n $(RANKS) piotwin run ior $(DEMO_IOR) -o $$scratch/ior.dat"; \
	mpiexec -n $(RANKS) $(BIN) run ior $(DEMO_IOR) -o $$scratch/ior.dat --json $$scratch/real.json || exit 1; \
	echo; echo "== twin: piotwin run ior $(DEMO_IOR) --sim scenarios/default.toml --ranks $(RANKS)"; \
	$(BIN) run ior $(DEMO_IOR) -o $$scratch/ior.dat --sim scenarios/default.toml --ranks $(RANKS) --json $$scratch/twin.json || exit 1; \
	echo; $(BIN) report side-by-side --measured $$scratch/real.json --predicted $$scratch/twin.json; \
	echo; echo "reports: $$scratch/real.json $$scratch/twin.json"

# Everything CI checks: the whole workspace's tests (real-mode tests launch mpiexec),
# and that the twin-only build needs no MPI.
test: deps
	$(CARGO) test --workspace
	$(CARGO) build --no-default-features --bin piotwin

# Engine speed: events/s on micro-benchmarks (engine_bench at $(BENCH_RANKS) ranks), then the
# twin IOR at 64, 1024 and 4096 ranks: wall and CPU (user + sys) seconds, growth of the CPU
# time from the previous size against N log N. Built into its own target dir (twin-only, no
# MPI) so it never replaces the MPI-enabled release binary in target/release.
BENCH_DIR := target/bench
BENCH_RANKS ?= 1024 4096
BENCH_IOR := -a MPIIO -b 16m -t 1m -e
BENCH_SCN := scenarios/lustre-hdd.toml
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
