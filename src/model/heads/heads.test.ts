/**
 * Draft heads in their published layouts: tiny random Medusa and EAGLE-3 heads written as their authors' code
 * writes them load, their graphs equal float64 references, and heads that do not fit the target are refused with a
 * line that names the folder and the cause.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { softmaxTop } from '../../engine/sampling';
import { ortForNode } from '../../runtime/ort-node';
import { maxDiff } from '../../util/max-diff';
import { parseSafetensors, type SafetensorsFile, writeSafetensors } from '../safetensors';
import { randomEagle3, randomMedusa } from '../testing/random-heads';
import { randomModel } from '../testing/random-model';
import { referenceEagle3, referenceMedusa } from '../testing/reference-heads';
import { type OpenedHeads, timeHeadsCall } from './index';
import { loadHeads } from './load';
import { Eagle3HeadRunner, embeddingRows, MedusaHeadsRunner } from './runner';

const ort = ortForNode();
const target = randomModel();
const cfg = target.model.config;

function folder(files: Record<string, Uint8Array>): string {
  const dir = mkdtempSync(join(tmpdir(), 'spec-heads-'));
  for (const [name, bytes] of Object.entries(files)) writeFileSync(join(dir, name), bytes);
  return dir;
}

/** A tensor's stored bytes. */
function rawBytes(st: SafetensorsFile, name: string): Uint8Array {
  const t = st.tensors.get(name) as { offset: number; byteLength: number; file: string };
  return st.bytes.slice(t.offset, t.offset + t.byteLength);
}

const rand = (n: number, seed: number) =>
  Float32Array.from({ length: n }, (_, i) => Math.sin(seed * 9301 + i * 49297) * 0.8);

