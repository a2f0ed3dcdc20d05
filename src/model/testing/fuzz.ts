/**
 * Seeded mutations of model folders (config.json values, safetensors headers and bytes, truncations, tokenizer
 * files) for the fuzz tests in Node and in the browser worker. DOM-free and fs-free: a folder is a map of file
 * names to bytes, so Node writes it to disk and a browser test serves it.
 */
import { writeSafetensors } from '../safetensors';
import { randomModel, TINY_CONFIG } from './random-model';

export type ModelFiles = Record<string, Uint8Array>;

const utf8 = (s: string) => new TextEncoder().encode(s);

/** A tiny random checkpoint that loads with the given tokenizer files (vocabulary up to 4096 tokens). */
export function tinyFolder(tokenizer: ModelFiles, seed: number, overrides: Record<string, unknown> = {}): ModelFiles {
  const config = { ...TINY_CONFIG, vocab_size: 4096, max_position_embeddings: 256, ...overrides };
  const { safetensors } = randomModel(config, seed % 2 === 0 ? 'F16' : 'F32', seed);
  return { 'config.json': utf8(JSON.stringify(config)), 'model.safetensors': safetensors, ...tokenizer };
}

function rng(seed: number): () => number {
  let s = (seed * 2654435761) >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

const CONFIG_KEYS = [
  'hidden_size',
  'intermediate_size',
  'num_hidden_layers',
  'num_attention_heads',
  'num_key_value_heads',
  'vocab_size',
  'rms_norm_eps',
  'rope_theta',
  'max_position_embeddings',
  'tie_word_embeddings',
  'model_type',
  'hidden_act',
  'head_dim',
  'rope_scaling',
  'eos_token_id',
  'sliding_window',
  'attention_bias',
];

const BAD_VALUES: unknown[] = [
  0,
  -1,
  1.5,
  3,
  64,
  1e12,
  2 ** 53,
  'abc',
  '32',
  null,
  [],
  {},
  true,
  false,
  5e-324,
  { type: 'yarn', factor: 4 },
  { rope_type: 'llama3', factor: 8 },
  { type: 'linear', factor: -2 },
];

export interface Mutation {
  files: ModelFiles;
  /** What was done, for test messages. */
  description: string;
}

/** One seeded mutation of a model folder. */
export function mutateFolder(folder: ModelFiles, seed: number): Mutation {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
  const files: ModelFiles = { ...folder };
  const st = folder['model.safetensors'] as Uint8Array;
  const headerLength = Number(new DataView(st.buffer, st.byteOffset, 8).getBigUint64(0, true));
  const kind = Math.floor(r() * 8);
  switch (kind) {
    case 0:
    case 1: {
      const config = JSON.parse(new TextDecoder().decode(folder['config.json']));
      const key = pick(CONFIG_KEYS);
      if (r() < 0.15) {
        delete config[key];
        files['config.json'] = utf8(JSON.stringify(config));
        return { files, description: `config.json: ${key} deleted` };
      }
      const value = pick(BAD_VALUES);
      config[key] = value;
      files['config.json'] = utf8(JSON.stringify(config));
      return { files, description: `config.json: ${key} = ${JSON.stringify(value)}` };
    }
    case 2: {
      const cut = Math.floor(r() * (folder['config.json'] as Uint8Array).length);
      files['config.json'] = (folder['config.json'] as Uint8Array).slice(0, cut);
      return { files, description: `config.json cut to ${cut} bytes` };
    }
    case 3: {
      const bytes = Uint8Array.from(st);
      const at = 8 + Math.floor(r() * headerLength);
      bytes[at] = Math.floor(r() * 256);
      files['model.safetensors'] = bytes;
      return { files, description: `safetensors header byte ${at} = ${bytes[at]}` };
    }
    case 4: {
      const bytes = Uint8Array.from(st);
      const value = r() < 0.5 ? BigInt(Math.floor(r() * 2 ** 40)) : BigInt(Math.floor(r() * headerLength * 2));
      new DataView(bytes.buffer).setBigUint64(0, value, true);
      files['model.safetensors'] = bytes;
      return { files, description: `safetensors header length field = ${value}` };
    }
    case 5: {
      const bytes = Uint8Array.from(st);
      const start = 8 + headerLength;
      const n = 1 + Math.floor(r() * 16);
      const positions: number[] = [];
      for (let i = 0; i < n; i++) {
        const at = start + Math.floor(r() * (bytes.length - start));
        bytes[at] = r() < 0.3 ? 0xff : Math.floor(r() * 256); // 0xff bytes make NaN/Inf patterns likely
        positions.push(at);
      }
      files['model.safetensors'] = bytes;
      return { files, description: `safetensors data bytes changed at ${positions.slice(0, 4).join(', ')}…` };
    }
    case 6: {
      const cut = Math.floor(r() * st.length);
      files['model.safetensors'] = st.slice(0, cut);
      return { files, description: `model.safetensors cut to ${cut} of ${st.length} bytes` };
    }
    default: {
      const tensors = [
        { name: 'model.embed_tokens.weight', dtype: 'F32' as const, shape: [3, 2], data: new Uint8Array(24) },
      ];
      if (r() < 0.5) {
        files['model.safetensors'] = writeSafetensors(tensors);
        return { files, description: 'model.safetensors with only a wrong-shaped embedding' };
      }
      const tok = folder['tokenizer.json'] as Uint8Array;
      const cut = Math.floor(r() * tok.length);
      files['tokenizer.json'] = tok.slice(0, cut);
      return { files, description: `tokenizer.json cut to ${cut} bytes` };
    }
  }
}
