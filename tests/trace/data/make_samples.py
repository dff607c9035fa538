#!/usr/bin/env python3
"""Writes the two hand-made frames.json samples the players are tested on (docs/frames.md):

  zero3_4ranks/frames.json  one step of the baby GPT under ZeRO-3 on 4 ranks (27 frames; the browser test)
  zero1_2ranks/frames.json  one step of the baby GPT under ZeRO-1 on 2 ranks (10 frames; the golden test)

They are written by hand (this script), not recorded, so that the players can be built and tested
before the recorder exists; the numbers follow the baby GPT (Ψ = 809 600, n_embd 128, 4 blocks, 63
characters) and zero/stage1.cpp, zero/stage3.h. Run from anywhere: python3 tests/trace/data/make_samples.py
Then regenerate the golden file (tests/trace/test_trace_cli.cpp says how).
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
F32 = 4

# The flat space: the outer unit (embeddings, final LayerNorm; the head reuses wte), then one bucket per block.
OUTER = [("transformer.wte.weight", 63 * 128), ("transformer.wpe.weight", 64 * 128),
         ("transformer.ln_f.weight", 128), ("transformer.ln_f.bias", 128)]
BLOCK = [("ln_1.weight", 128), ("ln_1.bias", 128), ("attn.c_attn.weight", 128 * 384), ("attn.c_attn.bias", 384),
         ("attn.c_proj.weight", 128 * 128), ("attn.c_proj.bias", 128), ("ln_2.weight", 128), ("ln_2.bias", 128),
         ("mlp.c_fc.weight", 128 * 512), ("mlp.c_fc.bias", 512), ("mlp.c_proj.weight", 512 * 128),
         ("mlp.c_proj.bias", 128)]


def make_space():
    buckets, pos = [], 0
    units = [("outer", [(n, s) for n, s in OUTER])]
    for b in range(4):
        units.append((f"h.{b}", [(f"transformer.h.{b}.{n}", s) for n, s in BLOCK]))
    for name, params in units:
        begin = pos
        plist = []
        for pname, size in params:
            plist.append({"name": pname, "begin": pos, "end": pos + size})
            pos += size
        buckets.append({"name": name, "begin": begin, "end": pos, "params": plist})
    assert pos == 809600, pos
    return {"numel": pos, "buckets": buckets}


SPACE = make_space()
BUCKETS = SPACE["buckets"]
NUMEL = SPACE["numel"]


def shard(b, r, n):
    bk = BUCKETS[b]
    size = (bk["end"] - bk["begin"]) // n
    return bk["begin"] + r * size, bk["begin"] + (r + 1) * size


def bsize(b):
    return BUCKETS[b]["end"] - BUCKETS[b]["begin"]


def normalise(ranges):
    """Sorted, adjacent ranges of one state merged."""
    out = []
    for r in sorted(ranges, key=lambda x: x["begin"]):
        if out and out[-1]["end"] == r["begin"] and out[-1]["state"] == r["state"]:
            out[-1]["end"] = r["end"]
        else:
            out.append(dict(r))
    for a, b in zip(out, out[1:]):
        assert a["end"] <= b["begin"], (a, b)
    return out


def collective(op, b, n, begin=None, end=None):
    if b is not None:
        begin, end = BUCKETS[b]["begin"], BUCKETS[b]["end"]
    moved = (end - begin) * (n - 1) // n  # per rank, as the comm counters count: (N-1)/N of the range
    return {"op": op, "bucket": b, "begin": begin, "end": end, "elements": moved, "bytes": moved * F32,
            "ranks": list(range(n))}


class Run:
    def __init__(self, strategy, stage, n, capacity):
        self.n = n
        self.doc = {"format": "minitorch-frames-1",
                    "run": {"strategy": strategy, "zero_stage": stage, "world_size": n, "dtype": "f32",
                            "num_parameters": 809600, "capacity_bytes": capacity},
                    "space": SPACE, "frames": []}

    def frame(self, phase, label, caption, coll, per_rank):
        """per_rank(r) -> (params, grads, optim, memory_bytes)"""
        ranks = []
        for r in range(self.n):
            p, g, o, mem = per_rank(r)
            full = {"param": 0, "grad": 0, "optim": 0, "activation": 0, "optim_temp": 0, "comm": 0,
                    "other": 4096}
            full.update(mem)
            ranks.append({"rank": r, "params": normalise(p), "grads": normalise(g), "optim": normalise(o),
                          "memory_bytes": full})
        self.doc["frames"].append({"index": len(self.doc["frames"]), "step": 1, "micro": 0, "phase": phase,
                                   "label": label, "caption": caption, "collective": coll, "ranks": ranks})

    def write(self, name):
        d = os.path.join(HERE, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "frames.json"), "w") as f:
            json.dump(self.doc, f, indent=1)
            f.write("\n")
        print(f"wrote {name}/frames.json: {len(self.doc['frames'])} frames")


def zero3(n=4, name="zero3_4ranks"):
    run = Run("ZeRO-3", 3, n, 6 * 1024 * 1024)
    # The state every rank is in, changed frame by frame: per bucket the params' and grads' states.
    P = ["shard"] * 5       # shard | gathered
    G = [None] * 5          # None | accumulating | reduced
    act = [0]
    comm = [0]
    temp = [0]

    def state(r):
        params, grads = [], []
        pbytes = gbytes = 0
        for b in range(5):
            lo, hi = shard(b, r, n)
            if P[b] == "gathered":
                params.append({"begin": BUCKETS[b]["begin"], "end": BUCKETS[b]["end"], "state": "gathered"})
                pbytes += bsize(b) * F32
            else:
                params.append({"begin": lo, "end": hi, "state": "shard"})
            pbytes += (hi - lo) * F32
            if G[b] == "accumulating":
                grads.append({"begin": BUCKETS[b]["begin"], "end": BUCKETS[b]["end"], "state": "accumulating"})
                gbytes += bsize(b) * F32
            elif G[b] == "reduced":
                grads.append({"begin": lo, "end": hi, "state": "reduced"})
                gbytes += (hi - lo) * F32
        optim = [{"begin": shard(b, r, n)[0], "end": shard(b, r, n)[1], "state": "shard"} for b in range(5)]
        mem = {"param": pbytes, "grad": gbytes, "optim": 2 * (NUMEL // n) * F32, "activation": act[0] + 1500 * r,
               "comm": comm[0], "optim_temp": temp[0]}
        return params, grads, optim, mem

    def f(phase, label, caption, coll=None):
        run.frame(phase, label, caption, coll, state)

    f("init", "step 1 begins: every rank holds 1/" + str(n) + " of everything",
      f"ZeRO-3 on {n} ranks: each rank keeps only its own shard (1/{n}) of every bucket's parameters and of the "
      "AdamW states m and v. The outlined part of each bar is the rank's shard; colour says which rank owns it.")
    P[0] = "gathered"
    act[0] = 20000
    f("forward", "forward: all-gather outer", "all-gather: every rank now holds the whole outer unit (wte, wpe, "
      "ln_f) for the embedding lookup; the head will reuse wte.", collective("all_gather", 0, n))
    for b in range(1, 5):
        P[b] = "gathered"
        f("forward", f"forward h.{b - 1}: all-gather h.{b - 1}",
          f"all-gather: every rank now holds all of block h.{b - 1}'s parameters, for its forward",
          collective("all_gather", b, n))
        P[b] = "shard"
        act[0] += 60000
        f("forward", f"forward h.{b - 1}: release h.{b - 1}",
          f"block h.{b - 1} has run its forward: each rank frees the {n - 1}/{n} it gathered and keeps its own shard")
    P[0] = "shard"
    act[0] += 120000
    f("forward", "forward done: loss 4.1744, release outer",
      "the head (tied to wte) made the logits and the loss (4.1744); the outer unit is released until the backward")
    P[0] = "gathered"
    G[0] = "accumulating"
    f("backward", "backward head: all-gather outer", "all-gather outer again for the head's backward; wte and ln_f "
      "gradients start to accumulate, whole, on every rank (local, not yet reduced)", collective("all_gather", 0, n))
    for b in range(4, 0, -1):
        P[b] = "gathered"
        f("backward", f"backward h.{b - 1}: all-gather h.{b - 1}",
          f"all-gather h.{b - 1} for its backward (prefetched while the layer above computed)",
          collective("all_gather", b, n))
        G[b] = "accumulating"
        act[0] -= 60000
        f("backward", f"backward h.{b - 1}: gradients",
          f"h.{b - 1}'s backward leaves whole, local gradients on every rank: each rank saw a different micro-batch")
        G[b] = "reduced"
        P[b] = "shard"
        comm[0] = bsize(b) * F32
        f("reduce", f"backward h.{b - 1}: reduce-scatter h.{b - 1}",
          f"reduce-scatter: each rank receives the average of its own shard (1/{n}) of h.{b - 1}'s gradients and "
          f"frees the rest; the gathered parameters are released too", collective("reduce_scatter", b, n))
        comm[0] = 0
    act[0] = 0
    f("backward", "backward embeddings", "the embedding lookup adds its gradients to wte's (the head's part is "
      "already there); wpe gets its gradients")
    G[0] = "reduced"
    P[0] = "shard"
    comm[0] = bsize(0) * F32
    f("reduce", "reduce-scatter outer", "reduce-scatter outer: now every rank holds the averaged gradients of its "
      "own shards, and only those", collective("reduce_scatter", 0, n))
    comm[0] = 0
    G[:] = [None] * 5
    temp[0] = bsize(1) // n * F32
    f("optimizer_step", "optimizer step: each rank updates its shard",
      "AdamW on each rank's shard only: its parameters, its m and v, its gradients (then freed). Nothing is "
      "gathered now: the next forward gathers what it needs.")
    run.write(name)


def zero1():
    n = 2
    run = Run("ZeRO-1", 1, n, None)
    G = ["accumulating"] * 5  # accumulating | reduced (own shard reduced, the rest local); allocated at start
    P = ["whole"] * 5   # whole | stepped (own shard new, the rest stale) — as ranges
    act = [0]
    comm = [0]
    temp = [0]

    def state(r):
        params, grads = [], []
        for b in range(5):
            lo, hi = shard(b, r, n)
            bb, be = BUCKETS[b]["begin"], BUCKETS[b]["end"]
            if P[b] == "stepped":
                params += [{"begin": bb, "end": lo, "state": "whole"}, {"begin": lo, "end": hi, "state": "shard"},
                           {"begin": hi, "end": be, "state": "whole"}]
            else:
                params.append({"begin": bb, "end": be, "state": "whole"})
            if G[b] == "reduced":
                grads += [{"begin": bb, "end": lo, "state": "accumulating"},
                          {"begin": lo, "end": hi, "state": "reduced"},
                          {"begin": hi, "end": be, "state": "accumulating"}]
            elif G[b] == "accumulating":
                grads.append({"begin": bb, "end": be, "state": "accumulating"})
        params = [x for x in params if x["begin"] < x["end"]]
        grads = [x for x in grads if x["begin"] < x["end"]]
        optim = [{"begin": shard(b, r, n)[0], "end": shard(b, r, n)[1], "state": "shard"} for b in range(5)]
        mem = {"param": NUMEL * F32, "grad": NUMEL * F32 + sum((bsize(b) // n) * F32 for b in range(5) if G[b] == "reduced"),
               "optim": 2 * (NUMEL // n) * F32, "activation": act[0], "comm": comm[0], "optim_temp": temp[0]}
        return params, grads, optim, mem

    def f(phase, label, caption, coll=None):
        run.frame(phase, label, caption, coll, state)

    f("init", "step 1 begins", "ZeRO-1 on 2 ranks: parameters and gradient buffers (zero) whole on both ranks; "
      "each rank keeps the AdamW states (m, v) of its own half only")
    act[0] = 260000
    f("forward", "forward", "forward on each rank's own micro-batch: activations grow, parameters are read whole")
    act[0] = 0
    f("backward", "backward", "backward: every rank holds whole, local gradients of its own micro-batch")
    for b in range(4, -1, -1):
        G[b] = "reduced"
        comm[0] = bsize(b) * F32
        f("reduce", f"reduce-scatter {BUCKETS[b]['name']}",
          f"reduce-scatter {BUCKETS[b]['name']}: each rank receives the average of its own half of the bucket's "
          "gradients; the other half stays local and unused", collective("reduce_scatter", b, n))
    comm[0] = 0
    P[:] = ["stepped"] * 5
    G[:] = ["accumulating"] * 5
    temp[0] = 99136 * F32
    f("optimizer_step", "optimizer step on each half", "AdamW on each rank's half only: its parameters there are new, "
      "the other half is stale; the gradient buffers are zeroed for the next step")
    P[:] = ["whole"] * 5
    temp[0] = 0
    comm[0] = NUMEL * F32
    f("gather", "all-gather parameters", "all-gather: each rank sends its updated half, so both hold the new "
      "parameters whole", collective("all_gather", None, n, 0, NUMEL))
    run.write("zero1_2ranks")


if __name__ == "__main__":
    zero3()
    zero1()
