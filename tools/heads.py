"""Draft heads on the frozen target's features, in plain PyTorch, with the parameter names their authors publish.

- MedusaHeads: FasterDecoding/Medusa Medusa-1 heads (medusa/model/medusa_model.py: ResBlock + per-head vocabulary
  projection). Head k (0-based) reads the target's last hidden state AFTER the final norm at position t (the LM
  head's input) and predicts the token at t + k + 2 (the LM head itself predicts t + 1).
- Eagle1: SafeAILab/EAGLE EAGLE-1/2 head (eagle/model/cnets1.py: fc over [embedding, feature], one Llama decoder
  layer without input_layernorm, the target's own LM head). The feature is the target's last hidden state after the
  final norm (HF last_hidden_state / hidden_states[-1]).
- Eagle3: SafeAILab/EAGLE EAGLE-3 head (eagle/model/cnets.py): fc over the concatenated inputs of target decoder
  layers 2, L//2 and L-3 (low, mid, high), one decoder layer whose attention reads [norm(embedding),
  norm(hidden)], its own final norm and LM head over a reduced draft vocabulary (d2t / t2d maps).

Every module takes the target's token embedding from the caller (all three reuse the target's embed_tokens).
Layouts on disk: tools/heads_layouts.md.
"""
import json
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

from model import MLP, RMSNorm, LlamaConfig, rope_cos_sin, rotate_half
from safetensors_io import read_safetensors, write_safetensors

NEG = -1e9


