/**
 * Token-tree geometry as pure functions over a parent array in topological order: parents[i] < i, or -1 for a node
 * hanging directly off the committed prefix. Everything the target call needs (attention bias, position ids) and
 * everything compaction needs (the cache slots of an accepted path) derives from it.
 */
import { MASKED } from './lm';

export function checkParents(parents: readonly number[]): void {
  parents.forEach((p, i) => {
    if (!Number.isInteger(p) || p < -1 || p >= i) {
      throw new RangeError(`tree: node ${i} has parent ${p}; parents must come earlier (topological order) or be -1`);
    }
  });
}

/** Children of each node, in index order. */
export function childrenOf(parents: readonly number[]): number[][] {
  const children: number[][] = parents.map(() => []);
  parents.forEach((p, i) => {
    if (p >= 0) children[p]?.push(i);
  });
  return children;
}

/** Depth of each node: 0 for children of the prefix. */
export function depths(parents: readonly number[]): number[] {
  checkParents(parents);
  const d: number[] = [];
  parents.forEach((p, i) => {
    d[i] = p < 0 ? 0 : (d[p] as number) + 1;
  });
  return d;
}

/** Position ids: committed length + depth. */
export function positionIds(prefixLength: number, parents: readonly number[]): number[] {
  return depths(parents).map((d) => prefixLength + d);
}

/** Ancestors of node i, root first, ending with i itself. */
export function pathTo(parents: readonly number[], i: number): number[] {
  const path: number[] = [];
  for (let n = i; n >= 0; n = parents[n] as number) path.push(n);
  return path.reverse();
}

/**
 * Row-major [q, prefixLength + q] additive attention bias: every node sees the whole prefix, its ancestors and
 * itself (0); everything else is MASKED. A chain gives the ordinary causal mask.
 */
export function treeAttentionBias(prefixLength: number, parents: readonly number[]): Float32Array {
  return roundBias(prefixLength, parents, undefined);
}

/**
 * Bias for a round's target call: the tree's q nodes (as treeAttentionBias: tree nodes never see auxiliary ones),
 * then a auxiliary nodes, each seeing the prefix, the tree nodes and auxiliary nodes it lists, and itself.
 * Row-major [q + a, prefixLength + q + a].
 */
export function roundBias(
  prefixLength: number,
  parents: readonly number[],
  aux: { sees: readonly { tree: readonly number[]; aux: readonly number[] }[] } | undefined,
): Float32Array {
  checkParents(parents);
  const q = parents.length;
  const a = aux?.sees.length ?? 0;
  const width = prefixLength + q + a;
  const bias = new Float32Array((q + a) * width).fill(MASKED);
  for (let i = 0; i < q; i++) {
    bias.fill(0, i * width, i * width + prefixLength);
    for (let n = i; n >= 0; n = parents[n] as number) bias[i * width + prefixLength + n] = 0;
  }
  aux?.sees.forEach((sees, k) => {
    const row = (q + k) * width;
    bias.fill(0, row, row + prefixLength);
    for (const n of sees.tree) {
      if (!(Number.isInteger(n) && n >= 0 && n < q)) throw new RangeError(`aux node ${k} sees tree node ${n} of ${q}`);
      bias[row + prefixLength + n] = 0;
    }
    for (const j of sees.aux) {
      if (!(Number.isInteger(j) && j >= 0 && j < a)) throw new RangeError(`aux node ${k} sees aux node ${j} of ${a}`);
      bias[row + prefixLength + q + j] = 0;
    }
    bias[row + prefixLength + q + k] = 0;
  });
  return bias;
}

/** Cache slots to keep after accepting `path` (tree node indices, root first): the prefix, then the path's slots. */
export function keepIndices(prefixLength: number, path: readonly number[]): number[] {
  return [...Array.from({ length: prefixLength }, (_, i) => i), ...path.map((n) => prefixLength + n)];
}

/**
 * Bias for appending q tokens to a cache of `cacheLength` slots: row i sees slots [0, prefixLength), the extra
 * cached slots listed in visibleSlots[i] (e.g. its ancestors drafted earlier this round), and itself. Rows do not
 * see each other (a drafter appends one tree level at a time).
 */
export function appendBias(
  cacheLength: number,
  prefixLength: number,
  visibleSlots: readonly (readonly number[])[],
): Float32Array {
  const q = visibleSlots.length;
  const width = cacheLength + q;
  const bias = new Float32Array(q * width).fill(MASKED);
  visibleSlots.forEach((slots, i) => {
    bias.fill(0, i * width, i * width + prefixLength);
    for (const s of slots) bias[i * width + s] = 0;
    bias[i * width + cacheLength + i] = 0;
  });
  return bias;
}

/** Bias for a plain chain of q tokens after `cacheLength` cached ones: the ordinary causal mask. */
export function chainBias(cacheLength: number, q: number): Float32Array {
  return treeAttentionBias(
    cacheLength,
    Array.from({ length: q }, (_, i) => i - 1),
  );
}
