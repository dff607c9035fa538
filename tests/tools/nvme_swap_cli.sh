#!/usr/bin/env bash
# ZeRO-Infinity's swap folder as a user meets it through minitorch-train (zero/nvme_store.h, docs/design.md §10):
# a run with the optimizer and the parameters on "NVMe" leaves nothing under nvme_path; a killed run's folder is
# named and removed at the next start, a file of the user's beside it is left alone; a foreign file inside
# minitorch-swap/ stops the run with one error naming it; a missing nvme_path is one error naming it; and, in a
# mount namespace of its own (needs root), a tmpfs too small for the swap files is one error naming the path
# and the bytes, before step 1, with the last checkpoint intact and still resumable.
# Usage: nvme_swap_cli.sh BUILD_BIN_DIR SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
[[ $(id -u) == 0 ]] || { echo "nvme_swap_cli: needs root (a tmpfs in a mount namespace)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
config() {  # config NVME_PATH
  cat << EOF
{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 4,
 "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
 "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0, "sub_group_size": 1000,
   "offload_optimizer": {"device": "nvme", "nvme_path": "$1"},
   "offload_param": {"device": "nvme", "nvme_path": "$1"}},
 "model": {"name": "baby", "n_layer": 1, "n_head": 2, "n_embd": 16, "block_size": 16},
 "training": {"steps": 2, "eval_interval": 0, "log_interval": 1, "seed": 7}}
EOF
}
head -c 20000 "$src/datasets/kjv.txt" > "$work/d.txt"
export MINITORCH_NUM_THREADS=1
train() { "$bin/minitorch-train" --data "$work/d.txt" --device sim "$@"; }
fail() { echo "FAIL: $*"; exit 1; }

# A clean run: trains, saves, and leaves nothing under nvme_path.
mkdir -p "$work/nvme"
config "$work/nvme" > "$work/c.json"
out=$(train --config "$work/c.json" --out "$work/ckpt" 2>&1) || fail "the first run: $out"
echo "$out" | grep -q "step     2/2" || fail "$out"
[[ -z $(ls -A "$work/nvme") ]] || fail "left under nvme_path: $(ls -A "$work/nvme")"

# A killed run's folder (no live process holds its lock): named and removed; the user's file stays.
dead="$work/nvme/minitorch-swap/1700000000-4242-deadbeef"
mkdir -p "$dead/rank0"
: > "$dead/rank0/lock"
head -c 8192 /dev/zero > "$dead/rank0/optim.master.swap"
echo "mine" > "$work/nvme/notes.txt"
out=$(train --config "$work/c.json" --out "" 2>&1) || fail "the run after a killed one: $out"
echo "$out" | grep -q "removed the swap folder of a killed run: $dead" || fail "the leftover was not named: $out"
[[ ! -e $dead ]] || fail "the killed run's folder is still there"
[[ $(cat "$work/nvme/notes.txt") == mine ]] || fail "the user's file was touched"
[[ ! -e $work/nvme/minitorch-swap ]] || fail "minitorch-swap/ left behind"

# A foreign file inside minitorch-swap/: one error naming it, the file left alone.
mkdir -p "$work/nvme/minitorch-swap"
echo "not ours" > "$work/nvme/minitorch-swap/stray.txt"
set +e
out=$(train --config "$work/c.json" --out "" 2>&1)
status=$?
set -e
[[ $status != 0 ]] || fail "the run started beside a foreign file"
[[ $(echo "$out" | grep -c "^error:") == 1 ]] || fail "not one error line: $out"
echo "$out" | grep "^error:" | grep -q "stray.txt" || fail "the error does not name the file: $out"
[[ -e $work/nvme/minitorch-swap/stray.txt ]] || fail "the foreign file was removed"
rm -rf "$work/nvme/minitorch-swap"

# A missing nvme_path: one error naming it.
config "$work/missing" > "$work/m.json"
set +e
out=$(train --config "$work/m.json" --out "" 2>&1)
status=$?
set -e
[[ $status != 0 && $(echo "$out" | grep -c "^error:") == 1 ]] || fail "a missing nvme_path: $out"
echo "$out" | grep "^error:" | grep -q "$work/missing" || fail "the error does not name the path: $out"

# A full disk: a 16 KiB tmpfs cannot hold the swap files. One error naming the path and the bytes, before step 1;
# the checkpoint saved above stays as it was and resumes.
find "$work/ckpt" -type f -exec md5sum {} + | sort > "$work/ckpt.md5"
export -f train fail config
export work bin
unshare -m bash -euo pipefail -c '
  mkdir -p "$work/small"
  mount -t tmpfs -o size=16k tmpfs "$work/small"
  config "$work/small" > "$work/s.json"
  set +e
  out=$(train --config "$work/s.json" --resume "$work/ckpt" --out "" 2>&1)
  status=$?
  set -e
  [[ $status != 0 ]] || fail "the run fitted a 16 KiB disk"
  [[ $(echo "$out" | grep -c "^error:") == 1 ]] || fail "not one error line: $out"
  line=$(echo "$out" | grep "^error:")
  echo "$line" | grep -q "$work/small" || fail "the error does not name the path: $line"
  echo "$line" | grep -q "bytes" || fail "the error does not give the bytes: $line"
  echo "$out" | grep -q "step     " && fail "a step ran: $out"
  [[ -z $(ls -A "$work/small") ]] || fail "left on the full disk: $(ls -A "$work/small")"
  echo "nvme_swap_cli: the full disk: ${line:0:200}"
'
find "$work/ckpt" -type f -exec md5sum {} + | sort | cmp - "$work/ckpt.md5" || fail "the checkpoint changed"
out=$(train --config "$work/c.json" --steps 3 --resume "$work/ckpt" --out "" 2>&1) || fail "the resume: $out"
echo "$out" | grep -q "step     3/3" || fail "$out"
echo "nvme_swap_cli: a clean run leaves nothing; a killed run's folder is named and removed; a foreign file and a missing path are one error each; a full disk is one error before step 1 and the checkpoint resumes"
