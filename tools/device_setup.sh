#!/usr/bin/env bash
# tools/device_setup.sh — run once on the development machine (Debian bookworm, with its apt mirrors).
#
# The rented GPU machine (docs/build.md, "The GPU check") has CUDA, CMake, ninja, g++ and python3, but
# no Internet and none of the libraries minitorch builds against: Eigen, nlohmann/json, CLI11,
# GoogleTest and Open MPI. This script puts Debian's .deb files for them, with every runtime library
# Open MPI needs, into the git-ignored folder .device/, which is carried to that machine with the
# working tree; tools/gpu_check.sh unpacks them there into a prefix under /tmp (never into /).
#
# The .deb files stay compressed in .device/debs/ (9 MB, against 49 MB unpacked: the carried tree has a
# 64 MiB limit). They are Debian bookworm's, built against glibc 2.36 (libevent uses arc4random): the
# device needs glibc >= 2.36 (Ubuntu 24.04 has 2.39; 22.04's 2.35 is too old, which gpu_check.sh says).
# .device/MANIFEST (one package name a line) is written last and says which packages make the folder
# complete; gpu_check.sh checks the folder against it.
#
# Idempotent: a complete folder is left alone. Usage: tools/device_setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=.device

# What minitorch's CMakeLists.txt finds (find_package) and what mpirun needs to run.
SEEDS=(libeigen3-dev nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev
       libopenmpi-dev libopenmpi3 openmpi-bin openmpi-common)

# Dependencies not followed (neither shipped nor recursed into):
#  - what every Debian/Ubuntu base system has, or what the device's g++ brings (libatomic1, libgomp1 ...).
#    libudev1 (hwloc needs it) and libnuma1 are shipped all the same, as fallbacks: gpu_check.sh puts
#    them on the library path only where the system lacks them (ldconfig -p), since a machine without
#    libudev.so.1 could not load libmpi at all, and a system's newer copy is the better one to use;
#  - the -dev packages libopenmpi-dev pulls in (hwloc, libevent, PMIx, verbs, zlib headers): FindMPI
#    only asks the mpicxx wrapper for Open MPI's own flags and libraries, so they are not needed;
#  - Fortran (libopenmpi-dev wants gfortran for mpif90), the jQuery of Open MPI's HTML docs;
#  - libhwloc-plugins: optional hwloc plugins (PCI, XML, X11/NV-CONTROL, OpenCL) that would drag in
#    libxml2 + libicu, libX11, ...; hwloc works without them (gpu_check.sh points HWLOC_PLUGINS_PATH at
#    an empty folder so that a system's plugins of another hwloc version are not loaded either);
#  - googletest: the GoogleTest sources; libgtest-dev/libgmock-dev already hold the built libraries;
#  - pkg-config (only for Eigen's .pc file; CMake uses Eigen3Config.cmake).
EXCLUDE=(libc6 libc6-dev libc-dev libgcc-s1 libstdc++6 zlib1g zlib1g-dev libuuid1 libatomic1
         libgomp1 adduser debconf debconf-2.0 cdebconf passwd perl perl-base dpkg tar debianutils
         libibverbs-dev libhwloc-dev libevent-dev libpmix-dev libnuma-dev libltdl-dev libnl-3-dev
         libnl-route-3-dev libjs-jquery libjs-jquery-ui gfortran gfortran-12 gfortran-mod-15 ssh-client
         openssh-client libhwloc-plugins googletest pkg-config pkgconf)

die() { echo "device_setup: $*" >&2; exit 1; }
is_excluded() { local x; for x in "${EXCLUDE[@]}"; do [[ $x == "$1" ]] && return 0; done; return 1; }

