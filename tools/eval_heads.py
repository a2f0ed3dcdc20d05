#!/usr/bin/env python3
"""Held-out acceptance of the draft heads and of the 1-layer draft model, measured the way the engine uses them.

  /usr/bin/python3 tools/eval_heads.py [--medusa public/models/austen-medusa] [--eagle public/models/austen-eagle3]
                                       [--eagle tools/runs/eagle1-export] [--new-tokens 64]

For every prompt (tools/data/heldout_prompts.txt: 40 prompts from the held-out Persuasion chapters 21-24; and
bench/prompts.json: the benchmark's 24 prompts) the target (exported F16 weights in fp32) decodes --new-tokens
greedily. Speculative decoding is then replayed on that fixed greedy text, round by round, as the engine runs it:
the prefill gives the first token; each round the drafter proposes a tree under the root (the last committed
token, whose target feature is not known yet); the target's greedy token walks down the tree; accepted drafts + 1
bonus token are committed (capped at --new-tokens). Because the continuation is the target's greedy output, the
target's features for every committed prefix are rows of one teacher-forced forward over the whole text.

  acceptance by depth d = rounds whose accepted path reached depth d-1 at a node with children AND continued /
  rounds that reached it (src/engine/stats.ts); tau = committed tokens / rounds (target verify calls).

Drafters (depth d of a round = the token d places after the root):
  medusa chain:   head d-1's top-1 at the last committed feature (4 heads = depth 4);
  medusa tree:    a static Medusa choice tree of --tree-nodes nodes, chosen greedily from per-head top-k accuracies
                  measured on the TRAINING cache's generated chunks (Medusa's accuracy-driven sparse tree);
  eagle chain:    autoregressive drafting from the target's features, top-1 at each step, --chain steps;
  eagle dynamic:  EAGLE-2 dynamic tree, the engine's defaults (depth 6, expand 4 x branch 4, keep 24 nodes, best
                  first by cumulative draft log-prob);
  draft chain / draft dynamic: the same for the 1-layer draft model (the engine's `chain` / `dynamic`).
Also: top-k coverage per depth (the target's greedy token is among the drafter's top k at that depth, over all
positions of the greedy continuations, earlier depths teacher-forced) and teacher-forced top-1 agreement on the
held-out text itself. Writes tools/runs/eval_heads.json.
"""
import argparse
import heapq
import json
import os
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import tool_errors  # noqa: E402

tool_errors.require_torch()
import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bpe import Tokenizer  # noqa: E402
from heads import NEG, MedusaHeads, causal_bias, eagle3_layer_ids, load_eagle, unrolled  # noqa: E402
from model import load_safetensors_model  # noqa: E402

torch.set_num_threads(int(os.environ.get("EVAL_THREADS", "1")))
DYN = {"depth": 6, "expand": 4, "branch": 4, "budget": 24}  # src/engine/drafters/dynamic-tree.ts DYNAMIC_DEFAULTS
EOS = 0
TOPK = (1, 2, 3, 5, 10)


# ------------------------------------------------------------------------------------------------ target runs

class Run:
    """One prompt: the target's greedy continuation and its features at every position."""

    @torch.no_grad()
    def __init__(self, target, ids, n_new):
        logits, past = target(torch.tensor([ids]))
        out = [int(logits[0, -1].argmax())]
        while len(out) < n_new and out[-1] != EOS:
            logits, past = target(torch.tensor([[out[-1]]]), past=past)
            out.append(int(logits[0, -1].argmax()))
        self.n_prompt = len(ids)
        self.tokens = list(ids) + out
        x = torch.tensor([self.tokens])
        logits, _, hid = target(x, return_hidden=True)
        self.last = hid["last"][0]
        self.aux = torch.cat([hid["states"][i] for i in eagle3_layer_ids(target.config.num_hidden_layers)], -1)[0]
        tf = logits[0].argmax(-1)
        # teacher-forced argmax vs incremental greedy (differ only on float near-ties)
        self.tf_mismatch = int((tf[self.n_prompt - 1:-1] != x[0, self.n_prompt:]).sum())


# ------------------------------------------------------------------------------------------------ drafters

