#!/usr/bin/env bash
# A save that runs out of disk leaves the last complete save usable (runtime/save_target.h). A 2-step run
# saves a checkpoint; in a mount namespace of its own (needs root), a tmpfs just larger than that save holds
# a copy of it, and a run resumed from the copy saves over it: the new save cannot fit. Checked: one clear
# error, the old files byte for byte, no file left behind, and --resume of the old save still works.
# Usage: full_disk_save.sh BUILD_BIN_DIR SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
[[ $(id -u) == 0 ]] || { echo "full_disk_save: needs root (a tmpfs in a mount namespace)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/c.json" << 'EOF'
{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 4,
 "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
 "model": {"name": "baby", "n_layer": 1, "n_head": 2, "n_embd": 16, "block_size": 16},
 "training": {"steps": 2, "eval_interval": 0, "log_interval": 1, "seed": 7}}
EOF
head -c 20000 "$src/datasets/kjv.txt" > "$work/d.txt"
export MINITORCH_NUM_THREADS=1
train() { "$bin/minitorch-train" --config "$work/c.json" --data "$work/d.txt" "$@"; }
train --out "$work/a.safetensors" > /dev/null
# The save's pages (tmpfs counts whole 4 KiB pages), and 8 KiB more: not room for a second save.
pages=0
for f in "$work"/a.safetensors*; do pages=$((pages + ($(stat -c %s "$f") + 4095) / 4096)); done
size_k=$((pages * 4 + 8))
export -f train
export work bin
unshare -m bash -euo pipefail -c '
  mkdir -p "$work/disk"
  mount -t tmpfs -o size='"$size_k"'k tmpfs "$work/disk"
  cp "$work"/a.safetensors* "$work/disk/"
  ck="$work/disk/a.safetensors"
  set +e
  out=$(train --steps 3 --resume "$ck" --out "$ck" 2>&1)
  status=$?
  set -e
  echo "$out" | grep -q "No space left on device" || { echo "FAIL: the full disk was not the error: $out"; exit 1; }
  [[ $status == 1 ]] || { echo "FAIL: exit $status, expected 1"; exit 1; }
  [[ $(echo "$out" | grep -c "^error:") == 1 ]] || { echo "FAIL: not one error line: $out"; exit 1; }
  for f in a.safetensors a.safetensors.optim a.safetensors.manifest.json; do
    cmp "$work/$f" "$work/disk/$f" || { echo "FAIL: $f changed"; exit 1; }
  done
  left=$(ls "$work/disk" | grep -v "^a\.safetensors\(\.optim\|\.manifest\.json\)\?$" || true)
  [[ -z $left ]] || { echo "FAIL: left behind: $left"; exit 1; }
  resumed=$(train --steps 3 --resume "$ck" --out "" 2>&1) || { echo "FAIL: --resume after the failed save: $resumed"; exit 1; }
  echo "$resumed" | grep -q "step     3/3" || { echo "FAIL: $resumed"; exit 1; }
  echo "full_disk_save: the save failed with one error ($(echo "$out" | grep "^error:" | cut -c1-160)); the last save is intact and resumes"
'
