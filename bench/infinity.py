#!/usr/bin/python3
"""bench-infinity: ZeRO-3's step time and memory with ZeRO-Offload and ZeRO-Infinity, and the NVMe swap's throughput
beside the disk's own.

/usr/bin/python3 bench/infinity.py --build build [--nvme DIR] [--ranks 2] [--steps 6] [--runs 3] [--model small]

Each case trains the named GPT (bf16, micro-batch 4) on the KJV on --ranks simulated accelerators (`--device sim`,
1 thread per rank) for --steps steps and reads the run report (docs/report.md). A case's step time is the median of
its steps after the first (the first allocates AdamW's states), and the line gives the median of --runs runs, with
rank 0's device and host peaks. The cases: plain ZeRO-3; + offload_optimizer "cpu"; + offload_param "cpu"; the
optimizer on NVMe (offload_param "cpu" with it), its reads and writes serial, then pipelined (pipeline_read and
pipeline_write), then with aio.intra_op_parallelism 2 (each request split over 2 threads); both the optimizer and
the parameters on NVMe, pipelined. `sub_group_size` is set so each rank's shard is 12 tiles.

For the NVMe cases the report's `nvme` section gives each rank's swap throughput: bytes / the seconds spent inside the
store's pread/pwrite; the ranks share the disk and do their I/O at the same moments, so the table sums them (O_DIRECT where the filesystem takes it: buffered I/O would measure the page cache, and is
reported apart), and the share of the I/O the pipeline hid, 1 - waited / io. Beside it, the disk's own limit on the
same folder: `dd` writing and reading 256 MiB with oflag=direct / iflag=direct, block size aio.block_size.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

BLOCK = 1048576  # aio.block_size, DeepSpeed's default: the dd block too


def config(case, model, nvme_dir, tile):
    zero = {"stage": 3, "stage3_param_persistence_threshold": 0, "sub_group_size": tile}
    if case["optimizer"] == "cpu":
        zero["offload_optimizer"] = {"device": "cpu"}
    elif case["optimizer"] == "nvme":
        zero["offload_optimizer"] = {"device": "nvme", "nvme_path": nvme_dir,
                                     "pipeline_read": case["pipelined"], "pipeline_write": case["pipelined"]}
    if case["param"] == "nvme":
        zero["offload_param"] = {"device": "nvme", "nvme_path": nvme_dir}
    elif case["param"] != "none":
        zero["offload_param"] = {"device": case["param"]}
    return {
        "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1, "gradient_clipping": 1.0,
        "bf16": {"enabled": True},
        "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "weight_decay": 0.1}},
        "zero_optimization": zero,
        "aio": {"block_size": BLOCK, "intra_op_parallelism": case.get("io_threads", 1)} if case["optimizer"] == "nvme" else {},
        "model": {"name": model},
        "training": {"eval_interval": 0, "log_interval": 1000, "seed": 7, "tokenizer": "char"},
    }


CASES = [
    {"name": "ZeRO-3", "optimizer": "none", "param": "none", "pipelined": False},
    {"name": "+ offload_optimizer cpu", "optimizer": "cpu", "param": "none", "pipelined": False},
    {"name": "+ offload_param cpu", "optimizer": "cpu", "param": "cpu", "pipelined": False},
    {"name": "optimizer nvme, serial", "optimizer": "nvme", "param": "cpu", "pipelined": False},
    {"name": "optimizer nvme, pipelined", "optimizer": "nvme", "param": "cpu", "pipelined": True},
    {"name": "  + 2 I/O threads per request", "optimizer": "nvme", "param": "cpu", "pipelined": True, "io_threads": 2},
    {"name": "both nvme, pipelined", "optimizer": "nvme", "param": "nvme", "pipelined": True},
]


def run_once(args, case, tile, tmp):
    cfg = config(case, args.model, args.nvme, tile)
    if not cfg["aio"]:
        del cfg["aio"]
    path = os.path.join(tmp, "c.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    report = os.path.join(tmp, "r.json")
    env = dict(os.environ, MINITORCH_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(args.ranks),
           os.path.join(args.build, "bin", "minitorch-train"), "--config", path, "--device", "sim",
           "--steps", str(args.steps), "--out", "", "--report", report]
    done = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        sys.exit(f"infinity: {' '.join(cmd)} failed:\n{done.stdout}")
    with open(report) as f:
        r = json.load(f)
    return statistics.median(s["ms"] for s in r["steps"][1:]), r


def dd(args, what):
    """The disk's own throughput on --nvme: dd with O_DIRECT, in GB/s (None, and why, where refused)."""
    target = os.path.join(args.nvme, "dd-bench.bin")
    count = 256
    if what == "write":
        cmd = ["dd", "if=/dev/zero", f"of={target}", f"bs={BLOCK}", f"count={count}", "oflag=direct", "conv=fsync"]
    else:
        cmd = ["dd", f"if={target}", "of=/dev/null", f"bs={BLOCK}", f"count={count}", "iflag=direct"]
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        return None, done.stdout.strip().splitlines()[-1]
    m = re.search(r"copied, ([0-9.]+) s", done.stdout)
    return count * BLOCK / float(m.group(1)) / 1e9, None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default="build")
    p.add_argument("--nvme", default=None, help="the swap folder, on this machine's disk (default: BUILD/nvme-bench)")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--model", default="small")
    args = p.parse_args()
    args.nvme = os.path.abspath(args.nvme or os.path.join(args.build, "nvme-bench"))
    os.makedirs(args.nvme, exist_ok=True)
    print(f"bench-infinity: ZeRO-3 on {args.ranks} sim ranks x 1 thread, the {args.model} GPT in bf16, micro-batch 4, "
          f"median of steps 2-{args.steps}, median of {args.runs} runs; the swap in {args.nvme}")
    tile = None
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        # The shard's size from a plain run's report: sub_group_size so that it is 12 tiles.
        _, r = run_once(args, CASES[0], 1_000_000_000, tmp)
        shard = -(-r["num_parameters"] // args.ranks)
        tile = -(-shard // 12)
        print(f"  Ψ = {r['num_parameters']}, Ψ/N = {shard} elements, sub_group_size {tile}: 12 tiles per rank")
        print(f"  {'case':<28}{'step ms':>10}{'device peak':>14}{'host peak':>14}{'read GB/s':>11}{'write GB/s':>11}"
              f"{'I/O hidden':>11}   (GB/s: the {args.ranks} ranks together, each rank's bytes / its seconds in "
              f"pread/pwrite, summed)")
        base = None
        for case in CASES:
            times, reports = [], []
            for _ in range(args.runs):
                ms, rep = run_once(args, case, tile, tmp)
                times.append(ms)
                reports.append(rep)
            t = statistics.median(times)
            base = base or t
            rank = reports[-1]["ranks"][0]
            dev = rank["memory"]["total"]["peak"]
            host = rank["host_memory"]["total"]["peak"]
            line = f"  {case['name']:<28}{t:10.1f}{dev / 2**20:11.1f} MiB{host / 2**20:11.1f} MiB"
            if "nvme" in rank:
                nv = [rep["ranks"][0]["nvme"] for rep in reports]
                # The ranks share one disk and do their I/O at the same moments (the step is in lockstep): the
                # disk's load is the ranks' throughputs together, which is what compares with dd's one stream.
                rd = statistics.median(sum(rk["nvme"]["read_gb_per_s"] for rk in rep["ranks"]) for rep in reports)
                wr = statistics.median(sum(rk["nvme"]["write_gb_per_s"] for rk in rep["ranks"]) for rep in reports)
                hidden = statistics.median(1 - n["waited_seconds_last_step"] / n["io_seconds_last_step"]
                                           for n in nv if n["io_seconds_last_step"] > 0)
                line += f"{rd:11.2f}{wr:11.2f}{hidden * 100:10.0f}%"
                if not nv[0]["direct"]:
                    line += f"  (buffered: {nv[0]['why_not_direct']})"
                rows.append((case, rd, wr, hidden))
            print(line, flush=True)
    w, why_w = dd(args, "write")
    rd_, why_r = dd(args, "read")
    try:
        os.remove(os.path.join(args.nvme, "dd-bench.bin"))
    except OSError:
        pass
    print(f"  the disk itself (dd, {BLOCK} B blocks, 256 MiB): "
          f"write {w:.2f} GB/s" if w else f"  the disk itself: dd oflag=direct refused: {why_w}", end="")
    print(f", read {rd_:.2f} GB/s" if rd_ else f", dd iflag=direct refused: {why_r}")
    for case, rd, wr, hidden in rows:
        if w and rd_:
            print(f"  {case['name']}: {rd / rd_ * 100:.0f}% of the disk's read, {wr / w * 100:.0f}% of its write; "
                  f"{hidden * 100:.0f}% of the I/O time hidden under the update")
    if args.nvme.endswith("nvme-bench"):
        shutil.rmtree(args.nvme, ignore_errors=True)


if __name__ == "__main__":
    main()
