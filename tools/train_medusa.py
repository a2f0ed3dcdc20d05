#!/usr/bin/env python3
"""Medusa-1 heads for the frozen bundled target, by self-distillation on the target's own outputs.

  /usr/bin/python3 tools/heads_data.py                                   # once: cache the target's features
  /usr/bin/python3 tools/train_medusa.py --minutes 50 --out tools/runs/medusa      # resumable (--resume)
  /usr/bin/python3 tools/train_medusa.py --out tools/runs/medusa --export public/models/austen-medusa

Heads (tools/heads.py, FasterDecoding/Medusa layout): K = 4, one ResBlock + a vocabulary projection each, on the
target's last hidden state h_t after the final norm. Head k (0-based) predicts the token at t + k + 2.
Initialisation as upstream: ResBlock weight zero, projection = the target's LM head (its tied embedding).

Loss: forward KL(p_target(. | x_<=t+k+1) || q_k(. | h_t)) per head, weighted 0.8^(k+1) (the Medusa paper's
lambda_k), where the teacher is the target's softmax at the future position t + k + 1 (lm_head(h_{t+k+1}), from the
cached features). KL on the full teacher distribution rather than CE on sampled tokens: it is exact (no sampling
noise), carries the target's whole ranking, which the tree (top-k per head) and typical acceptance use, and on the
generated chunks its argmax is exactly the greedy token the engine verifies against.
"""
import argparse
import os
import sys

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import tool_errors  # noqa: E402

tool_errors.require_torch()
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from heads import MedusaHeads  # noqa: E402
from heads_data import Cache, check_cache  # noqa: E402
from heads_loop import add_common_args, train_loop  # noqa: E402
from model import load_safetensors_model  # noqa: E402

torch.set_num_threads(int(os.environ.get("HEADS_THREADS", "1")))


def head_losses(heads, E, h, weights=None):
    """h [B, T, d] -> (weighted loss, per-head KL list, per-head top-1 agreement with the target's greedy token)."""
    T = h.shape[1]
    tlogp = F.log_softmax(F.linear(h, E).float(), -1)
    K = heads.num_heads
    total, kls, accs = 0.0, [], []
    for k in range(K):
        q = F.log_softmax(heads.heads[k](h[:, :T - k - 1]).float(), -1)
        p = tlogp[:, k + 1:]
        kl = (p.exp() * (p - q)).sum(-1).mean()
        total = total + (weights[k] if weights else 1.0) * kl
        kls.append(kl)
        accs.append((q.argmax(-1) == p.argmax(-1)).float().mean())
    return total, kls, accs


def main():
    ap = argparse.ArgumentParser()
    add_common_args(ap, HERE, minutes=50, lr=1e-3, batch=8)
    ap.add_argument("--out", default=os.path.join(HERE, "runs", "medusa"))
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--decay", type=float, default=0.8, help="loss weight decay^(k+1) for head k")
    args = ap.parse_args()
    target = load_safetensors_model(args.target, torch.float32)
    E = target.model.embed_tokens.weight.detach()
    c = target.config
    if not args.export:
        check_cache(args.cache, args.target, c)
    if args.export:
        tool_errors.refuse_model_folder(args.export, "Medusa heads")
        ck = torch.load(os.path.join(args.out, "ckpt.pt"))
        # The heads as they were trained (--heads, --layers of the training run), whatever this command line says.
        trained = ck.get("args", {})
        args.heads, args.layers = trained.get("heads", args.heads), trained.get("layers", args.layers)
    heads = MedusaHeads(c.hidden_size, c.vocab_size, args.heads, args.layers)
    heads.init_from_lm_head(E)
    if args.export:
        heads.load_state_dict(ck["model"])
        heads.save(args.export, base_model="austen-target")
        print(f"exported step {ck['step']} ({ck['elapsed'] / 60:.1f} min) -> {args.export}: "
              f"{sum(p.numel() for p in heads.parameters())} params; val {ck.get('val')}")
        return
    print(f"medusa: {args.heads} heads x {args.layers} ResBlock + projection, "
          f"{sum(p.numel() for p in heads.parameters())} params", flush=True)
    data = Cache(args.cache, ["real", "gen"])
    val = Cache(args.cache, ["val"])
    weights = [args.decay ** (k + 1) for k in range(args.heads)]

    def loss_fn(b):
        loss, kls, accs = head_losses(heads, E, b["last"], weights)
        logs = {f"kl{k}": x.item() for k, x in enumerate(kls)}
        logs.update({f"acc{k}": x.item() for k, x in enumerate(accs)})
        return loss, logs

    @torch.no_grad()
    def val_fn():
        heads.eval()
        n = min(val.n, 48)
        sums = None
        for s in range(0, n, 8):
            _, kls, accs = head_losses(heads, E, val.batch(range(s, min(n, s + 8)))["last"])
            vals = [x.item() for x in kls + accs]
            sums = vals if sums is None else [a + b for a, b in zip(sums, vals)]
        cnt = len(range(0, n, 8))
        K = args.heads
        return {**{f"val_kl{k}": sums[k] / cnt for k in range(K)}, **{f"val_acc{k}": sums[K + k] / cnt for k in range(K)}}

    train_loop(args, heads, list(heads.parameters()), loss_fn, val_fn, data, args.out)


if __name__ == "__main__":
    tool_errors.run(main)