# The package list: SEEDS and their dependencies, recursively, less EXCLUDE. One apt-cache call per
# level of the tree (each call loads apt's cache, about a second). Of alternatives "a | b" only the
# first is followed; virtual packages (<name>) are skipped (the only ones met here are excluded anyway).
derive_list() {
  local -A seen=()
  local level=("${SEEDS[@]}") next p out known
  while ((${#level[@]})); do
    out=$(apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
            --no-enhances "${level[@]}" 2>/dev/null) || true
    known=$(awk '/^[^ ]/ {print $1}' <<< "$out")
    for p in "${level[@]}"; do
      grep -qx -- "$p" <<< "$known" ||
        die "package $p is unknown to apt (no package source for it): run 'apt-get update' as root, or add a Debian bookworm mirror to /etc/apt/sources.list.d/, then run this script again"
      seen[$p]=1
    done
    next=()
    while read -r p; do
      p=${p%%:*}
      [[ -z $p || -n ${seen[$p]:-} ]] && continue
      is_excluded "$p" && continue
      seen[$p]=0; next+=("$p")   # 0: queued for the next level
    done < <(awk '
      /^ *\|?(Pre)?Depends:/ {
        alt = ($1 ~ /^\|/); name = $2
        if (!skip && name !~ /^</) print name
        skip = alt; next }' <<< "$out")
    level=("${next[@]}")
  done
  printf '%s\n' "${!seen[@]}" | sort
}

# True when every package of the list has exactly one .deb in $DIR/debs.
have_all() {
  local p n
  for p in "$@"; do
    n=$(compgen -G "$DIR/debs/${p}_*.deb" | wc -l)
    [[ $n == 1 ]] || return 1
  done
}

list=$(derive_list) || exit 1   # derive_list has said why
mapfile -t PKGS <<< "$list"
[[ -n $list ]] || die "the package list came out empty"

if [[ -f $DIR/MANIFEST ]] && [[ "$(cat "$DIR/MANIFEST")" == "$(printf '%s\n' "${PKGS[@]}")" ]] && have_all "${PKGS[@]}"; then
  echo "device_setup: $DIR is complete (${#PKGS[@]} packages, $(du -sh "$DIR" | cut -f1)); nothing to do"
  exit 0
fi

rm -f "$DIR/MANIFEST"  # written again last: the folder is complete only once it exists
mkdir -p "$DIR/debs"
missing=()
for p in "${PKGS[@]}"; do have_all "$p" || { rm -f "$DIR/debs/${p}"_*.deb; missing+=("$p"); }; done
if ((${#missing[@]})); then
  echo "device_setup: downloading ${#missing[@]} packages into $DIR/debs"
  # apt-get download writes into the current folder; as root it warns that the _apt user cannot
  # write there, which is harmless.
  if ! (cd "$DIR/debs" && apt-get download -q "${missing[@]}" 2>&1 | grep -v "W: Download is performed unsandboxed"); then
    echo "device_setup: download failed; running apt-get update and trying again"
    apt-get update -qq || true
    for p in "${missing[@]}"; do
      have_all "$p" && continue
      (cd "$DIR/debs" && apt-get download -q "$p" > /dev/null 2>&1) ||
        die "cannot download $p (no package source reachable): check the network and /etc/apt/sources.list.d/ (a Debian bookworm mirror), or copy ${p}_*.deb into $DIR/debs/ by hand, then run this script again"
    done
  fi
fi
# .deb files of packages no longer in the list
for f in "$DIR"/debs/*.deb; do
  p=$(basename "$f"); p=${p%%_*}
  printf '%s\n' "${PKGS[@]}" | grep -qx "$p" || { echo "device_setup: removing $f (not in the list)"; rm -f "$f"; }
done
have_all "${PKGS[@]}" || die "some .deb files are missing or doubled in $DIR/debs after the download: remove $DIR and run again"

printf '%s\n' "${PKGS[@]}" > "$DIR/MANIFEST"
echo "device_setup: $DIR complete: ${#PKGS[@]} packages, $(du -sh "$DIR" | cut -f1) (carry it with the working tree; see docs/build.md, \"The GPU check\")"
