#!/usr/bin/env python3
"""Medusa-1 heads for the frozen bundled target, by self-distillation on the target's own outputs.

  /usr/bin/python3 tools/heads_data.py                                   # once: cache the target's features
  /usr/bin/python3 tools/train_medusa.py --minutes 50 --out tools/runs/medusa      # resumable (--resume)
  /usr/bin/python3 tools/train_medusa.py --out tools/runs/medusa --export public/models/austen-medusa
  /usr/bin/python3 tools/train_medusa.py --init public/models/austen-medusa --out tools/runs/medusa2  # more, from them

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
from heads_loop import add_common_args, refuse_init_on_resume, refuse_other_target, train_loop  # noqa: E402
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


def load_init(folder, c, args):
    """Exported heads to start from, refused in one line when they cannot be this run's starting point."""
    for name in ("config.json", "medusa_lm_head.safetensors"):
        if not os.path.exists(os.path.join(folder, name)):
            tool_errors.fail(f"{folder} holds no Medusa heads: {name} is missing")
    init = MedusaHeads.load(folder)
    refuse_other_target(folder, init.hidden_size, init.vocab_size, c)
    if init.num_heads != args.heads:
        tool_errors.fail(f"{folder} has {init.num_heads} heads: train it with --heads {init.num_heads}")
    if init.num_layers > args.layers:
        tool_errors.fail(f"{folder} has {init.num_layers} ResBlocks a head: train it with --layers {init.num_layers} "
                         f"or more")
    return init


@torch.no_grad()
def grow_into(heads, init):
    """Copy `init` into `heads`; ResBlocks `heads` has beyond init's are the identity (weight and bias zero), so the
    run starts from exactly init's predictions."""
    L = init.num_layers
    for k in range(heads.num_heads):
        for j in range(L):
            heads.heads[k][j].load_state_dict(init.heads[k][j].state_dict())
        for j in range(L, heads.num_layers):
            heads.heads[k][j].linear.weight.zero_()
            heads.heads[k][j].linear.bias.zero_()
        heads.heads[k][-1].weight.copy_(init.heads[k][-1].weight)


def main():
    ap = argparse.ArgumentParser()
    add_common_args(ap, HERE, minutes=50, lr=1e-3, batch=8)
    ap.add_argument("--out", default=os.path.join(HERE, "runs", "medusa"))
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--decay", type=float, default=0.8, help="loss weight decay^(k+1) for head k")
    ap.add_argument("--init", default=None,
                    help="start from exported Medusa heads (a folder such as public/models/austen-medusa); with a "
                         "larger --layers, the new ResBlocks start as the identity")
    args = ap.parse_args()
    target = load_safetensors_model(args.target, torch.float32)
    E = target.model.embed_tokens.weight.detach()
    c = target.config
    if not args.export:
        check_cache(args.cache, args.target, c)
    init = None
    if args.init and not args.export:
        refuse_init_on_resume(args)
        init = load_init(args.init, c, args)
    if args.export:
        tool_errors.refuse_model_folder(args.export, "Medusa heads")
        ck = torch.load(os.path.join(args.out, "ckpt.pt"))
        # The heads as they were trained (--heads, --layers of the training run), whatever this command line says.
        trained = ck.get("args", {})
        args.heads, args.layers = trained.get("heads", args.heads), trained.get("layers", args.layers)
    heads = MedusaHeads(c.hidden_size, c.vocab_size, args.heads, args.layers)
    heads.init_from_lm_head(E)
    if init is not None:
        grow_into(heads, init)
        print(f"starting from {args.init} ({init.num_layers} ResBlock(s) a head"
              + (f", {args.layers - init.num_layers} more as the identity)" if args.layers > init.num_layers else ")"),
              flush=True)
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

    if init is not None:
        v = val_fn()
        print("start: " + " ".join(f"{k} {x:.4f}" for k, x in v.items()), flush=True)
    train_loop(args, heads, list(heads.parameters()), loss_fn, val_fn, data, args.out,
               extra_state={"init": args.init} if init is not None else None)


if __name__ == "__main__":
    tool_errors.run(main)
