#!/usr/bin/env python3
"""Write a Hugging Face Llama-family folder of a real model's shape with seeded random weights, for measuring cost
(random weights say nothing about acceptance, everything about cost). Runs on the GPU machine, which has Python and
numpy but no network: the models are written there instead of carried in the kit.

    python3 tools/gpu-kit/write_model.py --shape smollm2-135m --out gpu-kit/models/smollm2-135m

Writes config.json, generation_config.json, model.safetensors (F16; sharded with model.safetensors.index.json above
2 GB, as the real ones are), tokenizer.json (a byte-level BPE whose vocabulary fills vocab_size: 256 byte tokens,
one special token, then merges of byte pairs) and tokenizer_config.json. Needs numpy only.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

# config.json fields of the public checkpoints (their shapes; nothing else is taken from them).
SHAPES = {
    "tiny": dict(
        model_type="llama", hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, vocab_size=512, max_position_embeddings=1024, rope_theta=10000.0, rms_norm_eps=1e-5,
        tie_word_embeddings=True,
    ),
    "smollm2-135m": dict(
        model_type="llama", hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
        num_key_value_heads=3, vocab_size=49152, max_position_embeddings=8192, rope_theta=100000.0,
        rms_norm_eps=1e-5, tie_word_embeddings=True,
    ),
    "smollm2-360m": dict(
        model_type="llama", hidden_size=960, intermediate_size=2560, num_hidden_layers=32, num_attention_heads=15,
        num_key_value_heads=5, vocab_size=49152, max_position_embeddings=8192, rope_theta=100000.0,
        rms_norm_eps=1e-5, tie_word_embeddings=True,
    ),
    "qwen2.5-0.5b": dict(
        model_type="qwen2", hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
        num_key_value_heads=2, vocab_size=151936, max_position_embeddings=32768, rope_theta=1000000.0,
        rms_norm_eps=1e-6, tie_word_embeddings=True,
    ),
    "llama-3.2-1b": dict(
        model_type="llama", hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
        num_key_value_heads=8, head_dim=64, vocab_size=128256, max_position_embeddings=131072, rope_theta=500000.0,
        rms_norm_eps=1e-5, tie_word_embeddings=True,
        rope_scaling=dict(rope_type="llama3", factor=32.0, low_freq_factor=1.0, high_freq_factor=4.0,
                          original_max_position_embeddings=8192),
    ),
    "smollm2-1.7b": dict(
        model_type="llama", hidden_size=2048, intermediate_size=8192, num_hidden_layers=24, num_attention_heads=32,
        num_key_value_heads=32, vocab_size=49152, max_position_embeddings=8192, rope_theta=130000.0,
        rms_norm_eps=1e-5, tie_word_embeddings=True,
    ),
}

SHARD_BYTES = 2 * 1024**3


def weight_shapes(c):
    """(name, shape) in the Hugging Face naming, as src/model/config.ts expects them."""
    h, m, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    d = c.get("head_dim", h // c["num_attention_heads"])
    q, kv = c["num_attention_heads"] * d, c["num_key_value_heads"] * d
    out = [("model.embed_tokens.weight", (v, h))]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}"
        out += [(f"{p}.input_layernorm.weight", (h,)), (f"{p}.post_attention_layernorm.weight", (h,)),
                (f"{p}.self_attn.q_proj.weight", (q, h)), (f"{p}.self_attn.k_proj.weight", (kv, h)),
                (f"{p}.self_attn.v_proj.weight", (kv, h)), (f"{p}.self_attn.o_proj.weight", (h, q))]
        if c["model_type"] == "qwen2":
            out += [(f"{p}.self_attn.q_proj.bias", (q,)), (f"{p}.self_attn.k_proj.bias", (kv,)),
                    (f"{p}.self_attn.v_proj.bias", (kv,))]
        out += [(f"{p}.mlp.gate_proj.weight", (m, h)), (f"{p}.mlp.up_proj.weight", (m, h)),
                (f"{p}.mlp.down_proj.weight", (h, m))]
    out.append(("model.norm.weight", (h,)))
    if not c["tie_word_embeddings"]:
        out.append(("lm_head.weight", (v, h)))
    return out


def write_safetensors(path, tensors):
    """The safetensors layout: u64 little-endian header length, JSON header, 8-byte aligned raw data."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, arr in tensors:
        header[name] = {"dtype": "F16", "shape": list(arr.shape), "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-(8 + len(blob)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for _, arr in tensors:
            f.write(np.ascontiguousarray(arr).tobytes())


def write_weights(out, c, seed):
    rng = np.random.default_rng(seed)
    shards, current, size = [], [], 0
    for name, shape in weight_shapes(c):
        if name.endswith("norm.weight"):
            arr = (1 + 0.1 * rng.standard_normal(shape, dtype=np.float32)).astype(np.float16)
        else:
            arr = (0.02 * rng.standard_normal(shape, dtype=np.float32)).astype(np.float16)
        if current and size + arr.nbytes > SHARD_BYTES:
            shards.append(current)
            current, size = [], 0
        current.append((name, arr))
        size += arr.nbytes
    shards.append(current)
    if len(shards) == 1:
        write_safetensors(os.path.join(out, "model.safetensors"), shards[0])
        return
    weight_map, total = {}, 0
    for i, shard in enumerate(shards):
        fname = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        write_safetensors(os.path.join(out, fname), shard)
        for name, arr in shard:
            weight_map[name] = fname
            total += arr.nbytes
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=1)


def byte_symbols():
    """GPT-2's byte-to-unicode table: every byte gets a printable character (what ByteLevel pre-tokenizers use)."""
    bs = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for _, c in sorted(zip(bs, cs))]


def tokenizer_json(vocab_size):
    """Byte-level BPE filling vocab_size: <|endoftext|> = 0, bytes 1..256, then merged pairs (two bytes, then three)."""
    syms = byte_symbols()
    vocab = {"<|endoftext|>": 0}
    for s in syms:
        vocab[s] = len(vocab)
    merges, level = [], syms
    while len(vocab) < vocab_size:
        longer = []
        for a in level:
            for b in syms:
                if len(vocab) >= vocab_size:
                    break
                if a + b not in vocab:
                    vocab[a + b] = len(vocab)
                    merges.append(f"{a} {b}")
                    longer.append(a + b)
        level = longer
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": 0, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": True, "special": True}],
        "normalizer": None, "pre_tokenizer": byte_level, "post_processor": byte_level, "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", required=True, choices=sorted(SHAPES))
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    c = dict(SHAPES[args.shape])
    config = {
        **c, "architectures": ["Qwen2ForCausalLM" if c["model_type"] == "qwen2" else "LlamaForCausalLM"],
        "hidden_act": "silu", "bos_token_id": 0, "eos_token_id": 0, "torch_dtype": "float16",
        "attention_bias": c["model_type"] == "qwen2",
    }
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    with open(os.path.join(args.out, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": 0, "eos_token_id": 0}, f)
    with open(os.path.join(args.out, "tokenizer.json"), "w") as f:
        json.dump(tokenizer_json(c["vocab_size"]), f, ensure_ascii=False)
    with open(os.path.join(args.out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "GPT2Tokenizer", "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
                   "add_bos_token": False, "model_max_length": c["max_position_embeddings"]}, f)
    write_weights(args.out, c, args.seed)
    params = sum(int(np.prod(s)) for _, s in weight_shapes(c))
    print(f"wrote {args.out}: {args.shape}, {params / 1e6:.1f}M parameters, {2 * params / 1e6:.0f} MB in F16",
          file=sys.stderr)


if __name__ == "__main__":
    main()
