#!/usr/bin/python3
"""bench-gemini: the bytes each method moves between host and device per step, its step time on a PCIe-like link,
and the smallest device capacity it fits in: DDP, ZeRO-3, ZeRO-3 + offload_optimizer, ZeRO-3 + offload_param
(ZeRO-Infinity's parameter offload, to host memory), Gemini static and Gemini auto.

/usr/bin/python3 bench/gemini.py --build build [--ranks 4] [--steps 6] [--runs 3] [--link BYTES_PER_S]

Every case trains the same GPT (4 blocks, n_embd 256: 3.2M parameters, f32, micro-batch 2, sequence 64) on the KJV on
--ranks simulated accelerators (`--device sim`, 1 thread per rank) and reads the run report (docs/report.md): the
bytes copied host→device and device→host in the last step (`transfers_last_step`, the model's traffic; the batches
and the loss apart), and the step time, the median of the steps after the first, median of --runs runs.

The link: `sim`'s copies are memcpy, far faster than PCIe; `--link-bandwidth` holds each copy for bytes ÷ rate. The
default rate is chosen so that copying a rank's parameter shard once (P·Ψ/N bytes) takes as long as one plain
ZeRO-3 step computes — the balance of a large model's shard on PCIe against a GPU's compute, where offload roughly
doubles a step. Every method runs on that link, so their step times compare.

First each method's smallest capacity, by bisection to 1/64 MiB between 0 and "everything fits" (the DDP run's device
peak, rounded up to a MiB); then the table at "everything fits" and at each of those capacities, largest first: at each
one every method runs once (does it fit?), then --runs times. Gemini static takes the smallest fractions that fit
(offload_optim_frac 0, then 1.0 with offload_param_frac 0, 0.25, ... 1.0: the defaults move nothing).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

MODEL = {"name": "baby", "n_layer": 4, "n_head": 4, "n_embd": 256, "block_size": 64}
# Colossal-AI's chunk search (gemini/chunk_search.h) over sizes 2^18 .. 2^19 elements: 264192, 13 chunks, 7.6 % waste
# (its default minimum, 32 × 2^20, would make this model one chunk kept gathered: plain data parallelism).
SEARCH = {"min_chunk_size_m": 0.25, "search_range_m": 0.25}


def config(method, ranks, static_fracs=None, prefetch=2):
    # ZeRO-3 prefetches 2^19 elements ahead, what Gemini's max_prefetch 2 gathers ahead in chunks of ~2^18 (DeepSpeed's
    # default, 5e7, would hold this whole model gathered ahead: more memory than either needs).
    zero = {"stage": 3, "stage3_param_persistence_threshold": 0, "reduce_bucket_size": 500000,
            "stage3_prefetch_bucket_size": 524288}
    cfg = {
        "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1, "gradient_clipping": 1.0,
        "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "weight_decay": 0.1}},
        "zero_optimization": zero,
        "model": MODEL,
        "training": {"eval_interval": 0, "log_interval": 1000, "seed": 7, "tokenizer": "char"},
    }
    if method == "DDP":
        cfg["zero_optimization"] = {"stage": 0}
    elif method == "ZeRO-3 + offload_optimizer":
        zero["offload_optimizer"] = {"device": "cpu"}
    elif method == "ZeRO-3 + offload_param":
        zero["offload_optimizer"] = {"device": "cpu"}
        zero["offload_param"] = {"device": "cpu"}
    elif method.startswith("Gemini"):
        del zero["stage3_param_persistence_threshold"], zero["stage3_prefetch_bucket_size"]  # ZeRO-3's units' keys
        g = dict(SEARCH, max_prefetch=prefetch)
        if method == "Gemini auto":
            g["placement_policy"] = "auto"
        else:
            g["offload_optim_frac"], g["offload_param_frac"] = static_fracs
        cfg["gemini"] = g
    return cfg


def run(args, cfg, capacity, tmp, steps=None):
    """(fits, report): one run at `capacity` bytes (0: no limit)."""
    path = os.path.join(tmp, "c.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    report = os.path.join(tmp, "r.json")
    if os.path.exists(report):
        os.remove(report)
    env = dict(os.environ, MINITORCH_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(args.ranks),
           os.path.join(args.build, "bin", "minitorch-train"), "--config", path, "--device", "sim",
           "--steps", str(steps or args.steps), "--out", "", "--report", report]
    if capacity:
        cmd += ["--device-memory", str(capacity)]
    if args.link:
        cmd += ["--link-bandwidth", str(int(args.link))]
    done = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        if "out of memory" in done.stdout:
            return False, None
        sys.exit(f"gemini: {' '.join(cmd)} failed:\n{done.stdout}")
    with open(report) as f:
        return True, json.load(f)


def step_ms(report):
    return statistics.median(s["ms"] for s in report["steps"][1:])


def moved(report):
    t = report["ranks"][0]["transfers_last_step"]
    return t["h2d"], t["d2h"]


STATIC_FRACS = [(0.0, 0.0), (1.0, 0.0), (1.0, 0.25), (1.0, 0.5), (1.0, 0.75), (1.0, 1.0)]
METHODS = ["DDP", "ZeRO-3", "ZeRO-3 + offload_optimizer", "ZeRO-3 + offload_param", "Gemini static", "Gemini auto"]


def fits(args, method, capacity, tmp):
    """The report of `method`'s run at `capacity` (static: with the smallest fractions that fit), or None."""
    for fracs in (STATIC_FRACS if method == "Gemini static" else [None]):
        ok, rep = run(args, config(method, args.ranks, fracs), capacity, tmp, steps=3)
        if ok:
            if fracs:
                rep["fracs"] = fracs
            return rep
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default="build")
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--link", type=float, default=0, help="bytes per second (default: calibrated, see above)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        # Calibrate the link on plain ZeRO-3 with instant copies: P·Ψ/N bytes per step's compute time.
        link, args.link = args.link, 0
        _, rep = run(args, config("ZeRO-3", args.ranks), 0, tmp)
        psi = rep["num_parameters"]
        compute_ms = step_ms(rep)
        args.link = link or 4 * psi / args.ranks / (compute_ms / 1000)
        _, ddp = run(args, config("DDP", args.ranks), 0, tmp, steps=3)
        top = (ddp["ranks"][0]["memory"]["total"]["peak"] // 2**20 + 1) * 2**20
        print(f"bench-gemini: {args.ranks} sim ranks x 1 thread, GPT L4 C256 T64 (Ψ = {psi}), f32, micro-batch 2; "
              f"Gemini chunks searched in [2^18, 2^19] elements; plain ZeRO-3 computes a step in {compute_ms:.0f} ms; link "
              f"{args.link / 1e6:.1f} MB/s (P·Ψ/N bytes per step's compute); step time: median of steps 2-{args.steps}, "
              f"median of {args.runs} runs; bytes: rank 0's last step")
        # Each method's smallest capacity first (bisection), then the table at "everything fits" and at each of those
        # capacities, from the largest down: where a method stops fitting, what the others move there.
        print("  the smallest capacity each method fits in (bisection to 1/64 MiB, 3 steps):")
        smallest = {}
        for method in METHODS:
            lo, hi = 0, top  # lo does not fit (or is 0), hi fits
            if fits(args, method, hi, tmp) is None:
                print(f"    {method:<28} does not fit in {hi / 2**20:.2f} MiB")
                continue
            while hi - lo > 2**20 // 64:
                mid = (lo + hi) // 2
                if mid and fits(args, method, mid, tmp) is not None:
                    hi = mid
                else:
                    lo = mid
            smallest[method] = hi
            print(f"    {method:<28} {hi / 2**20:7.2f} MiB", flush=True)
        caps = sorted({top} | set(smallest.values()), reverse=True)
        print(f"  {'capacity':>10}  {'method':<28}{'h2d MB':>9}{'d2h MB':>9}{'step ms':>9}  note")
        for cap in caps:
            for method in METHODS:
                rep = fits(args, method, cap, tmp)
                if rep is None:
                    print(f"  {cap / 2**20:7.2f} MiB  {method:<28}{'does not fit':>27}", flush=True)
                    continue
                fracs = rep.get("fracs")
                times = []
                for _ in range(args.runs):
                    _, r = run(args, config(method, args.ranks, fracs), cap, tmp)
                    times.append(step_ms(r))
                    last = r
                h2d, d2h = moved(last)
                note = ""
                if fracs:
                    note = f"offload_optim_frac {fracs[0]}, offload_param_frac {fracs[1]}"
                if method == "Gemini auto":
                    a = last["ranks"][0]["gemini"]["auto"]
                    note = (f"evictions {a['evictions']}, uncached gathers {a['uncached_gathers']}, "
                            f"prefetches refused {a['prefetches_refused']} since the start")
                print(f"  {cap / 2**20:7.2f} MiB  {method:<28}{h2d / 1e6:9.2f}{d2h / 1e6:9.2f}"
                      f"{statistics.median(times):9.0f}  {note}", flush=True)


if __name__ == "__main__":
    main()