describe('draft heads', () => {
  it('Medusa heads in the FasterDecoding/Medusa layout load and compute what the reference computes', async () => {
    const m = randomMedusa(cfg, 3, 1);
    const heads = await loadHeads(folder(m.files), cfg);
    expect(heads.kind).toBe('medusa');
    expect(heads.medusa).toEqual({ heads: 3, layers: 1 });
    const runner = await MedusaHeadsRunner.create(ort, heads, 'wasm', 'fp32');
    const hidden = rand(2 * cfg.hiddenSize, 1);
    const logits = await runner.predict(hidden);
    for (let r = 0; r < 2; r++) {
      const ref = referenceMedusa(
        m.weights,
        Float64Array.from(hidden.subarray(r * 32, (r + 1) * 32)),
        3,
        1,
        cfg.vocabSize,
      );
      ref.forEach((row, k) => {
        const at = (k * 2 + r) * cfg.vocabSize;
        expect(maxDiff(logits.subarray(at, at + cfg.vocabSize), row)).toBeLessThan(1e-4);
      });
    }
    // What drafting reads: each head's top 5 under its softmax, chosen in the graph, as the engine's JS picks them.
    const top = await runner.predictTop(hidden, 5);
    const js = softmaxTop(logits, cfg.vocabSize, 5);
    expect(Array.from(top.ids)).toEqual(Array.from(js.ids));
    expect(maxDiff(top.probs, js.probs)).toBeLessThan(1e-6);
    expect(top.probs.length).toBe(3 * 2 * 5);
    await expect(runner.predictTop(hidden, 0)).rejects.toThrow(/^Medusa heads: top 0 is not in \[1, /);
    await runner.release();
  });

  it('EAGLE-3 heads in the SafeAILab/EAGLE layout (a reduced draft vocabulary with d2t) match the reference, cache and tree rows included', async () => {
    const e = randomEagle3(cfg, 30);
    const heads = await loadHeads(folder(e.files), cfg);
    expect(heads.kind).toBe('eagle3');
    expect(heads.eagle3?.draftVocab).toBe(30);
    expect(Array.from(heads.eagle3?.draftToTarget.slice(0, 4) ?? [])).toEqual([0, 2, 4, 6]);
    const runner = await Eagle3HeadRunner.create(ort, heads, target.model, 'wasm', 'fp32');
    const d = cfg.hiddenSize;
    // Three real rows (target features), then in a second call two drafted siblings under the last real row.
    const tokens = [5, 9, 14];
    const features = tokens.map((_, i) => rand(3 * d, 10 + i));
    const real = await runner.forward({
      tokens,
      inputs: features.map((feature) => ({ feature })),
      positions: [0, 1, 2],
      bias: Float32Array.from({ length: 9 }, (_, k) => (k % 3 <= Math.floor(k / 3) ? 0 : -65504)),
      rows: [0, 1, 2],
    });
    const parent = real.out.subarray(2 * d, 3 * d);
    const drafted = await runner.forward({
      tokens: [7, 21],
      inputs: [{ drafted: parent }, { drafted: parent }],
      positions: [3, 3],
      bias: Float32Array.of(0, 0, 0, 0, -65504, 0, 0, 0, -65504, 0),
      rows: [0, 1],
    });
    const embed = (t: number) => Float64Array.from(embeddingRows(target.model, [t]));
    const rows = [
      ...tokens.map((t, i) => ({
        embed: embed(t),
        feature: Float64Array.from(features[i] as Float32Array),
        position: i,
      })),
      { embed: embed(7), drafted: Float64Array.from(parent), position: 3 },
      { embed: embed(21), drafted: Float64Array.from(parent), position: 3 },
    ];
    const ref = referenceEagle3(e.weights, cfg, 30, rows, (i, j) => (i < 3 ? j <= i : j < 3 || j === i));
    for (let r = 0; r < 3; r++) {
      expect(maxDiff(real.out.subarray(r * d, (r + 1) * d), ref.out[r] as Float64Array)).toBeLessThan(1e-4);
      expect(maxDiff(real.logits.subarray(r * 30, (r + 1) * 30), ref.logits[r] as Float64Array)).toBeLessThan(1e-4);
    }
    for (let r = 0; r < 2; r++) {
      expect(maxDiff(drafted.logits.subarray(r * 30, (r + 1) * 30), ref.logits[3 + r] as Float64Array)).toBeLessThan(
        1e-4,
      );
    }
    expect(runner.targetToken(3)).toBe(6);
    await runner.release();
  });

  it('refuses heads that do not fit, naming the folder and the cause', async () => {
    const error = (p: Promise<unknown>) =>
      p.then(
        () => 'loaded',
        (e: Error) => e.message,
      );
    const other = randomModel({ hidden_size: 48, num_attention_heads: 6, num_key_value_heads: 2 }).model.config;
    const wide = folder(randomMedusa(other).files);
    expect(await error(loadHeads(wide, cfg))).toMatch(
      new RegExp(`^heads model ${wide}: hidden size 48 does not match the target's 32`),
    );
    const bigVocab = randomModel({ vocab_size: 80 }).model.config;
    expect(await error(loadHeads(folder(randomMedusa(bigVocab).files), cfg))).toMatch(
      /vocabulary of 80 tokens does not match the target's 61/,
    );
    expect(await error(loadHeads(folder(randomEagle3(other).files), cfg))).toMatch(/hidden size 48 does not match/);
    // A draft vocabulary whose map sends two draft indices to one target token.
    const twice = folder(randomEagle3(cfg, 30, 7, (i) => (i === 5 ? 2 : 2 * i)).files);
    expect(await error(loadHeads(twice, cfg))).toMatch(
      new RegExp(`^heads model ${twice}: d2t maps draft index 5 to token 2, which an earlier draft index already has`),
    );
    expect(await error(loadHeads(folder({ 'config.json': new TextEncoder().encode('{}') }), cfg))).toMatch(
      /missing file: neither medusa_lm_head\.safetensors \(Medusa\) nor model\.safetensors \(EAGLE\)/,
    );
    const eagle12 = writeSafetensors([
      { name: 'fc.weight', dtype: 'F32', shape: [32, 64], data: new Uint8Array(32 * 64 * 4) },
      { name: 'layers.0.self_attn.q_proj.weight', dtype: 'F32', shape: [32, 32], data: new Uint8Array(32 * 32 * 4) },
    ]);
    expect(
      await error(
        loadHeads(folder({ 'config.json': new TextEncoder().encode('{}'), 'model.safetensors': eagle12 }), cfg),
      ),
    ).toMatch(/EAGLE-1\/2 heads .* only EAGLE-3 heads are supported/);
    const m = randomMedusa(cfg, 2, 1);
    const noProjection = writeSafetensors([
      { name: '0.0.linear.weight', dtype: 'F32', shape: [32, 32], data: new Uint8Array(32 * 32 * 4) },
      { name: '0.0.linear.bias', dtype: 'F32', shape: [32], data: new Uint8Array(32 * 4) },
    ]);
    expect(await error(loadHeads(folder({ ...m.files, 'medusa_lm_head.safetensors': noProjection }), cfg))).toMatch(
      /Medusa-2 heads are not supported yet/,
    );
    // A head missing in the middle ran the heads before it alone, and a count the config contradicts, without a word.
    const three = randomMedusa(cfg, 3, 1);
    const parsed = parseSafetensors('m', three.files['medusa_lm_head.safetensors'] as Uint8Array);
    const withoutHead1 = writeSafetensors(
      [...parsed.tensors.keys()]
        .filter((n) => !n.startsWith('1.'))
        .map((n) => {
          const t = parsed.tensors.get(n) as { dtype: 'F16'; shape: number[] };
          return { name: n, dtype: t.dtype, shape: t.shape, data: rawBytes(parsed, n) };
        }),
    );
    expect(await error(loadHeads(folder({ ...three.files, 'medusa_lm_head.safetensors': withoutHead1 }), cfg))).toMatch(
      /: head 1's tensors \(1\.0\.linear\.weight\) are missing, where head 2's are there$/,
    );
    const config = (files: Record<string, Uint8Array>) => JSON.parse(new TextDecoder().decode(files['config.json']));
    const withConfig = (files: Record<string, Uint8Array>, c: object) =>
      folder({ ...files, 'config.json': new TextEncoder().encode(JSON.stringify(c)) });
    // The count is the tensors' (upstream's configs understate it, and its loader overrides them).
    expect(
      (await loadHeads(withConfig(three.files, { ...config(three.files), medusa_num_heads: 2 }), cfg)).medusa?.heads,
    ).toBe(3);
    // EAGLE-3: values the target's config is refused for were replaced by defaults without a word, and the layers
    // the head was trained on were not read at all.
    const deep = randomModel({ num_hidden_layers: 8 }).model.config;
    const e = randomEagle3(deep);
    const eagleWith = (extra: object) => loadHeads(withConfig(e.files, { ...config(e.files), ...extra }), deep);
    expect(await error(eagleWith({ rope_theta: -5 }))).toMatch(/"rope_theta" must be a positive number, found -5$/);
    expect(await error(eagleWith({ rms_norm_eps: 'x' }))).toMatch(
      /"rms_norm_eps" must be a positive number, found "x"$/,
    );
    expect(await error(eagleWith({ rope_parameters: { rope_theta: 0 } }))).toMatch(/"rope_theta" must be a positive/);
    expect(await error(eagleWith({ eagle_config: { eagle_aux_hidden_state_layer_ids: [1, 5, 7] } }))).toMatch(
      /eagle_aux_hidden_state_layer_ids \[1,5,7\]: the head was trained on other layers than those fed to it \(the inputs of layers 2, 4, 5: outputs 1, 3, 4\), which is not supported yet$/,
    );
    // The layers fed, numbered as SpecForge writes them (outputs) or as inputs; null as absent.
    for (const ids of [[1, 3, 4], [2, 4, 5], null])
      expect((await eagleWith({ eagle_config: { eagle_aux_hidden_state_layer_ids: ids } })).kind).toBe('eagle3');
    // Absent, upstream's defaults (tools/heads_layouts.md); transformers 5's rope_parameters read.
    const plain = config(e.files);
    delete plain.rope_theta;
    delete plain.rms_norm_eps;
    const loaded = await loadHeads(withConfig(e.files, plain), deep);
    expect([loaded.eagle3?.ropeTheta, loaded.eagle3?.rmsNormEps]).toEqual([10000, 1e-6]);
    const v5 = await loadHeads(withConfig(e.files, { ...plain, rope_parameters: { rope_theta: 500000 } }), deep);
    expect(v5.eagle3?.ropeTheta).toBe(500000);
    // The library given something other than a folder name.
    expect(await error(loadHeads(42 as unknown as string, cfg))).toBe('heads: no folder or hub id given');
  });
});

describe('timing a heads call', () => {
  it('times each call right after the given one (a target call, as in a round), which it leaves out', async () => {
    const order: string[] = [];
    const heads = {
      medusa: {
        predictTop: async () => {
          order.push('heads');
          return { k: 1, probs: new Float32Array(1), ids: new Int32Array(1) };
        },
      },
    } as unknown as OpenedHeads;
    const ms = await timeHeadsCall(heads, 4, 3, async () => {
      order.push('target');
      await new Promise((r) => setTimeout(r, 30));
    });
    expect(order).toEqual(['target', 'heads', 'target', 'heads', 'target', 'heads', 'target', 'heads']);
    expect(ms).toBeLessThan(20);
  });
});
