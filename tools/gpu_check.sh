#!/usr/bin/env bash
# tools/gpu_check.sh — the whole GPU check as one command (docs/build.md, "The GPU check").
#
# For a rented GPU machine that is ours once, for about 15 minutes: one H100 (sm_90), CUDA's nvcc,
# CMake, ninja, g++ and python3 with PyTorch, but no Internet and none of Eigen, nlohmann/json, CLI11,
# GoogleTest or Open MPI. Those come as Debian .deb files in .device/ (made here by
# tools/device_setup.sh, carried there with the working tree) and are unpacked into a prefix under /tmp.
# The check (configure, build, the op table, the CUDA tests, training, 2 ranks, the benchmarks) is
# meant to take under 5 minutes on 16 cores.
#
# Usage: tools/gpu_check.sh [--dry-run] [--only PART[,PART...]] [--results DIR] [--build DIR]
#   parts, in order: setup deps configure build table cuda-tests train nccl ranks lesson bench bench-pytorch
#   --only      run these parts; setup always runs (the others need its environment). A part needs the
#               parts before it that it builds on, among those selected: `--only table` reuses DIR's
#               binaries, `--only build,table` rebuilds first.
#   --results   where each part's log (PART.log) and summary.txt go (default gpu-check-results)
#   --build     the CMake build folder (default build-gpu; with --dry-run, build)
#   --dry-run   on the development machine, without a GPU: unpack and prove the prefix (setup, deps),
#               reuse the build folder that `make build` made (its CUDA library must hold sm_90 code),
#               run the op table on the CPU backend, and say what the GPU parts would run.
# stdout: one line per part (PART: ok | FAIL: why | not built: why | not run: why), then the totals;
# summary.txt holds the same. Exit status 1 if any part failed.
set -uo pipefail  # no -e: a part's failure is recorded, and the next parts go on
cd "$(dirname "$0")/.." || exit 2

PARTS=(setup deps configure build table cuda-tests train nccl ranks lesson bench bench-pytorch)
TARGETS=(test-backend_ops test-cuda minitorch-train lesson-04 bench-gpu)  # built, among those the tree has
P=/tmp/mt-deps          # the prefix the .deb files are unpacked into
ARCH_LIB=usr/lib/x86_64-linux-gnu
# Shipped only as fallbacks: on the library path only for the sonames the system lacks (device_setup.sh).
FALLBACK_PKGS=(libudev1 libnuma1)
JOBS=$(nproc)
# Seconds each part may run; the machine is ours for 15 minutes, all parts together.
declare -A LIMIT=([configure]=120 [build]=420 [table]=180 [cuda-tests]=240 [train]=240 [nccl]=120 [ranks]=180 [lesson]=180
                  [bench]=240 [bench-pytorch]=240)

usage() { sed -n '/^# Usage:/,/^# summary.txt/p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
DRY=0 ONLY="" RESULTS=gpu-check-results BUILD=""
while (($#)); do
  case $1 in
    --dry-run) DRY=1 ;;
    --only) ONLY=${2:-}; shift ;;
    --only=*) ONLY=${1#--only=} ;;
    --results) RESULTS=${2:-}; shift ;;
    --results=*) RESULTS=${1#--results=} ;;
    --build) BUILD=${2:-}; shift ;;
    --build=*) BUILD=${1#--build=} ;;
    -h|--help) usage 0 ;;
    *) echo "gpu_check: unknown argument '$1'" >&2; usage ;;
  esac
  shift
done
for p in ${ONLY//,/ }; do
  [[ " ${PARTS[*]} " == *" $p "* ]] || { echo "gpu_check: unknown part '$p' (parts: ${PARTS[*]})" >&2; exit 2; }
done
[[ -n $BUILD ]] || { ((DRY)) && BUILD=build || BUILD=build-gpu; }
BUILD=$(realpath -m "$BUILD")
RESULTS=$(realpath -m "$RESULTS")
mkdir -p "$RESULTS" || exit 2
ORIG_PATH=$PATH ORIG_LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}