class MedusaDrafter:
    def __init__(self, heads, choices=None):
        self.heads, self.choices = heads, choices
        self.name = "medusa chain" if choices is None else f"medusa tree ({len(choices)} nodes)"

    def prepare(self, run):
        with torch.no_grad():
            self.top = self.heads(run.last).topk(10, -1).indices  # [K, S, 10]

    def propose(self, run, L):
        t = L - 2  # the root x_{L-1} came from the LM head at t; head k predicts x_{t+k+2}
        if self.choices is None:
            return [run.tokens[L - 1]] + [int(self.top[k, t, 0]) for k in range(self.heads.num_heads)], \
                [-1] + list(range(self.heads.num_heads))
        tokens, parents, index = [run.tokens[L - 1]], [-1], {(): 0}
        for path in self.choices:
            index[path] = len(tokens)
            tokens.append(int(self.top[len(path) - 1, t, path[-1]]))
            parents.append(index[path[:-1]])
        return tokens, parents


class EagleChain:
    def __init__(self, head, E, steps):
        self.head, self.E, self.steps = head, E, steps
        self.name = f"eagle{head.generation} chain ({steps})"

    def prepare(self, run):
        S = len(run.tokens)
        feat = run.aux if self.head.generation == 3 else run.last
        toks = torch.tensor([run.tokens + [EOS] * (self.steps + 1)])
        with torch.no_grad():
            outs = unrolled(self.head, self.E, toks, feat[None], self.steps, R=S - 1)
            self.pred = torch.stack([eagle_argmax(self.head, self.E, o[0]) for o in outs], 1)  # [S-1, steps]

    def propose(self, run, L):
        return [run.tokens[L - 1]] + self.pred[L - 2].tolist(), [-1] + list(range(self.steps))


def eagle_logp(head, E, out):
    """Log-probs over the TARGET vocabulary (-inf outside an EAGLE-3 draft vocabulary)."""
    if head.generation == 3:
        return F.log_softmax(head.target_logits(out), -1)
    return F.log_softmax(head.draft_logits(out, E), -1)


def eagle_argmax(head, E, out):
    return eagle_logp(head, E, out).argmax(-1)


class DraftChain:
    def __init__(self, draft, steps):
        self.draft, self.steps = draft, steps
        self.name = f"draft chain ({steps})"

    def prepare(self, run):
        with torch.no_grad():
            self.pred = self.draft(torch.tensor([run.tokens]))[0][0].argmax(-1).tolist()

    def propose(self, run, L):
        # teacher-forced draft argmax = its own chain for as long as the chain matches (all a round can accept)
        toks = [self.pred[L - 1 + i] if L - 1 + i < len(self.pred) else EOS for i in range(self.steps)]
        return [run.tokens[L - 1]] + toks, [-1] + list(range(self.steps))


def dyn_label(opts):
    if {k: opts[k] for k in DYN} == DYN and opts.get("temp", 1.0) == 1.0:
        return f"{opts['budget']} nodes"
    t = f", score T={opts['temp']:g}" if opts.get("temp", 1.0) != 1.0 else ""
    return f"depth {opts['depth']}, {opts['expand']}x{opts['branch']}, {opts['budget']} nodes{t}"


def dynamic_tree(root_token, root_logp, expand_fn, depth, expand, branch, budget, temp=1.0):
    """The engine's dynamic tree (src/engine/drafters/dynamic-tree.ts): grow `depth` levels, expanding the `expand`
    best frontier nodes by cumulative log-prob with their `branch` best children; keep `budget` nodes best-first."""
    cands = [{"token": root_token, "parent": -1, "depth": 0, "score": 0.0}]

    def grow(node, logp):
        if temp != 1.0:
            logp = F.log_softmax(logp / temp, -1)
        v, i = logp.topk(branch)
        for lp, tok in zip(v.tolist(), i.tolist()):
            cands.append({"token": tok, "parent": node, "depth": cands[node]["depth"] + 1,
                          "score": cands[node]["score"] + lp})

    grow(0, root_logp)
    for d in range(1, depth):
        frontier = sorted([i for i, c in enumerate(cands) if c["depth"] == d and c["token"] != EOS],
                          key=lambda i: -cands[i]["score"])[:expand]
        if not frontier:
            break
        paths = []
        for n in frontier:
            p = []
            while n > 0:
                p.append(n)
                n = cands[n]["parent"]
            paths.append(p[::-1])
        for n, lp in zip(frontier, expand_fn(cands, paths)):
            grow(n, lp)
    kids = {}
    for i, c in enumerate(cands[1:], 1):
        kids.setdefault(c["parent"], []).append(i)
    chosen, open_ = [], list(kids.get(0, []))
    while len(chosen) < budget and open_:
        b = max(range(len(open_)), key=lambda j: cands[open_[j]]["score"])
        n = open_.pop(b)
        chosen.append(n)
        open_.extend(kids.get(n, []))
    chosen.sort(key=lambda n: (cands[n]["depth"], -cands[n]["score"]))
    index = {0: 0}
    for i, n in enumerate(chosen):
        index[n] = i + 1
    return [root_token] + [cands[n]["token"] for n in chosen], [-1] + [index[cands[n]["parent"]] for n in chosen]


