"""What the notebooks share: where the repository and its build are, running minitorch's binaries (under
mpirun for several ranks), configs derived from configs/*.json, a small corpus, and saving figures.

    import mt
    cfg = mt.config("zero2", "zero2_2steps", {"training": {"eval_interval": 0}})
    rep = mt.train(cfg, ranks=2, steps=2)          # the run report (docs/report.md) as a dict
    rep["ranks"][0]["model_states"]                # {"param": ..., "grad": ..., "optim": ...}
    rep = mt.train(cfg, ranks=2, steps=2, trace=True)
    rep["_trace"]["traceEvents"]                   # the run's trace.json (docs/trace.md)

Everything a notebook writes goes under BUILD/notebooks/ (configs, reports, traces, figures); the sources stay
clean. BUILD is the environment's MINITORCH_BUILD (relative to the repository root, as the Makefile's
BUILD), default "build".
"""
from __future__ import annotations

import copy
import json
import os
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / os.environ.get("MINITORCH_BUILD", "build")
BIN = BUILD / "bin"
OUT = BUILD / "notebooks"
RUN_TIMEOUT_S = 300


def binary(name: str) -> Path:
    """BUILD/bin/NAME, or a FileNotFoundError that says how to build it."""
    path = BIN / name
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: build first (make, or MINITORCH_BUILD=dir for another build)")
    return path


def _mpi_env(ranks: int) -> dict:
    env = dict(os.environ)
    if os.geteuid() == 0:  # Open MPI refuses root without these
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    # One thread per process: the ranks share the cores, and a thread waiting for a core stalls every op (the
    # numbers these notebooks check do not depend on it; set MINITORCH_NUM_THREADS to choose another).
    env.setdefault("MINITORCH_NUM_THREADS", "1")
    return env


def run(args: list, ranks: int = 1) -> str:
    """Runs a binary of BUILD/bin with its arguments, on `ranks` ranks under mpirun when ranks > 1, from the
    repository root. Returns stdout + stderr; a non-zero exit raises RuntimeError with the output's tail."""
    cmd = [str(binary(args[0]))] + [str(a) for a in args[1:]]
    if ranks > 1:
        cmd = ["mpirun", "-q", "--oversubscribe", "--bind-to", "none", "-np", str(ranks)] + cmd
    p = subprocess.run(cmd, cwd=ROOT, env=_mpi_env(ranks), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=RUN_TIMEOUT_S)
    if p.returncode != 0:
        tail = "\n".join(p.stdout.splitlines()[-30:])
        raise RuntimeError(f"{' '.join(cmd)} exited with {p.returncode}:\n{tail}")
    return p.stdout


def _merge(base: dict, changes: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in changes.items():
        out[k] = _merge(out.get(k, {}), v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def config(base: str, name: str, changes: dict | None = None) -> Path:
    """configs/BASE.json with `changes` merged in (nested dicts merge key by key), written to
    BUILD/notebooks/configs/NAME.json. Returns its path."""
    cfg = json.loads((ROOT / "configs" / f"{base}.json").read_text())
    cfg = _merge(cfg, changes or {})
    path = OUT / "configs" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(cfg, indent=2) + "\n")
    return path


def corpus(lines: int = 2000) -> Path:
    """The first `lines` verses of the KJV (datasets/kjv.txt, `make data`), Genesis and the start of Exodus
    for the default: a small text that keeps the runs cheap. Written once to BUILD/notebooks/."""
    kjv = ROOT / "datasets" / "kjv.txt"
    if not kjv.exists():
        raise FileNotFoundError(f"{kjv} does not exist: run `make data` first")
    path = OUT / f"kjv_{lines}.txt"
    if not path.exists():
        with kjv.open(encoding="utf-8") as f:
            text = "".join(line for _, line in zip(range(lines), f))
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.rename(path)
    return path


def train(config_path: Path, ranks: int, steps: int, name: str | None = None, data: Path | None = None,
          quiet: bool = False, trace: bool = False) -> dict:
    """minitorch-train --config CONFIG --steps STEPS --data DATA --out '' --report R on `ranks` ranks; returns
    the run report (docs/report.md) as a dict, with the run's wall time under "_wall_s". The report is
    BUILD/notebooks/runs/NAME.json (NAME: the config's name and the ranks by default).

    trace=True adds `--trace BUILD/notebooks/traces/NAME`: the same run also writes trace.json there (every
    rank's events in the Chrome Trace Event format, docs/trace.md), returned parsed under "_trace"."""
    name = name or f"{Path(config_path).stem}_np{ranks}"
    report = OUT / "runs" / f"{name}.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.unlink(missing_ok=True)
    args = ["--report", report]
    if trace:
        trace_dir = OUT / "traces" / name
        trace_dir.mkdir(parents=True, exist_ok=True)
        (trace_dir / "trace.json").unlink(missing_ok=True)
        args += ["--trace", trace_dir]
    data = data or corpus()
    t0 = time.perf_counter()
    run(["minitorch-train", "--config", config_path, "--steps", steps, "--data", data, "--out", ""] + args,
        ranks=ranks)
    wall = time.perf_counter() - t0
    rep = json.loads(report.read_text())
    rep["_wall_s"] = wall
    if trace:
        rep["_trace"] = json.loads((trace_dir / "trace.json").read_text())
    if not quiet:
        print(f"{name}: {ranks} rank{'s' if ranks > 1 else ''}, {steps} steps, {rep['strategy']}, "
              f"Ψ = {rep['num_parameters']:,}, {wall:.1f} s")
    return rep


def estimate(config_path: Path, ranks: int, data: Path | None = None) -> dict:
    """minitorch-estimate --config CONFIG --ranks N --data DATA --json: the exact per-rank model-state bytes
    the estimator plans for every stage (its JSON as a dict)."""
    out = run(["minitorch-estimate", "--config", config_path, "--ranks", ranks, "--data", data or corpus(), "--json"])
    return json.loads(out)


def per_rank(runs: list) -> list:
    """An estimate's `exact` runs ({"first_rank", "last_rank", bytes...}: ranks that hold the same bytes) as one
    entry per rank."""
    return [run for run in runs for _ in range(run["first_rank"], run["last_rank"] + 1)]


def chunk_size(numel: int, world: int, r: int) -> int:
    """dist/process_group.cpp's split of `numel` elements over `world` ranks: chunk r."""
    return numel // world + (1 if r < numel % world else 0)


def all_reduce_elements(numel: int, world: int, r: int) -> int:
    """Elements rank r sends in a ring all-reduce of `numel` elements (reduce-scatter + all-gather; the
    table in dist/process_group.h): 2(N−1)/N·numel when N divides numel."""
    return (numel - chunk_size(numel, world, r)) + (numel - chunk_size(numel, world, (r + 1) % world))


def savefig(fig, name: str):
    """Saves the figure as BUILD/notebooks/NAME.png and returns it as an image to display (the backend is
    Agg: nothing opens a window)."""
    from IPython.display import Image
    import matplotlib.pyplot as plt
    path = OUT / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)
    print(f"saved {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return Image(filename=str(path))
