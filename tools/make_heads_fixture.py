#!/usr/bin/env python3
"""Write tests/fixtures/heads-reference.json: the target's hidden-state outputs and the bundled heads' outputs on
fixed inputs, from the EXPORTED F16 weights upcast to fp32 (what the TypeScript graphs load), all math in fp32.

  /usr/bin/python3 tools/make_heads_fixture.py [--medusa public/models/austen-medusa] [--eagle public/models/austen-eagle3]

target: the prefill and the tree call of tests/fixtures/reference-logits.json (tools/make_fixture.py: first 12
  tokens of the Pride and Prejudice sentence, positions 0..11; then 5 tree nodes, parents [-1, 0, 0, 1, 1],
  positions 12 + depth, attention_visible), with per row:
    hidden_last   [rows x d]  the last decoder layer's output AFTER the final RMSNorm (the LM head's input; what
                              Medusa and EAGLE-1/2 read: HF last_hidden_state = hidden_states[-1]);
    hidden_eagle3 [rows x 3d] the INPUTS of decoder layers 2, L//2, L-3 (= outputs of layers 1, 5, 8 for L = 12;
                              HF hidden_states[2], [6], [9]) concatenated low|mid|high: EAGLE-3's fc input.
medusa: per head k, logits [vocab] at the prefill's last row (input: hidden_last row 11); head k predicts the token
  k + 2 places after that row's token.
eagle: a prefill of the head over the 12 pairs (feature_j, token_{j+1}), the last pair's token being the root
  (the target's argmax at row 11), positions 0..11, causal; then one tree call of the two best children of the
  root at position 12 (each sees the 12 prefill pairs and itself: the chain's step 2 for the first, a sibling
  branch for the second), whose hidden inputs are the head's own output at row 11.
  Per call: out [rows x d] (the head's output feature, before EAGLE-3's norm), logits at the rows that draft
  (prefill row 11, both tree rows) over the head's vocabulary (EAGLE-3: the draft vocabulary, map with d2t;
  EAGLE-1/2: the target vocabulary through the target's LM head), and the top-5 target token ids.
Every float array is {"shape": [...], "f32le_base64": "..."}: float32 values, row-major, little-endian, base64
(Node: new Float32Array(Uint8Array.from(Buffer.from(s, "base64")).buffer)); exact, and the file stays < 300 KB.
Self-checks (written to the file): tree-call hidden states vs each root-to-node path run as a plain causal
sequence; the EAGLE tree rows vs the same step run alone with a KV cache.
"""
import argparse
import base64
import json
import os
import sys

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
from heads import MedusaHeads, causal_bias, eagle3_layer_ids, load_eagle  # noqa: E402
from make_fixture import NEG, PARENTS, SENTENCE, TREE_TEXT  # noqa: E402
from model import load_safetensors_model  # noqa: E402

torch.set_num_threads(1)


def blob(a):
    """A float array as {"shape", "f32le_base64"}: its float32 values, row-major, little-endian, base64 (exact and
    about half the size of decimal lists; the full-precision decimal version of this file is ~520 KB)."""
    a = np.ascontiguousarray(np.asarray(a.detach() if torch.is_tensor(a) else a, dtype="<f4"))
    return {"shape": list(a.shape), "f32le_base64": base64.b64encode(a.tobytes()).decode("ascii")}


def target_case(m, tok):
    ids = tok.encode(SENTENCE)[:12]
    P = len(ids)
    aux_ids = eagle3_layer_ids(m.config.num_hidden_layers)
    with torch.no_grad():
        logits, past, hid = m(torch.tensor([ids]), torch.arange(P)[None], return_hidden=True)
        tree_ids = [tok.encode(t)[0] for t in TREE_TEXT]
        q = len(tree_ids)
        depth = []
        for p in PARENTS:
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
        _, _, thid = m(torch.tensor([tree_ids]), torch.tensor([tpos]), bias, past, return_hidden=True)
        pre_aux = torch.cat([hid["states"][i] for i in aux_ids], -1)[0]
        tree_aux = torch.cat([thid["states"][i] for i in aux_ids], -1)[0]
        maxdiff = 0.0
        for i in range(q):
            path, j = [], i
            while j >= 0:
                path.append(tree_ids[j])
                j = PARENTS[j]
            _, _, rh = m(torch.tensor([ids + path[::-1]]), return_hidden=True)
            ra = torch.cat([rh["states"][k] for k in aux_ids], -1)[0, -1]
            maxdiff = max(maxdiff, (rh["last"][0, -1] - thid["last"][0, i]).abs().max().item(),
                          (ra - tree_aux[i]).abs().max().item())
    case = {
        "hidden_size": m.config.hidden_size,
        "eagle3_layer_ids": aux_ids,
        "eagle3_note": "hidden_eagle3 row = concat(states[2], states[6], states[9]) where states[i] is the input of "
                       "decoder layer i (states[0] = token embeddings)",
        "prefill": {"input_ids": ids, "position_ids": list(range(P)), "rows": P,
                    "argmax": logits[0].argmax(-1).tolist(),
                    "hidden_last": blob(hid["last"][0]), "hidden_eagle3": blob(pre_aux)},
        "tree": {"past_length": P, "parents": PARENTS, "tokens_text": TREE_TEXT, "input_ids": tree_ids,
                 "position_ids": tpos, "attention_visible": vis.tolist(), "hidden_bias_value": NEG, "rows": q,
                 "hidden_last": blob(thid["last"][0]), "hidden_eagle3": blob(tree_aux)},
        "self_check_max_abs_diff": maxdiff,
    }
    return case, ids, hid, logits


