#!/usr/bin/env python3
"""Train the bundled tiny Llama pair on the Austen text (CPU, Debian's python3-torch).

Target (from scratch, LM loss):
  /usr/bin/python3 tools/train.py --role target --minutes 65 --out tools/runs/target
Draft (distilled from the exported target: KL(target || draft) mixed with the LM loss):
  /usr/bin/python3 tools/train.py --role draft --minutes 18 --teacher public/models/austen-target --out tools/runs/draft

The learning-rate schedule (linear warmup, cosine decay to 10%) runs on wall-clock progress (elapsed / --minutes)
unless --steps is given, so a run fits its time budget on any machine. A checkpoint (fp32 master weights + optimizer)
is written to OUT/ckpt.pt every --ckpt-minutes; rerun with --resume to continue; tools/export.py exports any
checkpoint. Progress and validation loss go to stdout (run it under nohup ... > OUT/train.log).
"""
import argparse
import json
import math
import dataclasses
import hashlib
import os
import sys
import time

# OpenMP threads must not spin while OpenBLAS runs the matmuls (2-2.5x faster training on 2 cores).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import tool_errors  # noqa: E402

tool_errors.require_torch()
import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from model import LlamaConfig, LlamaForCausalLM, TARGET, DRAFT, load_safetensors_model  # noqa: E402
from bpe import Tokenizer  # noqa: E402

# TRAIN_THREADS, else OMP_NUM_THREADS (as torch itself reads it), else 2.
torch.set_num_threads(int(os.environ.get("TRAIN_THREADS") or os.environ.get("OMP_NUM_THREADS") or "2"))


TOKEN_CACHE = os.path.join(HERE, "runs", "token-cache")


def load_tokens(path, tok, cache=None):
    """The text's token ids, cached under tools/runs/token-cache by what they depend on: the text file and the
    tokenizer (path, size, mtime). Keyed by the file name alone, a run on another file or with another tokenizer got
    the tokens of the last one, and the cache landed beside the tokenizer (in public/models for the bundled one)."""
    def ident(f):
        st = os.stat(f)
        return f"{os.path.abspath(f)}:{st.st_size}:{st.st_mtime_ns}"
    key = hashlib.sha1(f"{ident(path)}|{ident(tok.path)}".encode()).hexdigest()[:16]
    name = os.path.splitext(os.path.basename(cache or path))[0]
    os.makedirs(TOKEN_CACHE, exist_ok=True)
    cache = os.path.join(TOKEN_CACHE, f"{name}-{key}.npy")
    if os.path.exists(cache):
        return np.load(cache)
    text = open(path, encoding="utf-8").read()
    ids = []
    # novels are separated by a blank line: <|endoftext|> between documents
    for doc in text.split("\n\n"):
        doc = doc.strip("\n")
        if not doc:
            continue
        ids.append(tok.eos_id)
        ids.extend(tok.encode(doc + "\n"))
    ids.append(tok.eos_id)
    arr = np.array(ids, dtype=np.int16 if max(ids) < 32768 else np.int32)
    np.save(cache, arr)
    return arr


def get_tokenizer(tok_dir):
    tok = Tokenizer.from_file(tok_dir)
    tok.path = os.path.join(tok_dir, "tokenizer.json")
    return tok


def batch(data, B, T, rng, bos_prob):
    ix = rng.integers(0, len(data) - T - 1, size=B)
    x = np.stack([data[i:i + T + 1] for i in ix]).astype(np.int64)
    x = torch.from_numpy(x)
    # sometimes start with <|endoftext|> (BOS) so the model is fine with or without a BOS token
    m = torch.from_numpy(rng.random(B) < bos_prob)
    x[m, 0] = 0
    return x[:, :-1], x[:, 1:]


def adamw(model, lr, wd):
    """AdamW (betas 0.9/0.95), weight decay on the matrices only (not on norms)."""
    decay = [p for _, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for _, p in model.named_parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": wd}, {"params": no_decay, "weight_decay": 0.0}],
                             lr=lr, betas=(0.9, 0.95), eps=1e-8)


