/**
 * Layer switches (self-speculation over one set of weights), in every graph variant: switching nothing off gives
 * exactly the same variant's logits without switches; switching sub-layers off gives what the float64 reference
 * computes with those sub-layers removed; and the cache after a skipping call plus compaction is the target's cache
 * exactly.
 */
import { describe, expect, it } from 'vitest';
import { chainBias, keepIndices, treeAttentionBias } from '../../engine/tree';
import { ortForNode } from '../../runtime/ort-node';
import { maxDiff } from '../../util/max-diff';
import { ModelRunner } from '../runner';
import { randomModel } from '../testing/random-model';
import { checkSwitches } from '../testing/switch-check';
import { GRAPH_VARIANTS } from './llama';

const ort = ortForNode();
const PROMPT = [3, 17, 42, 8, 25, 60, 1];
const LAYERS = 4;

const prefill = (tokens: number[]) => ({
  tokens,
  positions: tokens.map((_, i) => i),
  bias: chainBias(0, tokens.length),
  rows: tokens.map((_, i) => i),
});

describe.each(GRAPH_VARIANTS)('layer switches, %s graph', (graph) => {
  it('all on equals the same graph without switches; some off equals the float64 reference without them', async () => {
    const c = await checkSwitches(ort, 'wasm', graph);
    expect(c.canSkip).toEqual({ switched: true, plain: false });
    expect(c.allOn).toBe(0);
    expect(c.noneSkipped).toBe(0);
    expect(c.skipped).toBeLessThan(1e-4);
    expect(c.moved).toBeGreaterThan(1e-3); // it did skip something
  });

  it("the target's cache is unchanged after a skipping call and compaction", async () => {
    const { model } = randomModel({ num_hidden_layers: LAYERS });
    const runner = await ModelRunner.create(ort, model, { device: 'wasm', graph, layerSwitches: true });
    await runner.forward({ ...prefill(PROMPT), rows: [PROMPT.length - 1] });
    const before = await Promise.all(Array.from({ length: LAYERS }, (_, l) => runner.readCache(l)));
    const skip = new Uint8Array(2 * LAYERS);
    skip[1] = 1;
    skip[LAYERS + 1] = 1;
    // Two draft calls with layers off, then drop their slots; the next target call compacts first.
    await runner.forwardSkipping({ tokens: [5], positions: [7], bias: chainBias(7, 1), rows: [0] }, skip);
    await runner.forwardSkipping({ tokens: [9], positions: [8], bias: chainBias(8, 1), rows: [0] }, skip);
    runner.keep(keepIndices(7, []).slice(0, 7));
    await runner.forward({ tokens: [4], positions: [7], bias: treeAttentionBias(7, [-1]), rows: [0] });
    for (let l = 0; l < LAYERS; l++) {
      const after = await runner.readCache(l);
      expect(after.length).toBe(8);
      const { numKvHeads: kvh, headDim: hd } = model.config;
      for (let h = 0; h < kvh; h++) {
        const was = before[l] as Awaited<ReturnType<ModelRunner['readCache']>>;
        const a = after.key.subarray(h * 8 * hd, (h * 8 + 7) * hd);
        const b = was.key.subarray(h * 7 * hd, (h * 7 + 7) * hd);
        expect(maxDiff(a, b)).toBe(0);
      }
    }
    await runner.release();
  });

  it('refuses to skip the first or last layer, and a runner without switches refuses to skip at all', async () => {
    const { model } = randomModel({ num_hidden_layers: LAYERS });
    const switched = await ModelRunner.create(ort, model, { device: 'wasm', graph, layerSwitches: true });
    const first = new Uint8Array(2 * LAYERS);
    first[0] = 1;
    await expect(switched.forwardSkipping(prefill(PROMPT), first)).rejects.toThrow(/first and the last layer/);
    const plain = await ModelRunner.create(ort, model, { device: 'wasm', graph });
    await expect(plain.forwardSkipping(prefill(PROMPT), new Uint8Array(2 * LAYERS))).rejects.toThrow(
      /without layer switches/,
    );
    await switched.release();
    await plain.release();
  });
});
