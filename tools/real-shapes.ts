/**
 * Real shapes without a network: Hugging Face model folders with the exact config.json of published checkpoints,
 * seeded random weights (BF16 as published, or F16) and a synthetic tokenizer that covers the vocabulary. Random
 * weights say nothing about acceptance but everything about cost: the benchmark measures these shapes.
 *
 *   npx tsx tools/real-shapes.ts [name ...] [--out .cache/real-models] [--dtype BF16|F16] [--layers N] [--seed S]
 *   npx tsx tools/real-shapes.ts --list
 *
 * The configs below are TRANSCRIBED from the published config.json files (HuggingFaceTB/SmolLM2-135M, -360M, -1.7B,
 * Qwen/Qwen2.5-0.5B, meta-llama/Llama-3.2-1B) from memory of those files, not downloaded: nothing here can reach the
 * hub. The published checkpoints of these five are single model.safetensors files (the largest, SmolLM2-1.7B, is
 * 3.4 GB); `--shard-mb` writes shards with a model.safetensors.index.json the way transformers does for bigger ones.
 * `--layers N` keeps every width and the vocabulary but only N layers (small shapes for slow backends); the folder
 * name then says so and config.json carries the reduced num_hidden_layers.
 */
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { expectedWeights, parseLlamaConfig } from '../src/model/config';
import { f32ToBf16, f32ToF16 } from '../src/model/convert';
import { type SpecialToken, syntheticTokenizer } from './synthetic-tokenizer';

/** Bump when the generated files change, so cached folders are rewritten. */
const GENERATOR_VERSION = 1;

export interface RealShape {
  /** The hub repository the config is transcribed from. */
  repo: string;
  config: Record<string, unknown>;
  generationConfig: Record<string, unknown>;
  tokenizerClass: string;
  specials: SpecialToken[];
}

const smolSpecials: SpecialToken[] = [
  '<|endoftext|>',
  '<|im_start|>',
  '<|im_end|>',
  '<repo_name>',
  '<reponame>',
  '<file_sep>',
  '<filename>',
  '<gh_stars>',
  '<issue_start>',
  '<issue_comment>',
  '<issue_closed>',
  '<jupyter_start>',
  '<jupyter_text>',
  '<jupyter_code>',
  '<jupyter_output>',
  '<jupyter_script>',
  '<empty_output>',
].map((content, id) => ({ id, content }));

const smolConfig = (o: Record<string, unknown>) => ({
  architectures: ['LlamaForCausalLM'],
  attention_bias: false,
  attention_dropout: 0.0,
  bos_token_id: 0,
  eos_token_id: 0,
  hidden_act: 'silu',
  is_llama_config: true,
  max_position_embeddings: 8192,
  model_type: 'llama',
  pretraining_tp: 1,
  rms_norm_eps: 1e-5,
  rope_interleaved: false,
  rope_scaling: null,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  transformers_version: '4.42.3',
  use_cache: true,
  vocab_size: 49152,
  ...o,
});

const qwenSpecials: SpecialToken[] = [
  '<|endoftext|>',
  '<|im_start|>',
  '<|im_end|>',
  '<|object_ref_start|>',
  '<|object_ref_end|>',
  '<|box_start|>',
  '<|box_end|>',
  '<|quad_start|>',
  '<|quad_end|>',
  '<|vision_start|>',
  '<|vision_end|>',
  '<|vision_pad|>',
  '<|image_pad|>',
  '<|video_pad|>',
  '<tool_call>',
  '</tool_call>',
  '<|fim_prefix|>',
  '<|fim_middle|>',
  '<|fim_suffix|>',
  '<|fim_pad|>',
  '<|repo_name|>',
  '<|file_sep|>',
].map((content, i) => ({ id: 151643 + i, content }));

/** Llama 3: 128000 regular tokens, then 256 specials (two named, the rest reserved). */
const llama3Specials: SpecialToken[] = Array.from({ length: 256 }, (_, i) => ({
  id: 128000 + i,
  content:
    (
      {
        0: '<|begin_of_text|>',
        1: '<|end_of_text|>',
        6: '<|start_header_id|>',
        7: '<|end_header_id|>',
        9: '<|eot_id|>',
      } as Record<number, string>
    )[i] ?? `<|reserved_special_token_${i}|>`,
}));

