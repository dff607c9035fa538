#!/usr/bin/python3
"""bench-pytorch: the PyTorch reference for bench-gpt (bench/gpt.cpp).

Times one training step (forward + backward + AdamW, fp32, random token ids) of a nanoGPT-equivalent model
written out below, for the same two shapes bench-gpt uses:
  (a) baby  (L=4, H=4, C=128, T=64, V=65),  B=32   (timed for 4 x --steps steps, like bench-gpt)
  (b) gpt2  (L=12, H=12, C=768, block_size 1024, V=50257, bias=True, tied head) at B=4, T=64
and prints one line per model in bench-gpt's format (median step seconds, min, tokens/s).

The architecture is docs/design.md section 4 / nanoGPT's model.py: token + position embeddings, pre-LayerNorm
blocks (causal self-attention, tanh-GELU MLP, residuals), final LayerNorm, LM head tied to the token
embedding; init N(0, 0.02), residual projections N(0, 0.02/sqrt(2L)), biases 0. Dropout is 0 (and left out,
as in minitorch). Attention is the plain matmul + masked softmax path; where the installed torch has
F.scaled_dot_product_attention, the same models are also timed with it (lines labelled "<model>/sdpa").
Optimizer: torch.optim.AdamW(lr 6e-4, weight_decay 0.1 on params with dim >= 2, 0 on the rest, as
nanoGPT's configure_optimizers), fused if this version supports it on CPU, else foreach if it exists.

Run with Debian's python (/usr/bin/python3) and python3-torch; make sure libblas.so.3 is OpenBLAS
(`make bench-pytorch` installs python3-torch libopenblas0-pthread). With Debian's reference BLAS a gpt2
step takes ~54 s instead of a few seconds.

Usage: pytorch_gpt.py [--steps N] [--warmup W] [--only baby|gpt2] [--threads N] [--attn matmul|sdpa|both]
"""
import argparse
import inspect
import math
import os
import re
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description="PyTorch reference for bench-gpt: one training step of the baby and gpt2 GPTs")
    p.add_argument("--steps", type=int, default=5, help="timed steps (median reported; baby runs 4x as many)")
    p.add_argument("--warmup", type=int, default=1, help="untimed steps first")
    p.add_argument("--only", choices=["baby", "gpt2"], help="run only this model")
    p.add_argument("--threads", type=int, default=None, help="threads (default: all cores)")
    p.add_argument("--attn", choices=["matmul", "sdpa", "both"], default="both",
                   help="attention path; sdpa only where torch has F.scaled_dot_product_attention (default: both)")
    a = p.parse_args()
    if a.steps <= 0:
        p.error("--steps must be positive")
    if a.warmup < 0:
        p.error("--warmup must be non-negative")
    a.threads_given = a.threads is not None and a.threads > 0
    if not a.threads_given:
        a.threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return a


ARGS = parse_args()
# Thread settings for OpenMP (ATen) and OpenBLAS are read when the libraries load: set them before importing
# torch (values already in the environment win). Debian's torch runs its own ops on libgomp's pool and its GEMMs
# on libopenblas0-pthread's separate pool; both pools busy-wait after their work, and on a 2-core machine each
# one's spinning steals the cores the other needs (measured here: gpt2 ~2.3 s/step with libgomp's default spin,
# ~1.75 s/step with OMP_WAIT_POLICY=PASSIVE; baby 0.30 vs 0.14 s). So libgomp's workers sleep when idle
# unless you say otherwise; run with OMP_WAIT_POLICY=ACTIVE (or unset by `env OMP_WAIT_POLICY=`) to compare.
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_WAIT_POLICY")
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):  # an explicit --threads beats the environment
    if ARGS.threads_given:
        os.environ[_var] = str(ARGS.threads)
    else:
        os.environ.setdefault(_var, str(ARGS.threads))
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
if os.environ["OMP_WAIT_POLICY"] == "":
    del os.environ["OMP_WAIT_POLICY"]

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HAS_SDPA = hasattr(F, "scaled_dot_product_attention")


