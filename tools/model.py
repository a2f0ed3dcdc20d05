"""Plain-PyTorch Llama with exactly Hugging Face LlamaForCausalLM semantics and parameter names.

- RMSNorm in fp32: weight * (x / sqrt(mean(x^2) + eps))
- RoPE, rotate_half (non-interleaved) convention: inv_freq = 1/theta^(arange(0,d,2)/d), emb = cat(freqs, freqs)
- GQA: num_key_value_heads < num_attention_heads, K/V heads repeated (repeat_interleave per kv head)
- SwiGLU MLP: down(silu(gate(x)) * up(x)); no biases; tied embeddings (no lm_head.weight tensor)

forward(input_ids, position_ids, attn_bias, past) supports tree calls: attn_bias is an additive float bias of
shape [q, past_len + q] (or [B, 1, q, past_len + q]); past is a list of (k, v) per layer with RoPE already applied
(as in HF's cache), shapes [B, kv_heads, past_len, head_dim].
"""
import json
import math
from dataclasses import dataclass, asdict

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class LlamaConfig:
    vocab_size: int = 4096
    hidden_size: int = 320
    intermediate_size: int = 864
    num_hidden_layers: int = 12
    num_attention_heads: int = 10
    num_key_value_heads: int = 2
    head_dim: int = 32
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    max_position_embeddings: int = 1024
    tie_word_embeddings: bool = True
    bos_token_id: int = 0
    eos_token_id: int = 0

    def to_hf(self):
        d = asdict(self)
        d.update({
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "hidden_act": "silu",
            "rope_scaling": None,
            "attention_bias": False,
            "attention_dropout": 0.0,
            "mlp_bias": False,
            "initializer_range": 0.02,
            "pretraining_tp": 1,
            "use_cache": True,
            "pad_token_id": 0,
            "torch_dtype": "float16",
            "transformers_version": "4.46.0",
        })
        return d

    @classmethod
    def from_hf(cls, d):
        keys = cls.__dataclass_fields__.keys()
        return cls(**{k: d[k] for k in keys if k in d})

    @classmethod
    def load(cls, path):
        with open(path) as f:
            return cls.from_hf(json.load(f))


TARGET = LlamaConfig()
DRAFT = LlamaConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=1, num_attention_heads=8,
                    num_key_value_heads=2, head_dim=32)


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        dt = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dt)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rope_cos_sin(position_ids, head_dim, theta):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    freqs = position_ids[:, :, None].float() * inv_freq[None, None, :]  # [B, T, d/2]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()  # [B, T, d]


class Attention(nn.Module):
    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.c = c
        self.q_proj = nn.Linear(c.hidden_size, c.num_attention_heads * c.head_dim, bias=False)
        self.k_proj = nn.Linear(c.hidden_size, c.num_key_value_heads * c.head_dim, bias=False)
        self.v_proj = nn.Linear(c.hidden_size, c.num_key_value_heads * c.head_dim, bias=False)
        self.o_proj = nn.Linear(c.num_attention_heads * c.head_dim, c.hidden_size, bias=False)

    def forward(self, x, cos, sin, bias, past):
        c = self.c
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, c.num_attention_heads, c.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, c.num_key_value_heads, c.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, c.num_key_value_heads, c.head_dim).transpose(1, 2)
        cos, sin = cos[:, None], sin[:, None]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if past is not None:
            k = torch.cat([past[0], k], dim=2)
            v = torch.cat([past[1], v], dim=2)
        present = (k, v)
        rep = c.num_attention_heads // c.num_key_value_heads
        kr = k.repeat_interleave(rep, dim=1)
        vr = v.repeat_interleave(rep, dim=1)
        scores = torch.matmul(q, kr.transpose(2, 3)) / math.sqrt(c.head_dim) + bias
        probs = torch.softmax(scores.float(), dim=-1).to(q.dtype)
        out = torch.matmul(probs, vr).transpose(1, 2).reshape(B, T, -1)
        return self.o_proj(out), present


class MLP(nn.Module):
    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.gate_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.up_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.self_attn = Attention(c)
        self.mlp = MLP(c)
        self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)

    def forward(self, x, cos, sin, bias, past):
        a, present = self.self_attn(self.input_layernorm(x), cos, sin, bias, past)
        x = x + a
        x = x + self.mlp(self.post_attention_layernorm(x))
        return x, present


class LlamaModel(nn.Module):
    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList([DecoderLayer(c) for _ in range(c.num_hidden_layers)])
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)


class LlamaForCausalLM(nn.Module):
    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.config = c
        self.model = LlamaModel(c)
        self.apply(self._init)
        # GPT-2 style scaled init of residual output projections
        for n, p in self.named_parameters():
            if n.endswith("o_proj.weight") or n.endswith("down_proj.weight"):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * c.num_hidden_layers))

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)

    def num_params(self):
        return sum(p.numel() for p in self.parameters())

    def forward(self, input_ids, position_ids=None, attn_bias=None, past=None, return_hidden=False):
        """input_ids [B, T]; position_ids [B, T] (default past_len + arange); attn_bias additive, broadcastable to
        [B, heads, T, past_len + T] (default causal); past: list of (k, v) per layer or None.
        Returns (logits [B, T, V] fp32, present list), or with return_hidden=True (logits, presents, hidden) where
        hidden = {"states": [x_0 .. x_L] (x_0 = token embeddings, x_i = output of decoder layer i-1 = input of layer
        i, the numbering of Hugging Face's output_hidden_states before its final-norm replacement), "last_prenorm":
        x_L, "last": model.norm(x_L) (what the LM head reads; HF's last_hidden_state)}."""
        B, T = input_ids.shape
        P = 0 if past is None else past[0][0].shape[2]
        if position_ids is None:
            position_ids = (P + torch.arange(T)).unsqueeze(0).expand(B, T)
        if attn_bias is None:
            i = torch.arange(T)[:, None] + P
            j = torch.arange(P + T)[None, :]
            attn_bias = torch.zeros(T, P + T).masked_fill(j > i, float("-inf"))
        if attn_bias.dim() == 2:
            attn_bias = attn_bias[None, None]
        c = self.config
        cos, sin = rope_cos_sin(position_ids, c.head_dim, c.rope_theta)
        x = self.model.embed_tokens(input_ids)
        presents = []
        states = [x]
        for li, layer in enumerate(self.model.layers):
            x, pr = layer(x, cos, sin, attn_bias, None if past is None else past[li])
            presents.append(pr)
            states.append(x)
        h = self.model.norm(x)
        logits = F.linear(h, self.model.embed_tokens.weight).float()
        if return_hidden:
            return logits, presents, {"states": states, "last_prenorm": x, "last": h}
        return logits, presents


def load_safetensors_model(model_dir, dtype=torch.float32):
    """Load an exported folder (config.json + model.safetensors) into LlamaForCausalLM (upcast to dtype)."""
    import os
    from safetensors_io import read_safetensors
    c = LlamaConfig.load(os.path.join(model_dir, "config.json"))
    m = LlamaForCausalLM(c)
    sd = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    sd = {k: v.to(dtype) for k, v in sd.items()}
    missing, unexpected = m.load_state_dict(sd, strict=False)
    assert not unexpected, unexpected
    assert not missing, missing
    m.to(dtype).eval()
    return m