def eagle3_layer_ids(num_layers):
    """Target decoder layers whose INPUTS EAGLE-3 fuses (SafeAILab/EAGLE eagle/model/modeling_llama_kv.py: idx == 2,
    idx == L // 2, idx == L - 3), in concatenation order. In the numbering of tools/model.py's hidden["states"] (and
    HF's output_hidden_states) these are states[2], states[L // 2], states[L - 3]."""
    return sorted({2, num_layers // 2, num_layers - 3})


# ---------------------------------------------------------------------------------------------------------- Medusa

class ResBlock(nn.Module):
    """x + SiLU(W x + b); W starts at zero so an untrained block is the identity (as upstream)."""

    def __init__(self, d):
        super().__init__()
        self.linear = nn.Linear(d, d)
        nn.init.zeros_(self.linear.weight)
        self.act = nn.SiLU()

    def forward(self, x):
        return x + self.act(self.linear(x))


class MedusaHeads(nn.Module):
    """K heads; state_dict keys '{k}.{l}.linear.weight', '{k}.{l}.linear.bias', '{k}.{L}.weight' (L = num_layers)."""

    def __init__(self, hidden_size, vocab_size, num_heads=4, num_layers=1):
        super().__init__()
        self.num_heads, self.num_layers = num_heads, num_layers
        self.hidden_size, self.vocab_size = hidden_size, vocab_size
        self.heads = nn.ModuleList([
            nn.Sequential(*[ResBlock(hidden_size) for _ in range(num_layers)],
                          nn.Linear(hidden_size, vocab_size, bias=False))
            for _ in range(num_heads)])

    def init_from_lm_head(self, weight):
        with torch.no_grad():
            for h in self.heads:
                h[-1].weight.copy_(weight)

    def forward(self, h, heads=None):
        """h [..., d] (target's last hidden state after the final norm) -> [K, ..., V] logits."""
        ks = range(self.num_heads) if heads is None else heads
        return torch.stack([self.heads[k](h) for k in ks], 0)

    def published_state_dict(self):
        return {k: v for k, v in self.heads.state_dict().items()}

    def config_json(self, base_model):
        # FasterDecoding/Medusa MedusaConfig (medusa/model/medusa_model.py); no "version" key = Medusa-1 layout with a
        # vocabulary projection per head ('version': '2' in medusa_model_legacy.py means heads without it).
        # (hidden and vocabulary sizes are not config keys upstream: they are the weights' shapes)
        return {"medusa_num_heads": self.num_heads, "medusa_num_layers": self.num_layers,
                "base_model_name_or_path": base_model, "transformers_version": "4.46.0"}

    def save(self, out_dir, base_model="austen-target"):
        os.makedirs(out_dir, exist_ok=True)
        sd = {k: v.detach().float().to(torch.float16) for k, v in self.published_state_dict().items()}
        for k, v in sd.items():
            assert torch.isfinite(v).all(), f"{k} overflows fp16"
        write_safetensors(os.path.join(out_dir, "medusa_lm_head.safetensors"), sd, {"format": "pt"})
        with open(os.path.join(out_dir, "config.json"), "w") as f:
            json.dump(self.config_json(base_model), f, indent=2)

    @classmethod
    def load(cls, d, dtype=torch.float32):
        cfg = json.load(open(os.path.join(d, "config.json")))
        sd = read_safetensors(os.path.join(d, "medusa_lm_head.safetensors"))
        w = sd["0.%d.weight" % cfg["medusa_num_layers"]]
        m = cls(w.shape[1], w.shape[0], cfg["medusa_num_heads"], cfg["medusa_num_layers"])
        m.heads.load_state_dict({k: v.to(dtype) for k, v in sd.items()})
        return m.to(dtype).eval()


# ----------------------------------------------------------------------------------------------------------- EAGLE

class HeadAttention(nn.Module):
    """Llama attention (RoPE rotate_half, GQA) whose q/k/v projections read `in_dim` features (2 * hidden in EAGLE-3).
    head_dim = hidden_size // num_attention_heads, as upstream."""

    def __init__(self, c: LlamaConfig, in_dim):
        super().__init__()
        self.nh, self.nkv = c.num_attention_heads, c.num_key_value_heads
        self.hd = c.hidden_size // c.num_attention_heads
        self.q_proj = nn.Linear(in_dim, self.nh * self.hd, bias=False)
        self.k_proj = nn.Linear(in_dim, self.nkv * self.hd, bias=False)
        self.v_proj = nn.Linear(in_dim, self.nkv * self.hd, bias=False)
        self.o_proj = nn.Linear(self.nh * self.hd, c.hidden_size, bias=False)

    def qkv(self, x, cos, sin):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.nh, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        cos, sin = cos[:, None], sin[:, None]
        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin, v

    def forward(self, x, cos, sin, bias, past=None):
        """Plain / tree call: bias additive [.., T, P + T]; past (k, v) [B, kv, P, hd] or None."""
        q, k, v = self.qkv(x, cos, sin)
        if past is not None:
            k = torch.cat([past[0], k], 2)
            v = torch.cat([past[1], v], 2)
        rep = self.nh // self.nkv
        s = q @ k.repeat_interleave(rep, 1).transpose(2, 3) / math.sqrt(self.hd) + bias
        p = torch.softmax(s.float(), -1).to(q.dtype)
        o = (p @ v.repeat_interleave(rep, 1)).transpose(1, 2).reshape(x.shape[0], x.shape[1], -1)
        return self.o_proj(o), (k, v)

    def forward_unrolled(self, x, cos, sin, causal_bias, cache):
        """Training-time-test attention (SafeAILab/EAGLE eagle/traineagle3/cnets.py): row t of unroll step i is the
        draft at position t + i started from position t. It sees the step-0 keys of positions <= t (the real
        context, causal_bias) and, of every later step j <= i, only its own row (its own drafted chain).
        cache: list of (k, v) of steps 0 .. i-1 (step 0 first); returns (out, (k, v) of this step)."""
        q, k, v = self.qkv(x, cos, sin)
        rep = self.nh // self.nkv
        ks = [kk.repeat_interleave(rep, 1) for kk, _ in cache] + [k.repeat_interleave(rep, 1)]
        vs = [vv.repeat_interleave(rep, 1) for _, vv in cache] + [v.repeat_interleave(rep, 1)]
        scale = 1.0 / math.sqrt(self.hd)
        s0 = q @ ks[0].transpose(2, 3) * scale + causal_bias  # [B, h, T, T]
        diag = [(q * kk).sum(-1, keepdim=True) * scale for kk in ks[1:]]  # each [B, h, T, 1]
        p = torch.softmax(torch.cat([s0] + diag, -1).float(), -1).to(q.dtype)
        T = x.shape[1]
        o = p[..., :T] @ vs[0]
        for j, vv in enumerate(vs[1:]):
            o = o + p[..., T + j:T + j + 1] * vv
        o = o.transpose(1, 2).reshape(x.shape[0], T, -1)
        return self.o_proj(o), (k, v)


class Eagle1Layer(nn.Module):
    """cnets1.LlamaDecoderLayer with index 0: no input_layernorm (the fc output goes straight into attention)."""

    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.self_attn = HeadAttention(c, c.hidden_size)
        self.mlp = MLP(c)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)

    def forward(self, x, cos, sin, bias, past=None, cache=None):
        if cache is None:
            a, kv = self.self_attn(x, cos, sin, bias, past)
        else:
            a, kv = self.self_attn.forward_unrolled(x, cos, sin, bias, cache)
        x = x + a
        return x + self.mlp(self.post_attention_layernorm(x)), kv


class Eagle1(nn.Module):
    """out = layer(fc([embed(token_{t+1}), feature_t])) predicts feature_{t+1}; logits = target LM head(out)."""

    generation = 1

    def __init__(self, c: LlamaConfig, bias=True):
        super().__init__()
        self.config = c
        self.bias = bias
        self.fc = nn.Linear(2 * c.hidden_size, c.hidden_size, bias=bias)
        self.layers = nn.ModuleList([Eagle1Layer(c)])

    def step(self, feat, emb, position_ids, bias, past=None, cache=None):
        """feat [B, T, d] (target feature or the head's own previous output), emb [B, T, d] (target embedding of
        the NEXT token). Returns (out [B, T, d], kv)."""
        cos, sin = rope_cos_sin(position_ids, self.config.hidden_size // self.config.num_attention_heads,
                                self.config.rope_theta)
        x = self.fc(torch.cat([emb, feat], -1))
        return self.layers[0](x, cos, sin, bias, past, cache)

    def draft_logits(self, out, lm_head_weight):
        """Target-vocabulary logits from the predicted feature (the target's own LM head, no extra norm)."""
        return F.linear(out, lm_head_weight).float()

    def config_json(self, target: LlamaConfig):
        return eagle_config(target, self.bias, None)

    def published_state_dict(self):
        return dict(self.state_dict())


class Eagle3Layer(nn.Module):
    """cnets.LlamaDecoderLayeremb: attention over [input_layernorm(embedding), hidden_norm(hidden)]."""

    def __init__(self, c: LlamaConfig):
        super().__init__()
        d = c.hidden_size
        self.self_attn = HeadAttention(c, 2 * d)
        self.mlp = MLP(c)
        self.hidden_norm = RMSNorm(d, c.rms_norm_eps)
        self.input_layernorm = RMSNorm(d, c.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(d, c.rms_norm_eps)

    def forward(self, emb, hidden, cos, sin, bias, past=None, cache=None):
        x = torch.cat([self.input_layernorm(emb), self.hidden_norm(hidden)], -1)
        if cache is None:
            a, kv = self.self_attn(x, cos, sin, bias, past)
        else:
            a, kv = self.self_attn.forward_unrolled(x, cos, sin, bias, cache)
        h = hidden + a
        return h + self.mlp(self.post_attention_layernorm(h)), kv


class Eagle3(nn.Module):
    """hidden = fc([low, mid, high]) for target features (3d wide); the head's own output (d wide) is used as is.
    out = midlayer(embed(token_{t+1}), hidden); logits over the draft vocabulary = lm_head(norm(out)); draft id i is
    target id i + d2t[i]; t2d[target id] says whether a target token is in the draft vocabulary."""

    generation = 3

    def __init__(self, c: LlamaConfig, draft_vocab_size=None):
        super().__init__()
        self.config = c
        d = c.hidden_size
        self.draft_vocab_size = draft_vocab_size or c.vocab_size
        self.fc = nn.Linear(3 * d, d, bias=False)
        self.midlayer = Eagle3Layer(c)
        self.norm = RMSNorm(d, c.rms_norm_eps)
        self.lm_head = nn.Linear(d, self.draft_vocab_size, bias=False)
        self.register_buffer("d2t", torch.zeros(self.draft_vocab_size, dtype=torch.long))
        self.register_buffer("t2d", torch.ones(c.vocab_size, dtype=torch.bool))

    def set_vocab(self, used_target_ids):
        """Draft vocabulary = these target ids (sorted), as upstream scandata(): d2t[i] = used[i] - i."""
        used = torch.as_tensor(sorted(int(i) for i in used_target_ids), dtype=torch.long)
        assert len(used) == self.draft_vocab_size
        self.d2t.copy_(used - torch.arange(len(used)))
        self.t2d.zero_()
        self.t2d[used] = True

    def draft_to_target(self):
        return torch.arange(self.draft_vocab_size) + self.d2t

    def step(self, hidden, emb, position_ids, bias, past=None, cache=None):
        cos, sin = rope_cos_sin(position_ids, self.config.hidden_size // self.config.num_attention_heads,
                                self.config.rope_theta)
        if hidden.shape[-1] != self.config.hidden_size:
            hidden = self.fc(hidden)
        return self.midlayer(emb, hidden, cos, sin, bias, past, cache)

    def draft_logits(self, out, lm_head_weight=None):
        """Logits over the DRAFT vocabulary (map with draft_to_target())."""
        return self.lm_head(self.norm(out)).float()

    def target_logits(self, out):
        """Logits scattered into the target vocabulary (-inf outside the draft vocabulary)."""
        dl = self.draft_logits(out)
        full = torch.full(dl.shape[:-1] + (self.config.vocab_size,), float("-inf"))
        full[..., self.draft_to_target()] = dl
        return full

    def config_json(self, target: LlamaConfig):
        return eagle_config(target, False, self.draft_vocab_size)

    def published_state_dict(self):
        return dict(self.state_dict())


def eagle_config(target: LlamaConfig, bias, draft_vocab_size):
    """config.json as SafeAILab/EAGLE ships it (eagle/train/*_config.json, eagle/traineagle3/config.json): the
    target's Llama config with num_hidden_layers 1 (EConfig); 'bias' is read by ea_model.py (fc bias, EAGLE-1/2);
    EAGLE-3 adds draft_vocab_size."""
    c = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "bos_token_id": target.bos_token_id, "eos_token_id": target.eos_token_id, "pad_token_id": 0,
        "hidden_act": "silu", "hidden_size": target.hidden_size, "initializer_range": 0.02,
        "intermediate_size": target.intermediate_size, "max_position_embeddings": target.max_position_embeddings,
        "num_attention_heads": target.num_attention_heads, "num_key_value_heads": target.num_key_value_heads,
        "num_hidden_layers": 1, "rms_norm_eps": target.rms_norm_eps, "rope_theta": target.rope_theta,
        "rope_scaling": None, "tie_word_embeddings": False, "torch_dtype": "float16",
        "transformers_version": "4.46.0", "use_cache": True, "vocab_size": target.vocab_size,
    }
    if draft_vocab_size is None:
        c["bias"] = bool(bias)
    else:
        c["draft_vocab_size"] = draft_vocab_size
    return c


def save_eagle(head, target_cfg: LlamaConfig, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    sd = {}
    for k, v in head.published_state_dict().items():
        v = v.detach()
        sd[k] = v.float().to(torch.float16) if v.is_floating_point() else v.clone()
        if v.is_floating_point():
            assert torch.isfinite(sd[k]).all(), f"{k} overflows fp16"
    write_safetensors(os.path.join(out_dir, "model.safetensors"), sd, {"format": "pt"})
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(head.config_json(target_cfg), f, indent=2)


def load_eagle(d, dtype=torch.float32):
    """Either generation, told apart as upstream's loaders do: EAGLE-3 checkpoints have 'midlayer.*' (and
    draft_vocab_size in config.json), EAGLE-1/2 ones 'layers.0.*'."""
    cfg = json.load(open(os.path.join(d, "config.json")))
    sd = read_safetensors(os.path.join(d, "model.safetensors"))
    c = LlamaConfig.from_hf(cfg)
    if any(k.startswith("midlayer.") for k in sd):
        m = Eagle3(c, cfg.get("draft_vocab_size", c.vocab_size))
    else:
        m = Eagle1(c, bias=cfg.get("bias", True))
    sd = {k: (v.to(dtype) if v.is_floating_point() else v) for k, v in sd.items()}
    missing, unexpected = m.load_state_dict(sd, strict=False)
    assert not unexpected, unexpected
    assert not missing, missing
    return m.to(dtype).eval()


def causal_bias(T, P=0):
    i = torch.arange(T)[:, None] + P
    j = torch.arange(P + T)[None, :]
    return torch.zeros(T, P + T).masked_fill(j > i, NEG)


def unrolled(head, E, tokens, feat, steps, R=None, noise=0.0):
    """Training-time-test unroll (EAGLE-3's recipe; also used to evaluate chains): row t, step i has hidden = the
    target feature at t (step 0) or the head's own output of step i-1 at row t, token x_{t+1+i}, position t + i,
    and predicts x_{t+2+i}. Row t attends to the real pairs of rows <= t and to its own chain (forward_unrolled).
    tokens [B, >= R + steps], feat [B, >= R, f]. Returns a list of per-step outputs [B, R, d]."""
    B = tokens.shape[0]
    R = R or tokens.shape[1] - steps - 1
    hidden = feat[:, :R]
    if noise:
        hidden = hidden + (torch.rand_like(hidden) - 0.5) * 2 * noise
    pos = torch.arange(R)[None].expand(B, R)
    bias = causal_bias(R)
    cache, outs = [], []
    for i in range(steps):
        emb = F.embedding(tokens[:, 1 + i:1 + i + R], E)
        out, kv = head.step(hidden, emb, pos + i, bias, cache=cache)
        cache.append(kv)
        outs.append(out)
        hidden = out
    return outs
