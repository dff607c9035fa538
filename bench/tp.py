#!/usr/bin/python3
"""bench-tp: tensor parallelism on the small GPT (6 heads) over t = 1, 2 and 3 ranks: the median step, the share of
it spent in the tensor group's all-reduces, each rank's parameter bytes (checked against tp::parameters_per_rank)
and activation peak, and the elements the all-reduces sent against the formula (bench/tp.cpp prints one line per run; this runs it --runs times per t and
prints the medians).

/usr/bin/python3 bench/tp.py --build build [--runs 3] [--steps 4] [--micro 4] [--sizes 1,2,3]

One thread per rank. On a 2-core machine t = 3 runs three ranks on two cores: its step shows the oversubscription
as much as tensor parallelism (a rank waits in an all-reduce while another has its core), so read t = 1 and t = 2
for the trade and t = 3 for the memory.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

LINE = re.compile(r"bench-tp: t (\d+) \| (.*?) B=(\d+) \| step ([\d.]+) ms \| all-reduce ([\d.]+) ms \(([\d.]+)%\) \| "
                  r"param (\d+) B \| activation peak (\d+) B \| param formula (\d+) B \| TP elements sent (\d+) \(formula (\d+)\) \| "
                  r"loss ([\d.]+)")


def run(build, t, steps, micro):
    env = dict(os.environ)
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(t), os.path.join(build, "bin", "bench-tp"),
           "--steps", str(steps), "--micro", str(micro)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200)
    m = LINE.search(out.stdout)
    if out.returncode != 0 or not m:
        sys.exit(f"bench-tp: {' '.join(cmd)} failed (exit {out.returncode}):\n{out.stdout}{out.stderr}")
    return m


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default="build")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--micro", type=int, default=4)
    p.add_argument("--sizes", default="1,2,3")
    a = p.parse_args()
    rows, model = [], ""
    for t in [int(x) for x in a.sizes.split(",")]:
        runs = [run(a.build, t, a.steps, a.micro) for _ in range(a.runs)]
        model = runs[0].group(2)
        med = lambda i, f=float: statistics.median(f(m.group(i)) for m in runs)  # noqa: E731
        if runs[0].group(7) != runs[0].group(9):
            sys.exit(f"bench-tp: t = {t}: {runs[0].group(7)} parameter bytes per rank, the formula says {runs[0].group(9)}")
        rows.append((t, med(4), med(5), med(6), int(runs[0].group(7)), int(runs[0].group(8)), int(runs[0].group(10)),
                     int(runs[0].group(11)), runs[0].group(12)))
    print(f"bench-tp: {model}, micro-batch {a.micro}, 1 thread per rank; step and all-reduce time: medians of "
          f"{a.runs} runs (each the median of {a.steps} steps after a warm-up step)")
    print(f"  {'t':>2} {'step ms':>9} {'all-reduce ms':>14} {'share':>6} {'param B/rank':>13} {'activ. peak B':>14} "
          f"{'TP elements/step':>17} {'formula':>10} {'loss':>7}")
    base = rows[0]
    for t, step, comm, share, param, act, el, formula, loss in rows:
        print(f"  {t:>2} {step:>9.1f} {comm:>14.1f} {share:>5.1f}% {param:>13} {act:>14} {el:>17} {formula:>10} {loss:>7}"
              f"   (speed-up {base[1] / step:.2f}x over t = {base[0]}; params {param / base[4]:.3f}x, "
              f"activations {act / base[5]:.3f}x)")


if __name__ == "__main__":
    main()