class EagleDynamic:
    def __init__(self, head, E, opts=DYN):
        self.head, self.E, self.opts = head, E, opts
        self.name = f"eagle{head.generation} dynamic ({dyn_label(opts)})"

    def prepare(self, run):
        S = len(run.tokens)
        feat = (run.aux if self.head.generation == 3 else run.last)[None, :S - 1]
        emb = F.embedding(torch.tensor([run.tokens[1:]]), self.E)
        with torch.no_grad():
            self.out, self.kv = self.head.step(feat, emb, torch.arange(S - 1)[None], causal_bias(S - 1))

    @torch.no_grad()
    def propose(self, run, L):
        P = L - 1  # real pairs (f_j, x_{j+1}), j = 0 .. L-2
        past = (self.kv[0][:, :, :P], self.kv[1][:, :, :P])
        out_root = self.out[0, L - 2]
        outs = {0: out_root}

        def expand_fn(cands, paths):
            d = len(paths[0])
            hid = torch.stack([torch.stack([outs[cands[n]["parent"]] for n in p]) for p in paths])
            emb = F.embedding(torch.tensor([[cands[n]["token"] for n in p] for p in paths]), self.E)
            pos = (P + torch.arange(d))[None].expand(len(paths), d)
            bias = causal_bias(d, P)
            pk = tuple(x.expand(len(paths), -1, -1, -1) for x in past)
            o, _ = self.head.step(hid, emb, pos, bias, past=pk)
            for i, p in enumerate(paths):
                outs[p[-1]] = o[i, -1]
            return [eagle_logp(self.head, self.E, o[i, -1]) for i in range(len(paths))]

        return dynamic_tree(run.tokens[L - 1], eagle_logp(self.head, self.E, out_root), expand_fn, **self.opts)


class DraftDynamic:
    def __init__(self, draft, opts=DYN):
        self.draft, self.opts = draft, opts
        self.name = f"draft dynamic ({dyn_label(opts)})"

    def prepare(self, run):
        with torch.no_grad():
            self.logits, self.past = self.draft(torch.tensor([run.tokens]))

    @torch.no_grad()
    def propose(self, run, L):
        past = [(k[:, :, :L], v[:, :, :L]) for k, v in self.past]

        def expand_fn(cands, paths):
            d = len(paths[0])
            x = torch.tensor([[cands[n]["token"] for n in p] for p in paths])
            pos = (L + torch.arange(d))[None].expand(len(paths), d)
            pk = [(k.expand(len(paths), -1, -1, -1), v.expand(len(paths), -1, -1, -1)) for k, v in past]
            lg, _ = self.draft(x, pos, causal_bias(d, L), pk)
            return [F.log_softmax(lg[i, -1], -1) for i in range(len(paths))]

        return dynamic_tree(run.tokens[L - 1], F.log_softmax(self.logits[0, L - 1], -1), expand_fn, **self.opts)


# ------------------------------------------------------------------------------------------------ replay

class Stats:
    def __init__(self):
        self.offered, self.accepted = [0] * 16, [0] * 16
        self.rounds = self.tokens = self.nodes = 0

    def add(self, other):
        for i in range(16):
            self.offered[i] += other.offered[i]
            self.accepted[i] += other.accepted[i]
        self.rounds += other.rounds
        self.tokens += other.tokens
        self.nodes += other.nodes

    def summary(self):
        n = max(i + 1 for i in range(16) if self.offered[i] > 0) if any(self.offered) else 0
        return {"tau": round(self.tokens / max(1, self.rounds), 3),
                "acceptance_by_depth": [round(self.accepted[i] / self.offered[i], 3) for i in range(n)],
                "offered": self.offered[:n], "accepted": self.accepted[:n], "rounds": self.rounds,
                "tokens": self.tokens, "mean_tree_nodes": round(self.nodes / max(1, self.rounds), 2)}


