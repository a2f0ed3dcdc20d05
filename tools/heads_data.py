#!/usr/bin/env python3
"""Training data for the draft heads: the frozen target's features, computed once and cached on disk.

  /usr/bin/python3 tools/heads_data.py [--gen-seqs 1280] [--out tools/runs/heads/cache]

Two kinds of 256-token chunks (self-distillation: every label the heads learn is the target's own output):
  - real: the training text (tools/data/austen_train.txt, tokenized as tools/train.py does) cut into consecutive
    chunks; the heads learn the target's distributions at each position (teacher-forced on Austen's text).
  - generated: a 64-token window of the training text at a random position followed by the target's own GREEDY
    continuation of 192 tokens (what greedy speculative decoding actually sees; EAGLE and Medusa both train on
    target-generated text when they self-distil).
Per chunk and position it stores (float16 memmaps, tools/runs/heads/cache/{real,gen,val}_*.npy):
  tokens [N, T] int16, last [N, T, d] (the target's last hidden state after the final norm: the LM head's input,
  the feature Medusa and EAGLE-1/2 read), aux [N, T, 3d] (inputs of decoder layers 2, L//2, L-3 concatenated:
  EAGLE-3's low/mid/high features), argmax [N, T] int16 (the target's greedy next token).
The target's logits are not stored: they are lm_head(last) and cost one matmul when needed.
Validation chunks come from tools/data/austen_val.txt (held out), real text only.
Resumable: rerun the same command after a stop; finished blocks are kept (progress.json).
"""
import argparse
import hashlib
import json
import os
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import tool_errors  # noqa: E402

tool_errors.require_torch()
import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from model import load_safetensors_model  # noqa: E402
from heads import eagle3_layer_ids  # noqa: E402

THREADS = int(os.environ.get("HEADS_THREADS", "1"))
torch.set_num_threads(THREADS)
DEFAULT_CACHE = os.path.join(HERE, "runs", "heads", "cache")


def tokens_of(path, tok_dir, cache):
    """Same tokenization as tools/train.py (documents separated by <|endoftext|>)."""
    from train import load_tokens, get_tokenizer
    torch.set_num_threads(THREADS)  # importing train.py sets its own thread count
    return load_tokens(path, get_tokenizer(tok_dir), cache).astype(np.int64)


@torch.no_grad()
def greedy_continue(m, prompts, n):
    logits, past = m(prompts)
    out = [logits[:, -1].argmax(-1)]
    for _ in range(n - 1):
        logits, past = m(out[-1][:, None], past=past)
        out.append(logits[:, -1].argmax(-1))
    return torch.cat([prompts, torch.stack(out, 1)], 1)


@torch.no_grad()
def features(m, x):
    logits, _, hid = m(x, return_hidden=True)
    aux = torch.cat([hid["states"][i] for i in eagle3_layer_ids(m.config.num_hidden_layers)], -1)
    return hid["last"], aux, logits.argmax(-1)


