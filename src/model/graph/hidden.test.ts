/**
 * Hidden-state outputs for draft heads equal the float64 reference: the final-normed state (Medusa, EAGLE-1/2) and
 * EAGLE-3's inputs of layers 2, L/2 and L-3, for the rows asked for, in a prefill and in a tree call; plain and
 * fused graphs alike. A graph built without them has none.
 */
import { describe, expect, it } from 'vitest';
import { chainBias, pathTo, positionIds, treeAttentionBias } from '../../engine/tree';
import { ortForNode } from '../../runtime/ort-node';
import { maxDiff } from '../../util/max-diff';
import { ModelRunner } from '../runner';
import { randomModel } from '../testing/random-model';
import { referenceForward } from '../testing/reference-llama';
import { eagle3Layers } from './llama';

const ort = ortForNode();
const PROMPT = [3, 17, 42, 8, 25, 60, 1];
const TREE = [-1, 0, 0, 1, 2];
const TREE_TOKENS = [9, 4, 33, 12, 5];

/** The reference's hidden states of every position of `seq` (a plain causal sequence). */
function reference(model: ReturnType<typeof randomModel>, seq: number[]) {
  const collect = { layerInputs: [] as Float64Array[][], final: [] as Float64Array[] };
  referenceForward(
    model.model.config,
    model.weights,
    seq,
    seq.map((_, i) => i),
    (i, j) => j <= i,
    {},
    collect,
  );
  return collect;
}

describe('hidden-state outputs', () => {
  for (const graph of ['plain', 'fused'] as const) {
    it(`final-normed and EAGLE-3 states match the float64 reference, prefill and tree call (${graph})`, async () => {
      const m = randomModel({ num_hidden_layers: 6 });
      const H = m.model.config.hiddenSize;
      const layers = eagle3Layers(6);
      for (const hidden of ['last', 'eagle3'] as const) {
        const runner = await ModelRunner.create(ort, m.model, { device: 'wasm', graph, hidden });
        expect(runner.hiddenWidth).toBe(hidden === 'eagle3' ? 3 * H : H);
        // Prefill: hidden rows 1, 4 and 6, logits only for the last row.
        await runner.forward({
          tokens: PROMPT,
          positions: PROMPT.map((_, i) => i),
          bias: chainBias(0, PROMPT.length),
          rows: [PROMPT.length - 1],
          hiddenRows: [1, 4, 6],
        });
        const ref = reference(m, PROMPT);
        const want = (pos: number, ctx: ReturnType<typeof reference>) =>
          hidden === 'last'
            ? (ctx.final[pos] as Float64Array)
            : Float64Array.from(layers.flatMap((l) => Array.from(ctx.layerInputs[l]?.[pos] as Float64Array)));
        const got = runner.lastHidden();
        [1, 4, 6].forEach((pos, r) => {
          const w = runner.hiddenWidth;
          expect(maxDiff(got.subarray(r * w, (r + 1) * w), want(pos, ref))).toBeLessThan(1e-4);
        });
        // A tree call over the cached prompt: every node's state is its root-to-node path's.
        await runner.forward({
          tokens: TREE_TOKENS,
          positions: positionIds(PROMPT.length, TREE),
          bias: treeAttentionBias(PROMPT.length, TREE),
          rows: [0],
          hiddenRows: TREE.map((_, i) => i),
        });
        const tree = runner.lastHidden();
        // A call that asks for no hidden rows gets none (plain decoding on an engine loaded with heads).
        const bytes = runner.bytesRead;
        runner.keep(Array.from({ length: PROMPT.length }, (_, i) => i));
        await runner.forward({ tokens: [3], positions: [PROMPT.length], bias: chainBias(PROMPT.length, 1), rows: [0] });
        expect(runner.lastHidden()).toHaveLength(0);
        expect(runner.bytesRead - bytes).toBe(4 * m.model.config.vocabSize);
        TREE.forEach((_, node) => {
          const seq = [...PROMPT, ...pathTo(TREE, node).map((n) => TREE_TOKENS[n] as number)];
          const w = runner.hiddenWidth;
          expect(
            maxDiff(tree.subarray(node * w, (node + 1) * w), want(seq.length - 1, reference(m, seq))),
          ).toBeLessThan(1e-4);
        });
        await runner.release();
      }
    });
  }

  it("EAGLE-3 reads the inputs of layers 2, L/2 and L-3 (SafeAILab/EAGLE's modeling_llama_kv.py)", () => {
    expect(eagle3Layers(12)).toEqual([2, 6, 9]);
    expect(eagle3Layers(32)).toEqual([2, 16, 29]);
  });

  it('a graph built without hidden states has none', async () => {
    const runner = await ModelRunner.create(ort, randomModel().model, { device: 'wasm' });
    expect(runner.hiddenKind).toBeUndefined();
    expect(() => runner.lastHidden()).toThrow(/without hidden-state outputs/);
    await runner.release();
  });
});
