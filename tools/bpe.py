#!/usr/bin/env python3
"""Byte-level BPE (GPT-2 style) trainer, encoder and Hugging Face tokenizer.json writer.

No dependency beyond python3-regex. The vocabulary is: id 0 = <|endoftext|> (BOS/EOS/PAD/UNK),
ids 1..256 = the 256 byte symbols (GPT-2 bytes_to_unicode order), then one id per merge.

Usage:
  bpe.py train --input tools/data/austen_train.txt tools/data/austen_val.txt --vocab-size 4096 --out tools/runs/tokenizer
  (merges are learned from the first input only; every input is checked for an exact round-trip)
"""
import argparse
import heapq
import json
import os
import sys
import time
from collections import Counter, defaultdict

import regex as re

SPECIAL = "<|endoftext|>"
GPT2_PAT = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


BYTE_ENCODER = bytes_to_unicode()
BYTE_DECODER = {v: k for k, v in BYTE_ENCODER.items()}


def pretokenize(text):
    return GPT2_PAT.findall(text)


def to_symbols(word):
    return "".join(BYTE_ENCODER[b] for b in word.encode("utf-8"))


def train(text_iter, vocab_size, log=print):
    t0 = time.time()
    counts = Counter()
    for text in text_iter:
        counts.update(pretokenize(text))
    # initial vocab: special + 256 bytes in bytes_to_unicode order
    vocab = {SPECIAL: 0}
    for b, ch in BYTE_ENCODER.items():
        vocab[ch] = len(vocab)
    id_to_tok = {i: t for t, i in vocab.items()}
    words = []  # list of lists of symbol ids
    freqs = []
    for w, c in counts.items():
        words.append([vocab[ch] for ch in to_symbols(w)])
        freqs.append(c)
    log(f"bpe: {len(words)} unique pre-tokens, {sum(freqs)} total, {time.time() - t0:.1f}s")
    pair_count = defaultdict(int)
    pair_words = defaultdict(set)
    for wi, syms in enumerate(words):
        f = freqs[wi]
        for a, b in zip(syms, syms[1:]):
            pair_count[(a, b)] += f
            pair_words[(a, b)].add(wi)
    # max-heap keyed by (-count, token strings) for deterministic ties; lazily invalidated
    def key(p):
        return (-pair_count[p], id_to_tok[p[0]], id_to_tok[p[1]])

    heap = [(key(p), p) for p in pair_count]
    heapq.heapify(heap)
    merges = []
    while len(vocab) < vocab_size and heap:
        k, p = heapq.heappop(heap)
        if pair_count.get(p, 0) <= 0:
            continue
        if k != key(p):
            heapq.heappush(heap, (key(p), p))
            continue
        a, b = p
        new_tok = id_to_tok[a] + id_to_tok[b]
        new_id = len(vocab)
        vocab[new_tok] = new_id
        id_to_tok[new_id] = new_tok
        merges.append((id_to_tok[a], id_to_tok[b]))
        changed = set()
        for wi in list(pair_words[p]):
            syms = words[wi]
            f = freqs[wi]
            # remove old pair counts for this word
            for x, y in zip(syms, syms[1:]):
                pair_count[(x, y)] -= f
                changed.add((x, y))
            i = 0
            out = []
            while i < len(syms):
                if i + 1 < len(syms) and syms[i] == a and syms[i + 1] == b:
                    out.append(new_id)
                    i += 2
                else:
                    out.append(syms[i])
                    i += 1
            words[wi] = out
            for x, y in zip(out, out[1:]):
                pair_count[(x, y)] += f
                pair_words[(x, y)].add(wi)
                changed.add((x, y))
        del pair_count[p]
        pair_words.pop(p, None)
        for q in changed:
            c = pair_count.get(q, 0)
            if c > 0:
                heapq.heappush(heap, (key(q), q))
            elif q in pair_count:
                del pair_count[q]
        if len(merges) % 500 == 0:
            log(f"bpe: {len(merges)} merges, {time.time() - t0:.1f}s")
    log(f"bpe: done, vocab {len(vocab)}, {len(merges)} merges, {time.time() - t0:.1f}s")
    return vocab, merges


