/**
 * The bundled target's hidden-state outputs and the bundled heads against PyTorch (tests/fixtures/heads-reference.json,
 * written by tools/make_heads_fixture.py from the exported weights): the target's final-normed state (Medusa's
 * input) and the three layers' inputs EAGLE-3 reads, for a prefill and a tree call; Medusa's heads on the prefill's
 * last state; the EAGLE-3 head over the prefill's twelve (feature, next token) rows and then a tree call of two
 * siblings fed by its own output. What the engine drafts with is what the heads were trained to compute.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MASKED } from '../../engine/lm';
import { topK } from '../../engine/sampling';
import { chainBias } from '../../engine/tree';
import { ortForNode } from '../../runtime/ort-node';
import { maxDiff } from '../../util/max-diff';
import { buildEagle3Graph, buildMedusaGraph } from '../graph/heads';
import { CONVERTED_WEIGHTS } from '../graph/weights';
import { loadModel } from '../load';
import { ModelRunner } from '../runner';
import { loadHeads } from './load';
import { Eagle3HeadRunner, MedusaHeadsRunner } from './runner';

interface Blob {
  shape: number[];
  f32le_base64: string;
}
const f32 = (b: Blob) => new Float32Array(Uint8Array.from(Buffer.from(b.f32le_base64, 'base64')).buffer);
const fx = JSON.parse(readFileSync('tests/fixtures/heads-reference.json', 'utf8'));
const ort = ortForNode();

const visibleBias = (visible: number[][]) => Float32Array.from(visible.flat(), (v) => (v ? 0 : MASKED));

describe('hidden states and heads against PyTorch (bundled target and heads, fp32)', () => {
  for (const kind of ['last', 'eagle3'] as const) {
    it(`the target's ${kind === 'last' ? 'final-normed state' : 'EAGLE-3 features (inputs of layers 2, L/2, L-3)'}: prefill and tree call`, async () => {
      const model = await loadModel(fx.target.model_dir, {});
      const r = await ModelRunner.create(ort, model, { device: 'wasm', graph: 'plain', hidden: kind });
      try {
        const key = kind === 'last' ? 'hidden_last' : 'hidden_eagle3';
        const p = fx.target.prefill;
        await r.forward({
          tokens: p.input_ids,
          positions: p.position_ids,
          bias: chainBias(0, p.rows),
          rows: [p.rows - 1],
          hiddenRows: Array.from({ length: p.rows }, (_, i) => i),
        });
        expect(maxDiff(r.lastHidden(), f32(p[key]))).toBeLessThan(2e-3);
        const t = fx.target.tree;
        await r.forward({
          tokens: t.input_ids,
          positions: t.position_ids,
          bias: visibleBias(t.attention_visible),
          rows: [0],
          hiddenRows: Array.from({ length: t.rows }, (_, i) => i),
        });
        expect(maxDiff(r.lastHidden(), f32(t[key]))).toBeLessThan(2e-3);
      } finally {
        await r.release();
      }
    });
  }

  it("Medusa heads on the prefill's last state: every head's logits", async () => {
    const model = await loadModel(fx.target.model_dir, {});
    const heads = await loadHeads(fx.medusa.model_dir, model.config);
    const m = await MedusaHeadsRunner.create(ort, heads, 'wasm', 'fp32');
    try {
      const d = fx.target.hidden_size;
      const h = f32(fx.target.prefill.hidden_last).slice((fx.target.prefill.rows - 1) * d, fx.target.prefill.rows * d);
      const logits = await m.predict(h);
      expect(maxDiff(logits, f32(fx.medusa.logits))).toBeLessThan(2e-3);
      const V = m.vocab;
      for (let k = 0; k < fx.medusa.num_heads; k++)
        expect(topK(logits.subarray(k * V, (k + 1) * V), 1)).toEqual(fx.medusa.top5[k].slice(0, 1));
    } finally {
      await m.release();
    }
  });

  it.each(['fused', 'plain'] as const)(
    'the EAGLE-3 head (%s graph): a prefill of (feature, next token) rows, then two sibling rows fed by its own output',
    async (form) => {
      const model = await loadModel(fx.target.model_dir, {});
      const heads = await loadHeads(fx.eagle.model_dir, model.config);
      const e = await Eagle3HeadRunner.create(ort, heads, model, 'wasm', 'fp32', form);
      try {
        const d = e.hiddenSize;
        const p = fx.eagle.prefill;
        const features = f32(fx.target.prefill.hidden_eagle3);
        const P = p.input_ids.length;
        const pre = await e.forward({
          tokens: p.input_ids,
          inputs: Array.from({ length: P }, (_, j) => ({ feature: features.slice(j * 3 * d, (j + 1) * 3 * d) })),
          positions: p.position_ids,
          bias: chainBias(0, P),
          rows: [p.logits_row],
        });
        expect(maxDiff(pre.out, f32(p.out))).toBeLessThan(2e-3);
        expect(maxDiff(pre.logits, f32(p.logits))).toBeLessThan(2e-3);
        const t = fx.eagle.tree;
        const parentOut = pre.out.slice((P - 1) * d, P * d);
        const tree = await e.forward({
          tokens: t.input_ids,
          inputs: t.input_ids.map(() => ({ drafted: parentOut })),
          positions: t.position_ids,
          bias: visibleBias(t.attention_visible),
          rows: [0, 1],
        });
        expect(maxDiff(tree.out, f32(t.out))).toBeLessThan(2e-3);
        expect(maxDiff(tree.logits, f32(t.logits))).toBeLessThan(2e-3);
        // The best five draft tokens of every row, mapped to the target's vocabulary by d2t, are PyTorch's.
        const V = e.draftVocab;
        const mapped = (row: Float32Array) => topK(row, 5).map((i) => e.targetToken(i));
        expect(mapped(pre.logits)).toEqual(p.top5_target_ids);
        expect([0, 1].map((r) => mapped(tree.logits.subarray(r * V, (r + 1) * V)))).toEqual(t.top5_target_ids);
      } finally {
        await e.release();
      }
    },
  );
});

describe('the heads on the wasm EP take their fp16 files as they are', () => {
  it.each(['medusa', 'eagle3'] as const)('%s: nothing converted in JavaScript (folded Casts)', async (kind) => {
    const model = await loadModel(fx.target.model_dir, {});
    const heads = await loadHeads(fx[kind === 'medusa' ? 'medusa' : 'eagle'].model_dir, model.config);
    const build = (foldHalf: boolean) =>
      kind === 'medusa'
        ? buildMedusaGraph(heads, 'fp32', foldHalf)
        : buildEagle3Graph(heads, 'fp32', 'fused', foldHalf);
    const files = [...heads.files.keys()];
    expect(build(false).externalData.map((e) => e.path)).toContain(CONVERTED_WEIGHTS);
    const folded = build(true).externalData.map((e) => e.path);
    expect(folded).not.toContain(CONVERTED_WEIGHTS);
    for (const path of folded) expect(files).toContain(path);
  });
});
