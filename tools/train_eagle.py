#!/usr/bin/env python3
"""EAGLE heads for the frozen bundled target (both recipes of SafeAILab/EAGLE), on cached target features.

  /usr/bin/python3 tools/heads_data.py                                   # once: cache the target's features
  /usr/bin/python3 tools/train_eagle.py --gen 3 --minutes 75 --out tools/runs/eagle3     # resumable (--resume)
  /usr/bin/python3 tools/train_eagle.py --gen 1 --minutes 35 --out tools/runs/eagle1
  /usr/bin/python3 tools/train_eagle.py --gen 3 --out tools/runs/eagle3 --export public/models/austen-eagle3

--gen 1 (EAGLE-1/2 head, eagle/model/cnets1.py + eagle/train/main.py): input feature = the target's last hidden
  state after the final norm, plus uniform noise (+-0.2); out = layer(fc([embed(x_{t+1}), f_t])) regresses f_{t+1}.
  loss = SmoothL1(out, f_{t+1}) + 0.1 * CE(softmax(lm_head(f_{t+1})), lm_head(out)): feature + token losses,
  one step, teacher-forced, as upstream.
--gen 3 (EAGLE-3 head, eagle/traineagle3/cnets.py): input = fc([low, mid, high]) (inputs of target layers 2, 6, 9);
  no feature loss; training-time test over --ttt-steps steps: step i feeds the head its own output of step i-1 and
  attends to the real context plus its own chain (forward_unrolled in tools/heads.py), target = the target's
  softmax restricted to the draft vocabulary at the position being drafted; loss = sum_i 0.8^i CE_i, positions
  whose target argmax is outside the draft vocabulary masked, as upstream. The draft vocabulary is the
  --draft-vocab most frequent target-greedy tokens over the training chunks (upstream counts its data's tokens).

Teacher everywhere = the frozen target on the training text and on its own greedy continuations (heads_data.py).
"""
import argparse
import os
import sys

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import tool_errors  # noqa: E402

tool_errors.require_torch()
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from heads import Eagle1, Eagle3, load_eagle, save_eagle, unrolled  # noqa: E402
from heads_data import Cache, check_cache  # noqa: E402
from heads_loop import add_common_args, refuse_init_on_resume, refuse_other_target, train_loop  # noqa: E402
from model import load_safetensors_model  # noqa: E402

torch.set_num_threads(int(os.environ.get("HEADS_THREADS", "1")))


def draft_vocab(cache_dir, n):
    """The n most frequent target-greedy tokens over the training chunks, and their coverage."""
    counts = np.zeros(4096 * 16, dtype=np.int64)
    for split in ("real", "gen"):
        a = np.load(os.path.join(cache_dir, f"{split}_argmax.npy"), mmap_mode="r")
        counts += np.bincount(np.asarray(a, dtype=np.int64).ravel(), minlength=len(counts))
    order = np.argsort(-counts, kind="stable")[:n]
    return np.sort(order), counts[order].sum() / counts.sum()


def unrolled_batch(head, E, b, steps, noise=0.0):
    """unrolled() over a training batch: rows t = 0 .. T - steps - 2. Returns (outs, R)."""
    feat = b["aux"] if head.generation == 3 else b["last"]
    R = b["tokens"].shape[1] - steps - 1
    return unrolled(head, E, b["tokens"], feat, steps, R, noise), R


def init_linear(m):
    for mod in m.modules():
        if isinstance(mod, nn.Linear):
            nn.init.normal_(mod.weight, std=0.02)
            if mod.bias is not None:
                nn.init.zeros_(mod.bias)