class Tokenizer:
    def __init__(self, vocab, merges):
        self.vocab = vocab
        self.inv = {i: t for t, i in vocab.items()}
        self.ranks = {tuple(m): i for i, m in enumerate(merges)}
        self.cache = {}
        self.eos_id = vocab[SPECIAL]

    @classmethod
    def from_file(cls, path):
        if os.path.isdir(path):
            path = os.path.join(path, "tokenizer.json")
        with open(path, encoding="utf-8") as f:
            tj = json.load(f)
        merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in tj["model"]["merges"]]
        return cls(tj["model"]["vocab"], merges)

    def bpe(self, symbols):
        if symbols in self.cache:
            return self.cache[symbols]
        word = list(symbols)
        while len(word) > 1:
            best, best_rank = None, None
            for i in range(len(word) - 1):
                r = self.ranks.get((word[i], word[i + 1]))
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = i, r
            if best is None:
                break
            a, b = word[best], word[best + 1]
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and word[i] == a and word[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            word = out
        ids = [self.vocab[t] for t in word]
        self.cache[symbols] = ids
        return ids

    def encode(self, text):
        """Encode plain text (the special token string is treated as a special token)."""
        ids = []
        parts = text.split(SPECIAL)
        for j, part in enumerate(parts):
            if j > 0:
                ids.append(self.eos_id)
            for w in pretokenize(part):
                ids.extend(self.bpe(to_symbols(w)))
        return ids

    def decode(self, ids):
        out = bytearray()
        pieces = []
        for i in ids:
            t = self.inv[int(i)]
            if t == SPECIAL:
                pieces.append(out.decode("utf-8", errors="replace"))
                pieces.append(SPECIAL)
                out = bytearray()
            else:
                out.extend(BYTE_DECODER[c] for c in t)
        pieces.append(out.decode("utf-8", errors="replace"))
        return "".join(pieces)


def tokenizer_json(vocab, merges):
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": 0, "content": SPECIAL, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": True, "special": True}
        ],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": "",
            "end_of_word_suffix": "",
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": [f"{a} {b}" for a, b in merges],
        },
    }


def tokenizer_config(model_max_length=1024):
    tok = {"content": SPECIAL, "lstrip": False, "normalized": True, "rstrip": False, "single_word": False, "special": True}
    return {
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": {"0": tok},
        "bos_token": SPECIAL,
        "eos_token": SPECIAL,
        "unk_token": SPECIAL,
        "pad_token": SPECIAL,
        "clean_up_tokenization_spaces": False,
        "errors": "replace",
        "model_max_length": model_max_length,
        "tokenizer_class": "GPT2Tokenizer",
    }


def save(out_dir, vocab, merges, model_max_length=1024):
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(vocab, merges), f, ensure_ascii=False, indent=None)
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_config(model_max_length), f, ensure_ascii=False, indent=2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["train", "check"])
    ap.add_argument("--input", nargs="+", required=True)
    ap.add_argument("--vocab-size", type=int, default=4096)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    texts = [open(p, encoding="utf-8").read() for p in args.input]
    if args.cmd == "train":
        vocab, merges = train(texts[:1], args.vocab_size)  # train on the first input only
        save(args.out, vocab, merges)
    tok = Tokenizer.from_file(args.out)
    # exact round-trip check
    for t in texts:
        ids = tok.encode(t)
        assert tok.decode(ids) == t, "round-trip failed"
        print(f"round-trip ok: {len(t)} chars -> {len(ids)} tokens ({len(t) / len(ids):.2f} chars/token)")
    s = "Hello <|endoftext|> ça coûte 12€ — \"Mr. Darcy,\" said she.\n\n  end"
    assert tok.decode(tok.encode(s)) == s
    print("special/unicode round-trip ok")


if __name__ == "__main__":
    sys.exit(main())
