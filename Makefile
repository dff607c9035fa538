# minitorch — the front door. On a fresh Debian machine `make demo` or `make test` alone does the set-up:
# missing Debian packages are installed first (as root, or through sudo), then CMake builds into build/.
SHELL := /bin/bash
JOBS ?= $(shell nproc)

# NATIVE=1 (the default): CPU kernels tuned for this machine (-march=native), into build/. NATIVE=0: the
# plain x86-64 baseline, binaries that run on any x86-64 machine, into build-portable/ (and the sanitizer
# build into build-sanitize-portable/), so that switching never mixes objects built for different CPUs.
NATIVE ?= 1
ifeq ($(NATIVE),0)
  BUILD ?= build-portable
  SANITIZE_BUILD ?= build-sanitize-portable
  CMAKE_NATIVE := -DMINITORCH_NATIVE=OFF
else
  BUILD ?= build
  SANITIZE_BUILD ?= build-sanitize
  CMAKE_NATIVE := -DMINITORCH_NATIVE=ON
endif

# Compiler, build tools and the libraries docs/design.md names (Eigen, Open MPI, nlohmann/json, CLI11,
# GoogleTest, Doxygen) plus the KJV corpus; Chromium and Python 3 for the trace page's browser test
# (tests/trace/browser_check.py drives headless Chromium over its DevTools pipe, standard library only);
# iproute2 for the two-machine test in network namespaces (tests/tools/two_nodes_netns.sh).
DEB_PACKAGES := g++ make cmake ninja-build ccache libeigen3-dev libopenmpi-dev openmpi-bin nlohmann-json3-dev libcli11-dev \
                libgtest-dev libgmock-dev doxygen bible-kjv chromium python3 iproute2
# The notebooks (notebooks/, `make notebooks`): Debian's Jupyter, its Python kernel, numpy and matplotlib.
NOTEBOOK_PACKAGES := jupyter-nbconvert python3-ipykernel python3-nbformat python3-numpy python3-matplotlib

.PHONY: all deps configure build test notebooks sanitize fuzz data demo docs bench bench-pytorch bench-gemini bench-tp gpu-check gpu-check-dry clean

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
	$(call install_missing,$(DEB_PACKAGES) $(NOTEBOOK_PACKAGES))

# Each library layer compiles as unity sources (the heavy headers parsed once per layer, not once per file),
# but every file with solution blocks on its own: make labs-check compiles stubbed copies of those with the same
# commands, apart from this build (tools/labs/labs_stubbed.py).
configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DMINITORCH_UNITY=ON -DMINITORCH_LAB_FILES_APART=ON $(CMAKE_NATIVE) > /dev/null

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

# One test more than cores: a sixth of the suites' time is waiting (a stopped rank's deadline, mpirun
# starting), and the CPU stays busy meanwhile (892 tests on 2 cores: -j2 213 s, -j3 176 s, -j4 174 s).
CTEST_JOBS ?= $(shell echo $$(( $(JOBS) + 1 )))
test: build data
	cd $(BUILD) && ctest --output-on-failure -j$(CTEST_JOBS) --timeout 600
	$(run_notebooks)
	$(run_doxygen)

