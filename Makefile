# minitorch — the front door. On a fresh Debian machine `make demo` or `make test` alone does the set-up:
# missing Debian packages are installed first (as root, or through sudo), then CMake builds into build/.
SHELL := /bin/bash
BUILD ?= build
JOBS ?= $(shell nproc)

# Compiler, build tools and the libraries DESIGN.md names (Eigen, Open MPI, nlohmann/json, CLI11,
# GoogleTest, Doxygen) plus the KJV corpus.
DEB_PACKAGES := g++ make cmake libeigen3-dev libopenmpi-dev openmpi-bin nlohmann-json3-dev libcli11-dev \
                libgtest-dev libgmock-dev doxygen bible-kjv

.PHONY: all deps configure build test data demo docs bench bench-pytorch clean

all: build

# $(call install_missing,PACKAGES): apt-get install those not installed yet (as root, or through sudo).
define install_missing
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

deps:
	$(call install_missing,$(DEB_PACKAGES))

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release > /dev/null

build: configure
	cmake --build $(BUILD) -j$(JOBS)

# The corpus: the whole King James Bible from Debian's bible-kjv, one verse per line, with the verse
# references ("Ge1:1 ", "SSol1:1 ") stripped. Written to a temporary file, then renamed.
data: datasets/kjv.txt
datasets/kjv.txt: | deps
	@mkdir -p datasets
	env -u COLUMNS bible -f Gen1:1-Rev22:21 | sed -E 's/^[1-3]?[A-Za-z]+[0-9]+:[0-9]+ //' > $@.tmp
	@test -s $@.tmp || { echo "bible produced no text; is bible-kjv installed?"; rm -f $@.tmp; exit 1; }
	@mv $@.tmp $@
	@echo "wrote $@ ($$(wc -c < $@) bytes)"

test: build data
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) --timeout 600

# 4 data-parallel ranks (DDP) on any machine: --oversubscribe lets them share fewer cores; as root Open MPI
# wants its allow-run-as-root settings. Rank 0 prints and saves out/baby.safetensors.
demo: build data
	@if [ "$$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi; \
	  set -x; mpirun --oversubscribe --bind-to none -np 4 $(BUILD)/bin/minitorch-train --config configs/ddp.json --data datasets/kjv.txt
	$(BUILD)/bin/minitorch-sample --checkpoint out/baby.safetensors --prompt "And God said" --tokens 400

docs: deps
	doxygen docs/Doxyfile

bench: build
	$(BUILD)/bin/bench-gpt --steps 5
	$(BUILD)/bin/bench-matmul

# DDP overhead: 2 ranks x 1 thread against 1 rank x 1 thread on the same per-rank batch (target <= 1.10).
.PHONY: bench-ddp
bench-ddp: build
	@if [ "$$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi; \
	  set -x; mpirun --oversubscribe --bind-to none -np 2 $(BUILD)/bin/bench-ddp --steps 40

# The PyTorch reference for bench-gpt (bench/pytorch_gpt.py): Debian's python3-torch, with libblas.so.3 from
# OpenBLAS (libopenblas0-pthread; with Debian's reference BLAS a gpt2 step takes ~54 s). Debian's python only:
# a pyenv/venv python on PATH does not see Debian's packages.
BENCH_PYTORCH_PACKAGES := python3-torch libopenblas0-pthread
bench-pytorch:
	$(call install_missing,$(BENCH_PYTORCH_PACKAGES))
	/usr/bin/python3 bench/pytorch_gpt.py --steps 5

clean:
	rm -rf $(BUILD)