def main():
    ap = argparse.ArgumentParser()
    add_common_args(ap, HERE, minutes=60, lr=1e-3, batch=4)
    ap.add_argument("--gen", type=int, choices=[1, 3], required=True)
    ap.add_argument("--out", default=None)
    ap.add_argument("--ttt-steps", type=int, default=6, help="EAGLE-3 training-time-test steps")
    ap.add_argument("--val-steps", type=int, default=6)
    ap.add_argument("--decay", type=float, default=0.8)
    ap.add_argument("--draft-vocab", type=int, default=2048, help="EAGLE-3 draft vocabulary size")
    ap.add_argument("--noise", type=float, default=0.2, help="EAGLE-1: uniform feature noise half-width")
    ap.add_argument("--p-w", type=float, default=0.1, help="EAGLE-1: token-loss weight")
    ap.add_argument("--init", default=None,
                    help="start from an exported head of the same generation (a folder such as "
                         "public/models/austen-eagle3): its weights and, for EAGLE-3, its draft vocabulary")
    args = ap.parse_args()
    args.out = args.out or os.path.join(HERE, "runs", f"eagle{args.gen}")
    target = load_safetensors_model(args.target, torch.float32)
    for p in target.parameters():
        p.requires_grad_(False)
    E = target.model.embed_tokens.weight.detach()
    c = target.config
    if not args.export:
        check_cache(args.cache, args.target, c)
    torch.manual_seed(args.seed)
    extra = {}
    init = None
    if args.init and not args.export:
        refuse_init_on_resume(args)
        init = load_eagle(args.init)
        if init.generation != args.gen:
            tool_errors.fail(f"{args.init} holds an EAGLE-{init.generation} head: train it with --gen {init.generation}")
        refuse_other_target(args.init, init.config.hidden_size, init.config.vocab_size, c)
    if args.export:
        tool_errors.refuse_model_folder(args.export, f"an EAGLE-{args.gen} head")
        ck_path = os.path.join(args.out, "ckpt.pt")
        if not os.path.exists(ck_path):
            tool_errors.fail(f"no checkpoint to export: {ck_path} (train with the same --out first)")
        trained = torch.load(ck_path).get("args", {}).get("gen", args.gen)
        if trained != args.gen:
            tool_errors.fail(f"{ck_path} holds an EAGLE-{trained} head: export it with --gen {trained}")
    if args.gen == 1:
        head = Eagle1(c, bias=True)
        init_linear(head)
    else:
        ck_path = os.path.join(args.out, "ckpt.pt")
        if (args.resume or args.export) and os.path.exists(ck_path):
            used = torch.load(ck_path)["draft_ids"]
        elif init is not None:
            used = init.draft_to_target().tolist()
            print(f"draft vocabulary: {len(used)} tokens of {args.init}", flush=True)
        else:
            used, cov = draft_vocab(args.cache, args.draft_vocab)
            print(f"draft vocabulary: {len(used)} tokens cover {cov:.4%} of the target's greedy tokens", flush=True)
        head = Eagle3(c, len(used))
        init_linear(head)
        head.set_vocab(used)
        with torch.no_grad():
            head.lm_head.weight.copy_(E[head.draft_to_target()])
            head.norm.weight.copy_(target.model.norm.weight)
        extra["draft_ids"] = [int(i) for i in used]
    if init is not None:
        head.load_state_dict(init.state_dict())
        extra["init"] = args.init
        print(f"starting from {args.init}", flush=True)
    if args.export:
        ck = torch.load(os.path.join(args.out, "ckpt.pt"))
        head.load_state_dict(ck["model"])
        save_eagle(head, c, args.export)
        n = sum(p.numel() for p in head.parameters())
        print(f"exported EAGLE-{args.gen} step {ck['step']} ({ck['elapsed'] / 60:.1f} min) -> {args.export}: "
              f"{n} params; val {ck.get('val')}")
        return
    n = sum(p.numel() for p in head.parameters())
    print(f"EAGLE-{args.gen} head: {n} params", flush=True)
    need_aux = args.gen == 3
    data = Cache(args.cache, ["real", "gen"], need_aux=need_aux)
    val = Cache(args.cache, ["val"], need_aux=need_aux)
    if args.gen == 3:
        d2t_ids = head.draft_to_target()
        decay = [args.decay ** i for i in range(args.ttt_steps)]

    def targets(b, R, i):
        """Teacher log-probs over the target vocabulary at positions 1+i .. R+i (drafting x_{t+2+i})."""
        return F.log_softmax(F.linear(b["last"][:, 1 + i:1 + i + R], E).float(), -1)

    def loss_fn(b):
        logs = {}
        if args.gen == 1:
            outs, R = unrolled_batch(head, E, b, 1, noise=args.noise)
            out = outs[0]
            f_next = b["last"][:, 1:1 + R]
            vloss = F.smooth_l1_loss(out, f_next)
            tp = targets(b, R, 0).exp()
            logq = F.log_softmax(head.draft_logits(out, E), -1)
            ploss = -(tp * logq).sum(-1).mean()
            logs.update(vloss=vloss.item(), ploss=ploss.item(),
                        acc0=(logq.argmax(-1) == tp.argmax(-1)).float().mean().item())
            return vloss + args.p_w * ploss, logs
        outs, R = unrolled_batch(head, E, b, args.ttt_steps)
        total = 0.0
        with torch.no_grad():  # teacher over the draft vocabulary, once for all steps
            tl_all = F.linear(b["last"][:, 1:], E)
            mask_all = head.t2d[tl_all.argmax(-1)].float()
            tp_all = F.softmax(tl_all[..., d2t_ids].float(), -1)
            greedy_all = b["argmax"][:, 1:]
        for i, out in enumerate(outs):
            mask, tp = mask_all[:, i:i + R], tp_all[:, i:i + R]
            logq = F.log_softmax(head.draft_logits(out), -1)
            ce = -((tp * logq).sum(-1) * mask).sum() / mask.sum().clamp(min=1)
            total = total + decay[i] * ce
            logs[f"ce{i}"] = ce.item()
            if i in (0, 2, args.ttt_steps - 1):
                logs[f"acc{i}"] = (d2t_ids[logq.argmax(-1)] == greedy_all[:, i:i + R]).float().mean().item()
        return total, logs

    @torch.no_grad()
    def val_fn():
        """Per unroll step: top-1 agreement with the target's greedy token (teacher-forced tokens, own features)."""
        head.eval()
        n = min(val.n, 32)
        acc = np.zeros(args.val_steps)
        cnt = 0
        for s in range(0, n, 4):
            b = val.batch(range(s, min(n, s + 4)))
            outs, R = unrolled_batch(head, E, b, args.val_steps)
            for i, out in enumerate(outs):
                tgt = b["argmax"][:, 1 + i:1 + i + R]
                if args.gen == 1:
                    pred = head.draft_logits(out, E).argmax(-1)
                else:
                    pred = d2t_ids[head.draft_logits(out).argmax(-1)]
                acc[i] += (pred == tgt).float().mean().item()
            cnt += 1
        return {f"val_acc{i}": acc[i] / cnt for i in range(args.val_steps)}

    train_loop(args, head, [p for p in head.parameters() if p.requires_grad], loss_fn, val_fn, data, args.out, extra)


if __name__ == "__main__":
    tool_errors.run(main)
