#!/usr/bin/env python3
"""Write tests/fixtures/reference-logits.json (and tests/fixtures/tokenizer-cases.json) from the EXPORTED
F16 weights upcast to fp32, for both bundled models.

  /usr/bin/python3 tools/make_fixture.py            # uses public/models/austen-{target,draft}

reference-logits.json: {"models": [{name, prefill: {...}, tree: {...}, self_check_max_abs_diff}, ...]}
  prefill: input_ids [12], position_ids 0..11, logits [12 x vocab] row-major (float32 shortest repr).
  tree: after that prefill (past length 12), nodes in topological order with parents (-1 = child of the last
        committed token), input_ids, position_ids = 12 + depth, attention_visible [q x (12+q)] (1 = visible:
        the whole prefix, the node itself and its ancestors; hidden entries got an additive bias of -1e9),
        logits [q x vocab] row-major.
  self_check_max_abs_diff: max |tree logits - logits of the same root-to-node path run as a plain causal
        sequence| (should be ~1e-6).
tokenizer-cases.json: strings and their token ids from tools/bpe.py (what transformers.js must produce).
"""
import argparse
import json
import os
import sys

# OpenMP threads must not spin while OpenBLAS runs the matmuls (2-2.5x faster training on 2 cores).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import tool_errors  # noqa: E402

tool_errors.require_torch()
import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from model import load_safetensors_model  # noqa: E402
from bpe import Tokenizer  # noqa: E402

torch.set_num_threads(int(os.environ.get("FIXTURE_THREADS", "1")))

SENTENCE = "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife."
TREE_TEXT = [" of", " a", " the", " good", " large"]  # one token each
PARENTS = [-1, 0, 0, 1, 1]
NEG = -1e9


def f32(a):
    """Shortest repr that round-trips each float32."""
    return "[" + ",".join(np.format_float_positional(x, unique=True, trim="-")
                          for x in np.asarray(a, dtype=np.float32).ravel()) + "]"


def model_case(name, model_dir, tok):
    m = load_safetensors_model(model_dir, torch.float32)
    ids = tok.encode(SENTENCE)[:12]
    P = len(ids)
    x = torch.tensor([ids])
    pos = torch.arange(P)[None]
    with torch.no_grad():
        pre_logits, past = m(x, pos)
    tree_ids = []
    for t in TREE_TEXT:
        e = tok.encode(t)
        assert len(e) == 1, (t, e)
        tree_ids.append(e[0])
    q = len(tree_ids)
    depth = []
    for i, p in enumerate(PARENTS):
        assert p < i
        depth.append(0 if p < 0 else depth[p] + 1)
    tpos = [P + d for d in depth]
    vis = np.zeros((q, P + q), dtype=np.int64)
    vis[:, :P] = 1
    for i in range(q):
        j = i
        while j >= 0:
            vis[i, P + j] = 1
            j = PARENTS[j]
    bias = torch.from_numpy(np.where(vis == 1, 0.0, NEG).astype(np.float32))
    with torch.no_grad():
        tree_logits, _ = m(torch.tensor([tree_ids]), torch.tensor([tpos]), bias, past)
        # self-check: each root-to-node path as a plain causal sequence
        maxdiff = 0.0
        for i in range(q):
            path, j = [], i
            while j >= 0:
                path.append(tree_ids[j])
                j = PARENTS[j]
            seq = ids + path[::-1]
            ref, _ = m(torch.tensor([seq]))
            maxdiff = max(maxdiff, (ref[0, -1] - tree_logits[0, i]).abs().max().item())
    pre = pre_logits[0].numpy()
    tl = tree_logits[0].numpy()
    print(f"{name}: prefill argmax {pre.argmax(-1).tolist()}, tree argmax {tl.argmax(-1).tolist()}, "
          f"self-check max abs diff {maxdiff:.3g}")
    return {
        "name": name,
        "model_dir": os.path.relpath(model_dir, ROOT),
        "dtype_note": "exported F16 weights upcast to float32; all math in float32",
        "vocab_size": int(pre.shape[-1]),
        "columns": "all",
        "prefill": {"text": SENTENCE, "input_ids": ids, "position_ids": list(range(P)), "rows": P,
                    "argmax": pre.argmax(-1).tolist(), "logits": "@@PRE@@"},
        "tree": {"past_length": P, "parents": PARENTS, "tokens_text": TREE_TEXT, "input_ids": tree_ids,
                 "position_ids": tpos, "attention_visible": vis.tolist(), "hidden_bias_value": NEG,
                 "rows": q, "argmax": tl.argmax(-1).tolist(), "logits": "@@TREE@@"},
        "self_check_max_abs_diff": maxdiff,
    }, pre, tl


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default=os.path.join(ROOT, "public", "models", "austen-target"))
    ap.add_argument("--draft", default=os.path.join(ROOT, "public", "models", "austen-draft"))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "fixtures", "reference-logits.json"))
    ap.add_argument("--tok-out", default=os.path.join(ROOT, "tests", "fixtures", "tokenizer-cases.json"))
    args = ap.parse_args()
    tok = Tokenizer.from_file(args.target)
    parts = []
    cases = []
    for name, d in (("austen-target", args.target), ("austen-draft", args.draft)):
        case, pre, tl = model_case(name, d, tok)
        s = json.dumps(case, indent=1)
        s = s.replace('"@@PRE@@"', f32(pre)).replace('"@@TREE@@"', f32(tl))
        parts.append(s)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write('{"description": "Reference logits for the bundled Llama pair (tools/make_fixture.py). Row-major '
                'flat float32 arrays [rows x vocab_size]. tree: nodes in topological order, parents -1 = child of '
                'the last committed token, position = past_length + depth, attention_visible 1 = visible.",\n'
                '"models": [\n' + ",\n".join(parts) + "\n]}\n")
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes)")
    # tokenizer cases: what a conforming tokenizer must produce for these strings
    strings = [SENTENCE] + open(os.path.join(HERE, "data", "heldout_prompts.txt"), encoding="utf-8").read().splitlines()[:5] + [
        "\"My dear Mr. Bennet,\" said his lady to him one day, \"have you heard that Netherfield Park is let at last?\"",
        "Hello world!  Two  spaces,\nnew line\n\nand tabs\there; café, naïve, 12,345 — 'quotes' it's we'll.",
        "<|endoftext|>Emma Woodhouse, handsome, clever, and rich<|endoftext|>",
    ]
    for s in strings:
        ids = tok.encode(s)
        assert tok.decode(ids) == s
        cases.append({"text": s, "ids": ids})
    with open(args.tok_out, "w") as f:
        json.dump({"description": "Token ids from tools/bpe.py for the bundled tokenizer (no BOS added; "
                                  "<|endoftext|> = id 0 is a special token).", "cases": cases}, f, ensure_ascii=False, indent=1)
    print(f"wrote {args.tok_out}")


if __name__ == "__main__":
    main()
