/**
 * Tree-attention consistency check for a loaded model on a given device: one tree call must give the same logits
 * and K/V slots as running every root-to-node path as a plain sequence, and compaction must keep exactly the
 * accepted slots. Used by the unit tests (wasm, Node), by the browser tests (WebGPU) and by the demo page's
 * self-test, so a user can check their own GPU.
 */
import { chainBias, keepIndices, pathTo, positionIds, treeAttentionBias } from '../engine/tree';
import type { LoadedModel } from '../model/load';
import { type Device, ModelRunner, type RunnerOptions } from '../model/runner';
import { maxDiff } from '../util/max-diff';

type Ort = Parameters<typeof ModelRunner.create>[0];

/** What the check needs of a runner (tests substitute a faulty one to see the check fail). */
export type CheckedRunner = Pick<
  ModelRunner,
  'forward' | 'keep' | 'reset' | 'readCache' | 'release' | 'compute' | 'precision' | 'variant'
> &
  Partial<Pick<ModelRunner, 'exact'>>;

export interface TreeCheckOptions {
  /** How runners are made (default: ModelRunner.create with `runner`). */
  createRunner?: (ort: Ort, model: LoadedModel, device: Device) => Promise<CheckedRunner>;
  /** Options of the default runners (precision, graph variant, int4). */
  runner?: Omit<RunnerOptions, 'device'>;
}

export interface TreeCheckReport {
  model: string;
  device: Device;
  /** The compute precision the runner chose for this device. */
  compute: 'fp32' | 'fp16';
  /** Weights and arithmetic ('fp32', 'fp16', 'int4', 'int4-fp16') and the graph variant. */
  precision: string;
  variant: 'plain' | 'fused' | 'hybrid';
  /** Built for exact decoding and passed its check at load (a tree row is bit for bit a one-token call's). */
  exact: boolean;
  /** max |tree-call logits - plain path logits| over all nodes. */
  logitsDiff: number;
  /** max |tree-call K/V slot - plain path K/V slot| over all nodes and heads, on the first and last layer. */
  cacheDiff: number;
  /** max |logits after compaction + one token - logits of a fresh run of the same sequence|. */
  compactionDiff: number;
  /** Whether every kept slot is bit-identical to the slot it was copied from. */
  compactionExact: boolean;
  /** Argmax of each tree node's logits (tree call) and of the plain runs; they should agree. */
  treeArgmax: number[];
  plainArgmax: number[];
  ms: number;
}

const TREE_PARENTS = [-1, 0, 0, 1, 2, 2];

function argmax(row: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if ((row[i] as number) > (row[best] as number)) best = i;
  return best;
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/** Logits of the last token of `seq`, run from an empty cache as one plain causal sequence. */
async function lastRowFresh(runner: CheckedRunner, seq: readonly number[]): Promise<Float32Array> {
  runner.reset();
  return runner.forward({
    tokens: seq,
    positions: range(seq.length),
    bias: chainBias(0, seq.length),
    rows: [seq.length - 1],
  });
}

export async function checkTreeConsistency(
  ort: Ort,
  model: LoadedModel,
  device: Device,
  prompt: readonly number[],
  options: TreeCheckOptions = {},
): Promise<TreeCheckReport> {
  const started = performance.now();
  const create = options.createRunner ?? ((o, m, d) => ModelRunner.create(o, m, { ...options.runner, device: d }));
  const V = model.config.vocabSize;
  const P = prompt.length;
  const treeTokens = TREE_PARENTS.map((_, i) => prompt[(i * 7 + 3) % P] as number);
  const tree = await create(ort, model, device);
  const plain = await create(ort, model, device);
  try {
    await tree.forward({ tokens: prompt, positions: range(P), bias: chainBias(0, P), rows: [P - 1] });
    const logits = await tree.forward({
      tokens: treeTokens,
      positions: positionIds(P, TREE_PARENTS),
      bias: treeAttentionBias(P, TREE_PARENTS),
      rows: range(TREE_PARENTS.length),
    });
    // K/V are compared on the first and the last layer: reading every layer back from a GPU costs a sync each.
    const layers = [...new Set([0, model.config.numLayers - 1])];
    const treeCaches = new Map<number, Awaited<ReturnType<ModelRunner['readCache']>>>();
    for (const l of layers) treeCaches.set(l, await tree.readCache(l));
    let logitsDiff = 0;
    let cacheDiff = 0;
    const treeArgmax: number[] = [];
    const plainArgmax: number[] = [];
    const { numKvHeads, headDim } = model.config;
    for (let node = 0; node < TREE_PARENTS.length; node++) {
      const seq = [...prompt, ...pathTo(TREE_PARENTS, node).map((n) => treeTokens[n] as number)];
      const row = await lastRowFresh(plain, seq);
      const treeRow = logits.subarray(node * V, (node + 1) * V);
      logitsDiff = Math.max(logitsDiff, maxDiff(treeRow, row));
      treeArgmax.push(argmax(treeRow));
      plainArgmax.push(argmax(row));
      for (const l of layers) {
        const t = treeCaches.get(l) as Awaited<ReturnType<ModelRunner['readCache']>>;
        const p = await plain.readCache(l);
        for (let h = 0; h < numKvHeads; h++) {
          const a = (h * t.length + P + node) * headDim;
          const b = (h * p.length + seq.length - 1) * headDim;
          cacheDiff = Math.max(
            cacheDiff,
            maxDiff(t.key.subarray(a, a + headDim), p.key.subarray(b, b + headDim)),
            maxDiff(t.value.subarray(a, a + headDim), p.value.subarray(b, b + headDim)),
          );
        }
      }
    }
    // Accept the path to the last node, compact, and continue with one token.
    const accepted = pathTo(TREE_PARENTS, TREE_PARENTS.length - 1);
    const kept = keepIndices(P, accepted);
    tree.keep(kept);
    const next = prompt[0] as number;
    const after = await tree.forward({
      tokens: [next],
      positions: [kept.length],
      bias: treeAttentionBias(kept.length, [-1]),
      rows: [0],
    });
    let compactionExact = true;
    const c0 = await tree.readCache(0);
    const t0 = treeCaches.get(0) as Awaited<ReturnType<ModelRunner['readCache']>>;
    for (let h = 0; h < numKvHeads; h++) {
      kept.forEach((slot, i) => {
        const a = (h * t0.length + slot) * headDim;
        const b = (h * c0.length + i) * headDim;
        if (maxDiff(t0.key.subarray(a, a + headDim), c0.key.subarray(b, b + headDim)) !== 0) compactionExact = false;
      });
    }
    const seq = [...prompt, ...accepted.map((n) => treeTokens[n] as number), next];
    const fresh = await lastRowFresh(plain, seq);
    return {
      model: model.spec,
      device,
      compute: tree.compute,
      precision: tree.precision,
      variant: tree.variant,
      exact: tree.exact === true,
      logitsDiff,
      cacheDiff,
      compactionDiff: maxDiff(after, fresh),
      compactionExact,
      treeArgmax,
      plainArgmax,
      ms: performance.now() - started,
    };
  } finally {
    await tree.release();
    await plain.release();
  }
}
