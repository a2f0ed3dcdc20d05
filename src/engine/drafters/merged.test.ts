import { describe, expect, it } from 'vitest';
import { GREEDY, Rng } from '../sampling';
import { checkParents, childrenOf, pathTo } from '../tree';
import type { Drafter, DraftRequest, DraftTree } from './drafter';
import { MergedDrafter } from './merged';

/** A source that proposes a fixed tree. */
class Fixed implements Drafter {
  readonly calls = 0;
  constructor(
    readonly name: string,
    private readonly tree: DraftTree,
  ) {}
  async propose(): Promise<DraftTree> {
    return this.tree;
  }
  accept(): void {}
  reset(): void {}
}

function rand(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** A random source tree over a small vocabulary: distinct sibling tokens, values shrinking down each path. */
function randomTree(r: () => number, root: number, sampled: boolean): DraftTree {
  const tree: DraftTree = { tokens: [root], parents: [-1], draftProbs: [null], values: [1] };
  const n = 1 + Math.floor(r() * 12);
  for (let i = 0; i < n; i++) {
    const parent = Math.floor(r() * tree.tokens.length);
    const taken = tree.tokens.filter((_, k) => tree.parents[k] === parent);
    const token = Math.floor(r() * 6);
    if (taken.includes(token)) continue;
    tree.tokens.push(token);
    tree.parents.push(parent);
    tree.draftProbs.push(null);
    tree.values?.push((tree.values[parent] as number) * (0.2 + 0.8 * r()));
    if (sampled) tree.draftProbs[parent] ??= new Float32Array(6).fill(1 / 6);
  }
  return tree;
}

const tokenPath = (t: DraftTree, i: number) =>
  pathTo(t.parents, i)
    .map((n) => t.tokens[n])
    .join(',');

describe('merged drafting', () => {
  it('merges into a tree without duplicate siblings, every path from a source, sampled draws kept in order', async () => {
    for (let seed = 1; seed <= 300; seed++) {
      const r = rand(seed);
      const a = randomTree(r, 9, false); // deterministic, like prompt lookup
      const b = randomTree(r, 9, true); // sampled, like a draft model under sampling
      const merged = new MergedDrafter(
        [
          { label: 'a', drafter: new Fixed('a', a) },
          { label: 'b', drafter: new Fixed('b', b) },
        ],
        () => null,
      );
      const req: DraftRequest = {
        committed: [1, 9],
        maxNodes: Math.floor(r() * 30),
        maxDepth: 10,
        sampling: GREEDY,
        rng: new Rng(seed),
        eos: new Set(),
      };
      const t = await merged.propose(req);
      checkParents(t.parents);
      expect(t.tokens[0]).toBe(9);
      expect(t.tokens.length - 1).toBeLessThanOrEqual(req.maxNodes);
      const kids = childrenOf(t.parents);
      for (const children of kids) {
        const tokens = children.map((c) => t.tokens[c]);
        expect(new Set(tokens).size).toBe(tokens.length);
      }
      const fromA = new Set(a.tokens.map((_, i) => tokenPath(a, i)));
      const fromB = new Set(b.tokens.map((_, i) => tokenPath(b, i)));
      for (let i = 1; i < t.tokens.length; i++) {
        const p = tokenPath(t, i);
        const label = [fromA.has(p) ? 'a' : '', fromB.has(p) ? 'b' : ''].filter(Boolean).join('+');
        expect(t.sources?.[i]).toBe(label);
        // A node is sampled exactly when source b proposed it.
        expect(t.deterministic?.[i]).toBe(!fromB.has(p));
      }
      // Under each node, the sampled children are a prefix of b's children there, in b's order, and come first.
      for (let i = 0; i < t.tokens.length; i++) {
        const bNode = b.tokens.findIndex((_, k) => tokenPath(b, k) === tokenPath(t, i));
        if (bNode < 0) continue;
        const bKids = b.tokens.map((tok, k) => [tok, k] as const).filter(([, k]) => b.parents[k] === bNode);
        const sampledKids = (kids[i] ?? []).filter((c) => !t.deterministic?.[c]).map((c) => t.tokens[c]);
        expect(sampledKids).toEqual(bKids.slice(0, sampledKids.length).map(([tok]) => tok));
        const order = (kids[i] ?? []).map((c) => (t.deterministic?.[c] ? 1 : 0));
        expect(order).toEqual([...order].sort((x, y) => x - y));
      }
    }
  });
});
