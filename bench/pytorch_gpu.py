#!/usr/bin/env python3
"""pytorch_gpu.py: PyTorch eager beside bench-gpu (bench/gpu.cpp) on one GPU, in the same GPU check.

The same model as bench/pytorch_gpt.py (nanoGPT's GPT, imported from there), GPT-2 124M shape with the
vocabulary padded to 50304, B x T = 8 x 1024, one training step = forward + backward + fused AdamW
(lr 6e-4, weight decay 0.1 on dim >= 2), in bf16 autocast with f32 weights (PyTorch's usual mixed
precision; minitorch keeps bf16 weights and an f32 master in AdamW: the same math in the matmuls).
Prints, in bench-gpu's words: the cuBLAS bf16 GEMM rate measured here (8192^3, through torch.matmul),
then one line per attention path: the plain matmul + masked softmax (what minitorch runs) and
F.scaled_dot_product_attention (flash attention); with --compile also torch.compile of the matmul-attention
model (the first step, which compiles, is timed apart; a failure to compile is one line, not an error).
MFU uses nanoGPT's 6 N + 12 L C T FLOPs per token.

Usage: pytorch_gpu.py [--steps N] [--warmup W] [--batch B] [--seq T] [--peak-tflops P] [--compile]
"""
import argparse
import os
import sys
import time

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--steps", type=int, default=10)
p.add_argument("--warmup", type=int, default=2)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--seq", type=int, default=1024)
p.add_argument("--peak-tflops", type=float, default=989.0)
p.add_argument("--compile", action="store_true", help="also time torch.compile of the matmul-attention model")
ARGS = p.parse_args()

sys.argv = sys.argv[:1]  # pytorch_gpt parses its own arguments when imported: none
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_gpt as ref  # noqa: E402
import torch  # noqa: E402

if not torch.cuda.is_available():
    sys.exit("pytorch_gpu.py: torch sees no CUDA device")
dev = torch.device("cuda")


def gemm_tflops(n=8192, reps=10):
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        a @ b
    torch.cuda.synchronize()
    return 2 * n ** 3 * reps / (time.perf_counter() - t0) / 1e12


def step_time(use_sdpa, compiled=False):
    torch.manual_seed(1)
    cfg = ref.Config(12, 12, 768, 1024, 50304)
    model = ref.GPT(cfg, use_sdpa=use_sdpa).to(dev)
    n = model.num_parameters()
    run = torch.compile(model) if compiled else model
    params = list(model.parameters())
    groups = [{"params": [q for q in params if q.dim() >= 2], "weight_decay": 0.1},
              {"params": [q for q in params if q.dim() < 2], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=6e-4, fused=True)
    B, T = ARGS.batch, ARGS.seq
    x = torch.randint(0, 50257, (B, T), device=dev)
    y = torch.randint(0, 50257, (B, T), device=dev)
    times, first = [], 0.0
    for i in range(ARGS.warmup + ARGS.steps):
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = run(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss_value = loss.item()  # waits for the step
        if i == 0:
            first = time.perf_counter() - t0
        if i >= ARGS.warmup:
            times.append(time.perf_counter() - t0)
    times.sort()
    del model, run, opt
    torch.cuda.empty_cache()
    return times[len(times) // 2], times[0], n, loss_value, first


print(f"pytorch-gpu: torch {torch.__version__} on {torch.cuda.get_device_name()}", flush=True)
gemm = gemm_tflops()
print(f"pytorch-gpu: cuBLAS bf16 GEMM 8192^3: {gemm:.1f} TFLOP/s ({100 * gemm / ARGS.peak_tflops:.1f}% of "
      f"{ARGS.peak_tflops:.0f})", flush=True)
runs = [("eager matmul attention", False, False), ("eager sdpa (flash)", True, False)]
if ARGS.compile:
    runs.append(("torch.compile matmul attention", False, True))
for label, sdpa, compiled in runs:
    try:
        med, mn, n, loss, first = step_time(sdpa, compiled)
    except Exception as e:  # noqa: BLE001 -- "if it runs": one line, the other results stand
        print(f"pytorch-gpu: {label}: failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}", flush=True)
        continue
    if compiled:
        print(f"pytorch-gpu: {label}: the first step (compiling) took {first:.1f} s", flush=True)
    tok_s = ARGS.batch * ARGS.seq / med
    tflops = (6 * n + 12 * 12 * 768 * ARGS.seq) * tok_s / 1e12
    print(f"pytorch-gpu: {label}, bf16 autocast B={ARGS.batch} T={ARGS.seq} params {n / 1e6:.2f}M | median step "
          f"{med:.4f} s (min {mn:.4f}, {ARGS.steps} steps) | {tok_s:.0f} tok/s | {tflops:.1f} TFLOP/s | "
          f"MFU {100 * tflops / ARGS.peak_tflops:.2f}% of {ARGS.peak_tflops:.0f} | loss {loss:.4f}", flush=True)
