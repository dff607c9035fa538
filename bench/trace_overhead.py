#!/usr/bin/env python3
"""The cost of `minitorch-train --trace` on a real multi-rank run (make bench-trace, after bench-events (c)).

Runs ZeRO-3 (configs/zero3.json) on N ranks for S steps, alternately without and with --trace, R rounds,
and compares the median step time of each run as the run report measures it (`steps[].ms`, rank 0; the
first step, which allocates everything, left out). With --trace every rank records its events and the
stage records a frame at each transition of a step (docs/frames.md); the files are written after the
last step and are not part of any step's time. Prints one line per round and the medians.

Usage: bench/trace_overhead.py --build build [--ranks 2] [--steps 12] [--rounds 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(build, ranks, steps, trace_dir, report):
    env = dict(os.environ, MINITORCH_NUM_THREADS="1")
    if os.geteuid() == 0:  # Open MPI refuses root without these
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(ranks),
           os.path.join(build, "bin", "minitorch-train"), "--config", os.path.join(ROOT, "configs", "zero3.json"),
           "--data", os.path.join(ROOT, "datasets", "kjv.txt"), "--steps", str(steps), "--out", "",
           "--report", report]
    if trace_dir:
        cmd += ["--trace", trace_dir]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    with open(report) as f:
        ms = [s["ms"] for s in json.load(f)["steps"]][1:]
    return statistics.median(ms)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    off, on = [], []
    with tempfile.TemporaryDirectory(prefix="mt-bench-trace-") as tmp:
        report = os.path.join(tmp, "r.json")
        for r in range(args.rounds):
            off.append(run(args.build, args.ranks, args.steps, None, report))
            on.append(run(args.build, args.ranks, args.steps, os.path.join(tmp, "trace"), report))
            print(f"round {r + 1}: ZeRO-3 on {args.ranks} ranks, median step {off[-1]:.1f} ms untraced, "
                  f"{on[-1]:.1f} ms with --trace", flush=True)
    a, b = statistics.median(off), statistics.median(on)
    print(f"(e) --trace on a real run (ZeRO-3, {args.ranks} ranks, baby GPT, {args.steps} steps, medians of "
          f"{args.rounds}): {a:.1f} ms -> {b:.1f} ms per step ({100 * (b - a) / a:+.1f}%; target <= +5%)")


if __name__ == "__main__":
    main()
