#!/usr/bin/python3
"""bench-offload, part 2: the optimizer step time of ZeRO-2 and ZeRO-3 with and without ZeRO-Offload.

/usr/bin/python3 bench/offload_steps.py --build build [--ranks 2] [--steps 12] [--runs 3] [--model baby]

Each case trains the named GPT on the KJV on --ranks simulated accelerators (`--device sim`, 1 thread per
rank), bf16, for --steps steps and reads the run report (docs/report.md): a case's time is the median step
time of its steps after the first (the first allocates AdamW's states), and the line gives the median of
--runs runs. With offload, the step also copies the gradient shard down and the updated shard up and runs
AdamW on the host (docs/design.md §10); the report's measured bytes are printed beside the times.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def config(stage, offload, model):
    return {
        "train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 1, "gradient_clipping": 1.0,
        "bf16": {"enabled": True},
        "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "weight_decay": 0.1}},
        "zero_optimization": {"stage": stage, "stage3_param_persistence_threshold": 0,
                              "offload_optimizer": {"device": "cpu" if offload else "none"}},
        "model": {"name": model},
        "training": {"eval_interval": 0, "log_interval": 1000, "seed": 7, "tokenizer": "char"},
    }


def run_once(args, stage, offload, tmp):
    path = os.path.join(tmp, f"c{stage}{int(offload)}.json")
    with open(path, "w") as f:
        json.dump(config(stage, offload, args.model), f)
    report = os.path.join(tmp, "r.json")
    env = dict(os.environ, MINITORCH_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(args.ranks),
           os.path.join(args.build, "bin", "minitorch-train"), "--config", path, "--device", "sim",
           "--steps", str(args.steps), "--out", "", "--report", report]
    done = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        sys.exit(f"offload_steps: {' '.join(cmd)} failed:\n{done.stdout}")
    with open(report) as f:
        r = json.load(f)
    ms = statistics.median(s["ms"] for s in r["steps"][1:])
    return ms, r


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default="build")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--model", default="baby")
    args = p.parse_args()
    print(f"step time: {args.ranks} sim ranks x 1 thread, the {args.model} GPT in bf16, micro-batch 8, "
          f"median of steps 2-{args.steps}, median of {args.runs} runs")
    with tempfile.TemporaryDirectory() as tmp:
        for stage in (2, 3):
            base = None
            for offload in (False, True):
                times, report = [], None
                for _ in range(args.runs):
                    ms, report = run_once(args, stage, offload, tmp)
                    times.append(ms)
                t = statistics.median(times)
                rank = report["ranks"][0]
                moved = rank["transfers_last_step"]
                name = f"ZeRO-{stage}" + (" + offload" if offload else "")
                extra = ""
                if offload:
                    extra = (f"  ({(t / base - 1) * 100:+.0f}%; host {sum(rank['host_model_states'].values())} B, "
                             f"d2h {moved['d2h']} B, h2d {moved['h2d']} B per step)")
                else:
                    base = t
                device = sum(rank["model_states"].values())
                print(f"  {name:<20} {t:8.2f} ms   device model states {device} B{extra}")


if __name__ == "__main__":
    main()
