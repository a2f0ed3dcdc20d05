/**
 * config.json of a Llama-family checkpoint (Llama, Qwen2, Mistral; SmolLM2 and TinyLlama are "llama"), parsed into
 * the few numbers the graph builder needs, with clear errors for what we cannot run.
 */
import { ModelLoadError } from './errors';

export const SUPPORTED_MODEL_TYPES = ['llama', 'qwen2', 'mistral'] as const;
export type ModelType = (typeof SUPPORTED_MODEL_TYPES)[number];

export type RopeScaling =
  | { type: 'linear'; factor: number }
  | {
      type: 'llama3';
      factor: number;
      lowFreqFactor: number;
      highFreqFactor: number;
      originalMaxPositionEmbeddings: number;
    };

export interface LlamaConfig {
  modelType: ModelType;
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  vocabSize: number;
  rmsNormEps: number;
  ropeTheta: number;
  ropeScaling: RopeScaling | null;
  /** Longest context the model was trained for (capped by a sliding window, which we do not implement). */
  maxPositions: number;
  tieWordEmbeddings: boolean;
  /** q/k/v projections carry a bias (Qwen2; Llama's attention_bias, which biases o_proj too, is refused). */
  qkvBias: boolean;
  bosTokenId: number | null;
  eosTokenIds: number[];
}

function num(raw: Record<string, unknown>, key: string, fallback?: number): number {
  const v = raw[key] ?? fallback;
  if (typeof v !== 'number' || !Number.isFinite(v)) {
    throw new ModelLoadError(`config.json: "${key}" is missing or not a number (got ${JSON.stringify(raw[key])})`);
  }
  return v;
}

/** A whole number in [min, max]: sizes, counts and ids (a huge value would mean a huge graph, not a model). */
function int(
  raw: Record<string, unknown>,
  key: string,
  fallback: number | undefined,
  min: number,
  max: number,
): number {
  const v = num(raw, key, fallback);
  if (!Number.isInteger(v) || v < min || v > max) {
    throw new ModelLoadError(`config.json: "${key}" must be a whole number from ${min} to ${max} (got ${v})`);
  }
  return v;
}

/** A positive finite number (epsilons, RoPE base, scaling factors). */
function positive(raw: Record<string, unknown>, key: string, fallback?: number): number {
  const v = num(raw, key, fallback);
  if (!(v > 0)) throw new ModelLoadError(`config.json: "${key}" must be positive (got ${v})`);
  return v;
}

function ids(v: unknown): number[] {
  if (typeof v === 'number') return [v];
  if (Array.isArray(v)) return v.filter((x): x is number => typeof x === 'number');
  return [];
}

function parseRopeScaling(raw: unknown): RopeScaling | null {
  if (raw === null || raw === undefined) return null;
  const r = raw as Record<string, unknown>;
  const type = (r.rope_type ?? r.type) as string | undefined;
  if (type === 'default') return null;
  if (type === 'linear') return { type: 'linear', factor: positive(r, 'factor') };
  if (type === 'llama3') {
    const scaling = {
      type: 'llama3' as const,
      factor: positive(r, 'factor'),
      lowFreqFactor: positive(r, 'low_freq_factor'),
      highFreqFactor: positive(r, 'high_freq_factor'),
      originalMaxPositionEmbeddings: positive(r, 'original_max_position_embeddings'),
    };
    if (!(scaling.highFreqFactor > scaling.lowFreqFactor)) {
      throw new ModelLoadError('config.json: rope_scaling high_freq_factor must exceed low_freq_factor');
    }
    return scaling;
  }
  throw new ModelLoadError(`config.json: rope_scaling type "${type}" is not supported (supported: linear, llama3)`);
}