export const REAL_SHAPES = {
  'SmolLM2-135M': {
    repo: 'HuggingFaceTB/SmolLM2-135M',
    config: smolConfig({
      hidden_size: 576,
      initializer_range: 0.041666666666666664,
      intermediate_size: 1536,
      num_attention_heads: 9,
      num_hidden_layers: 30,
      num_key_value_heads: 3,
      rope_theta: 100000,
    }),
    generationConfig: { _from_model_config: true, bos_token_id: 0, eos_token_id: 0, transformers_version: '4.42.3' },
    tokenizerClass: 'GPT2Tokenizer',
    specials: smolSpecials,
  },
  'SmolLM2-360M': {
    repo: 'HuggingFaceTB/SmolLM2-360M',
    config: smolConfig({
      hidden_size: 960,
      initializer_range: 0.02,
      intermediate_size: 2560,
      num_attention_heads: 15,
      num_hidden_layers: 32,
      num_key_value_heads: 5,
      rope_theta: 100000,
    }),
    generationConfig: { _from_model_config: true, bos_token_id: 0, eos_token_id: 0, transformers_version: '4.42.3' },
    tokenizerClass: 'GPT2Tokenizer',
    specials: smolSpecials,
  },
  'SmolLM2-1.7B': {
    repo: 'HuggingFaceTB/SmolLM2-1.7B',
    config: smolConfig({
      hidden_size: 2048,
      initializer_range: 0.02,
      intermediate_size: 8192,
      num_attention_heads: 32,
      num_hidden_layers: 24,
      num_key_value_heads: 32,
      rope_theta: 130000,
    }),
    generationConfig: { _from_model_config: true, bos_token_id: 0, eos_token_id: 0, transformers_version: '4.42.3' },
    tokenizerClass: 'GPT2Tokenizer',
    specials: smolSpecials,
  },
  'Qwen2.5-0.5B': {
    repo: 'Qwen/Qwen2.5-0.5B',
    config: {
      architectures: ['Qwen2ForCausalLM'],
      attention_dropout: 0.0,
      bos_token_id: 151643,
      eos_token_id: 151643,
      hidden_act: 'silu',
      hidden_size: 896,
      initializer_range: 0.02,
      intermediate_size: 4864,
      max_position_embeddings: 32768,
      max_window_layers: 24,
      model_type: 'qwen2',
      num_attention_heads: 14,
      num_hidden_layers: 24,
      num_key_value_heads: 2,
      rms_norm_eps: 1e-6,
      rope_theta: 1000000.0,
      sliding_window: 32768,
      tie_word_embeddings: true,
      torch_dtype: 'bfloat16',
      transformers_version: '4.40.1',
      use_cache: true,
      use_mrope: false,
      use_sliding_window: false,
      vocab_size: 151936,
    },
    generationConfig: {
      bos_token_id: 151643,
      do_sample: false,
      eos_token_id: 151643,
      max_new_tokens: 2048,
      transformers_version: '4.37.0',
    },
    tokenizerClass: 'Qwen2Tokenizer',
    specials: qwenSpecials,
  },
  'Llama-3.2-1B': {
    repo: 'meta-llama/Llama-3.2-1B',
    config: {
      architectures: ['LlamaForCausalLM'],
      attention_bias: false,
      attention_dropout: 0.0,
      bos_token_id: 128000,
      eos_token_id: 128001,
      head_dim: 64,
      hidden_act: 'silu',
      hidden_size: 2048,
      initializer_range: 0.02,
      intermediate_size: 8192,
      max_position_embeddings: 131072,
      mlp_bias: false,
      model_type: 'llama',
      num_attention_heads: 32,
      num_hidden_layers: 16,
      num_key_value_heads: 8,
      pretraining_tp: 1,
      rms_norm_eps: 1e-5,
      rope_scaling: {
        factor: 32.0,
        high_freq_factor: 4.0,
        low_freq_factor: 1.0,
        original_max_position_embeddings: 8192,
        rope_type: 'llama3',
      },
      rope_theta: 500000.0,
      tie_word_embeddings: true,
      torch_dtype: 'bfloat16',
      transformers_version: '4.45.0.dev0',
      use_cache: true,
      vocab_size: 128256,
    },
    generationConfig: {
      _from_model_config: true,
      bos_token_id: 128000,
      do_sample: true,
      eos_token_id: 128001,
      temperature: 0.6,
      top_p: 0.9,
      transformers_version: '4.45.0.dev0',
    },
    tokenizerClass: 'PreTrainedTokenizerFast',
    specials: llama3Specials,
  },
} satisfies Record<string, RealShape>;

export type RealShapeName = keyof typeof REAL_SHAPES;
export const REAL_SHAPE_NAMES = Object.keys(REAL_SHAPES) as RealShapeName[];

