import { mkdtempSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ortForNode } from '../runtime/ort-node';
import { parseLlamaConfig } from './config';
import { f16ToF32, f32ToBf16, f32ToF16 } from './convert';
import { ModelLoadError } from './errors';
import { openModel, openPair } from './index';
import { assertSameVocabulary, loadModel } from './load';
import { parseSafetensors, writeSafetensors } from './safetensors';
import { randomModel, TINY_CONFIG } from './testing/random-model';

const BUNDLED_TARGET = 'public/models/austen-target';

/**
 * A model folder on disk: a random tiny checkpoint with the bundled tokenizer (its vocab fits in 4096), and
 * config.json overridden by `config` (which may then disagree with the weights, on purpose).
 */
function folder(config: Record<string, unknown> = {}, mutate?: (dir: string) => void): string {
  const dir = mkdtempSync(join(tmpdir(), 'spec-model-'));
  const base = { ...TINY_CONFIG, vocab_size: 4096 };
  const { safetensors } = randomModel(base);
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...base, ...config }));
  writeFileSync(join(dir, 'model.safetensors'), safetensors);
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) {
    writeFileSync(join(dir, f), readFileSync(join(BUNDLED_TARGET, f)));
  }
  mutate?.(dir);
  return dir;
}

async function loadError(spec: string): Promise<string> {
  try {
    await loadModel(spec);
  } catch (e) {
    expect(e).toBeInstanceOf(ModelLoadError);
    return (e as Error).message;
  }
  throw new Error(`loading ${spec} did not fail`);
}

