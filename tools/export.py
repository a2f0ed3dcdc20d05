#!/usr/bin/env python3
"""Export a training checkpoint (tools/runs/*/ckpt.pt, fp32 master weights) to a Hugging Face style folder:
config.json, generation_config.json, model.safetensors (F16), tokenizer.json, tokenizer_config.json.

  /usr/bin/python3 tools/export.py --ckpt tools/runs/target/ckpt.pt --out public/models/austen-target
  /usr/bin/python3 tools/export.py --ckpt tools/runs/draft/ckpt.pt --out public/models/austen-draft
Works on any checkpoint, including one written while training is still running.
"""
import argparse
import json
import os
import shutil
import sys

# OpenMP threads must not spin while OpenBLAS runs the matmuls (2-2.5x faster training on 2 cores).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import tool_errors  # noqa: E402

tool_errors.require_torch()
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from model import LlamaConfig  # noqa: E402
from safetensors_io import write_safetensors  # noqa: E402

torch.set_num_threads(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokenizer", default=None,
                    help="tokenizer folder (default: the one the checkpoint was trained with, else tools/runs/tokenizer)")
    args = ap.parse_args()
    if not os.path.isfile(args.ckpt):
        tool_errors.fail(f"{args.ckpt}: no such checkpoint (tools/train.py writes tools/runs/<name>/ckpt.pt; see tools/README.md)")
    ck = torch.load(args.ckpt, map_location="cpu")
    if "config" not in ck:
        tool_errors.fail(f"{args.ckpt} is not a model checkpoint of tools/train.py (heads export with their own "
                         "tool's --export: train_medusa.py, train_eagle.py)")
    trained_with = (ck.get("args") or {}).get("tokenizer")
    args.tokenizer = args.tokenizer or trained_with or os.path.join(HERE, "runs", "tokenizer")
    # Everything is checked before anything is written: a missing tokenizer file left new weights beside an old one.
    for name in ("tokenizer.json", "tokenizer_config.json"):
        if not os.path.isfile(os.path.join(args.tokenizer, name)):
            tool_errors.fail(f"{args.tokenizer}: no {name} (--tokenizer: the folder tools/bpe.py wrote)")
    cfg = LlamaConfig(**ck["config"])
    sd = ck["model"]
    assert cfg.tie_word_embeddings and "lm_head.weight" not in sd
    os.makedirs(args.out, exist_ok=True)
    tensors = {k: v.float().to(torch.float16) for k, v in sd.items()}
    for k, v in tensors.items():
        assert torch.isfinite(v).all(), f"{k} overflows fp16"
    write_safetensors(os.path.join(args.out, "model.safetensors"), tensors, {"format": "pt"})
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(cfg.to_hf(), f, indent=2)
    gen = {"bos_token_id": cfg.bos_token_id, "eos_token_id": cfg.eos_token_id, "pad_token_id": 0,
           "do_sample": False, "max_length": cfg.max_position_embeddings, "transformers_version": "4.46.0"}
    with open(os.path.join(args.out, "generation_config.json"), "w") as f:
        json.dump(gen, f, indent=2)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(args.tokenizer, name), os.path.join(args.out, name))
    n = sum(v.numel() for v in tensors.values())
    print(f"exported {args.ckpt} (step {ck['step']}, {ck['elapsed'] / 60:.1f} min) -> {args.out}: {n} params, "
          f"{os.path.getsize(os.path.join(args.out, 'model.safetensors'))} bytes")


if __name__ == "__main__":
    tool_errors.run(main)