export function parseLlamaConfig(raw: Record<string, unknown>): LlamaConfig {
  const modelType = raw.model_type;
  if (modelType === undefined)
    throw new ModelLoadError(`config.json has no model_type (supported: ${SUPPORTED_MODEL_TYPES.join(', ')})`);
  if (!SUPPORTED_MODEL_TYPES.includes(modelType as ModelType)) {
    throw new ModelLoadError(
      `unsupported model_type "${String(modelType)}" (supported: ${SUPPORTED_MODEL_TYPES.join(', ')}; ` +
        'SmolLM2 and TinyLlama are "llama")',
    );
  }
  const act = raw.hidden_act ?? 'silu';
  if (act !== 'silu') throw new ModelLoadError(`config.json: hidden_act "${String(act)}" is not supported (only silu)`);
  const hiddenSize = int(raw, 'hidden_size', undefined, 1, 65536);
  const numHeads = int(raw, 'num_attention_heads', undefined, 1, 1024);
  const numKvHeads = int(raw, 'num_key_value_heads', numHeads, 1, 1024);
  const headDim = num(raw, 'head_dim', hiddenSize / numHeads);
  if (!Number.isInteger(headDim) || headDim % 2 !== 0) {
    throw new ModelLoadError(`config.json: head_dim ${headDim} must be an even integer`);
  }
  if (numHeads % numKvHeads !== 0) {
    throw new ModelLoadError(
      `config.json: num_attention_heads ${numHeads} is not a multiple of num_key_value_heads ${numKvHeads}`,
    );
  }
  let maxPositions = int(raw, 'max_position_embeddings', 2048, 2, 1 << 24);
  const window = raw.sliding_window;
  if (
    typeof window === 'number' &&
    Number.isInteger(window) &&
    window >= 2 &&
    (raw.use_sliding_window ?? modelType === 'mistral') &&
    window < maxPositions
  ) {
    maxPositions = window; // beyond the window the model attends differently; we stop there.
  }
  const eos = ids(raw.eos_token_id);
  // Biases this engine does not apply are refused, never dropped: Llama's attention_bias puts one on o_proj as well as
  // on q, k and v, and mlp_bias one on gate, up and down (Qwen2's q/k/v biases are applied).
  if (raw.attention_bias === true)
    throw new ModelLoadError(
      "config.json: attention_bias true (biases on q, k, v and o_proj) is not supported (supported: Qwen2's q/k/v biases)",
    );
  if (raw.mlp_bias === true)
    throw new ModelLoadError('config.json: mlp_bias true (biases on gate, up and down) is not supported');
  // transformers 5 saves rope_theta and the scaling in rope_parameters (rope_type "default": no scaling).
  const ropeParameters =
    raw.rope_parameters !== null && typeof raw.rope_parameters === 'object'
      ? (raw.rope_parameters as Record<string, unknown>)
      : null;
  const rope = ropeParameters?.rope_theta !== undefined ? ropeParameters : raw;
  return {
    modelType: modelType as ModelType,
    hiddenSize,
    intermediateSize: int(raw, 'intermediate_size', undefined, 1, 1 << 20),
    numLayers: int(raw, 'num_hidden_layers', undefined, 1, 1024),
    numHeads,
    numKvHeads,
    headDim,
    vocabSize: int(raw, 'vocab_size', undefined, 2, 1 << 24),
    rmsNormEps: positive(raw, 'rms_norm_eps', 1e-6),
    ropeTheta: positive(rope, 'rope_theta', 10000),
    ropeScaling: parseRopeScaling(raw.rope_scaling ?? ropeParameters),
    maxPositions,
    tieWordEmbeddings: Boolean(raw.tie_word_embeddings ?? false),
    qkvBias: modelType === 'qwen2',
    bosTokenId: typeof raw.bos_token_id === 'number' ? raw.bos_token_id : null,
    eosTokenIds: eos,
  };
}

/** RoPE inverse frequencies (length headDim / 2), with linear or llama3 scaling applied. */
export function ropeInvFreq(cfg: LlamaConfig): Float32Array {
  const half = cfg.headDim / 2;
  const out = new Float32Array(half);
  for (let i = 0; i < half; i++) {
    let f = 1 / cfg.ropeTheta ** ((2 * i) / cfg.headDim);
    const s = cfg.ropeScaling;
    if (s?.type === 'linear') f /= s.factor;
    else if (s?.type === 'llama3') {
      const lowWavelen = s.originalMaxPositionEmbeddings / s.lowFreqFactor;
      const highWavelen = s.originalMaxPositionEmbeddings / s.highFreqFactor;
      const wavelen = (2 * Math.PI) / f;
      if (wavelen > lowWavelen) f /= s.factor;
      else if (wavelen >= highWavelen) {
        const smooth =
          (s.originalMaxPositionEmbeddings / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
        f = (1 - smooth) * (f / s.factor) + smooth * f;
      }
    }
    out[i] = f;
  }
  return out;
}

/** The tensor names and shapes a checkpoint with this config must contain. */
export function expectedWeights(cfg: LlamaConfig): Map<string, number[]> {
  const { hiddenSize: h, intermediateSize: m, numHeads, numKvHeads, headDim: d, vocabSize: v } = cfg;
  const w = new Map<string, number[]>();
  w.set('model.embed_tokens.weight', [v, h]);
  for (let i = 0; i < cfg.numLayers; i++) {
    const p = `model.layers.${i}`;
    w.set(`${p}.input_layernorm.weight`, [h]);
    w.set(`${p}.post_attention_layernorm.weight`, [h]);
    w.set(`${p}.self_attn.q_proj.weight`, [numHeads * d, h]);
    w.set(`${p}.self_attn.k_proj.weight`, [numKvHeads * d, h]);
    w.set(`${p}.self_attn.v_proj.weight`, [numKvHeads * d, h]);
    w.set(`${p}.self_attn.o_proj.weight`, [h, numHeads * d]);
    if (cfg.qkvBias) {
      w.set(`${p}.self_attn.q_proj.bias`, [numHeads * d]);
      w.set(`${p}.self_attn.k_proj.bias`, [numKvHeads * d]);
      w.set(`${p}.self_attn.v_proj.bias`, [numKvHeads * d]);
    }
    w.set(`${p}.mlp.gate_proj.weight`, [m, h]);
    w.set(`${p}.mlp.up_proj.weight`, [m, h]);
    w.set(`${p}.mlp.down_proj.weight`, [h, m]);
  }
  w.set('model.norm.weight', [h]);
  if (!cfg.tieWordEmbeddings) w.set('lm_head.weight', [v, h]);
  return w;
}
