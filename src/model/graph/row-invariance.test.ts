/**
 * Row invariance (plain-ops.ts, groupedAttention): a token's logits have the same bits whether it is decoded in a
 * call of its own or verified in a call with other tokens (a chain, or a tree whose siblings are masked keys), for
 * the graph variants whose attention is ours (plain, hybrid), in int8 (where it is the default) and in fp32 when
 * asked for, on the bundled target. With the plain formulation one-token and wider calls differ in the last bits (a
 * one-row MatMul sums in another order; Softmax's SIMD sums move with the row length), which int8's input rounding
 * turned into different tokens.
 */
import { describe, expect, it } from 'vitest';
import { chainBias, treeAttentionBias } from '../../engine/tree';
import { ortForNode } from '../../runtime/ort-node';
import { loadModel } from '../load';
import { ModelRunner } from '../runner';
import { randomModel } from '../testing/random-model';

const ort = ortForNode(2);
const range = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);

const bundled = await loadModel('public/models/austen-target');
// One query head per KV head: the padded path (the first query row repeated), on random weights.
const multiHead = randomModel({ num_key_value_heads: 4, num_hidden_layers: 3 }).model;

describe('a token gets the same logits, bit for bit, alone or verified with others (wasm EP)', () => {
  for (const [label, model, ids] of [
    ['bundled target (grouped queries)', bundled, bundled.tokenizer.encode('They walked to the Abbey, then along the')],
    ['random multi-head model', multiHead, [3, 17, 42, 8, 25, 60, 1, 9, 33]],
  ] as const) {
    const V = model.config.vocabSize;
    const prompt = [...ids];
    const P = prompt.length;
    const prefill = { tokens: prompt, positions: range(P), bias: chainBias(0, P), rows: [P - 1] };
    // A tree after the prompt: 0 <- {1, 2}, 1 <- 3, 2 <- 4, 3 <- 5 (parents), token ids arbitrary.
    const parents = [-1, 0, 0, 1, 2, 3];
    const tree = [314, 259, 387, 273, 12, 564].map((t) => t % V);
    const pathTo = (n: number): number[] => (n < 0 ? [] : [...pathTo(parents[n] as number), n]);

    for (const [precision, asked] of [
      ['int8', false],
      ['fp32', true],
    ] as const) {
      for (const graph of ['plain', 'hybrid'] as const) {
        it(`${label}, ${graph}, ${precision}${asked ? ' (asked for)' : ''}: a chain of 5 and every node of a tree equal one-token calls along their paths`, async () => {
          const options = {
            device: 'wasm',
            precision,
            graph,
            ...(asked ? { rowInvariantAttention: true } : {}),
          } as const;
          const alone = await ModelRunner.create(ort, model, options);
          const together = await ModelRunner.create(ort, model, options);
          // One token per call along a path; the last call's logits.
          const oneByOne = async (tokens: number[]) => {
            alone.reset();
            await alone.forward(prefill);
            let out = new Float32Array(0);
            for (const [i, t] of tokens.entries()) {
              out = (
                await alone.forward({ tokens: [t], positions: [P + i], bias: chainBias(P + i, 1), rows: [0] })
              ).slice();
            }
            return out;
          };
          const chain = [321, 364, 314, 259, 387].map((t) => t % V);
          await together.forward(prefill);
          const chained = await together.forward({
            tokens: chain,
            positions: range(chain.length, P),
            bias: chainBias(P, chain.length),
            rows: range(chain.length),
          });
          for (let i = 0; i < chain.length; i++) {
            const want = await oneByOne(chain.slice(0, i + 1));
            expect(Array.from(chained.subarray(i * V, (i + 1) * V)), `chain row ${i}`).toEqual(Array.from(want));
          }
          together.reset();
          await together.forward(prefill);
          const depth = (n: number): number => (n < 0 ? -1 : depth(parents[n] as number) + 1);
          const treed = await together.forward({
            tokens: tree,
            positions: tree.map((_, n) => P + depth(n)),
            bias: treeAttentionBias(P, parents),
            rows: range(tree.length),
          });
          for (let n = 0; n < tree.length; n++) {
            const want = await oneByOne(pathTo(n).map((m) => tree[m] as number));
            expect(Array.from(treed.subarray(n * V, (n + 1) * V)), `tree node ${n}`).toEqual(Array.from(want));
          }
          await alone.release();
          await together.release();
        });
      }
    }
  }
});