describe('safetensors', () => {
  it('round-trips F32/F16/BF16 and reads tensors in place', () => {
    const values = [0, 1, -2.5, 65504, 1e-7, 1.2345];
    const f16 = Uint16Array.from(values, f32ToF16);
    expect(Array.from(f16, f16ToF32).map((v) => Number(v.toPrecision(3)))).toEqual([0, 1, -2.5, 65500, 1.19e-7, 1.23]);
    const bytes = writeSafetensors([
      { name: 'a', dtype: 'F16', shape: [2, 3], data: new Uint8Array(f16.buffer) },
      { name: 'b', dtype: 'BF16', shape: [1], data: new Uint8Array(Uint16Array.of(f32ToBf16(1.5)).buffer) },
    ]);
    const st = parseSafetensors('x.safetensors', bytes);
    expect(st.tensors.get('a')).toMatchObject({ dtype: 'F16', shape: [2, 3], byteLength: 12 });
    expect(st.tensors.get('b')?.offset).toBe((st.tensors.get('a')?.offset as number) + 12);
  });

  it('names a truncated file', () => {
    const bytes = writeSafetensors([{ name: 'w', dtype: 'F32', shape: [4], data: new Uint8Array(16) }]);
    expect(() => parseSafetensors('model.safetensors', bytes.subarray(0, bytes.length - 3))).toThrow(
      /model\.safetensors: truncated safetensors file \(tensor w ends at byte/,
    );
    expect(() => parseSafetensors('model.safetensors', bytes.subarray(0, 20))).toThrow(
      /truncated safetensors file \(header/,
    );
    expect(() => parseSafetensors('model.safetensors', bytes.subarray(0, 4))).toThrow(/truncated/);
  });

  it('names a corrupt header length as corrupt, not as a truncated file of absurd size', () => {
    const bytes = writeSafetensors([{ name: 'w', dtype: 'F32', shape: [4], data: new Uint8Array(16) }]);
    const broken = Uint8Array.from(bytes);
    broken.set([0x7b, 0x22, 0x5f, 0x5f, 0x6d, 0x65, 0x74, 0x61], 0); // JSON text where the length should be
    expect(() => parseSafetensors('model.safetensors', broken)).toThrow(
      /model\.safetensors: corrupt safetensors header \(its length field says \d+ bytes; the file has \d+\)/,
    );
  });
});

describe('config.json', () => {
  it('names an unsupported model_type', () => {
    expect(() => parseLlamaConfig({ ...TINY_CONFIG, model_type: 'gpt2' })).toThrow(/unsupported model_type "gpt2"/);
  });

  it('reads Qwen2 biases, GQA, head_dim and eos ids', () => {
    const c = parseLlamaConfig({ ...TINY_CONFIG, model_type: 'qwen2', eos_token_id: [3, 4] });
    expect(c).toMatchObject({ qkvBias: true, numKvHeads: 2, headDim: 8, eosTokenIds: [3, 4] });
  });

  it("reads transformers 5's rope_parameters as the top-level rope_theta and rope_scaling", () => {
    const scaling = { factor: 32, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 8192 };
    const v4 = parseLlamaConfig({
      ...TINY_CONFIG,
      rope_theta: 500000,
      rope_scaling: { rope_type: 'llama3', ...scaling },
    });
    const v5 = parseLlamaConfig({
      ...TINY_CONFIG,
      rope_parameters: { rope_type: 'llama3', rope_theta: 500000, ...scaling },
    });
    expect(v5).toEqual(v4);
    expect(v5.ropeTheta).toBe(500000);
    const plain = parseLlamaConfig({ ...TINY_CONFIG, rope_parameters: { rope_type: 'default', rope_theta: 1e6 } });
    expect(plain).toMatchObject({ ropeTheta: 1e6, ropeScaling: null });
  });

  it('refuses biases it would not apply: Llama attention_bias (o_proj too) and mlp_bias', () => {
    expect(() => parseLlamaConfig({ ...TINY_CONFIG, attention_bias: true })).toThrow(
      /attention_bias true \(biases on q, k, v and o_proj\) is not supported/,
    );
    expect(() => parseLlamaConfig({ ...TINY_CONFIG, mlp_bias: true })).toThrow(/mlp_bias true .* is not supported/);
    expect(parseLlamaConfig({ ...TINY_CONFIG, attention_bias: false, mlp_bias: false }).qkvBias).toBe(false);
  });
});

describe('loadModel: a model folder from disk', () => {
  it('loads config, weights and tokenizer, and builds a runnable model', async () => {
    const model = await loadModel(folder());
    expect(model.config.numLayers).toBe(2);
    expect(model.weights.size).toBe(2 * 9 + 2);
    expect(model.tokenizer.decode(model.tokenizer.encode('Mr. Darcy bowed.'))).toBe('Mr. Darcy bowed.');
  });

  it('loads a sharded checkpoint through model.safetensors.index.json', async () => {
    const dir = folder({}, (d) => {
      const st = parseSafetensors('model.safetensors', readFileSync(join(d, 'model.safetensors')));
      const names = [...st.tensors.keys()];
      const shards = [names.slice(0, 7), names.slice(7)];
      const weightMap: Record<string, string> = {};
      shards.forEach((shard, i) => {
        const file = `model-0000${i + 1}-of-00002.safetensors`;
        const tensors = shard.map((name) => {
          const t = st.tensors.get(name) as NonNullable<ReturnType<typeof st.tensors.get>>;
          weightMap[name] = file;
          return { name, dtype: t.dtype, shape: t.shape, data: st.bytes.slice(t.offset, t.offset + t.byteLength) };
        });
        writeFileSync(join(d, file), writeSafetensors(tensors));
      });
      writeFileSync(join(d, 'model.safetensors.index.json'), JSON.stringify({ weight_map: weightMap }));
      unlinkSync(join(d, 'model.safetensors'));
    });
    const model = await loadModel(dir);
    expect(model.files.size).toBe(2);
    expect(model.weights.size).toBe(20);
  });

  it('reports progress per file', async () => {
    const seen: string[] = [];
    await loadModel(folder(), { onProgress: (p) => seen.push(`${p.status}:${p.file}`) });
    expect(seen).toContain('initiate:model.safetensors');
    expect(seen).toContain('done:model.safetensors');
  });

  it('errors name the cause', async () => {
    const nowhere = join(tmpdir(), 'no-such-model-folder');
    expect(await loadError(nowhere)).toBe(`${nowhere}: no such folder`);
    expect(await loadError('package.json')).toBe('package.json: a file, not a model folder');
    expect(await loadError(folder({}, (d) => unlinkSync(join(d, 'config.json'))))).toMatch(
      /^missing file: config\.json not found in /,
    );
    // A config saying fewer layers than the weights hold ran on the first ones, silently.
    expect(await loadError(folder({ num_hidden_layers: 1 }))).toMatch(
      /config\/weights mismatch: the weights hold 2 layers \(model\.layers\.0-1\) but config\.json says num_hidden_layers 1/,
    );
    expect(await loadError(folder({ model_type: 'gpt_neox' }))).toMatch(/unsupported model_type "gpt_neox"/);
    const truncated = folder({}, (d) => {
      const bytes = readFileSync(join(d, 'model.safetensors'));
      writeFileSync(join(d, 'model.safetensors'), bytes.subarray(0, bytes.length - 100));
    });
    expect(await loadError(truncated)).toMatch(/model\.safetensors: truncated safetensors file/);
    const mismatch = folder({ intermediate_size: 64 });
    expect(await loadError(mismatch)).toMatch(
      /config\/weights mismatch: model\.layers\.0\.mlp\.gate_proj\.weight has shape \[48, 32\] but config\.json implies \[64, 32\]/,
    );
    // Bias tensors the config does not name would be dropped: Qwen2's q/k/v biases under a Llama config.
    const biased = folder({}, (d) =>
      writeFileSync(
        join(d, 'model.safetensors'),
        randomModel({ ...TINY_CONFIG, vocab_size: 4096, model_type: 'qwen2' }).safetensors,
      ),
    );
    expect(await loadError(biased)).toMatch(
      /weights: tensor model\.layers\.\d+\.self_attn\.[qkv]_proj\.bias is a bias this model's config does not apply/,
    );
    const missingTokenizer = folder({}, (d) => writeFileSync(join(d, 'tokenizer.json'), '{ not json'));
    expect(await loadError(missingTokenizer)).toMatch(/tokenizer\.json in .* is not valid JSON/);
    // V8's message quotes the file, line breaks and all: still one line.
    const twoLines = folder({}, (d) => writeFileSync(join(d, 'tokenizer.json'), 'not json {\n'));
    expect(await loadError(twoLines)).toMatch(/^[^\n]*tokenizer\.json in .* is not valid JSON[^\n]*$/);
    // JSON, but not an object: a JavaScript message ("Cannot use 'in' operator"), or blamed on another file.
    const nullConfig = folder({}, (d) => writeFileSync(join(d, 'config.json'), 'null'));
    expect(await loadError(nullConfig)).toMatch(/config\.json in .* is not a JSON object \(it holds null\)$/);
    const listConfig = folder({}, (d) => writeFileSync(join(d, 'tokenizer_config.json'), '[1,2]'));
    expect(await loadError(listConfig)).toMatch(
      /tokenizer_config\.json in .* is not a JSON object \(it holds a list\)$/,
    );
  });

  it('shares one tokenizer between folders whose tokenizer files are the same, and only those', async () => {
    const target = await loadModel(BUNDLED_TARGET);
    const draft = await loadModel('public/models/austen-draft');
    expect(draft.tokenizer).toBe(target.tokenizer);
    expect(draft.vocab).toBe(target.vocab);
    const copy = await loadModel(folder());
    expect(copy.tokenizer).toBe(target.tokenizer);
    // Another tokenizer_config.json (here: model_max_length) gets a tokenizer of its own.
    const config = JSON.parse(readFileSync(join(BUNDLED_TARGET, 'tokenizer_config.json'), 'utf8'));
    const other = await loadModel(
      folder({}, (d) =>
        writeFileSync(join(d, 'tokenizer_config.json'), JSON.stringify({ ...config, model_max_length: 512 })),
      ),
    );
    expect(other.tokenizer).not.toBe(target.tokenizer);
    expect(other.tokenizer.encode('It is a truth')).toEqual(target.tokenizer.encode('It is a truth'));
    // A tokenizer.json that differs by a byte (a trailing newline) is made again too.
    const text = readFileSync(join(BUNDLED_TARGET, 'tokenizer.json'), 'utf8');
    const newline = await loadModel(folder({}, (d) => writeFileSync(join(d, 'tokenizer.json'), `${text}\n`)));
    expect(newline.tokenizer).not.toBe(target.tokenizer);
    expect(newline.tokenizer.encode('It is a truth')).toEqual(target.tokenizer.encode('It is a truth'));
  });

  it('says whether the target or the draft is broken', async () => {
    const broken = folder({}, (d) => writeFileSync(join(d, 'model.safetensors'), new Uint8Array(4)));
    const good = folder();
    const ort = ortForNode();
    const fail = (p: Promise<unknown>) =>
      p.then(
        () => '',
        (e: Error) => e.message,
      );
    expect(await fail(openPair(ort, { target: good, draft: broken }, { device: 'wasm' }))).toMatch(
      new RegExp(`^draft model ${broken}: model\\.safetensors: truncated`),
    );
    expect(await fail(openPair(ort, { target: broken, draft: good }, { device: 'wasm' }))).toMatch(/^target model /);
    expect(await fail(openModel(ort, broken, { device: 'wasm' }))).toMatch(/^target model /);
    // A loader error that names the folder itself is not prefixed with it a second time.
    const mismatch = folder({ intermediate_size: 64 });
    expect(await fail(openPair(ort, { target: good, draft: mismatch }, { device: 'wasm' }))).toMatch(
      new RegExp(`^draft model ${mismatch}: config/weights mismatch`),
    );
  });

  it('refuses a device or graph variant that is not one before loading anything, naming the option', async () => {
    const ort = ortForNode();
    const fail = (options: Record<string, unknown>) =>
      openPair(ort, { target: BUNDLED_TARGET, draft: 'public/models/austen-draft' }, options as never).then(
        () => '',
        (e: Error) => e.message,
      );
    expect(await fail({ device: 'auto' })).toMatch(/^device "auto" is not one of wasm, webgpu \(/);
    expect(await fail({})).toMatch(/^device "undefined" is not one of wasm, webgpu/);
    expect(await fail({ device: 'wasm', graph: 'weird' })).toBe(
      'graph "weird" is not one of plain, fused, hybrid, auto',
    );
    // An option's error, not the model's: no model name on it.
    expect(await fail({ device: 'wasm', precision: 'int3' })).toBe(
      'precision "int3" is not one of fp32, fp16, int4, int8, auto',
    );
    expect(await fail({ device: 'wasm', compute: 'fp8' })).toBe('compute "fp8" is not one of fp32, fp16, auto');
    expect(await fail({ device: 'wasm', headsDevice: 'cpu' })).toBe(
      `headsDevice "cpu" (the heads' device) is not one of auto, wasm, webgpu`,
    );
    await expect(openModel(ort, BUNDLED_TARGET, { device: 'cpu' as never })).rejects.toThrow(/^device "cpu"/);
  });

  it('a heads folder given as a model is named as heads, and a config without model_type says so', async () => {
    expect(await loadError('public/models/austen-medusa')).toMatch(
      /this folder holds Medusa heads \(config\.json has medusa_num_heads\), not a language model: load it as heads$/,
    );
    expect(await loadError('public/models/austen-eagle3')).toMatch(
      /this folder holds an EAGLE-3 head \(config\.json has draft_vocab_size\), not a language model/,
    );
    expect(await loadError(folder({ model_type: undefined }))).toMatch(/config\.json has no model_type \(supported: /);
    await expect(openModel(ortForNode(), '', { device: 'wasm' })).rejects.toThrow(
      /^target model: no folder or hub id given$/,
    );
  });

  it('refuses a draft whose vocabulary differs from the target', async () => {
    const target = await loadModel(folder());
    const other = await loadModel(
      folder({}, (d) => {
        const tok = JSON.parse(readFileSync(join(d, 'tokenizer.json'), 'utf8'));
        const vocab = tok.model.vocab as Record<string, number>;
        const [a, b] = Object.keys(vocab).slice(300, 302) as [string, string];
        [vocab[a], vocab[b]] = [vocab[b] as number, vocab[a] as number];
        writeFileSync(join(d, 'tokenizer.json'), JSON.stringify(tok));
      }),
    );
    expect(() => assertSameVocabulary(target, other)).toThrow(/vocabulary mismatch/);
    expect(() => assertSameVocabulary(target, target)).not.toThrow();
  });
});
