/**
 * Exact decoding's check at load (RunnerOptions.exact): does this device give a token the same logits, bit for bit,
 * when the token is verified in a tree call as when it is decoded in a call of its own? Greedy speculation then
 * commits exactly plain decoding's text; without it, the last bits that differ between a one-token call and a verify
 * call flip a greedy token wherever the two best logits are that close (fp16 on WebGPU differs by 0.05 and more).
 *
 * The graph's part is the row-invariant attention (graph/plain-ops.ts, groupedAttention). The device's kernels can
 * still bring differences back (a matmul that takes another path for one row, a reduction whose order follows the
 * row count: on lavapipe, fp32 MatMuls of the plain graph do, fp16 ones do not), so it is measured on the built
 * session, never assumed: a prefill, a five-node tree with masked siblings, and the same tokens one call at a time
 * along each path (the cache compacted between the two branches, as a round does).
 */

import type { ForwardInput } from '../engine/lm';
import { chainBias, positionIds, roundBias } from '../engine/tree';

/** What the check needs of a runner. */
export interface CheckedLM {
  readonly config: { vocabSize: number };
  readonly length: number;
  forward(input: ForwardInput): Promise<Float32Array>;
  keep(indices: ArrayLike<number>): void;
  reset(): void;
}

export interface ExactCheck {
  /** Every tree row equal, bit for bit, to its one-token call. */
  exact: boolean;
  /** Largest absolute difference over all rows (0 when exact). */
  maxDiff: number;
  /** Tree nodes whose logits differ. */
  rowsDiffering: number;
  nodes: number;
}

/** The tree: root 0 with children 1 and 2, each with one child (3 under 1, 4 under 2). */
const PARENTS = [-1, 0, 0, 1, 2];
const PROMPT = 6;

export async function checkExact(lm: CheckedLM): Promise<ExactCheck> {
  const V = lm.config.vocabSize;
  const token = (i: number) => (3 + i * 7919) % V;
  const prompt = Array.from({ length: PROMPT }, (_, i) => token(i));
  const tree = PARENTS.map((_, n) => token(PROMPT + n));
  const prefill = async () => {
    lm.reset();
    await lm.forward({
      tokens: prompt,
      positions: prompt.map((_, i) => i),
      bias: chainBias(0, PROMPT),
      rows: [PROMPT - 1],
    });
  };
  try {
    await prefill();
    const together = (
      await lm.forward({
        tokens: tree,
        positions: positionIds(PROMPT, PARENTS),
        bias: roundBias(PROMPT, PARENTS, undefined),
        rows: PARENTS.map((_, n) => n),
      })
    ).slice();
    const alone: Float32Array[] = [];
    const step = async (node: number) => {
      const past = lm.length;
      const row = await lm.forward({
        tokens: [tree[node] as number],
        positions: [past],
        bias: chainBias(past, 1),
        rows: [0],
      });
      alone[node] = row.slice();
    };
    await prefill();
    for (const node of [0, 1, 3]) await step(node);
    lm.keep(Array.from({ length: PROMPT + 1 }, (_, i) => i)); // the prompt and the root: the other branch
    for (const node of [2, 4]) await step(node);

    let maxDiff = 0;
    let rowsDiffering = 0;
    for (let n = 0; n < PARENTS.length; n++) {
      const a = alone[n] as Float32Array;
      const bitsA = new Uint32Array(a.buffer, a.byteOffset, V);
      const bitsT = new Uint32Array(together.buffer, together.byteOffset + n * V * 4, V);
      let differs = false;
      for (let j = 0; j < V; j++) {
        if (bitsA[j] === bitsT[j]) continue;
        differs = true;
        maxDiff = Math.max(maxDiff, Math.abs((a[j] as number) - (together[n * V + j] as number)));
      }
      if (differs) rowsDiffering++;
    }
    return { exact: rowsDiffering === 0, maxDiff, rowsDiffering, nodes: PARENTS.length };
  } finally {
    lm.reset();
  }
}
