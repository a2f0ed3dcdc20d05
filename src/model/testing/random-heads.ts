/**
 * Small random draft heads written in their published layouts (tools/heads_layouts.md), for tests: Medusa's
 * medusa_lm_head.safetensors and EAGLE-3's model.safetensors with d2t / t2d, plus their config.json.
 */

import type { LlamaConfig } from '../config';
import { f32ToF16 } from '../convert';
import { parseSafetensors, readAsFloat32, type SafetensorsDtype, writeSafetensors } from '../safetensors';
import type { Weights } from './reference-llama';

export interface RandomHeads {
  files: Record<string, Uint8Array>;
  /** The stored weights decoded to fp32. */
  weights: Weights;
}

function values(count: number, seed: number, scale: number, offset = 0): Float32Array {
  const out = new Float32Array(count);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < count; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = offset + ((s >>> 0) / 2 ** 32 - 0.5) * 2 * scale;
  }
  return out;
}

type Spec = { name: string; shape: number[]; scale?: number; offset?: number };

function write(
  file: string,
  specs: Spec[],
  seed: number,
  extra: { name: string; dtype: SafetensorsDtype; shape: number[]; data: Uint8Array }[] = [],
) {
  const tensors = specs.map((t, i) => {
    const v = values(
      t.shape.reduce((a, b) => a * b, 1),
      seed * 100 + i + 1,
      t.scale ?? 0.3,
      t.offset ?? 0,
    );
    return {
      name: t.name,
      dtype: 'F16' as const,
      shape: t.shape,
      data: new Uint8Array(Uint16Array.from(v, f32ToF16).buffer),
    };
  });
  const bytes = writeSafetensors([...tensors, ...extra]);
  const parsed = parseSafetensors(file, bytes);
  return { bytes, weights: ((name: string) => readAsFloat32(parsed, name)) as Weights };
}

const json = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

export function randomMedusa(target: LlamaConfig, heads = 3, layers = 1, seed = 5): RandomHeads {
  const d = target.hiddenSize;
  const specs: Spec[] = [];
  for (let k = 0; k < heads; k++) {
    for (let l = 0; l < layers; l++) {
      specs.push(
        { name: `${k}.${l}.linear.weight`, shape: [d, d] },
        { name: `${k}.${l}.linear.bias`, shape: [d], scale: 0.1 },
      );
    }
    specs.push({ name: `${k}.${layers}.weight`, shape: [target.vocabSize, d] });
  }
  const { bytes, weights } = write('medusa_lm_head.safetensors', specs, seed);
  const config = { medusa_num_heads: heads, medusa_num_layers: layers, base_model_name_or_path: 'random-target' };
  return { files: { 'config.json': json(config), 'medusa_lm_head.safetensors': bytes }, weights };
}

/**
 * EAGLE-3 heads; with draftVocab < the target's, a d2t map (every other token from 0, or the target token of each
 * draft index given) and t2d are written.
 */
export function randomEagle3(
  target: LlamaConfig,
  draftVocab = target.vocabSize,
  seed = 7,
  targetTokens: (i: number) => number = (i) => 2 * i,
): RandomHeads {
  const d = target.hiddenSize;
  const { numHeads: nh, numKvHeads: kvh, headDim: hd } = target;
  const I = target.intermediateSize;
  const m = 'midlayer';
  const specs: Spec[] = [
    { name: 'fc.weight', shape: [d, 3 * d], scale: 0.2 },
    { name: `${m}.hidden_norm.weight`, shape: [d], scale: 0.2, offset: 1 },
    { name: `${m}.input_layernorm.weight`, shape: [d], scale: 0.2, offset: 1 },
    { name: `${m}.post_attention_layernorm.weight`, shape: [d], scale: 0.2, offset: 1 },
    { name: `${m}.self_attn.q_proj.weight`, shape: [nh * hd, 2 * d] },
    { name: `${m}.self_attn.k_proj.weight`, shape: [kvh * hd, 2 * d] },
    { name: `${m}.self_attn.v_proj.weight`, shape: [kvh * hd, 2 * d] },
    { name: `${m}.self_attn.o_proj.weight`, shape: [d, nh * hd] },
    { name: `${m}.mlp.gate_proj.weight`, shape: [I, d] },
    { name: `${m}.mlp.up_proj.weight`, shape: [I, d] },
    { name: `${m}.mlp.down_proj.weight`, shape: [d, I] },
    { name: 'norm.weight', shape: [d], scale: 0.2, offset: 1 },
    { name: 'lm_head.weight', shape: [draftVocab, d] },
  ];
  const extra: { name: string; dtype: SafetensorsDtype; shape: number[]; data: Uint8Array }[] = [];
  if (draftVocab !== target.vocabSize) {
    // d2t holds offsets: target token = i + d2t[i].
    const d2t = BigInt64Array.from({ length: draftVocab }, (_, i) => BigInt(targetTokens(i) - i));
    const t2d = new Uint8Array(target.vocabSize);
    for (let i = 0; i < draftVocab; i++) t2d[targetTokens(i)] = 1;
    extra.push(
      { name: 'd2t', dtype: 'I64', shape: [draftVocab], data: new Uint8Array(d2t.buffer) },
      { name: 't2d', dtype: 'BOOL', shape: [target.vocabSize], data: t2d },
    );
  }
  const { bytes, weights } = write('model.safetensors', specs, seed, extra);
  const config = {
    architectures: ['LlamaForCausalLMEagle3'],
    model_type: 'llama',
    hidden_size: d,
    intermediate_size: I,
    num_attention_heads: nh,
    num_key_value_heads: kvh,
    num_hidden_layers: 1,
    vocab_size: target.vocabSize,
    draft_vocab_size: draftVocab,
    rms_norm_eps: target.rmsNormEps,
    rope_theta: target.ropeTheta,
    max_position_embeddings: target.maxPositions,
    hidden_act: 'silu',
    tie_word_embeddings: false,
    torch_dtype: 'float16',
  };
  return { files: { 'config.json': json(config), 'model.safetensors': bytes }, weights };
}