# ---------------------------------------------------------------------------------------------------
# Helpers. A part is a function part_NAME whose output goes to RESULTS/NAME.log; it returns 0 (ok),
# 1 (failed), 2 (not built) or 3 (not run), and sets WHY for all but 0.
WHY=""
say() { echo "+ $*"; "$@"; }                              # log the command, then run it
limited() { say timeout -k 10 "${LIMIT[$PART]}" "$@"; }    # the same under the part's time limit
fail() { WHY=$1; return 1; }
not_built() { WHY=$1; return 2; }
not_run() { WHY=$1; return 3; }
# The first line of the part's log matching the pattern, shortened (the reason on the summary line).
first_line() { grep -m1 -E "$1" "$LOG" | sed 's/^[[:space:]]*//' | cut -c1-160; }
# Why a command under `limited` failed, from its exit status and the first line matching the pattern.
why_failed() {
  local rc=$1 line
  ((rc == 124 || rc == 137)) && { echo "timed out after ${LIMIT[$PART]} s"; return; }
  line=$(first_line "$2")
  echo "exit status $rc${line:+: $line}"
}
# The verdict on a GoogleTest run whose output is in the log (after `limited BINARY ...`): failed
# if it failed, ran no test, or skipped one (on the GPU machine a skip means the device was not found).
gtest_verdict() {
  local rc=$1 skipped
  ((rc == 0)) || { fail "$(why_failed "$rc" '^\[  FAILED  \]|no usable CUDA|error|what\(\)|Abort|Segmentation')"; return; }
  skipped=$(grep -oE '^\[  SKIPPED \] [0-9]+ test' "$LOG" | grep -oE '[0-9]+' | tail -1)
  ((${skipped:-0} == 0)) || { fail "$skipped test(s) skipped (no GPU?): $(first_line '^\[  SKIPPED \] [^0-9]')"; return; }
  grep -qE '^\[  PASSED  \] [1-9]' "$LOG" || { fail "no test ran"; return; }
  echo "gpu_check: $(grep -E '^\[  PASSED  \]' "$LOG" | tail -1)"
  NOTE=$(grep -E '^\[  PASSED  \]' "$LOG" | tail -1 | sed 's/^\[  PASSED  \] //')
}
HELP_TARGETS=""
has_target() {  # has_target NAME: the build folder's generator knows the target (Ninja or Makefiles)
  [[ -n $HELP_TARGETS ]] || HELP_TARGETS=$(cmake --build "$BUILD" --target help 2>/dev/null)
  grep -qE "^(\.\.\. )?$1(:|$| )" <<< "$HELP_TARGETS"
}
built() {  # built TARGET: returns 2 (not built) with the reason when BUILD/bin/TARGET cannot run
  [[ -f $BUILD/CMakeCache.txt ]] || { not_built "there is no build in $BUILD"; return; }
  has_target "$1" || { not_built "$1 is not in this tree"; return; }
  [[ -x $BUILD/bin/$1 ]] || not_built "$BUILD/bin/$1 was not built"
}
manifest_problem() {  # prints what is wrong with .device, nothing when it is complete
  [[ -f .device/MANIFEST ]] || { echo ".device/MANIFEST is missing"; return; }
  local p n missing=()
  while read -r p; do
    [[ -n $p ]] || continue
    n=$(compgen -G ".device/debs/${p}_*.deb" | wc -l)
    [[ $n == 1 ]] || missing+=("$p")
  done < .device/MANIFEST
  ((${#missing[@]} == 0)) || echo "no single .deb for ${missing[*]}"
}

# ---------------------------------------------------------------------------------------------------
# setup: unpack .device/debs into the prefix P (not into /) and point CMake, the compiler, the loader
# and Open MPI at it. Where the system has a package too (the development machine), P's copy is used.
part_setup() {
  echo "gpu-check $(date -u '+%F %T UTC') on $(hostname), $JOBS cores$( ((DRY)) && echo ", dry run")"
  local problem; problem=$(manifest_problem)
  if ((DRY)) && [[ -n $problem ]]; then
    echo "$problem: making it"
    say tools/device_setup.sh || { fail "tools/device_setup.sh failed"; return; }
    problem=$(manifest_problem)
  fi
  [[ -z $problem ]] || { fail ".device is missing or incomplete ($problem): run tools/device_setup.sh on the development machine and carry .device"; return; }
  echo "== the machine (probes under the system's own environment)"
  if ((DRY)); then
    echo "(dry run: no nvidia-smi or torch probe, there is no GPU here)"
  else
    say nvidia-smi || echo "!! nvidia-smi failed: no GPU driver?"
    local nvcc; nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
    say "$nvcc" --version || echo "!! no nvcc"
    say timeout 120 python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name())' ||
      echo "!! torch probe failed"
  fi
  echo "$(g++ --version | head -1); $(cmake --version | head -1); ninja $(ninja --version 2>/dev/null || echo missing)"
  local glibc; glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}'); echo "glibc $glibc"
  if [[ -n $glibc ]] && [[ $(printf '%s\n' 2.36 "$glibc" | sort -V | head -1) != 2.36 ]]; then
    fail "glibc $glibc < 2.36: .device holds Debian bookworm's libraries, which need glibc >= 2.36"; return
  fi

  echo "== unpacking $(wc -l < .device/MANIFEST) packages into $P"
  rm -rf "$P" && mkdir -p "$P/fallback" "$P/fallback-lib" || { fail "cannot make $P"; return; }
  local deb pkg dest
  for deb in .device/debs/*.deb; do
    pkg=$(basename "$deb"); pkg=${pkg%%_*}
    dest=$P; [[ " ${FALLBACK_PKGS[*]} " == *" $pkg "* ]] && dest=$P/fallback
    dpkg-deb -x "$deb" "$dest" || { fail "dpkg-deb -x $deb failed"; return; }
  done
  # The fallbacks: only the sonames the system lacks go on the path.
  local lib so known; known=$(ldconfig -p 2>/dev/null || /sbin/ldconfig -p)
  while read -r lib; do
    so=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    if [[ -n $so ]] && ! grep -q "^[[:space:]]$so " <<< "$known"; then
      echo "the system lacks $so: using $lib"; ln -sf "$lib" "$P/fallback-lib/$so"
    else
      echo "the system has $so: not using $lib"
    fi
  done < <(find "$P/fallback" -name 'lib*.so.*' -type f)
  # Debian makes the mpicxx, mpirun, ... names with update-alternatives, which dpkg-deb -x does not run.
  local w
  for w in mpicxx mpic++ mpicc mpirun mpiexec; do ln -sf "$w.openmpi" "$P/usr/bin/$w"; done

  echo "== the environment (also in $RESULTS/env.sh)"
  local pmix=$P/$ARCH_LIB/pmix2
  cat > "$RESULTS/env.sh" <<EOF
# Written by tools/gpu_check.sh setup: source it to use the prefix $P by hand.
export CMAKE_PREFIX_PATH=$P/usr
export PATH=$P/usr/bin:$ORIG_PATH
export LD_LIBRARY_PATH=$P/$ARCH_LIB:$P/lib/x86_64-linux-gnu:$P/usr/lib/libpsm1:$P/fallback-lib${ORIG_LD_LIBRARY_PATH:+:$ORIG_LD_LIBRARY_PATH}
# Open MPI, relocated: its install dirs follow OPAL_PREFIX, except /etc/openmpi (Debian's MCA defaults:
# no UCX, OFI or openib; shared memory and TCP), which is absolute.
export OPAL_PREFIX=$P/usr OPAL_SYSCONFDIR=$P/etc/openmpi
# PMIx (Debian's lives in $ARCH_LIB/pmix2, its dirs absolute): plugins and help files.
export PMIX_PREFIX=$pmix PMIX_LIBDIR=$pmix/lib PMIX_PKGLIBDIR=$pmix/lib/pmix PMIX_DATADIR=$pmix/share PMIX_PKGDATADIR=$pmix/share/pmix
# hwloc: no plugins (libhwloc-plugins is not shipped; a system's, of another version, must not load).
export HWLOC_PLUGINS_PATH=$P/$ARCH_LIB/hwloc
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
EOF
  cat "$RESULTS/env.sh"
  # shellcheck source=/dev/null
  source "$RESULTS/env.sh"

  echo "== libraries the loader cannot find"
  local files=("$P"/usr/bin/{orted,orterun,opal_wrapper,ompi_info} "$P/$ARCH_LIB/openmpi/lib/openmpi3"/*.so
               "$pmix"/lib/libpmix.so.* "$pmix"/lib/pmix/*.so)
  for lib in "$P/$ARCH_LIB"/lib*.so.*; do  # Fortran, Java and OpenSHMEM are not used
    [[ $lib == *fortran* || $lib == *mpifh* || $lib == *usempi* || $lib == *java* || $lib == *oshmem* ]] || files+=("$lib")
  done
  # shellcheck disable=SC2016  # $1 is the inner sh's
  printf '%s\n' "${files[@]}" |
    xargs -P "$JOBS" -I{} sh -c 'ldd "$1" 2>&1 | grep "not found" | sed "s|^[[:space:]]*|$1: |"' _ {} |
    sort -u > "$P/missing.txt"
  cat "$P/missing.txt"
  [[ ! -s $P/missing.txt ]] || { fail "missing libraries: $(head -1 "$P/missing.txt" | cut -c1-160)"; return; }
  echo "(none)"
  echo "mpirun: $(command -v mpirun): $(mpirun --version 2>&1 | head -1)"
  [[ $(command -v mpirun) == "$P"/* ]] || { fail "mpirun is not the prefix's: $(command -v mpirun)"; return; }
}

# deps: the prefix's Open MPI and CMake packages work, alone. A 2-rank MPI hello world built and run
# with the prefix's mpicxx and mpirun only, and a tiny CMake project that finds Eigen3, nlohmann_json,
# CLI11, GTest and MPI the way CMakeLists.txt does; its cache must point into the prefix. As root with
# unshare (the development machine), the system's own copies of these packages are hidden first, in a
# private mount namespace, so that a relocation that silently falls back to them fails here.
part_deps() {
  local w=/tmp/mt-deps-check
  rm -rf "$w" && mkdir -p "$w/project" || { fail "cannot make $w"; return; }
  cat > "$w/hello.cpp" <<'EOF'
#include <mpi.h>
#include <cstdio>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0, one = 1, sum = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  std::printf("hello from rank %d of %d, allreduce %d\n", rank, size, sum);
  MPI_Finalize();
  return sum == size ? 0 : 1;
}
EOF
  cat > "$w/project/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.20)
project(mt_deps LANGUAGES CXX)
find_package(Eigen3 3.3 REQUIRED NO_MODULE)
find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(GTest REQUIRED)
find_package(MPI REQUIRED COMPONENTS CXX)
foreach(t Eigen3::Eigen nlohmann_json::nlohmann_json CLI11::CLI11 GTest::gtest GTest::gmock MPI::MPI_CXX)
  get_target_property(inc ${t} INTERFACE_INCLUDE_DIRECTORIES)
  message(STATUS "deps: ${t} includes ${inc}")
endforeach()
EOF
  cat > "$w/check.sh" <<EOF
set -uo pipefail
if [[ \${MT_HIDE:-0} == 1 ]]; then  # the system's copies of what the prefix provides
  n=0
  for d in /usr/include/eigen3 /usr/share/eigen3 /usr/include/nlohmann /usr/share/cmake/nlohmann_json \\
           /usr/include/CLI /usr/share/cmake/CLI11 /usr/include/gtest /usr/include/gmock \\
           /usr/lib/x86_64-linux-gnu/cmake/GTest /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 \\
           /usr/share/openmpi /etc/openmpi /usr/lib/x86_64-linux-gnu/ucx /usr/lib/x86_64-linux-gnu/libibverbs \\
           /usr/lib/x86_64-linux-gnu/hwloc /usr/include/x86_64-linux-gnu/openmpi; do
    [[ -d \$d ]] && mount -t tmpfs -o size=1m mt-hidden \$d && n=\$((n + 1))
  done
  for f in /usr/lib/x86_64-linux-gnu/lib{mpi,open-pal,open-rte,oshmem,pmix,hwloc,event,fabric,ucp,ucm,ucs,uct,gtest,gmock,mca_common,psm,nl-,ibverbs,rdmacm,munge}* \\
           /lib/x86_64-linux-gnu/libnl-* /usr/bin/{mpi,orte,opal,ompi,osh}*; do
    [[ -f \$f && ! -L \$f ]] && mount --bind /dev/null \$f && n=\$((n + 1))
  done
  echo "hid \$n system paths (private mount namespace)"
fi
set -x
mpicxx -O1 -o $w/hello $w/hello.cpp || exit 1
ldd $w/hello | grep -E 'libmpi|open-|pmix|hwloc|event'
timeout 60 mpirun -np 2 --oversubscribe --bind-to none $w/hello || exit 1
cmake -S $w/project -B $w/project/build -DMPI_CXX_COMPILER=$P/usr/bin/mpicxx || exit 1
EOF
  local hide=0
  if [[ $(id -u) == 0 ]] && unshare -m --propagation private true 2> /dev/null; then hide=1; else
    echo "(cannot hide the system's copies: not root, or no unshare -m; the check runs as it is)"; fi
  if ((hide)); then
    MT_HIDE=1 say unshare -m --propagation private bash "$w/check.sh"
  else
    say bash "$w/check.sh"
  fi || { fail "$(why_failed $? 'error|Error|ERROR|not found|cannot|Could NOT|failed')"; return; }
  grep -q "hello from rank 1 of 2, allreduce 2" "$LOG" || { fail "the MPI hello world did not print rank 1 of 2"; return; }
  echo "== where CMake found them (each must be under $P)"
  local var val bad=""
  for var in Eigen3_DIR nlohmann_json_DIR CLI11_DIR GTest_DIR MPI_CXX_COMPILER MPI_mpi_LIBRARY MPI_mpi_cxx_LIBRARY; do
    val=$(grep -m1 "^$var:" "$w/project/build/CMakeCache.txt" | cut -d= -f2-)
    echo "$var = $val"
    [[ $val == "$P"/* ]] || bad+=" $var=${val:-unset}"
  done
  local inc
  while read -r inc; do [[ $inc == *"includes $P"/* ]] || bad+=" (${inc#*deps: })"; done < <(grep -o 'deps: .*' "$LOG")
  [[ -z $bad ]] || fail "not from the prefix:$bad"
}

# configure: a fresh Ninja build of the CUDA layer for the H100 only. MINITORCH_WERROR=OFF: the device's
# g++ may be newer than CI's GCC 12 and warn in new ways, which must not stop the one run we have.
part_configure() {
  if ((DRY)); then  # reuse the development machine's build folder (`make build`)
    [[ -f $BUILD/CMakeCache.txt ]] || { fail "no CMake build in $BUILD: run make build, or pass --build DIR"; return; }
    grep -E '^(CMAKE_CUDA_COMPILER|CMAKE_CUDA_ARCHITECTURES|CMAKE_BUILD_TYPE|CMAKE_GENERATOR):' "$BUILD/CMakeCache.txt"
    echo "(dry run: the build in $BUILD is reused, not configured)"
    return 0
  fi
  # NCCL: the toolkit's, else the one PyTorch's pip wheels bring (nvidia-nccl), found through python3
  if [[ -z ${NCCL_ROOT:-} && ! -f /usr/local/cuda/include/nccl.h ]]; then
    NCCL_ROOT=$(PATH=$ORIG_PATH LD_LIBRARY_PATH=$ORIG_LD_LIBRARY_PATH python3 -c \
      'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null) && export NCCL_ROOT &&
      echo "NCCL_ROOT=$NCCL_ROOT (PyTorch's nvidia-nccl wheel)"
  fi
  local gen=(-G Ninja)
  command -v ninja > /dev/null || { gen=(); echo "(no ninja: CMake's default generator)"; }
  limited cmake -S . -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DMINITORCH_WERROR=OFF -DMPI_CXX_COMPILER="$P/usr/bin/mpicxx" ||
    { fail "$(why_failed $? 'CMake Error|Could NOT find|error')"; return; }
  grep -q "minitorch: CUDA layer ON" "$LOG" || fail "$(first_line 'minitorch: CUDA layer') (no nvcc found?)"
}

# build: only what the GPU parts run, all cores.
part_build() {
  [[ -f $BUILD/CMakeCache.txt ]] || { fail "there is no build in $BUILD (the configure part makes it)"; return; }
  local t targets=()
  for t in "${TARGETS[@]}"; do
    if has_target "$t"; then targets+=("$t"); else echo "$t is not in this tree"; fi
  done
  if ((DRY)); then  # the CUDA library of the existing build must hold sm_90 code (an H100's)
    local lib=$BUILD/libmt_cuda.a
    [[ -f $lib ]] || { not_built "$BUILD has no CUDA layer (no libmt_cuda.a)"; return; }
    echo "targets: ${targets[*]} (dry run: not built)"
    local cuobjdump; cuobjdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
    if [[ -x $cuobjdump ]]; then
      say "$cuobjdump" --list-elf "$lib"
      grep -q 'sm_90' "$LOG" || fail "no sm_90 code in $lib"
    else  # this CUDA install has no cuobjdump: read the fat binaries' entry headers
      echo "(no cuobjdump: reading the .nv_fatbin headers of $lib)"
      say python3 - "$lib" <<'EOF'
# Lists the ELF (SASS) entries in the fat binaries of a static library's objects: fatbin header
# (magic 0xBA55ED50, u16 version, u16 header size, u64 size), then entries (u16 kind: 1 PTX, 2 ELF;
# u16; u32 header size; u64 payload size; ...; u32 sm arch at offset 28).
import struct, sys
data, magic, archs = open(sys.argv[1], "rb").read(), struct.pack("<I", 0xBA55ED50), set()
i = data.find(magic)
while i >= 0:
    _, _, hsize, fsize = struct.unpack_from("<IHHQ", data, i)
    p, end = i + hsize, i + hsize + fsize
    while p + 32 <= end:
        kind, _, ehsize, size = struct.unpack_from("<HHIQ", data, p)
        if kind == 2:
            archs.add(struct.unpack_from("<I", data, p + 28)[0])
        p += ehsize + size
    i = data.find(magic, max(end, i + 4))
print("ELF code for: " + " ".join("sm_%d" % a for a in sorted(archs)))
EOF
      grep -qE '^ELF code for: .*sm_90' "$LOG" || fail "no sm_90 code in $lib"
    fi
    return
  fi
  ((${#targets[@]})) || { fail "none of ${TARGETS[*]} is in this tree"; return; }
  limited cmake --build "$BUILD" -j"$JOBS" --target "${targets[@]}" ||
    fail "$(why_failed $? 'error|FAILED:|undefined reference')"
}

# table: the op table (tests/backend_ops/) on the cuda backend against the CPU kernels; on the CPU
# backend against the naive reference in a dry run.
part_table() {
  built test-backend_ops || return
  local backend=cuda; ((DRY)) && backend=cpu
  limited "$BUILD/bin/test-backend_ops" --backend=$backend
  local rc=$?
  # Its skips are the cases the backend does not implement (listed by name in its summary), not a
  # missing GPU: the binary exits 2 without one. Its exit status and summary line are the verdict.
  ((rc == 0)) || { fail "$(why_failed "$rc" '^\[  FAILED  \]|no usable CUDA|error|what\(\)|Abort|Segmentation')"; return; }
  NOTE=$(first_line '^backend-ops:' | sed 's/^backend-ops: //')
  [[ -n $NOTE ]] || fail "no summary line from test-backend_ops"
}

# cuda-tests: test-cuda, all but the training tests (the train part's).
part_cuda-tests() {
  built test-cuda || return
  ((DRY)) && { not_run "--dry-run: needs the GPU (test-cuda is built)"; return; }
  limited "$BUILD/bin/test-cuda" --gtest_filter='-L04_CudaTrain*:L05_Nccl*'
  gtest_verdict $?
}

# One suite of test-cuda on the GPU: run_cuda_suite PATTERN ("not built" when the binary has none).
run_cuda_suite() {
  built test-cuda || return
  "$BUILD/bin/test-cuda" --gtest_list_tests --gtest_filter="$1" 2>&1 | grep -q '^  ' ||
    { not_built "test-cuda has no $1 test"; return; }
  ((DRY)) && { not_run "--dry-run: needs the GPU (test-cuda has $1)"; return; }
  limited "$BUILD/bin/test-cuda" --gtest_filter="$1"
  gtest_verdict $?
}
# train: the baby GPT trained 50 steps on the GPU against the CPU (tests/cuda/, L04_CudaTrain*).
part_train() { run_cuda_suite 'L04_CudaTrain*'; }
# nccl: the NCCL process group (dist/nccl_group.h) on one rank against the MPI group (tests/cuda/test_nccl.cpp).
part_nccl() { run_cuda_suite 'L05_Nccl*'; }

# ranks: minitorch-train --device on the GPU. 2 ranks (DDP, MPI staging the gradients through host
# buffers) sharing the one GPU (--device cuda:0), against the same 2 ranks on the CPU: the last step's
# loss within 1e-3 relative. Then --device cuda (one GPU per rank) with 2 ranks and 1 GPU: one error.
# A few hundred KB of text to train on, made once: the corpus (datasets/) is not carried.
CORPUS=/tmp/mt-gpu-check-text.txt
corpus() { [[ -s $CORPUS ]] || cat docs/*.md README.md > "$CORPUS"; echo "$CORPUS"; }
last_loss() { sed -n 's/^step *[0-9]*\/[0-9]* .* loss \([0-9.]*\) .*/\1/p' "$1" | tail -1; }
part_ranks() {
  built minitorch-train || return
  "$BUILD/bin/minitorch-train" --help 2>&1 | grep -q -- '--device' ||
    { not_built "minitorch-train has no --device"; return; }
  ((DRY)) && { not_run "--dry-run: needs the GPU"; return; }
  local data out=/tmp/mt-gpu-check-ranks gpu cpu
  data=$(corpus)
  mkdir -p "$out"
  local run=(mpirun -np 2 --oversubscribe --bind-to none "$BUILD/bin/minitorch-train" --config configs/ddp.json
             --data "$data" --steps 20 --eval-iters 1 --out "")
  limited "${run[@]}" --device cuda:0 --report "$RESULTS/ranks-cuda.json" 2>&1 | tee "$out/cuda.txt" ||
    { fail "cuda:0: $(why_failed $? 'error|Error|what\(\)|Abort|terminated|exited on signal')"; return; }
  limited "${run[@]}" --device cpu 2>&1 | tee "$out/cpu.txt" ||
    { fail "cpu: $(why_failed $? 'error|Error|what\(\)|Abort|terminated|exited on signal')"; return; }
  gpu=$(last_loss "$out/cuda.txt") cpu=$(last_loss "$out/cpu.txt")
  echo "last loss: 2 ranks on cuda:0 $gpu, on the cpu $cpu"
  [[ -n $gpu && -n $cpu ]] || { fail "no loss line in a run's output"; return; }
  awk -v g="$gpu" -v c="$cpu" 'BEGIN { d = g - c; if (d < 0) d = -d; exit !(d <= 1e-3 * c) }' ||
    { fail "2 ranks on cuda:0 end at loss $gpu, on the cpu at $cpu (more than 1e-3 apart)"; return; }
  say mpirun -np 2 --oversubscribe --bind-to none "$BUILD/bin/minitorch-train" --config configs/ddp.json \
    --data "$data" --steps 1 --out "" --device cuda > "$out/two-on-one.txt" 2>&1
  cat "$out/two-on-one.txt"
  grep -q "2 ranks run on this node but only 1 GPU is visible" "$out/two-on-one.txt" ||
    { fail "--device cuda with 2 ranks on 1 GPU was not the one clear error"; return; }
  NOTE="2 ranks on cuda:0 loss $gpu = cpu $cpu; --device cuda with 2 ranks on 1 GPU refused"
}

# lesson: lesson 04's GPU beats (the copies over PCIe, cuda/softmax.cu's kernels timed against the card's
# bandwidth, the op table on cuda), the full run (--auto: 4096 rows, medians of 9) on a text of the docs.
part_lesson() {
  built lesson-04 || return
  ((DRY)) && { not_run "--dry-run: needs the GPU"; return; }
  limited "$BUILD/bin/lesson-04" --auto --data "$(corpus)" ||
    { fail "$(why_failed $? 'error|Error|what\(\)|Abort|FAIL')"; return; }
  grep -q '^cuda:0: 64 MiB up in' "$LOG" || { fail "beat 1 printed no cuda:0 copy times"; return; }
  grep -q '^On the GPU (cuda:0)' "$LOG" || { fail "the kernel beat printed no GPU table"; return; }
  NOTE=$(first_line '^cuda:0: 64 MiB up in')
}

# bench: bench-gpu (bench/gpu.cpp), a GPT-2 124M training step, then 3 steps with every kernel timed.
part_bench() {
  has_target bench-gpu || { not_built "bench-gpu is not written yet"; return; }
  built bench-gpu || return
  ((DRY)) && { not_run "--dry-run: needs the GPU"; return; }
  limited "$BUILD/bin/bench-gpu" --profile 3 || fail "$(why_failed $? 'error|Error|what\(\)|Abort')"
}

# bench-pytorch: PyTorch eager and torch.compile on the same shapes (bench/pytorch_gpu.py), with the system's own
# environment (PyTorch needs none of the prefix).
part_bench-pytorch() {
  [[ -f bench/pytorch_gpu.py ]] || { not_built "bench/pytorch_gpu.py is not in this tree"; return; }
  ((DRY)) && { not_run "--dry-run: needs the GPU"; return; }
  PATH=$ORIG_PATH LD_LIBRARY_PATH=$ORIG_LD_LIBRARY_PATH limited python3 bench/pytorch_gpu.py --compile ||
    fail "$(why_failed $? 'Error|error')"
}

# ---------------------------------------------------------------------------------------------------
# What each part builds on (among the selected parts).
declare -A NEEDS=([deps]=setup [configure]=setup [build]=configure [table]=build [cuda-tests]=build
                  [train]=build [nccl]=build [ranks]="build deps" [lesson]=build [bench]=build [bench-pytorch]=setup)
selected() { [[ $1 == setup || -z $ONLY || ",$ONLY," == *",$1,"* ]]; }

declare -A RESULT
declare -A COUNT=([ok]=0 [failed]=0 [notbuilt]=0 [notrun]=0)
rm -f "$RESULTS/summary.txt"
for PART in "${PARTS[@]}"; do
  selected "$PART" || continue
  LOG=$RESULTS/$PART.log WHY="" NOTE="" rc=0 need=""
  for n in ${NEEDS[$PART]:-}; do
    # a need that failed or did not run blocks the part ("not built" does not: a dry run's table
    # needs no CUDA library)
    if selected "$n" && [[ ${RESULT[$n]} == failed || ${RESULT[$n]} == "not run" ]]; then need=$n; break; fi
  done
  start=$SECONDS
  if [[ -n $need ]]; then
    rc=3 WHY="$need ${RESULT[$need]}"
    echo "not run: $WHY" > "$LOG"
  else
    "part_$PART" > "$LOG" 2>&1  # in this shell: setup's environment stays for the parts after it
    rc=$?
  fi
  secs=$((SECONDS - start))
  case $rc in
    0) RESULT[$PART]=ok; COUNT[ok]=$((COUNT[ok] + 1)); line="$PART: ok ($secs s)${NOTE:+: $NOTE}" ;;
    2) RESULT[$PART]="not built"; COUNT[notbuilt]=$((COUNT[notbuilt] + 1)); line="$PART: not built: $WHY" ;;
    3) RESULT[$PART]="not run"; COUNT[notrun]=$((COUNT[notrun] + 1)); line="$PART: not run: $WHY" ;;
    *) RESULT[$PART]=failed; COUNT[failed]=$((COUNT[failed] + 1)); line="$PART: FAIL: ${WHY:-exit status $rc} ($secs s)" ;;
  esac
  echo "$line" | tee -a "$RESULTS/summary.txt"
done
total="gpu-check: ${COUNT[ok]} ok, ${COUNT[failed]} failed, ${COUNT[notbuilt]} not built"
((COUNT[notrun])) && total+=", ${COUNT[notrun]} not run"
total+=" ($SECONDS s$( ((DRY)) && echo ", dry run"); logs in $RESULTS)"
echo "$total" | tee -a "$RESULTS/summary.txt"
((COUNT[failed] == 0))