export interface WriteOptions {
  /** Stored weight type (the published checkpoints are BF16). */
  dtype?: 'BF16' | 'F16';
  seed?: number;
  /** Keep only this many layers (every width and the vocabulary stay real). */
  layers?: number;
  /** Split the weights into shards of at most this many bytes, with model.safetensors.index.json. */
  shardBytes?: number;
}

/** Deterministic uniform values in [-scale, scale) (xorshift32), one stream per tensor. */
function fillUniform(out: Float32Array, seed: number, scale: number): void {
  let s = seed >>> 0 || 1;
  for (let i = 0; i < out.length; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = ((s >>> 0) / 2 ** 32 - 0.5) * 2 * scale;
  }
}

/** One tensor's stored bytes: norms near 1, everything else with the config's initializer_range as its spread. */
function tensorBytes(name: string, count: number, seed: number, std: number, dtype: 'BF16' | 'F16'): Uint8Array {
  const values = new Float32Array(count);
  const isNorm = name.endsWith('norm.weight');
  // A uniform in [-a, a) has standard deviation a / sqrt(3).
  fillUniform(values, seed, isNorm ? 0.1 : std * Math.sqrt(3));
  if (isNorm) for (let i = 0; i < count; i++) values[i] = 1 + (values[i] as number);
  const bits = new Uint16Array(count);
  const convert = dtype === 'F16' ? f32ToF16 : f32ToBf16;
  for (let i = 0; i < count; i++) bits[i] = convert(values[i] as number);
  return new Uint8Array(bits.buffer);
}

interface Planned {
  name: string;
  shape: number[];
  bytes: number;
  index: number;
}

/** Write one safetensors file tensor by tensor (a 3.4 GB checkpoint never sits in memory whole). */
function writeShard(path: string, tensors: Planned[], make: (t: Planned) => Uint8Array, dtype: string): void {
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  let offset = 0;
  for (const t of tensors) {
    header[t.name] = { dtype, shape: t.shape, data_offsets: [offset, offset + t.bytes] };
    offset += t.bytes;
  }
  let json = JSON.stringify(header);
  while ((8 + json.length) % 8 !== 0) json += ' ';
  const headerBytes = new TextEncoder().encode(json);
  const length = new Uint8Array(8);
  new DataView(length.buffer).setBigUint64(0, BigInt(headerBytes.byteLength), true);
  const fd = openSync(path, 'w');
  try {
    writeSync(fd, length);
    writeSync(fd, headerBytes);
    for (const t of tensors) writeSync(fd, make(t));
  } finally {
    closeSync(fd);
  }
}

/** The folder name for a shape and options (cached folders are reused only when everything matches). */
export function shapeFolderName(name: RealShapeName, o: WriteOptions = {}): string {
  const parts: string[] = [name];
  if (o.layers !== undefined) parts.push(`${o.layers}L`);
  if ((o.dtype ?? 'BF16') !== 'BF16') parts.push(String(o.dtype));
  if (o.shardBytes !== undefined) parts.push(`shards${o.shardBytes}`);
  if ((o.seed ?? 1) !== 1) parts.push(`seed${o.seed}`);
  return parts.join('-');
}