def target_identity(target_dir, config):
    """What a cache of features is made from: the target's shape and a digest of its config and weights."""
    h = hashlib.sha256()
    for name in sorted(n for n in os.listdir(target_dir) if n == "config.json" or n.endswith(".safetensors")):
        h.update(name.encode())
        with open(os.path.join(target_dir, name), "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return {"hidden_size": int(config.hidden_size), "vocab_size": int(config.vocab_size), "digest": h.hexdigest()[:16]}


def check_cache(cache_dir, target_dir, config):
    """Refuse, in one line, a cache of features made from another target than the one loaded (its features did not
    fit the heads: a shape error from torch; or, the same shape, they would teach the heads another model's states)."""
    rebuild = f"build one with: /usr/bin/python3 tools/heads_data.py --target {target_dir} --out <a new folder>"
    prog_path = os.path.join(cache_dir, "progress.json")
    if not os.path.exists(os.path.join(cache_dir, "val_last.npy")) or not os.path.exists(prog_path):
        tool_errors.fail(f"{cache_dir} holds no cached features; {rebuild}")
    made = json.load(open(prog_path)).get("target")
    want = target_identity(target_dir, config)
    if made is None:  # a cache from before the target was recorded: its features' width must fit at least
        width = np.load(os.path.join(cache_dir, "val_last.npy"), mmap_mode="r").shape[-1]
        if width != want["hidden_size"]:
            tool_errors.fail(f"{cache_dir} holds features of width {width}, and {target_dir} has hidden size "
                             f"{want['hidden_size']}: the cache was made from another target; {rebuild}")
        return
    if made != want:
        def says(i):
            return f"hidden size {i['hidden_size']}, vocabulary {i['vocab_size']}, weights {i['digest']}"
        tool_errors.fail(f"{cache_dir} was made from another target ({says(made)}) than {target_dir} ({says(want)}); "
                         f"{rebuild}")


class Cache:
    """Read side: memmapped arrays of one or more splits ("real", "gen", "val"), chunks numbered across them."""

    def __init__(self, d, splits, need_aux=False):
        self.parts = []
        for split in splits:
            p = {k: np.load(os.path.join(d, f"{split}_{k}.npy"), mmap_mode="r") for k in ("tokens", "last", "argmax")}
            if need_aux:
                p["aux"] = np.load(os.path.join(d, f"{split}_aux.npy"), mmap_mode="r")
            self.parts.append(p)
        self.sizes = [len(p["tokens"]) for p in self.parts]
        self.offsets = np.cumsum([0] + self.sizes)
        self.n = int(self.offsets[-1])
        self.T = self.parts[0]["tokens"].shape[1]

    def batch(self, idx):
        idx = np.sort(np.asarray(idx))
        out = {}
        for k in self.parts[0]:
            rows = []
            for pi, p in enumerate(self.parts):
                sel = idx[(idx >= self.offsets[pi]) & (idx < self.offsets[pi + 1])] - self.offsets[pi]
                if len(sel):
                    rows.append(p[k][sel])
            a = np.concatenate(rows, 0)
            out[k] = torch.from_numpy(a.astype(np.float32 if a.dtype == np.float16 else np.int64))
        return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default=os.path.join(ROOT, "public", "models", "austen-target"))
    ap.add_argument("--tokenizer", default=os.path.join(HERE, "runs", "tokenizer"))
    ap.add_argument("--train", default=os.path.join(HERE, "data", "austen_train.txt"))
    ap.add_argument("--val", default=os.path.join(HERE, "data", "austen_val.txt"))
    ap.add_argument("--out", default=DEFAULT_CACHE)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--prompt-len", type=int, default=64)
    ap.add_argument("--gen-seqs", type=int, default=1280, help="generated chunks (multiple of --block)")
    ap.add_argument("--block", type=int, default=64)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    T = args.seq
    m = load_safetensors_model(args.target, torch.float32)
    d = m.config.hidden_size
    train = tokens_of(args.train, args.tokenizer, "train_tokens.npy")
    val = tokens_of(args.val, args.tokenizer, "val_tokens.npy")
    prog_path = os.path.join(args.out, "progress.json")
    prog = json.load(open(prog_path)) if os.path.exists(prog_path) else {}
    # A cache is resumed only with the shapes it was started with (another --seq or --gen-seqs crashed mid-way with
    # "could not broadcast"): what it was built with is recorded, and a different ask is refused up front.
    shape = {"seq": T, "gen_seqs": args.gen_seqs}
    built = prog.get("shape")
    gen_file = os.path.join(args.out, "gen_tokens.npy")
    if built is None and os.path.exists(gen_file):  # a cache from before the shapes were recorded
        g, t = np.load(gen_file, mmap_mode="r").shape
        built = {"seq": int(t), "gen_seqs": int(g)}
    if built is not None and built != shape:
        tool_errors.fail(f"{args.out} was built with --seq {built['seq']} --gen-seqs {built['gen_seqs']}: "
                         "pass those to resume it, or another --out")
    prog["shape"] = shape
    # And only from the target it was started with (features of two targets in one cache teach the heads neither).
    made_from = target_identity(args.target, m.config)
    if prog.get("target") not in (None, made_from):
        tool_errors.fail(f"{args.out} was started from another target than {args.target}: pass that one to resume "
                         "it, or another --out")
    prog["target"] = made_from

    def save_prog():
        json.dump(prog, open(prog_path + ".tmp", "w"))
        os.replace(prog_path + ".tmp", prog_path)

    # 1. generated chunks (greedy continuations of training-text windows)
    gen_path = os.path.join(args.out, "gen_tokens.npy")
    G = args.gen_seqs
    if not os.path.exists(gen_path):
        np.save(gen_path, np.zeros((G, T), dtype=np.int16))
    gen = np.load(gen_path, mmap_mode="r+")
    rng = np.random.default_rng(args.seed)
    starts = rng.integers(0, len(train) - args.prompt_len - 1, size=G)
    t0 = time.time()
    for b0 in range(prog.get("gen", 0), G, args.block):
        idx = range(b0, min(G, b0 + args.block))
        prompts = torch.from_numpy(np.stack([train[starts[i]:starts[i] + args.prompt_len] for i in idx]))
        seqs = greedy_continue(m, prompts, T - args.prompt_len)
        gen[b0:b0 + len(idx)] = seqs.numpy().astype(np.int16)
        gen.flush()
        prog["gen"] = b0 + len(idx)
        save_prog()
        print(f"generated {prog['gen']}/{G} ({(time.time() - t0) / 60:.1f} min)", flush=True)

    # 2. features of the validation chunks, the real training chunks and the generated chunks
    splits = (("val", np.stack([val[i * T:(i + 1) * T] for i in range(len(val) // T)])),
              ("real", np.stack([train[i * T:(i + 1) * T] for i in range(len(train) // T)])),
              ("gen", np.asarray(gen, dtype=np.int64)))
    for split, chunks in splits:
        N = len(chunks)
        key = f"{split}_done"
        paths = {k: os.path.join(args.out, f"{split}_{k}.npy") for k in ("tokens", "last", "aux", "argmax")}
        if not os.path.exists(paths["tokens"]) or prog.get(key) is None:
            np.save(paths["tokens"], chunks.astype(np.int16))
            for k, shape, dt in (("last", (N, T, d), np.float16), ("aux", (N, T, 3 * d), np.float16),
                                 ("argmax", (N, T), np.int16)):
                np.lib.format.open_memmap(paths[k], mode="w+", dtype=dt, shape=shape).flush()
            prog[key] = 0
            save_prog()
        mm = {k: np.load(paths[k], mmap_mode="r+") for k in ("last", "aux", "argmax")}
        t0 = time.time()
        step = max(1, args.block // 4)
        for b0 in range(prog[key], N, step):
            b1 = min(N, b0 + step)
            h, aux, am = features(m, torch.from_numpy(chunks[b0:b1]))
            mm["last"][b0:b1] = h.numpy().astype(np.float16)
            mm["aux"][b0:b1] = aux.numpy().astype(np.float16)
            mm["argmax"][b0:b1] = am.numpy().astype(np.int16)
            if (b1 // step) % 16 == 0 or b1 == N:
                for a in mm.values():
                    a.flush()
                prog[key] = b1
                save_prog()
                print(f"{split} features {b1}/{N} ({(time.time() - t0) / 60:.1f} min)", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    tool_errors.run(main)
