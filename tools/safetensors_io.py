"""Minimal safetensors reader/writer (F16, F32, I64, I32, BOOL) (the format: u64 little-endian header length, JSON header, raw bytes)."""
import json
import struct

import numpy as np
import torch

_DT = {"F16": (np.float16, torch.float16), "F32": (np.float32, torch.float32), "BF16": (None, torch.bfloat16),
       "I64": (np.int64, torch.int64), "I32": (np.int32, torch.int32), "BOOL": (np.bool_, torch.bool)}
_NAME = {torch.float16: "F16", torch.float32: "F32", torch.int64: "I64", torch.int32: "I32", torch.bool: "BOOL"}


def write_safetensors(path, tensors, metadata=None):
    """tensors: dict name -> torch tensor (F16, F32, I64, I32 or BOOL). Tensor data is 8-byte aligned (header padded with spaces)."""
    header = {"__metadata__": metadata or {"format": "pt"}}
    blobs = []
    off = 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous().cpu()
        b = t.numpy().tobytes()
        header[name] = {"dtype": _NAME[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - (8 + len(h)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        s, e = info["data_offsets"]
        npdt, _ = _DT[info["dtype"]]
        arr = np.frombuffer(data[base + s:base + e], dtype=npdt).reshape(info["shape"])
        out[name] = torch.from_numpy(arr.copy())
    return out
