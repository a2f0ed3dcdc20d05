/**
 * Token-tree geometry as pure functions over a parent array in topological order: parents[i] < i, or -1 for a node
 * hanging directly off the committed prefix. Everything the target call needs (attention bias, position ids) and
 * everything compaction needs (the cache slots of an accepted path) derives from it.
 */
import { MASKED } from '../model/graph/llama';

export function checkParents(parents: readonly number[]): void {
  parents.forEach((p, i) => {
    if (!Number.isInteger(p) || p < -1 || p >= i) {
      throw new RangeError(`tree: node ${i} has parent ${p}; parents must come earlier (topological order) or be -1`);
    }
  });
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
  checkParents(parents);
  const q = parents.length;
  const width = prefixLength + q;
  const bias = new Float32Array(q * width).fill(MASKED);
  for (let i = 0; i < q; i++) {
    bias.fill(0, i * width, i * width + prefixLength);
    for (let n = i; n >= 0; n = parents[n] as number) bias[i * width + prefixLength + n] = 0;
  }
  return bias;
}

/** Cache slots to keep after accepting `path` (tree node indices, root first): the prefix, then the path's slots. */
export function keepIndices(prefixLength: number, path: readonly number[]): number[] {
  return [...Array.from({ length: prefixLength }, (_, i) => i), ...path.map((n) => prefixLength + n)];
}
