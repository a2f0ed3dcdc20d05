"""The training loop shared by tools/train_medusa.py and tools/train_eagle.py.

Wall-clock budget (--minutes): linear warmup then cosine decay to --min-lr-frac of the peak, on elapsed / budget
(as tools/train.py), so a run fits its budget on any machine. Checkpoint (fp32 weights + AdamW state + data RNG
position) every --ckpt-minutes to OUT/ckpt.pt; --resume continues a stopped run; the run's script exports any
checkpoint with --export DIR. Batches mix real-text chunks and the target's own greedy continuations
(--gen-frac of each batch).
"""
import math
import os
import time

import numpy as np
import torch

import tool_errors


def add_common_args(ap, here, minutes, lr, batch):
    ap.add_argument("--target", default=os.path.join(os.path.dirname(here), "public", "models", "austen-target"))
    ap.add_argument("--cache", default=os.path.join(here, "runs", "heads", "cache"))
    ap.add_argument("--minutes", type=float, default=minutes)
    ap.add_argument("--steps", type=int, default=0, help="schedule by steps instead of time")
    ap.add_argument("--batch", type=int, default=batch, help="256-token chunks per step")
    ap.add_argument("--gen-frac", type=float, default=0.5, help="share of each batch from generated chunks")
    ap.add_argument("--lr", type=float, default=lr)
    ap.add_argument("--min-lr-frac", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--wd", type=float, default=0.0)
    ap.add_argument("--ckpt-minutes", type=float, default=4)
    ap.add_argument("--log-every", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--export", default=None, help="export OUT/ckpt.pt to this folder and exit")


def refuse_init_on_resume(args):
    """--init starts a new run; a checkpoint being resumed already has its weights."""
    if args.init and args.resume and os.path.exists(os.path.join(args.out, "ckpt.pt")):
        tool_errors.fail("--init starts a new run: give it without --resume, or resume without --init")


def refuse_other_target(folder, hidden_size, vocab_size, c):
    """Exported heads given to --init must have been made for this target (config c)."""
    if hidden_size != c.hidden_size or vocab_size != c.vocab_size:
        tool_errors.fail(f"{folder} was made for another target (hidden {hidden_size}, vocabulary {vocab_size}; "
                         f"the target has {c.hidden_size}, {c.vocab_size})")


def train_loop(args, model, params, loss_fn, val_fn, data, out_dir, extra_state=None):
    """loss_fn(batch) -> (loss tensor, dict of floats to log); val_fn() -> dict of floats.
    data: heads_data.Cache over ["real", "gen"]."""
    os.makedirs(out_dir, exist_ok=True)
    opt = torch.optim.AdamW(params, lr=args.lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=args.wd)
    ckpt_path = os.path.join(out_dir, "ckpt.pt")
    step, elapsed0, tokens = 0, 0.0, 0
    if args.resume and os.path.exists(ckpt_path):
        ck = torch.load(ckpt_path)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        step, elapsed0, tokens = ck["step"], ck["elapsed"], ck.get("tokens", 0)
        print(f"resumed at step {step}, elapsed {elapsed0 / 60:.1f} min", flush=True)
    rng = np.random.default_rng(args.seed + step)
    n_real, n_gen = data.sizes
    budget = args.minutes * 60
    t_start = time.time() - elapsed0
    last_ckpt = time.time()
    ema = {}
    run_t0, run_tok = time.time(), 0
    cpu0 = time.process_time()  # CPU time of this process (the machine is shared: wall time is noisy)

    def save(extra):
        tmp = ckpt_path + ".tmp"
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                    "elapsed": time.time() - t_start, "tokens": tokens, "args": vars(args),
                    **(extra_state or {}), **extra}, tmp)
        os.replace(tmp, ckpt_path)

    model.train()
    while True:
        prog = step / args.steps if args.steps else (time.time() - t_start) / budget
        if prog >= 1.0:
            break
        if step < args.warmup:
            lr = args.lr * (step + 1) / args.warmup
        else:
            lr = args.lr * (args.min_lr_frac + (1 - args.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * min(1.0, prog))))
        for g in opt.param_groups:
            g["lr"] = lr
        ng = int(round(args.batch * args.gen_frac))
        idx = np.concatenate([rng.integers(0, n_real, args.batch - ng), n_real + rng.integers(0, n_gen, ng)])
        batch = data.batch(idx)
        loss, logs = loss_fn(batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        step += 1
        tokens += batch["tokens"].numel()
        run_tok += batch["tokens"].numel()
        for k, v in logs.items():
            ema[k] = v if k not in ema else 0.95 * ema[k] + 0.05 * v
        if step % args.log_every == 0:
            s = " ".join(f"{k} {v:.4f}" for k, v in ema.items())
            print(f"step {step} {s} lr {lr:.2e} tok/s {run_tok / (time.time() - run_t0):.0f} "
                  f"elapsed {(time.time() - t_start) / 60:.1f}m cpu {(time.process_time() - cpu0) / 60:.1f}m", flush=True)
        if time.time() - last_ckpt > args.ckpt_minutes * 60:
            v = val_fn()
            model.train()
            save({"val": v})
            print(f"ckpt step {step}: " + " ".join(f"{k} {x:.4f}" for k, x in v.items()), flush=True)
            last_ckpt = time.time()
    v = val_fn()
    save({"val": v})
    print(f"done: step {step}, {tokens} tokens, {(time.time() - t_start) / 60:.1f} min "
          f"(this run: {(time.process_time() - cpu0) / 60:.1f} CPU min), "
          f"mean tok/s {run_tok / max(1e-9, time.time() - run_t0):.0f}; val " +
          " ".join(f"{k} {x:.4f}" for k, x in v.items()), flush=True)