def medusa_case(heads, hid, model_dir):
    h = hid["last"][0, -1]
    with torch.no_grad():
        lg = heads(h)  # [K, V]
    return {"model_dir": os.path.relpath(model_dir, ROOT), "input": "target prefill hidden_last row 11",
            "num_heads": heads.num_heads,
            "top5": lg.topk(5, -1).indices.tolist(), "logits": blob(lg)}


def eagle_case(head, target, ids, hid, logits, model_dir):
    E = target.model.embed_tokens.weight
    P = len(ids)
    root = int(logits[0, -1].argmax())
    feat = torch.cat([hid["states"][i] for i in eagle3_layer_ids(target.config.num_hidden_layers)], -1) \
        if head.generation == 3 else hid["last"]
    toks = ids[1:] + [root]
    with torch.no_grad():
        out, kv = head.step(feat, F.embedding(torch.tensor([toks]), E), torch.arange(P)[None], causal_bias(P))
        lg1 = head.draft_logits(out[0, -1], E)
        tl1 = head.target_logits(out[0, -1]) if head.generation == 3 else lg1
        kids = tl1.topk(2).indices.tolist()
        hid_in = out[:, -1:].expand(1, 2, -1)
        tb = torch.full((2, P + 2), 0.0)
        tb[0, P + 1] = NEG
        tb[1, P] = NEG
        out2, _ = head.step(hid_in, F.embedding(torch.tensor([kids]), E), torch.tensor([[P, P]]), tb, past=kv)
        lg2 = head.draft_logits(out2[0], E)
        tl2 = head.target_logits(out2[0]) if head.generation == 3 else lg2
        # self-check: each tree row = that node alone after the prefill (KV cache, causal)
        sc = 0.0
        for i in range(2):
            o, _ = head.step(out[:, -1:], F.embedding(torch.tensor([[kids[i]]]), E), torch.tensor([[P]]),
                             causal_bias(1, P), past=kv)
            sc = max(sc, (o[0, 0] - out2[0, i]).abs().max().item())
    vocab = "draft vocabulary (draft id i = target id i + d2t[i])" if head.generation == 3 else "target vocabulary"
    return {
        "model_dir": os.path.relpath(model_dir, ROOT), "generation": head.generation,
        "feature": "hidden_eagle3 (fc input)" if head.generation == 3 else "hidden_last",
        "logits_vocabulary": vocab, "logits_size": int(lg1.shape[-1]),
        "prefill": {"hidden_input": "target prefill rows 0..11", "input_ids": toks, "position_ids": list(range(P)),
                    "out": blob(out[0]), "logits_row": P - 1, "logits": blob(lg1),
                    "top5_target_ids": tl1.topk(5).indices.tolist()},
        "tree": {"past_length": P, "parents": [-1, -1], "parents_note": "both are children of the prefill's last row",
                 "hidden_input": "prefill out row 11 for both rows", "input_ids": kids, "position_ids": [P, P],
                 "attention_visible": [[1] * P + [1, 0], [1] * P + [0, 1]], "out": blob(out2[0]),
                 "logits": blob(lg2), "top5_target_ids": tl2.topk(5, -1).indices.tolist()},
        "self_check_max_abs_diff": sc,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default=os.path.join(ROOT, "public", "models", "austen-target"))
    ap.add_argument("--medusa", default=os.path.join(ROOT, "public", "models", "austen-medusa"))
    ap.add_argument("--eagle", default=os.path.join(ROOT, "public", "models", "austen-eagle3"))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "fixtures", "heads-reference.json"))
    args = ap.parse_args()
    tok = Tokenizer.from_file(args.target)
    target = load_safetensors_model(args.target, torch.float32)
    tcase, ids, hid, logits = target_case(target, tok)
    doc = {"description": "Hidden states of the bundled target and outputs of the bundled draft heads on fixed "
                          "inputs (tools/make_heads_fixture.py; its docstring says exactly what each array is). "
                          "Float arrays are {shape, f32le_base64}: float32, row-major, little-endian, base64.",
           "dtype_note": "exported F16 weights upcast to float32; all math in float32",
           "target": {"model_dir": os.path.relpath(args.target, ROOT), **tcase}}
    heads = MedusaHeads.load(args.medusa)
    doc["medusa"] = medusa_case(heads, hid, args.medusa)
    head = load_eagle(args.eagle)
    doc["eagle"] = eagle_case(head, target, ids, hid, logits, args.eagle)
    s = json.dumps(doc, indent=1)
    with open(args.out, "w") as f:
        f.write(s + "\n")
    print(f"target self-check {tcase['self_check_max_abs_diff']:.3g}, eagle self-check "
          f"{doc['eagle']['self_check_max_abs_diff']:.3g}; medusa top-1 {[t[0] for t in doc['medusa']['top5']]}, "
          f"eagle top-5 {doc['eagle']['prefill']['top5_target_ids']}")
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes)")


if __name__ == "__main__":
    main()