def replay(run, drafter):
    st = Stats()
    S = len(run.tokens)
    L = run.n_prompt + 1
    drafter.prepare(run)
    while L < S:
        tokens, parents = drafter.propose(run, L)
        kids = {}
        for i, p in enumerate(parents):
            if p >= 0:
                kids.setdefault(p, []).append(i)
        path, node = [0], 0
        while L + len(path) - 1 < S:
            want = run.tokens[L + len(path) - 1]
            nxt = [c for c in kids.get(node, []) if tokens[c] == want]
            if not nxt:
                break
            node = nxt[0]
            path.append(node)
        for depth, n in enumerate(path):
            if n in kids:
                st.offered[depth] += 1
                if depth + 1 < len(path):
                    st.accepted[depth] += 1
        produced = min(len(path), S - L)
        st.rounds += 1
        st.tokens += produced
        st.nodes += len(tokens)
        L += produced
    return st


# ------------------------------------------------------------------------------------------------ coverage

@torch.no_grad()
def coverage_medusa(heads, runs):
    hit = np.zeros((heads.num_heads, len(TOPK)))
    cnt = np.zeros(heads.num_heads)
    for r in runs:
        top = heads(r.last).topk(max(TOPK), -1).indices
        S = len(r.tokens)
        for k in range(heads.num_heads):
            for t in range(r.n_prompt - 1, S - k - 2):
                want = r.tokens[t + k + 2]
                row = top[k, t].tolist()
                for j, kk in enumerate(TOPK):
                    hit[k, j] += want in row[:kk]
                cnt[k] += 1
    return (hit / cnt[:, None]).round(4).tolist()


@torch.no_grad()
def coverage_eagle(head, E, runs, steps):
    hit = np.zeros((steps, len(TOPK)))
    cnt = np.zeros(steps)
    for r in runs:
        S = len(r.tokens)
        feat = r.aux if head.generation == 3 else r.last
        toks = torch.tensor([r.tokens + [EOS] * (steps + 1)])
        outs = unrolled(head, E, toks, feat[None], steps, R=S - 1)
        for i, o in enumerate(outs):
            top = eagle_logp(head, E, o[0]).topk(max(TOPK), -1).indices
            for t in range(r.n_prompt - 1, S - i - 2):
                row = top[t].tolist()
                want = r.tokens[t + i + 2]
                for j, kk in enumerate(TOPK):
                    hit[i, j] += want in row[:kk]
                cnt[i] += 1
    return (hit / cnt[:, None]).round(4).tolist()


@torch.no_grad()
def coverage_draft(draft, runs, steps):
    hit = np.zeros((steps, len(TOPK)))
    cnt = np.zeros(steps)
    for r in runs:
        S = len(r.tokens)
        top = draft(torch.tensor([r.tokens]))[0][0].topk(max(TOPK), -1).indices
        for i in range(steps):  # depth i+1 teacher-forced: the draft at position t+i+1 (x_{t+i+2})
            for t in range(r.n_prompt - 1, S - i - 2):
                row = top[t + i + 1].tolist()
                want = r.tokens[t + i + 2]
                for j, kk in enumerate(TOPK):
                    hit[i, j] += want in row[:kk]
                cnt[i] += 1
    return (hit / cnt[:, None]).round(4).tolist()


# ------------------------------------------------------------------------------------------------ medusa tree

@torch.no_grad()
def medusa_rank_accuracy(heads, cache_dir, n_chunks=256, ranks=10):
    """a[k][r] = P(the target's greedy token at t + k + 2 is head k's rank-r token), over generated TRAINING chunks
    (the target's own greedy text, never the held-out text)."""
    from heads_data import Cache
    c = Cache(cache_dir, ["gen"])
    acc = np.zeros((heads.num_heads, ranks))
    cnt = np.zeros((heads.num_heads, 1))
    for s in range(0, min(n_chunks, c.n), 8):
        b = c.batch(range(s, min(c.n, s + 8)))
        T = b["tokens"].shape[1]
        for k in range(heads.num_heads):
            top = heads.heads[k](b["last"][:, :T - k - 1]).topk(ranks, -1).indices
            want = b["argmax"][:, k + 1:]  # greedy token at t+k+2 = target argmax at t+k+1
            acc[k] += (top == want[..., None]).float().sum((0, 1)).numpy()
            cnt[k] += want.numel()
    return acc / cnt