# The notebooks (notebooks/README.md): each one runs the binaries of $(BUILD)/ (MINITORCH_BUILD), plots what
# they write and asserts their numbers against the formulas; nbconvert executes it into
# $(BUILD)/notebooks/NAME.ipynb (with its outputs; the figures beside it as PNG), and a failing cell fails
# the target. The sources must have no outputs (checked first). Debian's python only (/usr/bin/python3): a pyenv/venv python on PATH does not see Debian's
# packages, and the kernel nbconvert starts is the python that runs it.
NOTEBOOKS := $(sort $(wildcard notebooks/*.ipynb))
NBCONVERT ?= /usr/bin/python3 -m nbconvert
define run_notebooks
	@/usr/bin/python3 -c 'import json, sys; bad = [p for p in sys.argv[1:] if any(c.get("outputs") or c.get("execution_count") \
	  for c in json.load(open(p))["cells"])]; bad and sys.exit("notebooks: committed with outputs (clear them: " \
	  "/usr/bin/python3 -m nbconvert --clear-output --inplace " + " ".join(bad) + ")")' $(NOTEBOOKS)
	@mkdir -p $(BUILD)/notebooks; start=$$(date +%s); \
	for nb in $(NOTEBOOKS); do \
	  echo "notebooks: executing $$nb"; \
	  MINITORCH_BUILD=$(BUILD) PYDEVD_DISABLE_FILE_VALIDATION=1 $(NBCONVERT) --to notebook --execute \
	    --ExecutePreprocessor.timeout=600 --output-dir $(BUILD)/notebooks $$nb \
	    || { echo "notebooks: FAILED: $$nb (the failing cell is above)"; exit 1; }; \
	done; \
	echo "notebooks: $(words $(NOTEBOOKS)) executed in $$(( $$(date +%s) - start )) s; outputs and figures in $(BUILD)/notebooks/"
endef
# The student tree of the lab assignments (docs/labs.md): the tracked files, every `// BEGIN SOLUTION` block
# replaced by a NotImplemented stub; LESSON=NN stubs one lesson's tasks only. LABS_OUT=dir (default build/labs).
LABS_OUT ?= $(BUILD)/labs
.PHONY: labs
labs: deps
	/usr/bin/python3 tools/labs/make_labs.py --root . --out $(LABS_OUT) $(if $(LESSON),--lesson $(LESSON))

# make lab LESSON=NN: the student's build (docs/labs.md, LAB.md): only what grading lesson NN runs — the
# libraries (in unity sources, MINITORCH_UNITY), the test binaries made of only the files that hold its tasks'
# tests (MINITORCH_LAB_LESSON), lesson-NN — in $(LAB_BUILD), without the CUDA layer (nothing graded runs on a GPU),
# with Ninja (it keeps both cores busy across the layers; lesson 05 and 10: about 180 s of CPU from scratch).
# Then, from the top of the tree: ctest --test-dir $(LAB_BUILD) -R L05_T1; $(LAB_BUILD)/bin/minitorch-grade.
LAB_BUILD ?= build-lab
.PHONY: lab
lab: deps data
	@test -n "$(LESSON)" || { echo "make lab: say which lesson, e.g. make lab LESSON=05" >&2; exit 2; }
	@cmake -S . -B $(LAB_BUILD) $(if $(wildcard $(LAB_BUILD)/CMakeCache.txt),,-G Ninja) -DCMAKE_BUILD_TYPE=Release -DMINITORCH_CUDA=OFF \
	  -DMINITORCH_UNITY=ON -DMINITORCH_LAB_LESSON=$(LESSON) $(CMAKE_NATIVE) > /dev/null
	targets=$$(/usr/bin/python3 tools/labs/labs_tasks.py --root . --targets $(LESSON)) && \
	  cmake --build $(LAB_BUILD) -j$(JOBS) --target $$targets

# make labs-check [LESSON=NN] (tools/labs/labs_check.py, docs/labs.md): for each lesson (or the one given), its
# solution blocks are stubbed in a build of their own ($(BUILD)/labs-check/stubbed: the stubbed files compiled with
# the reference's commands, the test binaries relinked; the tree and $(BUILD) never change), the suites run:
# the reference passes every test; a test passes iff it depends on no stubbed task (labs/depends.json); each
# stubbed task's own tests fail with its NotImplemented message. labs-check-full also pastes back one solution
# at a time. labs-record rewrites labs/depends.json from runs with one task stubbed at a time.
.PHONY: labs-check labs-check-full labs-record
LABS_CHECK = /usr/bin/python3 tools/labs/labs_check.py --root . --build $(BUILD) $(if $(LESSON),--lesson $(LESSON))
labs-check: build
	$(LABS_CHECK)
labs-check-full: build
	$(LABS_CHECK) --full
labs-record: build
	$(LABS_CHECK) --record

notebooks: build data
	$(run_notebooks)

# clang: the sanitizer and fuzz builds (make sanitize, make fuzz). clang compiles instrumented code about
# 1.6x as fast as g++ (docs/build.md, "Where CI's time goes"); the normal build stays g++.
CLANG_PACKAGES := clang libclang-rt-14-dev libomp-14-dev

# ASan + UBSan (docs/build.md): clang builds into $(SANITIZE_BUILD)/ at -O1 -g1 (asserts on), CUDA off; run every
# unit suite's tests (ctest, one process per test as in `make test`), then, if they were clean, the
# multi-rank suites (test-*_mpi) on 2 ranks. Any sanitizer report fails the target, including one from a
# program a test expects to fail (a CLI error test, mt-rank-throws), which its expected non-zero exit
# would hide: ASan's reports go to files under $(SANITIZE_BUILD)/sanitizer-reports/, checked after each
# ctest; UBSan's go to stderr (GCC ignores its log_path next to ASan), which tests/test_util.h's
# run_command checks in a sanitizer build.
# Leaks are checked everywhere, MPI included; Open MPI's own (never freed, by design) are suppressed by
# library in tests/lsan_openmpi.supp. To be matched, the innermost frames of their allocation stacks must
# still be mapped at exit, when LeakSanitizer checks, but MPI_Finalize unloads Open MPI's components:
# every process the run starts preloads $(SANITIZE_BUILD)/liblsan_keep_loaded.so (tests/lsan_keep_loaded.cpp),
# a dlclose() that does nothing, and ASan's fast unwinder suffices (the slow one, which walked every
# malloc's stack through the DWARF tables, made a multi-rank test 6x slower).
# It builds the target mt-tested (tests/CMakeLists.txt): what ctest runs, not the benchmarks, which `make test`
# builds and nothing here runs.
# SANITIZE_EXCLUDE (a ctest -E regex over the GoogleTest names) leaves out the training runs on the KJV:
# 300 steps in tests/tools, and the --quick runs of lessons 03, 05, 06, 07, 08, 09 and 10 (20, 2x10, 3x10, 2x10,
# 2x20, 2x10 and 2x10 steps; lesson 10 also 14 runs of 2 steps: seconds in build/, 44 to 98 s each under the sanitizers, 258 s together on the
# 2-core machine, where they ran clean), for code paths the short training tests in tests/nn, tests/zero
# and the multi-rank suites already cover. The lessons' other tests stay in: their options, q under mpirun
# through the ring's beats, --data. SANITIZE_EXCLUDE=NONE runs everything.
# The *_shuffled runs (each suite again as one process, in a shuffled order) are left out too: they check
# test order, which the normal build checks; under the sanitizers every test has already run once.
SANITIZE_EXCLUDE ?= L03_TrainKJV|L03_Lesson.RunsQuick|L05_Lesson.RunsQuick|L06_Lesson.RunsQuick|L07_Lesson.RunsQuick|L08_Lesson.RunsQuick|L09_Lesson.RunsQuick|L10_Lesson.RunsQuick|_shuffled$$
SANITIZE_REPORTS = $(abspath $(SANITIZE_BUILD))/sanitizer-reports
SANITIZE_KEEP_LOADED = $(abspath $(SANITIZE_BUILD))/liblsan_keep_loaded.so
SANITIZE_ENV = MINITORCH_NUM_THREADS=1 LD_PRELOAD=$(SANITIZE_KEEP_LOADED) \
  ASAN_OPTIONS=check_initialization_order=1:verify_asan_link_order=0:log_path=$(SANITIZE_REPORTS)/asan \
  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan_openmpi.supp:print_suppressions=0 \
  UBSAN_OPTIONS=print_stacktrace=1 \
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
sanitize: deps data
	$(call install_missing,$(CLANG_PACKAGES))
	@if [ -f $(SANITIZE_BUILD)/CMakeCache.txt ] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang' $(SANITIZE_BUILD)/CMakeCache.txt; then \
	  echo "sanitize: $(SANITIZE_BUILD)/ was configured with g++; it starts again with clang++"; rm -rf $(SANITIZE_BUILD); fi
	@cmake -S . -B $(SANITIZE_BUILD) -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" \
	  -DMINITORCH_SANITIZE=ON -DMINITORCH_UNITY=ON -DMINITORCH_CUDA=OFF $(CMAKE_NATIVE) > /dev/null
	cmake --build $(SANITIZE_BUILD) -j$(JOBS) --target mt-tested
	g++ -shared -fPIC -O2 -o $(SANITIZE_KEEP_LOADED) tests/lsan_keep_loaded.cpp
	@rm -rf $(SANITIZE_REPORTS) && mkdir -p $(SANITIZE_REPORTS); export $(SANITIZE_ENV); cd $(SANITIZE_BUILD); \
	reports() { if compgen -G "$(SANITIZE_REPORTS)/*" > /dev/null; then cat $(SANITIZE_REPORTS)/*; \
	  echo "sanitize: FAILED: sanitizer reports above (in $(SANITIZE_REPORTS))"; exit 1; fi; }; \
	echo "sanitize: unit suites (excluded: $(SANITIZE_EXCLUDE))"; \
	ctest -E '_np[0-9]+$$|$(SANITIZE_EXCLUDE)' -j$(JOBS) --timeout 1200 --output-on-failure || { reports; exit 1; }; reports; \
	echo "sanitize: multi-rank suites on 2 ranks"; \
	ctest -R '_np2$$' --timeout 1200 --output-on-failure || { reports; exit 1; }; reports; \
	echo "sanitize: clean (ASan + UBSan)"

# libFuzzer (docs/build.md, tests/fuzz/): clang builds every fuzz target with ASan + UBSan into
# $(FUZZ_BUILD)/ (-O1 -g, CUDA off), fuzz-seeds writes each target's seed corpus (from the code), and each
# target runs FUZZ_SECONDS on it. An input that runs past FUZZ_TIMEOUT seconds is a hang, one that takes
# more than FUZZ_RSS_MB of memory (or one malloc that large) is a finding too; libFuzzer saves every
# finding as $(FUZZ_BUILD)/findings/<target>/crash-*, timeout-*, oom-* (replay: bin/fuzz-<target> FILE).
# Inputs that found new code stay in $(FUZZ_BUILD)/corpus/<target>/ for the next run. Fails if any
# target found anything.
FUZZ_SECONDS ?= 60
FUZZ_TIMEOUT ?= 10
FUZZ_RSS_MB ?= 2048
FUZZ_MAX_LEN ?= 65536
FUZZ_BUILD ?= build-fuzz
FUZZ_TARGETS := $(patsubst tests/fuzz/libfuzzer/fuzz_%.cpp,%,$(wildcard tests/fuzz/libfuzzer/fuzz_*.cpp))
fuzz: deps
	$(call install_missing,$(CLANG_PACKAGES))
	@cmake -S . -B $(FUZZ_BUILD) -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g" -DMINITORCH_FUZZ=ON -DMINITORCH_CUDA=OFF $(CMAKE_NATIVE) > /dev/null
	cmake --build $(FUZZ_BUILD) -j$(JOBS) --target fuzz-all
	@cd $(FUZZ_BUILD) && rm -rf seeds && bin/fuzz-seeds seeds > /dev/null && failed=""; \
	for t in $(FUZZ_TARGETS); do \
	  rm -rf findings/$$t; mkdir -p corpus/$$t findings/$$t; \
	  echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	  MINITORCH_NUM_THREADS=1 bin/fuzz-$$t corpus/$$t seeds/$$t -max_total_time=$(FUZZ_SECONDS) \
	    -timeout=$(FUZZ_TIMEOUT) -rss_limit_mb=$(FUZZ_RSS_MB) -max_len=$(FUZZ_MAX_LEN) \
	    -dict=$(CURDIR)/tests/fuzz/libfuzzer/fuzz.dict -artifact_prefix=findings/$$t/ -print_final_stats=1 \
	    > findings/$$t.log 2>&1; rc=$$?; \
	  runs=$$(sed -n 's/^stat::number_of_executed_units: *//p' findings/$$t.log); \
	  found=$$(ls findings/$$t | wc -l); \
	  echo "fuzz: $$t: $${runs:-?} inputs in $(FUZZ_SECONDS) s, exit $$rc, $$found findings (log $(FUZZ_BUILD)/findings/$$t.log)"; \
	  if [ $$rc -ne 0 ] || [ $$found -ne 0 ]; then failed="$$failed $$t"; tail -n 40 findings/$$t.log; fi; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: FAILED:$$failed (inputs in $(FUZZ_BUILD)/findings/)"; exit 1; fi; \
	echo "fuzz: no findings in $(words $(FUZZ_TARGETS)) targets"

# 4 data-parallel ranks (DDP) on any machine: --oversubscribe lets them share fewer cores; as root Open MPI
# wants its allow-run-as-root settings. Rank 0 prints and saves out/baby.safetensors.
# A newcomer's first command builds only what it runs (the trainer and the sampler), not every test and benchmark.
demo: configure data
	cmake --build $(BUILD) -j$(JOBS) --target minitorch-train minitorch-sample
	@if [ "$$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi; \
	  set -x; mpirun --oversubscribe --bind-to none -np 4 $(BUILD)/bin/minitorch-train --config configs/ddp.json --data datasets/kjv.txt
	$(BUILD)/bin/minitorch-sample --checkpoint out/baby.safetensors --prompt "And God said" --tokens 400

# ---- the lessons (lessons/NN_topic/) ----
# `make lesson-NN` builds lesson NN (so the binary has your edits) and runs it from the repository
# root; ARGS passes options (make lesson-03 ARGS="--auto --quick"). The lessons of MPI_LESSONS run under
# mpirun on LESSON_NP ranks, as `make demo` does (-q: Open MPI's own banners off; the lesson prints its errors),
# or on LESSON_NP_NN where a lesson sets its own (lesson 13: 8 ranks, its 2 × 2 × 2 grid).
# `make test-lesson-NN` builds everything, then runs lesson NN's tests: the ctest tests named LNN_... and,
# for lesson 05, the multi-rank suites (dist_mpi, zero_mpi, runtime_mpi), for lessons 06 and 07 zero_mpi (their L06_Zero1/2,
# L07_Zero3 tests) and runtime_mpi (L06_RunReport, L06_ShardedCheckpoint), for lesson 10 zero_mpi (L10_SimDevice,
# L10_T1_Offload) and runtime_mpi, for lesson 11 zero_mpi (L11_OffloadParam, L11_NvmeOptimizer) and runtime_mpi, for
# lesson 12 gemini_mpi (L12_Gemini, L12_GeminiAuto), for lesson 13 tp_mpi (L13_TensorParallelGpt, L13_ParallelLinearSplit)
# and dist_mpi (L13_Grid on 2 and 4 ranks; on 8 it is L13_Grid.dist_mpi_np8).
LESSON_NUMS := $(sort $(foreach d,$(wildcard lessons/[0-9][0-9]_*/main.cpp),$(word 2,$(subst /, ,$(d)))))
LESSON_NUMS := $(foreach d,$(LESSON_NUMS),$(firstword $(subst _, ,$(d))))
MPI_LESSONS := 05 06 07 09 10 11 12 13
LESSON_NP ?= 4
LESSON_NP_13 := 8
LESSON_TESTS_05 := ^L05_|^dist_mpi_np|^zero_mpi_np|^runtime_mpi_np
LESSON_TESTS_06 := ^L06_|^zero_mpi_np|^runtime_mpi_np
LESSON_TESTS_07 := ^L07_|^zero_mpi_np|^runtime_mpi_np
LESSON_TESTS_09 := ^L09_|^pipeline_mpi_np
LESSON_TESTS_10 := ^L10_|^zero_mpi_np|^runtime_mpi_np
LESSON_TESTS_11 := ^L11_|^zero_mpi_np|^runtime_mpi_np
LESSON_TESTS_12 := ^L12_|^gemini_mpi_np
LESSON_TESTS_13 := ^L13_|^tp_mpi_np|^dist_mpi_np
lesson_tests = $(or $(LESSON_TESTS_$(1)),^L$(1)_)
ALLOW_ROOT = if [ "$$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
.PHONY: $(addprefix lesson-,$(LESSON_NUMS)) $(addprefix test-lesson-,$(LESSON_NUMS))
lesson-03 lesson-04 lesson-05 lesson-06 lesson-07 lesson-08 lesson-09 lesson-10 lesson-11 lesson-12 lesson-13 test-lesson-03 test-lesson-04 test-lesson-05 test-lesson-06 test-lesson-07 test-lesson-08 test-lesson-09 test-lesson-10 test-lesson-11 test-lesson-12 test-lesson-13: data
$(addprefix lesson-,$(LESSON_NUMS)): lesson-%: configure
	cmake --build $(BUILD) -j$(JOBS) --target lesson-$*
	@$(ALLOW_ROOT); set -x; \
	  $(if $(filter $*,$(MPI_LESSONS)),mpirun -q --oversubscribe --bind-to none -np $(or $(LESSON_NP_$*),$(LESSON_NP)) )$(BUILD)/bin/lesson-$* $(ARGS)
$(addprefix test-lesson-,$(LESSON_NUMS)): test-lesson-%: build
	cd $(BUILD) && ctest -R '$(call lesson_tests,$*)' --output-on-failure -j$(JOBS) --timeout 600

# The API reference (docs/Doxyfile): README.md as its front page, every library folder's headers; warnings are
# errors, so a comment Doxygen cannot read fails it. `make test` runs it too (a few seconds), so it cannot rot.
define run_doxygen
	@mkdir -p $(BUILD)
	@(cat docs/Doxyfile; echo "OUTPUT_DIRECTORY = $(BUILD)/docs") | doxygen - \
	  && echo "docs: the reference is $(BUILD)/docs/html/index.html" \
	  || { echo "docs: FAILED: Doxygen's warnings above are errors (docs/Doxyfile)"; exit 1; }
endef
docs: deps
	$(run_doxygen)

bench: build
	$(BUILD)/bin/bench-gpt --steps 5
	$(BUILD)/bin/bench-matmul

# DDP overhead: 2 ranks x 1 thread against 1 rank x 1 thread on the same per-rank batch (target <= 1.10).
.PHONY: bench-ddp
bench-ddp: build
	@if [ "$$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi; \
	  set -x; mpirun --oversubscribe --bind-to none -np 2 $(BUILD)/bin/bench-ddp --steps 40

# The event sink's cost: ns per emit site with no sink, and a baby-GPT step with and without a sink.
# ZeRO's cost in time: each implemented stage's median step against DDP's, 2 ranks x 1 thread, baby and
# small GPT (targets: ZeRO-1/2 <= 1.10, ZeRO-3 <= 1.35).
.PHONY: bench-zero
bench-zero: build
	@if [ "$$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi; \
	  set -x; mpirun --oversubscribe --bind-to none -np 2 $(BUILD)/bin/bench-zero --steps 40

# Activation checkpointing (bench/checkpoint.cpp): baby and small GPT, 1 rank x 1 thread, off and segments of
# 1..L blocks: the activation peak, the median step time (3 alternating rounds), losses bit-identical.
.PHONY: bench-checkpoint
bench-checkpoint: build
	$(BUILD)/bin/bench-checkpoint --steps 2 --rounds 3

# The pipeline's bubble against (P-1)/(M+P-1) for M = 1..16 on 4 stages, and its throughput against one
# rank accumulating the same micro-batches (bench/pipeline.cpp). 4 ranks share this machine's cores.
.PHONY: bench-pipeline
bench-pipeline: build
	$(BUILD)/bin/bench-pipeline --single --baseline $(BUILD)/bench-pipeline-single.txt
	@if [ "$$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi; \
	  set -x; mpirun --oversubscribe --bind-to none -np 4 $(BUILD)/bin/bench-pipeline --baseline $(BUILD)/bench-pipeline-single.txt

.PHONY: bench-events
bench-events: build
	$(BUILD)/bin/bench-events --steps 10 --rounds 5

# The cost of --trace: (c) and (d) of bench-events (a step with the trace recorder attached vs none; one
# frame's recording against the step) and (e) a
# real 2-rank ZeRO-3 run with and without --trace (bench/trace_overhead.py: the run reports' step times).
.PHONY: bench-trace
bench-trace: build data
	$(BUILD)/bin/bench-events --steps 10 --rounds 3
	/usr/bin/python3 bench/trace_overhead.py --build $(BUILD) --ranks 2 --steps 12 --rounds 3

# The PyTorch reference for bench-gpt (bench/pytorch_gpt.py): Debian's python3-torch, with libblas.so.3 from
# OpenBLAS (libopenblas0-pthread; with Debian's reference BLAS a gpt2 step takes ~54 s). Debian's python only:
# a pyenv/venv python on PATH does not see Debian's packages.
BENCH_PYTORCH_PACKAGES := python3-torch libopenblas0-pthread
bench-pytorch:
	$(call install_missing,$(BENCH_PYTORCH_PACKAGES))
	/usr/bin/python3 bench/pytorch_gpt.py --steps 5

# ZeRO-Offload (bench/README.md, "Offload"). Part 1: the host AdamW (bench/offload.cpp) in elements/s over one
# shard of OFFLOAD_ELEMENTS, beside torch.optim.AdamW on the same machine (bench/pytorch_adamw.py, Debian's
# python3-torch, a bench-only dependency), medians of OFFLOAD_ROUNDS rounds, and the ratio (target >= 2x
# torch's best). The lines go to $(BUILD)/bench-offload.txt. Part 2 (bench/offload_steps.py): the step time of
# ZeRO-2 and ZeRO-3 with and without offload_optimizer, 2 sim ranks, medians of 3 runs.
BENCH_OFFLOAD_PACKAGES := python3-torch
BENCH_OFFLOAD_TARGETS := bench-offload minitorch-train
OFFLOAD_ELEMENTS ?= 8388608
OFFLOAD_ROUNDS ?= 3
.PHONY: bench-offload
bench-offload: configure
	$(call install_missing,$(BENCH_OFFLOAD_PACKAGES))
	cmake --build $(BUILD) -j$(JOBS) --target $(BENCH_OFFLOAD_TARGETS)
	@set -o pipefail; $(BUILD)/bin/bench-offload --elements $(OFFLOAD_ELEMENTS) --rounds $(OFFLOAD_ROUNDS) | tee $(BUILD)/bench-offload.txt
	@set -o pipefail; /usr/bin/python3 bench/pytorch_adamw.py --elements $(OFFLOAD_ELEMENTS) --rounds $(OFFLOAD_ROUNDS) | tee -a $(BUILD)/bench-offload.txt
	@/usr/bin/python3 bench/pytorch_adamw.py --ratio $(BUILD)/bench-offload.txt
	@set -o pipefail; /usr/bin/python3 bench/offload_steps.py --build $(BUILD) --ranks 2 --steps 12 --runs 3 | tee -a $(BUILD)/bench-offload.txt

# ZeRO-Infinity (bench/infinity.py): the small GPT on 2 sim ranks, ZeRO-3 plain, + offload_optimizer cpu,
# + offload_param cpu, the optimizer on NVMe serial and pipelined (its swap in $(BUILD)/nvme-bench, on this machine's
# disk): step time, device and host peaks, the swap's O_DIRECT throughput beside dd's on the same folder, the I/O
# share the pipeline hid. Medians of 3 runs. The lines go to $(BUILD)/bench-infinity.txt.
.PHONY: bench-infinity
bench-infinity: configure
	cmake --build $(BUILD) -j$(JOBS) --target minitorch-train
	@set -o pipefail; /usr/bin/python3 bench/infinity.py --build $(BUILD) --runs 3 | tee $(BUILD)/bench-infinity.txt

# Gemini (bench/gemini.py): a 3.2M-parameter GPT on 4 sim ranks on a PCIe-like link (copying a rank's parameter shard
# takes one step's compute): per capacity from "everything fits" down, each method's bytes h2d / d2h per step and step
# time (medians of 3 runs) — DDP, ZeRO-3, + offload_optimizer, + offload_param, Gemini static (the smallest fractions
# that fit), Gemini auto — then each method's smallest capacity. The lines go to $(BUILD)/bench-gemini.txt.
.PHONY: bench-gemini
bench-gemini: configure
	cmake --build $(BUILD) -j$(JOBS) --target minitorch-train
	@set -o pipefail; /usr/bin/python3 bench/gemini.py --build $(BUILD) --runs 3 | tee $(BUILD)/bench-gemini.txt

# Tensor parallelism on the small GPT over t = 1, 2, 3 ranks (bench/tp.py, bench/tp.cpp): step, all-reduce share,
# parameter bytes and activation peak per rank, TP elements per step against the formula; medians of 3 runs.
.PHONY: bench-tp
bench-tp: configure
	cmake --build $(BUILD) -j$(JOBS) --target bench-tp
	@set -o pipefail; /usr/bin/python3 bench/tp.py --build $(BUILD) --runs 3 | tee $(BUILD)/bench-tp.txt

# The GPU check (docs/build.md, "The GPU check"): `make gpu-check` on the rented GPU machine, whose
# packages come from .device/ (tools/device_setup.sh, run here once): it depends on nothing here, since
# `deps` would call apt-get there. `make gpu-check-dry` proves the same script here, on the build of
# $(BUILD). ARGS passes options: make gpu-check ARGS="--only table,cuda-tests".
gpu-check:
	tools/gpu_check.sh $(ARGS)
gpu-check-dry: build
	tools/gpu_check.sh --dry-run --build $(BUILD) $(ARGS)

clean:
	rm -rf $(BUILD) $(SANITIZE_BUILD) $(FUZZ_BUILD) $(LAB_BUILD)
