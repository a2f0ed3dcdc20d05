/** Keep an ancestor-closed subset of a proposed tree's nodes, renumbered in order (per-node fields follow). */
import type { DraftTree } from './drafter';

export function pruneTree(tree: DraftTree, keep: ReadonlySet<number>): { tree: DraftTree; index: Map<number, number> } {
  const index = new Map<number, number>([[0, 0]]);
  const out: DraftTree = {
    tokens: [tree.tokens[0] as number],
    parents: [-1],
    draftProbs: [tree.draftProbs[0] ?? null],
  };
  if (tree.deterministic) out.deterministic = [tree.deterministic[0] ?? false];
  if (tree.values) out.values = [tree.values[0] ?? 1];
  if (tree.sources) out.sources = [tree.sources[0] ?? ''];
  for (let i = 1; i < tree.tokens.length; i++) {
    if (!keep.has(i)) continue;
    const parent = index.get(tree.parents[i] as number);
    if (parent === undefined) throw new Error(`pruneTree: node ${i} is kept without its parent`);
    index.set(i, out.tokens.length);
    out.tokens.push(tree.tokens[i] as number);
    out.parents.push(parent);
    out.draftProbs.push(tree.draftProbs[i] ?? null);
    out.deterministic?.push(tree.deterministic?.[i] ?? false);
    out.values?.push(tree.values?.[i] ?? 0);
    out.sources?.push(tree.sources?.[i] ?? '');
  }
  return { tree: out, index };
}
