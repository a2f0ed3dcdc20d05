"""Self-distillation of the draft model: fine-tune it on the target's own greedy continuations.

At inference the draft predicts what the target will write next, on text the target itself wrote (the prompt aside).
Distilled on book text alone (train.py --role draft), it matches the target on Austen's sentences, not on the
target's, which are narrower and repeat themselves ("I am sure I have been so much in the world"). Here the target
continues random windows of the training text, half of them greedily and half sampled (temperature 0.8, top-k 50);
the draft is fine-tuned on prefix + continuation with KL(target || draft) at every position, plus on a greedy
continuation 0.2 x cross-entropy, where the next token is the target's own greedy choice. (With 0.5 x
cross-entropy, greedy agreement rose more, 0.85, but a chain's acceptance at temperature 0.8 fell from 0.75 to 0.72;
with greedy continuations alone, to 0.70. With 0.2 it is 0.76.) The held-out prompts (tools/data/heldout_prompts.txt) are never trained on; they measure the
result: the draft's greedy agreement with the target along the target's own continuations (what a chain's
per-token acceptance is under greedy decoding), before and after.

  /usr/bin/python3 tools/self_distill.py --teacher public/models/austen-target --draft public/models/austen-draft \
      --out tools/runs/draft-sd --gen-minutes 5 --minutes 15
  /usr/bin/python3 tools/export.py --ckpt tools/runs/draft-sd/ckpt.pt --out public/models/austen-draft \
      --tokenizer public/models/austen-target
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import tool_errors  # noqa: E402

tool_errors.require_torch()
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from model import load_safetensors_model  # noqa: E402
from train import adamw, distill_kl, get_tokenizer, load_tokens, save_ckpt, set_lr, update  # noqa: E402


def pick(logits, temperature, top_k):
    """The next token: argmax (temperature 0), or a draw at that temperature from the top_k logits."""
    if temperature <= 0:
        return logits.argmax(-1, keepdim=True)
    v, i = logits.topk(top_k, -1)
    return i.gather(-1, torch.multinomial(F.softmax(v / temperature, -1), 1))


@torch.no_grad()
def greedy_continue(model, prefix, n, temperature=0.0, top_k=50):
    """prefix [B, L] -> [B, n] tokens (greedy, or sampled at temperature from the top_k), with the KV cache."""
    logits, past = model(prefix)
    out = []
    nxt = pick(logits[:, -1], temperature, top_k)
    for _ in range(n):
        out.append(nxt)
        logits, past = model(nxt, past=past)
        nxt = pick(logits[:, -1], temperature, top_k)
    return torch.cat(out, 1)


@torch.no_grad()
def agreement(teacher, draft, prompts, n):
    """Over the target's greedy continuation of each prompt: the share of positions where the draft's argmax (teacher
    forced on prompt + continuation so far) is the target's next token, and per prompt the mean run of agreeing
    tokens from each position (a chain's expected accepted length, uncapped)."""
    hits, total = 0, 0
    for ids in prompts:
        p = torch.tensor([ids])
        cont = greedy_continue(teacher, p, n)
        seq = torch.cat([p, cont], 1)
        logits, _ = draft(seq[:, :-1])
        guess = logits[0, len(ids) - 1:].argmax(-1)
        ok = guess == seq[0, len(ids):]
        hits += int(ok.sum())
        total += ok.numel()
    return hits / total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--teacher", required=True, help="exported target folder")
    ap.add_argument("--draft", required=True, help="exported draft folder to start from")
    ap.add_argument("--out", required=True)
    ap.add_argument("--train", default=os.path.join(HERE, "data", "austen_train.txt"))
    ap.add_argument("--heldout", default=os.path.join(HERE, "data", "heldout_prompts.txt"))
    ap.add_argument("--gen-minutes", type=float, default=5, help="time spent generating continuations")
    ap.add_argument("--minutes", type=float, default=15, help="time spent fine-tuning")
    ap.add_argument("--gen-batch", type=int, default=32)
    ap.add_argument("--continue-tokens", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--ce-weight", type=float, default=0.2,
                    help="loss = KL + w * CE on a greedy continuation (the target's argmax); KL alone on a sampled one")
    ap.add_argument("--sampled-share", type=float, default=0.5,
                    help="share of continuations sampled (temperature 0.8, top-k 50) instead of greedy, so that "
                         "sampled decoding's contexts are trained on too")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    # Checked before minutes of generating: each fine-tuning batch draws --batch rows from one generated batch.
    if args.gen_batch < args.batch:
        tool_errors.fail(f"--gen-batch {args.gen_batch} must be at least --batch {args.batch}")
    if not args.gen_minutes > 0 or not args.minutes > 0:
        tool_errors.fail("--gen-minutes and --minutes must be more than 0")
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    tok = get_tokenizer(args.teacher)
    train = load_tokens(args.train, tok, "train_tokens.npy")
    teacher = load_safetensors_model(args.teacher)
    for p in teacher.parameters():
        p.requires_grad_(False)
    draft = load_safetensors_model(args.draft)
    heldout = [tok.encode(line.rstrip("\n")) for line in open(args.heldout, encoding="utf-8") if line.strip()]
    n = args.continue_tokens
    before = agreement(teacher, draft, heldout, n)
    print(f"held-out greedy agreement before: {before:.4f} ({len(heldout)} prompts x {n} tokens)", flush=True)

    # Generate: windows of the training text (16-160 tokens, one length per batch) continued greedily by the target.
    pool = []
    t0 = time.time()
    while time.time() - t0 < args.gen_minutes * 60:
        L = int(rng.integers(16, 161))
        ix = rng.integers(0, len(train) - L - 1, size=args.gen_batch)
        prefix = torch.from_numpy(np.stack([train[i:i + L] for i in ix]).astype(np.int64))
        sampled = bool(rng.random() < args.sampled_share)
        cont = greedy_continue(teacher, prefix, n, 0.8 if sampled else 0.0)
        pool.append((L, torch.cat([prefix, cont], 1), sampled))
    generated = sum(s.shape[0] for _, s, _ in pool) * n
    pool_tokens = sum(s.numel() for _, s, _ in pool)
    print(f"generated {len(pool)} batches ({sum(x for _, _, x in pool)} sampled), {generated} target tokens in "
          f"{(time.time() - t0) / 60:.1f} min", flush=True)

    draft.train()
    opt = adamw(draft, args.lr, 0.1)
    t0 = time.time()
    step, seen = 0, 0
    while True:
        prog = (time.time() - t0) / (args.minutes * 60)
        if prog >= 1:
            break
        lr = set_lr(opt, args.lr, step, args.warmup, prog, 0.1)
        L, seqs, sampled = pool[int(rng.integers(len(pool)))]
        rows = torch.from_numpy(rng.choice(seqs.shape[0], size=args.batch, replace=False))
        s = seqs[rows]
        x, y = s[:, :-1], s[:, 1:]
        logits, _ = draft(x)
        with torch.no_grad():
            tl, _ = teacher(x)
        kl = distill_kl(logits, tl)
        c = logits[:, L - 1:]
        ce = F.cross_entropy(c.reshape(-1, c.shape[-1]), y[:, L - 1:].reshape(-1))
        loss = kl if sampled else kl + args.ce_weight * ce
        update(draft, opt, loss)
        step += 1
        seen += x.numel()
        if step % 50 == 0:
            print(f"step {step} kl {kl.item():.4f} ce {ce.item():.4f} lr {lr:.2e} "
                  f"passes over the pool {seen / pool_tokens:.2f} "
                  f"elapsed {(time.time() - t0) / 60:.1f}m", flush=True)
    draft.eval()
    after = agreement(teacher, draft, heldout, n)
    print(f"held-out greedy agreement after: {after:.4f} (before {before:.4f}); {step} steps in "
          f"{(time.time() - t0) / 60:.1f} min", flush=True)
    save_ckpt(os.path.join(args.out, "ckpt.pt"), draft, opt, step, time.time() - t0, args,
              {"agreement_before": before, "agreement_after": after})


if __name__ == "__main__":
    tool_errors.run(main)