def medusa_choices(acc, n_nodes):
    """Medusa's sparse tree: the n_nodes rank paths with the largest product of per-depth rank accuracies
    (prefix-closed since the product shrinks along a path), sorted by depth then rank path."""
    K, R = acc.shape
    heap = [(-acc[0, r], (r,)) for r in range(R)]
    heapq.heapify(heap)
    chosen = []
    while heap and len(chosen) < n_nodes:
        v, path = heapq.heappop(heap)
        chosen.append(path)
        if len(path) < K:
            for r in range(R):
                heapq.heappush(heap, (v * acc[len(path), r], path + (r,)))
    return sorted(chosen, key=lambda p: (len(p), p))


# ------------------------------------------------------------------------------------------------ main

_checked_caches = set()


def check_feature_cache(cache_dir, target_dir, config):
    """heads_data.check_cache, imported where the cache is read (as the readers here import heads_data); once per
    cache and target (it hashes the target's weights)."""
    if (cache_dir, target_dir) in _checked_caches:
        return
    from heads_data import check_cache
    check_cache(cache_dir, target_dir, config)
    _checked_caches.add((cache_dir, target_dir))


@torch.no_grad()
def heldout_teacher_forced(target, medusa, eagles, draft, cache_dir, n_chunks, steps):
    """Top-1 agreement with the target's argmax on the held-out text itself (real tokens, 256-token chunks)."""
    from heads_data import Cache
    c = Cache(cache_dir, ["val"], need_aux=True)
    E = target.model.embed_tokens.weight
    res = {}
    n = min(c.n, n_chunks)
    b = c.batch(range(n))
    T = b["tokens"].shape[1]
    if medusa is not None:
        res["medusa"] = [round((medusa.heads[k](b["last"][:, :T - k - 1]).argmax(-1) == b["argmax"][:, k + 1:])
                               .float().mean().item(), 4) for k in range(medusa.num_heads)]
    for name, head in eagles.items():
        feat = b["aux"] if head.generation == 3 else b["last"]
        outs = unrolled(head, E, b["tokens"], feat, steps)
        R = T - steps - 1
        res[name] = [round((eagle_argmax(head, E, o) == b["argmax"][:, 1 + i:1 + i + R]).float().mean().item(), 4)
                     for i, o in enumerate(outs)]
    dl = draft(b["tokens"])[0]
    res["draft"] = round((dl.argmax(-1) == b["argmax"]).float().mean().item(), 4)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default=os.path.join(ROOT, "public", "models", "austen-target"))
    ap.add_argument("--draft", default=os.path.join(ROOT, "public", "models", "austen-draft"))
    ap.add_argument("--medusa", default=os.path.join(ROOT, "public", "models", "austen-medusa"))
    ap.add_argument("--eagle", action="append", default=None, help="EAGLE head folder(s) (repeatable)")
    ap.add_argument("--cache", default=os.path.join(HERE, "runs", "heads", "cache"))
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--chain", type=int, default=5)
    ap.add_argument("--tree-nodes", type=int, default=24)
    ap.add_argument("--max-prompts", type=int, default=0)
    ap.add_argument("--dyn", default=None, help="dynamic tree depth,expand,branch,budget (default 6,4,4,24)")
    ap.add_argument("--score-temp", type=float, default=1.0,
                    help="dynamic tree scores = log_softmax(logits / T) (greedy tree shaping; 1 = the engine's)")
    ap.add_argument("--only", default=None, help="comma-separated substrings: run only drafters whose name matches")
    ap.add_argument("--no-coverage", action="store_true")
    ap.add_argument("--sets", default="heldout40,bench24")
    ap.add_argument("--out", default=os.path.join(HERE, "runs", "eval_heads.json"))
    args = ap.parse_args()
    t0 = time.time()
    eagle_dirs = args.eagle or [d for d in (os.path.join(ROOT, "public", "models", n)
                                            for n in ("austen-eagle3", "austen-eagle")) if os.path.isdir(d)]
    tok = Tokenizer.from_file(args.target)
    target = load_safetensors_model(args.target)
    draft = load_safetensors_model(args.draft)
    E = target.model.embed_tokens.weight.detach()
    medusa = MedusaHeads.load(args.medusa) if args.medusa and os.path.isdir(args.medusa) else None
    eagles = {}
    for d in eagle_dirs:
        h = load_eagle(d)
        eagles[f"eagle{h.generation}:{os.path.basename(d.rstrip('/'))}"] = h
    dyn = dict(DYN)
    if args.dyn:
        dyn = dict(zip(("depth", "expand", "branch", "budget"), (int(x) for x in args.dyn.split(","))))
    dyn["temp"] = args.score_temp
    drafters = [DraftChain(draft, args.chain), DraftDynamic(draft, dyn)]
    res = {"new_tokens": args.new_tokens, "dynamic_tree": dyn, "chain": args.chain, "sets": {}}
    only = args.only.split(",") if args.only else None
    # Medusa's choice list comes from its rank accuracy on the feature cache: only when its drafters are asked for.
    if medusa is not None and (only is None or any(o in "medusa chain" or o in "medusa tree" for o in only)):
        check_feature_cache(args.cache, args.target, target.config)
        acc = medusa_rank_accuracy(medusa, args.cache)
        choices = medusa_choices(acc, args.tree_nodes)
        res["medusa_rank_accuracy_train_gen"] = acc.round(4).tolist()
        res["medusa_choices"] = [list(p) for p in choices]
        drafters += [MedusaDrafter(medusa), MedusaDrafter(medusa, choices)]
    for name, h in eagles.items():
        drafters += [EagleChain(h, E, args.chain), EagleDynamic(h, E, dyn)]
    if args.only:
        drafters = [d for d in drafters if any(o in d.name for o in args.only.split(","))]
    prompts = {"heldout40": open(os.path.join(HERE, "data", "heldout_prompts.txt"), encoding="utf-8").read().splitlines(),
               "bench24": [p["text"] for p in json.load(open(os.path.join(ROOT, "bench", "prompts.json")))["prompts"]]}
    for set_name, texts in prompts.items():
        if set_name not in args.sets.split(","):
            continue
        texts = [t for t in texts if t.strip()]
        if args.max_prompts:
            texts = texts[:args.max_prompts]
        runs = [Run(target, tok.encode(t), args.new_tokens) for t in texts]
        out = {"prompts": len(runs), "tokens": sum(len(r.tokens) - r.n_prompt for r in runs),
               "teacher_forced_vs_incremental_greedy_mismatches": sum(r.tf_mismatch for r in runs), "methods": {}}
        for dr in drafters:
            st = Stats()
            for r in runs:
                st.add(replay(r, dr))
            out["methods"][dr.name] = st.summary()
            print(f"[{set_name}] {dr.name}: {out['methods'][dr.name]}", flush=True)
        if args.no_coverage:
            res["sets"][set_name] = out
            continue
        cov = {"draft": coverage_draft(draft, runs, args.chain)}
        if medusa is not None:
            cov["medusa"] = coverage_medusa(medusa, runs)
        for name, h in eagles.items():
            cov[name] = coverage_eagle(h, E, runs, args.chain)
        out["topk_coverage"] = {"k": list(TOPK), **cov}
        res["sets"][set_name] = out
    if not args.no_coverage:
        check_feature_cache(args.cache, args.target, target.config)
        res["heldout_text_teacher_forced_top1"] = heldout_teacher_forced(target, medusa, eagles, draft, args.cache, 32,
                                                                         args.chain)
    res["eval_seconds"] = round(time.time() - t0, 1)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    for set_name, out in res["sets"].items():
        print(f"\n{set_name}: {out['prompts']} prompts, {out['tokens']} greedy tokens")
        print("| drafter | tau | acceptance by depth | mean nodes |\n| --- | --- | --- | --- |")
        for name, s in out["methods"].items():
            print(f"| {name} | {s['tau']:.2f} | {' '.join(f'{a:.2f}' for a in s['acceptance_by_depth'])} | "
                  f"{s['mean_tree_nodes']:.1f} |")
        if "topk_coverage" in out:
            print("top-k coverage (k = %s) per depth:" % (TOPK,))
        for name, c in out.get("topk_coverage", {}).items():
            if name != "k":
                print(f"  {name}: " + "; ".join(" ".join(f"{x:.2f}" for x in row) for row in c))
    if "heldout_text_teacher_forced_top1" in res:
        print("held-out text, teacher-forced top-1 agreement:", res["heldout_text_teacher_forced_top1"])
    print(f"({res['eval_seconds']} s; written to {args.out})")


if __name__ == "__main__":
    tool_errors.run(main)