class Config:
    def __init__(self, n_layer, n_head, n_embd, block_size, vocab_size, bias=True):
        self.n_layer, self.n_head, self.n_embd = n_layer, n_head, n_embd
        self.block_size, self.vocab_size, self.bias = block_size, vocab_size, bias

    def describe(self):  # same text as minitorch's GPTConfig::describe()
        return (f"GPTConfig(L={self.n_layer}, H={self.n_head}, C={self.n_embd}, T={self.block_size}, "
                f"V={self.vocab_size}, bias={'true' if self.bias else 'false'})")


class LayerNorm(nn.Module):
    """LayerNorm with an optional bias (nanoGPT's)."""

    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg, use_sdpa):
        super().__init__()
        assert cfg.n_embd % cfg.n_head == 0
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, bias=cfg.bias)
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=cfg.bias)
        self.n_head, self.n_embd = cfg.n_head, cfg.n_embd
        self.use_sdpa = use_sdpa
        if not use_sdpa:
            mask = torch.tril(torch.ones(cfg.block_size, cfg.block_size)).view(1, 1, cfg.block_size, cfg.block_size)
            self.register_buffer("bias", mask)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if self.use_sdpa:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = att @ v  # (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.c_fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd, bias=cfg.bias)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd, bias=cfg.bias)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, cfg, use_sdpa):
        super().__init__()
        self.ln_1 = LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.attn = CausalSelfAttention(cfg, use_sdpa)
        self.ln_2 = LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.mlp = MLP(cfg)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):
    def __init__(self, cfg, use_sdpa=False):
        super().__init__()
        self.cfg = cfg
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(cfg.vocab_size, cfg.n_embd),
            wpe=nn.Embedding(cfg.block_size, cfg.n_embd),
            h=nn.ModuleList([Block(cfg, use_sdpa) for _ in range(cfg.n_layer)]),
            ln_f=LayerNorm(cfg.n_embd, bias=cfg.bias),
        ))
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init_weights(module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def num_parameters(self):  # every parameter once (tied wte/lm_head once, wpe included), as minitorch counts
        return sum(p.numel() for p in self.parameters())

    def forward(self, idx, targets):
        B, T = idx.size()
        assert T <= self.cfg.block_size
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        logits = self.lm_head(x)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def make_adamw(model, lr=6e-4, weight_decay=0.1):
    """nanoGPT's configure_optimizers: decay params with dim >= 2 (weights, embeddings), not biases/LayerNorms.
    Betas and eps are torch's defaults (0.9, 0.999), 1e-8, as bench-gpt's minitorch AdamW.
    Returns (optimizer, variant) where variant names the implementation used."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    sig = inspect.signature(torch.optim.AdamW).parameters
    if "fused" in sig:
        try:  # CPU fused AdamW exists only in newer torch (2.4+); older versions refuse CPU params here
            return torch.optim.AdamW(groups, lr=lr, fused=True), "fused"
        except (RuntimeError, ValueError, TypeError):
            pass
    if "foreach" in sig:
        return torch.optim.AdamW(groups, lr=lr, foreach=True), "foreach"
    return torch.optim.AdamW(groups, lr=lr), "for-loop"


def bench(cfg, B, T, steps, warmup, use_sdpa):
    torch.manual_seed(1)
    model = GPT(cfg, use_sdpa=use_sdpa)
    model.train()
    opt, variant = make_adamw(model)
    x = torch.randint(0, cfg.vocab_size, (B, T), dtype=torch.long)
    y = torch.randint(0, cfg.vocab_size, (B, T), dtype=torch.long)
    times = []
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        loss = model(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        s = time.perf_counter() - t0
        if i >= warmup:
            times.append(s)
    times.sort()
    return times[len(times) // 2], times[0], model.num_parameters(), variant  # median as bench-gpt takes it


def report(label, cfg, B, T, steps, warmup, use_sdpa):
    median_s, min_s, nparams, variant = bench(cfg, B, T, steps, warmup, use_sdpa)
    print(f"{label:<6} {cfg.describe():<44} B={B:<3} T={T:<4} params {nparams / 1e6:8.2f}M | "
          f"median step {median_s:8.3f} s (min {min_s:.3f}, {steps} steps) | {B * T / median_s:9.0f} tok/s", flush=True)
    return variant


def blas_backend():
    """The BLAS the process actually loaded (torch's BLAS_INFO only says 'generic' on Debian)."""
    libs = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                base = os.path.basename(path)
                if "blas" in base or "lapack" in base or base.startswith("libmkl"):
                    libs.add(os.path.realpath(path))
    except OSError:
        pass
    names = []
    for lib in sorted(libs):
        if "openblas" in lib:
            names.append("OpenBLAS")
        elif "mkl" in lib:
            names.append("MKL")
        elif "/blas/" in lib or "/lapack/" in lib:
            names.append("reference BLAS/LAPACK (slow!)")
        elif "blis" in lib:
            names.append("BLIS")
        elif "atlas" in lib:
            names.append("ATLAS")
    cfg = torch.__config__.show()
    info = re.findall(r"\b(?:BLAS_INFO|LAPACK_INFO)=[^,\s]*", cfg)
    return (", ".join(sorted(set(names))) or "unknown") + " [" + "; ".join(sorted(libs)) + "]" + \
        (" (torch: " + ", ".join(info) + ")" if info else "")


def main():
    torch.set_num_threads(ARGS.threads)
    # Load the BLAS before reading /proc/self/maps (libtorch links it, but make sure a GEMM ran).
    torch.ones(8, 8) @ torch.ones(8, 8)
    paths = []
    if ARGS.attn in ("matmul", "both"):
        paths.append(False)
    if ARGS.attn in ("sdpa", "both"):
        if HAS_SDPA:
            paths.append(True)
        elif ARGS.attn == "sdpa":
            sys.exit(f"torch {torch.__version__} has no F.scaled_dot_product_attention (needs torch >= 2.0)")
    print(f"bench-pytorch: fp32, {torch.get_num_threads()} threads, forward + backward + AdamW per step")
    blas = blas_backend()
    print(f"torch {torch.__version__} (python {sys.version.split()[0]}), BLAS: {blas}")
    if "reference BLAS" in blas:
        print("warning: libblas.so.3 is Debian's reference BLAS (a gpt2 step takes ~55 s); install libopenblas0-pthread "
              "and check `update-alternatives --display libblas.so.3-x86_64-linux-gnu`", file=sys.stderr)
    print("threads env: " + ", ".join(f"{k}={os.environ.get(k, '(unset)')}" for k in THREAD_ENV))
    print("attention: matmul + masked softmax" + (
        "; F.scaled_dot_product_attention (lines '<model>/sdpa')" if HAS_SDPA and True in paths else
        "" if HAS_SDPA else f"; F.scaled_dot_product_attention: not available in torch {torch.__version__}"))
    variant = make_adamw(nn.Linear(2, 2))[1]
    print(f"optimizer: torch.optim.AdamW ({variant}), lr 6e-4, weight_decay 0.1 on dim>=2 params", flush=True)
    baby = Config(n_layer=4, n_head=4, n_embd=128, block_size=64, vocab_size=65)
    gpt2 = Config(n_layer=12, n_head=12, n_embd=768, block_size=1024, vocab_size=50257)
    for use_sdpa in paths:
        suffix = "/sdpa" if use_sdpa else ""
        if ARGS.only in (None, "baby"):
            report("baby" + suffix, baby, 32, 64, ARGS.steps * 4, ARGS.warmup, use_sdpa)
        if ARGS.only in (None, "gpt2"):
            report("gpt2" + suffix, gpt2, 4, 64, ARGS.steps, ARGS.warmup, use_sdpa)


if __name__ == "__main__":
    main()
