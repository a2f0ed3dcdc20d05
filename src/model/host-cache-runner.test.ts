import { describe, expect, it } from 'vitest';
import { chainBias, positionIds, treeAttentionBias } from '../engine/tree';
import { ortForNode } from '../runtime/ort-node';
import { maxDiff } from '../util/max-diff';
import { ModelRunner } from './runner';
import { randomModel } from './testing/random-model';

const ort = ortForNode();

/** A branching tree of 7 nodes: root 0; 1 and 2 under it; 3 under 1; 4 and 5 under 2; 6 under 5. */
const PARENTS = [-1, 0, 0, 1, 2, 2, 5];
/** The accepted path each round: root, 2, 5, 6 (so three slots of the tree move down over rejected ones). */
const PATH = [0, 2, 5, 6];

interface Session {
  inputNames: readonly string[];
  outputNames: readonly string[];
}

describe('the wasm KV cache kept in JavaScript (hostCache) against the cache passed through the graph', () => {
  for (const graph of ['plain', 'hybrid'] as const) {
    it(`${graph}: tree calls and compaction over 80 slots give the same logits and the same cache`, async () => {
      const { model } = randomModel({ model_type: 'qwen2', num_key_value_heads: 2, num_hidden_layers: 3 });
      const host = await ModelRunner.create(ort, model, { device: 'wasm', graph, layerSwitches: true });
      const through = await ModelRunner.create(ort, model, {
        device: 'wasm',
        graph,
        hostCache: false,
        layerSwitches: true,
      });
      expect([host.graph.hostCache, through.graph.hostCache]).toEqual([true, false]);
      // Nothing of the cache crosses into or out of the host runner's graph but the past and this call's rows.
      const names = (r: ModelRunner) => (r as unknown as { session: Session }).session;
      expect(names(host).outputNames.filter((n) => /^present\./.test(n))).toEqual([]);
      expect(names(host).outputNames.filter((n) => n.startsWith('new'))).toEqual(['new_kv']);
      expect(names(host).inputNames).not.toContain('keep_indices');
      expect(names(through).outputNames).toContain('present.2.value');

      const both = async (input: Parameters<ModelRunner['forward']>[0], skip?: Uint8Array) => {
        const a = skip ? await host.forwardSkipping(input, skip) : await host.forward(input);
        const b = skip ? await through.forwardSkipping(input, skip) : await through.forward(input);
        expect(maxDiff(a, b)).toBeLessThan(1e-5);
      };
      const prompt = Array.from({ length: 20 }, (_, i) => (i * 7 + 3) % 61);
      await both({ tokens: prompt, positions: prompt.map((_, i) => i), bias: chainBias(0, 20), rows: [19] });
      let length = 20;
      for (let round = 0; round < 15; round++) {
        const tokens = PARENTS.map((_, n) => (round * 11 + n * 5 + 1) % 61);
        const input = {
          tokens,
          positions: positionIds(length, PARENTS),
          bias: treeAttentionBias(length, PARENTS),
          rows: PARENTS.map((_, n) => n),
        };
        // Every third round drafts with the middle layer's sub-layers skipped (SWIFT), as self-speculation does.
        await both(input, round % 3 === 2 ? Uint8Array.of(0, 1, 0, 0, 1, 0) : undefined);
        const keep = [...Array.from({ length }, (_, i) => i), ...PATH.map((n) => length + n)];
        host.keep(keep);
        through.keep(keep);
        length += PATH.length;
      }
      expect(host.length).toBe(80);
      await both({ tokens: [9], positions: [80], bias: chainBias(80, 1), rows: [0] });
      for (const layer of [0, 1, 2]) {
        const a = await host.readCache(layer);
        const b = await through.readCache(layer);
        expect(a.length).toBe(81);
        expect(maxDiff(a.key, b.key)).toBeLessThan(1e-6);
        expect(maxDiff(a.value, b.value)).toBeLessThan(1e-6);
      }
      // A new prompt starts from an empty cache in both.
      host.reset();
      through.reset();
      await both({ tokens: prompt.slice(0, 5), positions: [0, 1, 2, 3, 4], bias: chainBias(0, 5), rows: [4] });
      await host.release();
      await through.release();
    });
  }

  it('the fused graph (GroupQueryAttention) keeps passing the cache through', async () => {
    const { model } = randomModel();
    const runner = await ModelRunner.create(ort, model, { device: 'wasm', graph: 'fused' });
    expect(runner.graph.hostCache).toBe(false);
    await runner.release();
  });
});
