/** Small random Llama-family checkpoints, built in memory, for graph tests (no files, no training). */
import { expectedWeights, parseLlamaConfig } from '../config';
import { f32ToBf16, f32ToF16 } from '../convert';
import type { LoadedModel } from '../load';
import { parseSafetensors, readAsFloat32, type SafetensorsDtype, writeSafetensors } from '../safetensors';
import type { Weights } from './reference-llama';

export const TINY_CONFIG = {
  model_type: 'llama',
  architectures: ['LlamaForCausalLM'],
  hidden_size: 32,
  intermediate_size: 48,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  vocab_size: 61,
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
  max_position_embeddings: 128,
  tie_word_embeddings: true,
  hidden_act: 'silu',
  eos_token_id: 0,
};

/** Config overrides the graph tests run every variant and precision on: names and overrides of TINY_CONFIG. */
export const GRAPH_TEST_MODELS: readonly [string, Record<string, unknown>][] = [
  ['llama, GQA, tied head', {}],
  ['qwen2 (q/k/v bias), untied head', { model_type: 'qwen2', tie_word_embeddings: false }],
  ['multi-query, explicit head_dim', { num_key_value_heads: 1, head_dim: 16 }],
];

/** Deterministic uniform values in [-scale, scale). */
function uniform(count: number, seed: number, scale: number): Float32Array {
  const out = new Float32Array(count);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < count; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = ((s >>> 0) / 2 ** 32 - 0.5) * 2 * scale;
  }
  return out;
}

export interface RandomModel {
  model: LoadedModel;
  /** The stored weights decoded to fp32 (what the graph must compute with). */
  weights: Weights;
  safetensors: Uint8Array;
}

export function randomModel(
  overrides: Record<string, unknown> = {},
  dtype: SafetensorsDtype = 'F32',
  seed = 1,
): RandomModel {
  const raw = { ...TINY_CONFIG, ...overrides };
  const config = parseLlamaConfig(raw);
  const tensors = [...expectedWeights(config)].map(([name, shape], i) => {
    const count = shape.reduce((a, b) => a * b, 1);
    const isNorm = name.endsWith('norm.weight');
    const values = uniform(count, seed * 1000 + i + 1, isNorm ? 0.2 : 0.35);
    if (isNorm) for (let j = 0; j < count; j++) values[j] = 1 + (values[j] as number);
    let data: Uint8Array;
    if (dtype === 'F32') data = new Uint8Array(values.buffer);
    else {
      const bits = Uint16Array.from(values, (v) => (dtype === 'F16' ? f32ToF16(v) : f32ToBf16(v)));
      data = new Uint8Array(bits.buffer);
    }
    return { name, dtype, shape, data };
  });
  const safetensors = writeSafetensors(tensors);
  const parsed = parseSafetensors('model.safetensors', safetensors);
  const decoded = new Map<string, Float32Array>();
  const weights: Weights = (name) => {
    let w = decoded.get(name);
    if (!w) {
      w = readAsFloat32(parsed, name);
      decoded.set(name, w);
    }
    return w;
  };
  const model: LoadedModel = {
    spec: `random-${config.modelType}-${dtype}`,
    source: { location: 'memory', read: async () => null },
    config,
    generationConfig: null,
    weights: parsed.tensors,
    files: new Map([['model.safetensors', safetensors]]),
    tokenizer: {
      encode: () => [],
      decode: (ids) => ids.join(' '),
      size: config.vocabSize,
      hasChatTemplate: false,
      applyChatTemplate: () => '',
      endOfTurnTokens: [],
    },
    vocab: {},
    weightBytes: safetensors.byteLength,
  };
  return { model, weights, safetensors };
}
