/**
 * The TypeScript graph against PyTorch: reference logits written by tools/make_fixture.py from the exported
 * weights of the bundled pair (an independent implementation), for a prefill and a tree call.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { chainBias, treeAttentionBias } from '../engine/tree';
import { ortForNode } from '../runtime/ort-node';
import { maxDiff } from '../util/max-diff';
import { loadModel } from './load';
import { ModelRunner } from './runner';

interface Call {
  input_ids: number[];
  position_ids: number[];
  logits: number[];
  argmax: number[];
}
interface Fixture {
  models: {
    name: string;
    model_dir: string;
    vocab_size: number;
    prefill: Call;
    tree: Call & { parents: number[]; past_length: number };
  }[];
}
interface TokenizerCases {
  cases: { text: string; ids: number[] }[];
}

const fixture = JSON.parse(readFileSync('tests/fixtures/reference-logits.json', 'utf8')) as Fixture;
const tokenizerCases = JSON.parse(readFileSync('tests/fixtures/tokenizer-cases.json', 'utf8')) as TokenizerCases;

describe('bundled models vs PyTorch reference logits (fp32, wasm EP)', () => {
  for (const ref of fixture.models) {
    it(`${ref.name}: prefill and a tree call match to 1e-4`, async () => {
      const model = await loadModel(ref.model_dir);
      const runner = await ModelRunner.create(ortForNode(), model, { device: 'wasm', compute: 'fp32' });
      const p = ref.prefill;
      const prefill = await runner.forward({
        tokens: p.input_ids,
        positions: p.position_ids,
        bias: chainBias(0, p.input_ids.length),
        rows: p.input_ids.map((_, i) => i),
      });
      expect(maxDiff(prefill, p.logits)).toBeLessThan(1e-4);
      const t = ref.tree;
      expect(runner.length).toBe(t.past_length);
      const tree = await runner.forward({
        tokens: t.input_ids,
        positions: t.position_ids,
        bias: treeAttentionBias(t.past_length, t.parents),
        rows: t.input_ids.map((_, i) => i),
      });
      expect(maxDiff(tree, t.logits)).toBeLessThan(1e-4);
      await runner.release();
    });
  }
});

describe('bundled tokenizer through transformers.js (offline)', () => {
  it('encodes like the Python BPE that trained it, and decodes back to the text', async () => {
    const model = await loadModel(fixture.models[0]?.model_dir as string);
    for (const c of tokenizerCases.cases) {
      expect(model.tokenizer.encode(c.text)).toEqual(c.ids);
      expect(model.tokenizer.decode(c.ids)).toBe(c.text);
    }
  });
});