/** Write a Hugging Face folder for `name` into `dir` (created or overwritten). */
export function writeRealShape(name: RealShapeName, dir: string, o: WriteOptions = {}): void {
  const shape: RealShape = REAL_SHAPES[name];
  const dtype = o.dtype ?? 'BF16';
  const seed = o.seed ?? 1;
  const config: Record<string, unknown> = { ...shape.config, torch_dtype: dtype === 'BF16' ? 'bfloat16' : 'float16' };
  if (o.layers !== undefined) config.num_hidden_layers = o.layers;
  const parsed = parseLlamaConfig(config);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const std = Number(config.initializer_range ?? 0.02);
  const planned: Planned[] = [...expectedWeights(parsed)].map(([tensor, dims], index) => ({
    name: tensor,
    shape: dims,
    bytes: dims.reduce((a, b) => a * b, 1) * 2,
    index,
  }));
  const make = (t: Planned) => tensorBytes(t.name, t.bytes / 2, seed * 100_003 + t.index + 1, std, dtype);
  if (o.shardBytes === undefined) {
    writeShard(join(dir, 'model.safetensors'), planned, make, dtype);
  } else {
    const shards: Planned[][] = [[]];
    let size = 0;
    for (const t of planned) {
      const current = shards[shards.length - 1] as Planned[];
      if (current.length > 0 && size + t.bytes > o.shardBytes) {
        shards.push([t]);
        size = t.bytes;
      } else {
        current.push(t);
        size += t.bytes;
      }
    }
    const fileName = (i: number) =>
      `model-${String(i + 1).padStart(5, '0')}-of-${String(shards.length).padStart(5, '0')}.safetensors`;
    const weightMap: Record<string, string> = {};
    shards.forEach((tensors, i) => {
      writeShard(join(dir, fileName(i)), tensors, make, dtype);
      for (const t of tensors) weightMap[t.name] = fileName(i);
    });
    const totalSize = planned.reduce((a, t) => a + t.bytes, 0);
    writeJson(join(dir, 'model.safetensors.index.json'), {
      metadata: { total_size: totalSize },
      weight_map: weightMap,
    });
  }
  writeJson(join(dir, 'config.json'), config);
  writeJson(join(dir, 'generation_config.json'), shape.generationConfig);
  const { tokenizer } = syntheticTokenizer({ size: parsed.vocabSize, specials: shape.specials });
  writeJson(join(dir, 'tokenizer.json'), tokenizer);
  const first = shape.specials[0]?.content ?? null;
  const eosId = parsed.eosTokenIds[0];
  const eos = shape.specials.find((s) => s.id === eosId)?.content ?? first;
  writeJson(join(dir, 'tokenizer_config.json'), {
    add_bos_token: false,
    add_prefix_space: false,
    bos_token: first,
    eos_token: eos,
    unk_token: null,
    pad_token: eos,
    clean_up_tokenization_spaces: false,
    model_max_length: parsed.maxPositions,
    tokenizer_class: shape.tokenizerClass,
  });
  writeJson(join(dir, 'real-shape.json'), {
    generator: GENERATOR_VERSION,
    shape: name,
    repo: shape.repo,
    dtype,
    seed,
    layers: o.layers ?? null,
    shardBytes: o.shardBytes ?? null,
    note: 'random weights in the published shape: for cost measurements only',
  });
}

function writeJson(path: string, value: unknown): void {
  writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`);
}

export const DEFAULT_ROOT = '.cache/real-models';

/** The folder for `name` under `root`, written first if it is missing or was written by another generator version. */
export function ensureRealShape(name: RealShapeName, o: WriteOptions = {}, root = DEFAULT_ROOT): string {
  const dir = join(root, shapeFolderName(name, o));
  const marker = join(dir, 'real-shape.json');
  if (existsSync(marker)) {
    const m = JSON.parse(readFileSync(marker, 'utf8')) as { generator?: number };
    if (m.generator === GENERATOR_VERSION) return dir;
  }
  writeRealShape(name, dir, o);
  return dir;
}

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      out: { type: 'string', default: DEFAULT_ROOT },
      dtype: { type: 'string', default: 'BF16' },
      layers: { type: 'string' },
      seed: { type: 'string', default: '1' },
      'shard-mb': { type: 'string' },
      list: { type: 'boolean', default: false },
    },
  });
  if (values.list) {
    for (const n of REAL_SHAPE_NAMES) {
      const c = parseLlamaConfig(REAL_SHAPES[n].config);
      let params = 0;
      for (const s of expectedWeights(c).values()) params += s.reduce((a, b) => a * b, 1);
      console.log(`${n.padEnd(14)} ${(params / 1e6).toFixed(0).padStart(5)}M parameters  (${REAL_SHAPES[n].repo})`);
    }
    return;
  }
  const dtype = values.dtype === 'F16' ? 'F16' : values.dtype === 'BF16' ? 'BF16' : null;
  if (!dtype) throw new Error(`--dtype must be BF16 or F16, not ${values.dtype}`);
  const names = positionals.length > 0 ? positionals : ['SmolLM2-135M'];
  for (const n of names) {
    if (!(n in REAL_SHAPES)) throw new Error(`unknown shape ${n} (known: ${REAL_SHAPE_NAMES.join(', ')})`);
    const options: WriteOptions = { dtype, seed: Number(values.seed) };
    if (values.layers !== undefined) options.layers = Number(values.layers);
    if (values['shard-mb'] !== undefined) options.shardBytes = Number(values['shard-mb']) * 2 ** 20;
    const dir = join(String(values.out), shapeFolderName(n as RealShapeName, options));
    const t = performance.now();
    writeRealShape(n as RealShapeName, dir, options);
    console.log(`${dir} (${((performance.now() - t) / 1000).toFixed(1)} s)`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    main();
  } catch (e) {
    console.error(`real-shapes: ${(e as Error).message}`);
    process.exit(2);
  }
}