def set_lr(opt, lr, step, warmup, prog, min_frac):
    """Linear warmup over `warmup` steps, then cosine from lr to min_frac * lr over progress 0..1; returns it."""
    cur = lr * (step + 1) / warmup if step < warmup else lr * (
        min_frac + (1 - min_frac) * 0.5 * (1 + math.cos(math.pi * min(1.0, prog))))
    for g in opt.param_groups:
        g["lr"] = cur
    return cur


def distill_kl(logits, teacher_logits):
    """KL(teacher || student) per position, over [B, T, V] logits."""
    return F.kl_div(F.log_softmax(logits, -1), F.log_softmax(teacher_logits, -1), log_target=True,
                    reduction="batchmean") / logits.shape[1]


def update(model, opt, loss):
    """One optimiser step on loss, gradients clipped to norm 1."""
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()


@torch.no_grad()
def evaluate(model, val, T, max_windows=None):
    model.eval()
    n = (len(val) - 1) // T
    if max_windows:
        n = min(n, max_windows)
    tot, cnt = 0.0, 0
    for s in range(0, n, 8):
        idx = range(s, min(n, s + 8))
        x = torch.from_numpy(np.stack([val[i * T:i * T + T + 1] for i in idx]).astype(np.int64))
        logits, _ = model(x[:, :-1])
        tot += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1), reduction="sum").item()
        cnt += x[:, 1:].numel()
    model.train()
    return tot / cnt


