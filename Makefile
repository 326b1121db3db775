# piotwin — the two commands a newcomer needs: `make demo` and `make test`.
SHELL := /bin/bash
CARGO ?= cargo
RANKS ?= 4
BIN := target/release/piotwin
DEMO_IOR := -a MPIIO -b 4m -t 256k -s 4 -i 3

.PHONY: demo test bench deps build twin-only clean-demo

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

# Speed and memory figures: engine events/s and twin IOR wall time at 64, 1024, 4096 ranks.
bench:
	$(CARGO) run --release -p piotwin-sim --example engine_bench
