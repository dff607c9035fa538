#!/usr/bin/python3
"""The PyTorch reference for bench-offload: torch.optim.AdamW on the CPU over one shard, in elements/s.

/usr/bin/python3 bench/pytorch_adamw.py [--elements N] [--rounds R] [--steps S] [--threads T]

One parameter of N f32 elements (default 8M = 8 388 608) with an f32 gradient, the hyper-parameters of
bench/offload.cpp (lr 1e-3, betas 0.9 / 0.999, eps 1e-8, weight decay 0.01), torch.set_num_threads(T)
(default: all cores). Variants: foreach=True (torch's multi-tensor path), foreach=False (the plain loop over
parameters), and fused=True where this torch has it on the CPU (2.4 and later; Debian bookworm's 1.13 does
not, and the line says so). Each round times S steps of every variant in turn; the line gives the median of
R rounds in bench-offload's format.

--ratio FILE reads the lines of both programs (what make bench-offload saved) and prints minitorch's
medians against the best torch variant; it needs no torch.
"""
import argparse
import os
import re
import sys
import time

LINE = re.compile(r"^adamw\s+(.+?)\s+(\d+) elements\s+median\s+([\d.]+) Melem/s")


def ratio(path):
    rates = {}
    for line in open(path):
        m = LINE.match(line)
        if m:
            rates[m.group(1)] = float(m.group(3))
    torch_rates = {k: r for k, r in rates.items() if k.startswith("torch")}
    if not torch_rates or "minitorch f32" not in rates:
        sys.exit(f"pytorch_adamw.py --ratio: no minitorch and torch lines in {path}")
    best = max(torch_rates, key=torch_rates.get)
    for ours in ("minitorch f32", "minitorch f32+bf16", "lab kernel f32"):
        if ours in rates:
            x = rates[ours] / torch_rates[best]
            note = "  (target >= 2x)" if ours == "minitorch f32" else ""
            print(f"ratio  {ours:<20} / {best} = {x:.2f}x{note}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--elements", type=int, default=8 << 20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--ratio", metavar="FILE", help="print the ratios from the saved lines of both programs")
    args = ap.parse_args()
    if args.ratio:
        return ratio(args.ratio)

    import torch  # only here: --ratio runs without it

    torch.set_num_threads(args.threads)
    n = args.elements
    hp = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    gen = torch.Generator().manual_seed(5)
    grad = torch.randn(n, generator=gen)

    def make(**kw):
        p = torch.randn(n, generator=gen).requires_grad_()
        p.grad = grad.clone()
        opt = torch.optim.AdamW([p], **hp, **kw)
        opt.step()  # warm-up: the state (exp_avg, exp_avg_sq) is created, pages touched
        return opt

    variants = [("torch foreach", dict(foreach=True)), ("torch for-loop", dict(foreach=False))]
    try:
        make(fused=True)
        variants.append(("torch fused", dict(fused=True)))
        fused_note = "fused: yes"
    except (TypeError, RuntimeError, ValueError) as e:
        fused_note = f"fused: not on the CPU in this torch ({type(e).__name__}: {str(e).splitlines()[0][:80]})"
    opts = [(label, make(**kw), []) for label, kw in variants]

    for _ in range(args.rounds):
        for label, opt, rates in opts:
            opt.step()
            t0 = time.perf_counter()
            for _ in range(args.steps):
                opt.step()
            rates.append(n * args.steps / (time.perf_counter() - t0))

    print(f"pytorch_adamw.py: torch {torch.__version__}, torch.optim.AdamW over one parameter of {n} elements, "
          f"{torch.get_num_threads()} threads (OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset')}), "
          f"median of {args.rounds} rounds of {args.steps} steps; {fused_note}")
    for label, _, rates in opts:
        med = sorted(rates)[len(rates) // 2]
        each = " / ".join(str(int(r / 1e6)) for r in rates)
        print(f"adamw  {label:<20} {n:>10} elements  median {med / 1e6:8.1f} Melem/s  ({each})")


if __name__ == "__main__":
    main()