def save_ckpt(path, model, opt, step, elapsed, args, extra):
    tmp = path + ".tmp"
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step, "elapsed": elapsed,
                "config": model.config.__dict__, "args": vars(args), **extra}, tmp)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--role", choices=["target", "draft"], required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokenizer", default=os.path.join(HERE, "runs", "tokenizer"))
    ap.add_argument("--train", default=os.path.join(HERE, "data", "austen_train.txt"))
    ap.add_argument("--val", default=os.path.join(HERE, "data", "austen_val.txt"))
    ap.add_argument("--minutes", type=float, default=65)
    ap.add_argument("--steps", type=int, default=0, help="fixed step count (schedule by steps, not time)")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--lr", type=float, default=None)
    ap.add_argument("--min-lr-frac", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=40)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--bos-prob", type=float, default=0.25)
    ap.add_argument("--teacher", default=None, help="exported target folder (draft distillation)")
    ap.add_argument("--kd-alpha", type=float, default=0.8, help="draft loss = a*KL(teacher||draft) + (1-a)*CE")
    ap.add_argument("--ckpt-minutes", type=float, default=4)
    ap.add_argument("--log-every", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--resume", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    tok = get_tokenizer(args.tokenizer)
    train = load_tokens(args.train, tok, "train_tokens.npy")
    val = load_tokens(args.val, tok, "val_tokens.npy")
    print(f"train tokens {len(train)}, val tokens {len(val)}", flush=True)
    # Checked before any training: the final evaluation divided by zero after the whole run, and the run was lost.
    for name, ids in (("--train", train), ("--val", val)):
        if len(ids) <= args.seq + 1:
            tool_errors.fail(f"{name} has {len(ids)} tokens: fewer than one window of --seq {args.seq} + 1")
    if args.role == "draft" and not args.teacher:
        tool_errors.fail("--role draft needs --teacher (the exported target folder it is distilled from)")
    if args.teacher:
        teacher_tok = os.path.join(args.teacher, "tokenizer.json")
        if not os.path.exists(teacher_tok):
            tool_errors.fail(f"--teacher {args.teacher} has no tokenizer.json (is it a target model folder?)")
        if Tokenizer.from_file(teacher_tok).vocab != tok.vocab:
            tool_errors.fail(f"--teacher {args.teacher} has another vocabulary than --tokenizer {args.tokenizer}: "
                             "the draft must be trained on the teacher's tokenizer")

    cfg = TARGET if args.role == "target" else DRAFT
    # The model's vocabulary is the tokenizer's (the defaults are the bundled 4096-token one's).
    cfg = dataclasses.replace(cfg, vocab_size=len(tok.vocab))
    lr = args.lr or (1e-3 if args.role == "target" else 2e-3)
    torch.manual_seed(args.seed)
    model = LlamaForCausalLM(cfg)
    teacher = None
    if args.role == "draft":
        teacher = load_safetensors_model(args.teacher)
        for p in teacher.parameters():
            p.requires_grad_(False)
        # init the draft's (tied) embedding from the teacher's, projected on its top principal directions
        with torch.no_grad():
            E = teacher.model.embed_tokens.weight.float()
            U, S, V = torch.linalg.svd(E - E.mean(0), full_matrices=False)
            Ed = E @ V[:cfg.hidden_size].T
            model.model.embed_tokens.weight.copy_(Ed * (0.02 / Ed.std()))
        print(f"teacher {args.teacher}: {teacher.num_params()} params, val loss {evaluate(teacher, val, args.seq, 16):.4f} (16 windows)", flush=True)
    print(f"{args.role}: {model.num_params()} params, config {cfg}", flush=True)

    opt = adamw(model, lr, args.wd)
    ckpt_path = os.path.join(args.out, "ckpt.pt")
    step, elapsed0 = 0, 0.0
    if args.resume and os.path.exists(ckpt_path):
        ck = torch.load(ckpt_path)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        step, elapsed0 = ck["step"], ck["elapsed"]
        print(f"resumed at step {step}, elapsed {elapsed0 / 60:.1f} min", flush=True)
    rng = np.random.default_rng(args.seed + step)
    budget = args.minutes * 60
    t_start = time.time() - elapsed0
    last_ckpt = time.time()
    tokens_seen = step * args.batch * args.seq
    run_t0, run_tokens = time.time(), 0
    ema = None
    model.train()
    while True:
        elapsed = time.time() - t_start
        prog = step / args.steps if args.steps else elapsed / budget
        if prog >= 1.0:
            break
        cur = set_lr(opt, lr, step, args.warmup, prog, args.min_lr_frac)
        x, y = batch(train, args.batch, args.seq, rng, args.bos_prob)
        logits, _ = model(x)
        ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        if teacher is not None:
            with torch.no_grad():
                tl, _ = teacher(x)
            kl = distill_kl(logits, tl)
            loss = args.kd_alpha * kl + (1 - args.kd_alpha) * ce
        else:
            loss = ce
        update(model, opt, loss)
        step += 1
        tokens_seen += x.numel()
        run_tokens += x.numel()
        ema = ce.item() if ema is None else 0.95 * ema + 0.05 * ce.item()
        if step % args.log_every == 0:
            tps = run_tokens / (time.time() - run_t0)
            extra = f" kl {kl.item():.4f}" if teacher is not None else ""
            print(f"step {step} ce {ce.item():.4f} (ema {ema:.4f}){extra} lr {cur:.2e} tok/s {tps:.0f} "
                  f"epochs {tokens_seen / len(train):.2f} elapsed {(time.time() - t_start) / 60:.1f}m", flush=True)
        if time.time() - last_ckpt > args.ckpt_minutes * 60:
            vl = evaluate(model, val, args.seq, 24)
            save_ckpt(ckpt_path, model, opt, step, time.time() - t_start, args, {"val_loss_partial": vl})
            print(f"ckpt step {step}: val loss (24 windows) {vl:.4f} ppl {math.exp(vl):.2f}", flush=True)
            last_ckpt = time.time()
    # The trained weights are kept before the final evaluation, whatever happens in it.
    save_ckpt(ckpt_path, model, opt, step, time.time() - t_start, args, {})
    vl = evaluate(model, val, args.seq)
    save_ckpt(ckpt_path, model, opt, step, time.time() - t_start, args, {"val_loss": vl})
    print(f"done: step {step}, tokens {tokens_seen} ({tokens_seen / len(train):.2f} epochs), "
          f"{(time.time() - t_start) / 60:.1f} min, mean tok/s {run_tokens / (time.time() - run_t0):.0f}, "
          f"val loss {vl:.4f} ppl {math.exp(vl):.2f}", flush=True)


if __name__ == "__main__":
    tool_errors.run(main)
