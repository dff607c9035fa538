#!/usr/bin/env bash
# The layering guard (ctest -R Layering): a folder includes only from the folders above it, never back.
#   tests/check_layering.sh [ROOT]     scan ROOT (default: the repository); exit 1 listing each
#                                      offending `file:line -> included file`
#   tests/check_layering.sh --self-test   prove the guard can fail: a tree with one back-edge must fail
# Bash and grep only: CI machines may lack Python.
set -euo pipefail

# The allowed dependencies, the one copy of the table. It mirrors §2 "Layers and folders" of docs/design.md
# (README "The folders" summarises it). A folder may always include from itself; the
# CMake link lines (top-level CMakeLists.txt) must not contradict this. A layer folder that does not exist
# yet is simply not scanned. tools/, lessons/, bench/ and tests/ may include everything: not scanned.
declare -A ALLOWED=(
  [minitorch]=""
  [cuda]="minitorch"
  [autograd]="minitorch"
  [nn]="autograd minitorch"
  [optim]="autograd minitorch"
  [data]="minitorch"
  [trace]="minitorch"
  [dist]="autograd nn trace minitorch"
  [tp]="dist autograd nn trace minitorch"
  [zero]="dist optim nn autograd trace minitorch"
  [gemini]="zero dist optim nn autograd trace minitorch"
  [runtime]="gemini zero tp dist optim nn autograd data trace cuda minitorch"
  [pipeline]="runtime gemini zero tp dist optim nn autograd data trace cuda minitorch"
)
# Our folders that no layer may include from (an include from them is a back-edge too).
TOP_FOLDERS="tools lessons bench tests"

self_test() {
  local out rc=0
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT  # $tmp is global: the trap runs after this function has returned
  mkdir -p "$tmp/minitorch" "$tmp/nn" "$tmp/autograd" "$tmp/runtime"
  printf '// a legal include first\n#include "minitorch/tensor.h"\n#include "nn/module.h"\n' >"$tmp/minitorch/x.h"
  printf '#include "autograd/node.h"\n#include "minitorch/tensor.h"\n#include "nn/layers.h"\n' >"$tmp/nn/module.h"
  printf '#include "minitorch/tensor.h"\n' >"$tmp/autograd/node.h"
  printf '#include "dist/ddp.h"\n#include "optim/adamw.h"\n#include <Eigen/Dense>\n' >"$tmp/runtime/engine.cpp"
  out=$(bash "$0" "$tmp" 2>&1) || rc=$?
  printf '%s\n' "$out"
  if [[ $rc -eq 0 ]]; then
    echo "self-test FAILED: the checker passed a tree with a back-edge (minitorch/x.h -> nn/module.h)"
    return 1
  fi
  if ! grep -qxF -- "minitorch/x.h:3 -> nn/module.h" <<<"$out"; then
    echo "self-test FAILED: the checker failed without naming minitorch/x.h:3 -> nn/module.h"
    return 1
  fi
  if [[ $(grep -c -- ' -> ' <<<"$out") -ne 1 ]]; then
    echo "self-test FAILED: legal includes were reported as well"
    return 1
  fi
  echo "self-test ok: the back-edge was caught"
}

[[ ${1:-} == --self-test ]] && { self_test; exit; }

ROOT=$(cd "${1:-$(dirname "$0")/..}" && pwd)
cd "$ROOT"

is_ours() {  # is $1 the name of one of our folders?
  [[ -v "ALLOWED[$1]" ]] || [[ " $TOP_FOLDERS " == *" $1 "* ]]
}

violations=0
scanned=0
for layer in $(printf '%s\n' "${!ALLOWED[@]}" | sort); do
  [[ -d $layer ]] || continue
  while IFS= read -r -d '' file; do
    scanned=$((scanned + 1))
    # `#include "folder/..."` or <folder/...>, with the line number; commented-out lines do not match.
    while IFS=: read -r line inc; do
      # "../nn/x.h" (from the file's own folder) is the same back-edge as "nn/x.h".
      if [[ $inc == ../* ]]; then
        inc=$(realpath -m --relative-to="$ROOT" "$(dirname "$file")/$inc")
      fi
      folder=${inc%%/*}
      [[ $inc == */* ]] || continue                   # "common.cuh": this folder
      [[ $folder == "$layer" ]] && continue
      is_ours "$folder" || continue                   # <Eigen/Dense>, <nlohmann/json.hpp>, ...
      [[ " ${ALLOWED[$layer]} " == *" $folder "* ]] && continue
      echo "$file:$line -> $inc"
      violations=$((violations + 1))
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<][^">]+[">]' "$file" |
             sed -E 's/^([0-9]+):[[:space:]]*#[[:space:]]*include[[:space:]]*["<]([^">]+)[">].*/\1:\2/')
  done < <(find "$layer" -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' \) -print0 | sort -z)
done

if [[ $violations -gt 0 ]]; then
  echo "layering: $violations include(s) against the layer order (allowed: tests/check_layering.sh, ALLOWED)"
  exit 1
fi
echo "layering: ok ($scanned files in the layer folders)"
