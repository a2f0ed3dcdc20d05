import { describe, expect, it } from 'vitest';
import { GREEDY, Rng } from '../sampling';
import { checkParents, childrenOf, pathTo } from '../tree';
import type { NodeStatus, VerifyResult } from '../verify';
import type { Drafter, DraftRequest, DraftTree, TargetOutputs } from './drafter';
import { MergedDrafter } from './merged';
import type { CostModel } from './method';

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

/** A chain under the root: each node's own estimate of being accepted given its parent is `conditional`. */
function chainTree(root: number, tokens: readonly number[], conditional: number): DraftTree {
  const tree: DraftTree = { tokens: [root], parents: [-1], draftProbs: [null], values: [1] };
  tokens.forEach((t, i) => {
    tree.tokens.push(t);
    tree.parents.push(i);
    tree.draftProbs.push(null);
    tree.values?.push((tree.values[i] as number) * conditional);
  });
  return tree;
}

/** A source whose next tree is set by the test, counting its calls; it costs `cost` target calls per round. */
class Scripted implements Drafter {
  readonly calls = 0;
  next: DraftTree = chainTree(9, [], 1);
  proposed = 0;
  accepted = 0;
  observed = 0;
  /** The call width the last accept() was told (merged verifies a source's tree inside its own). */
  callWidth: number | undefined;
  constructor(
    readonly name: string,
    private readonly cost = 0,
  ) {}
  async propose(): Promise<DraftTree> {
    this.proposed++;
    return this.next;
  }
  accept(tree: DraftTree): void {
    this.accepted++;
    this.callWidth = tree.callWidth;
  }
  observe(): void {
    this.observed++;
  }
  draftCost(): number {
    return this.cost;
  }
  reset(): void {}
}

const REQ = (): DraftRequest => ({
  committed: [1, 9],
  maxNodes: 16,
  maxDepth: 16,
  sampling: GREEDY,
  rng: new Rng(1),
  eos: new Set(),
});

/** Verification of `tree` that accepts the nodes in `accepted` (a path from the root) and nothing else. */
function verdict(tree: DraftTree, accepted: readonly number[]): VerifyResult {
  const status: NodeStatus[] = tree.tokens.map(() => 'unreached');
  status[0] = 'root';
  for (const n of accepted) status[n] = 'accepted';
  return { path: [0, ...accepted], token: 0, kind: 'correction', status };
}

const OUTPUTS: TargetOutputs = {
  logits: () => new Float32Array(16),
  auxLogits: () => new Float32Array(16),
};

/** A verify-cost curve where each extra node costs a tenth of a one-token call. */
const GENTLE: CostModel = {
  curve: {
    context: 64,
    points: [1, 2, 4, 8, 16, 32].map((q) => ({ q, ms: 1 + (q - 1) / 10, relative: 1 + (q - 1) / 10 })),
  },
  draftRelative: 0.3,
  draftCurve: { context: 64, points: [] },
};

/** Prompt lookup (free) and a draft model costing 0.3 of a target call per round, merged, on the gentle curve. */
/** A GPU's curve: each extra node costs a hundredth of a one-token call (width nearly free). */
const FLAT: CostModel = {
  ...GENTLE,
  curve: {
    context: 64,
    points: [1, 2, 4, 8, 16, 32].map((q) => ({ q, ms: 1 + (q - 1) / 100, relative: 1 + (q - 1) / 100 })),
  },
};

function lookupAndDraft(
  joinsAt?: number,
  costs: CostModel = GENTLE,
): { free: Scripted; costly: Scripted; merged: MergedDrafter } {
  const free = new Scripted('free');
  const costly = new Scripted('costly', 0.3);
  const merged = new MergedDrafter(
    [
      { label: 'lookup', drafter: free, free: true, ...(joinsAt === undefined ? {} : { joinsAt }) },
      { label: 'draft', drafter: costly, selfSized: true },
    ],
    () => costs,
  );
  return { free, costly, merged };
}

describe('merged drafting: free sources first', () => {
  it("the costly source sits out a round where the free source's long match alone is predicted far better", async () => {
    const { free, costly, merged } = lookupAndDraft();
    // Round 1: no match; the costly source drafts a modest chain.
    costly.next = chainTree(9, [4, 5, 6], 0.55);
    let tree = await merged.propose(REQ());
    expect(costly.proposed).toBe(1);
    merged.accept(tree, verdict(tree, [1]), OUTPUTS);
    expect(costly.accepted).toBe(1);
    // Round 2: a long, confident match (a passage being copied): the costly source is not called.
    free.next = chainTree(9, [11, 12, 13, 14, 15, 16, 17, 18], 0.99);
    tree = await merged.propose(REQ());
    expect(costly.proposed).toBe(1);
    expect(merged.note()?.fields?.draft).toBe(-1);
    expect(tree.sources?.slice(1).every((s) => s === 'lookup')).toBe(true);
    expect(merged.draftCost(GENTLE)).toBe(0);
    merged.accept(tree, verdict(tree, [1, 2, 3]), OUTPUTS);
    expect(costly.accepted).toBe(1);
    // The source that sat out is told of the round as another drafter's (its time to the next is no gap of its own).
    expect(costly.observed).toBe(1);
    expect(free.accepted).toBe(2);
    // Round 3: a one-token guess is no reason to skip: both draft.
    free.next = chainTree(9, [21], 0.3);
    tree = await merged.propose(REQ());
    expect(costly.proposed).toBe(2);
    expect(merged.draftCost(GENTLE)).toBeCloseTo(0.3);
  });

  it('without a match the costly source always drafts and its tree stands, however poorly it was predicted to do', async () => {
    const { costly, merged } = lookupAndDraft();
    // Weak guesses that are always rejected: the predictions sink below plain decoding.
    costly.next = chainTree(9, [4, 5, 6], 0.05);
    for (let round = 1; round <= 20; round++) {
      const tree = await merged.propose(REQ());
      merged.accept(tree, verdict(tree, []), OUTPUTS);
      // Nothing to skip for: plain decoding is not a free source's match.
      expect(costly.proposed).toBe(round);
      // The source sized its own tree: it is verified as it stands, as that source alone would be.
      expect(tree.tokens).toEqual([9, 4, 5, 6]);
      expect(tree.sources).toEqual(['', 'draft', 'draft', 'draft']);
    }
  });

  it("leaves a free source's weak guesses out of the round: the costly source's tree stands alone", async () => {
    const { free, costly, merged } = lookupAndDraft(0.7);
    costly.next = chainTree(9, [4, 5, 6], 0.55);
    // A one-token guess valued 0.45: left out, and not told of the verdict (it was not verified).
    free.next = chainTree(9, [7, 8], 0.45);
    let tree = await merged.propose(REQ());
    expect(tree.tokens).toEqual([9, 4, 5, 6]);
    expect(merged.note()?.text).toContain('lookup left out (best guess 0.45)');
    merged.accept(tree, verdict(tree, [1]), OUTPUTS);
    expect(free.accepted).toBe(0);
    expect(costly.accepted).toBe(1);
    // The verified tree was the costly source's alone: the call was as wide as its tree.
    expect(costly.callWidth).toBe(4);
    // A guess valued 0.8 joins the round (here alone: the draft sits it out, as a match that strong predicts better).
    free.next = chainTree(9, [7, 8], 0.8);
    tree = await merged.propose(REQ());
    expect(tree.tokens.slice(0, 3)).toEqual([9, 7, 8]);
    expect(tree.sources?.[1]).toBe('lookup');
    merged.accept(tree, verdict(tree, []), OUTPUTS);
    expect(free.accepted).toBe(1);
  });

  it('lets every guess join where width is nearly free (a GPU): a weak one costs next to nothing there', async () => {
    const { free, costly, merged } = lookupAndDraft(0.7, FLAT);
    costly.next = chainTree(9, [4, 5, 6], 0.55);
    free.next = chainTree(9, [7, 8], 0.45);
    const tree = await merged.propose(REQ());
    expect(tree.sources?.slice(1)).toContain('lookup');
    expect(tree.sources?.slice(1)).toContain('draft');
  });

  it('verifies the best candidate of a merged tree when none is predicted to pay, until its source is measured', async () => {
    const { free, costly, merged } = lookupAndDraft();
    free.next = chainTree(9, [7], 0.05);
    costly.next = chainTree(9, [4, 5, 6], 0.05);
    let tree = await merged.propose(REQ());
    expect(tree.tokens.length).toBe(2);
    // Until each source's guesses have been judged often enough to trust its estimates; then the prediction decides.
    for (let round = 0; round < 24; round++) {
      merged.accept(tree, verdict(tree, []), OUTPUTS);
      tree = await merged.propose(REQ());
    }
    expect(tree.tokens.length).toBe(1);
    // The costly source's chain of three was cut to nothing: it learns that the call it was verified in was 1 wide.
    merged.accept(tree, verdict(tree, []), OUTPUTS);
    expect(costly.callWidth).toBe(1);
  });

  it('learns how often a guess holds when the other source contradicts it apart from when it is alone', async () => {
    const a = new Scripted('a');
    const b = new Scripted('b');
    const merged = new MergedDrafter(
      [
        { label: 'a', drafter: a },
        { label: 'b', drafter: b },
      ],
      () => null,
    );
    const estimate = (tree: DraftTree, token: number) => tree.values?.[tree.tokens.indexOf(token)] as number;
    // b alone: its prior for a 0.55 estimate.
    b.next = chainTree(9, [6], 0.55);
    a.next = chainTree(9, [], 1);
    const alonePrior = estimate(await merged.propose(REQ()), 6);
    // Many rounds where a proposes 5, b proposes 6 at the same place, and the target takes 5.
    a.next = chainTree(9, [5], 0.55);
    let contested = 0;
    for (let round = 0; round < 30; round++) {
      const tree = await merged.propose(REQ());
      contested = estimate(tree, 6);
      merged.accept(tree, verdict(tree, [tree.tokens.indexOf(5)]), OUTPUTS);
    }
    expect(contested).toBeLessThan(0.1);
    // b alone again: what it measured when contradicted does not drag down its guesses when no one contradicts them.
    a.next = chainTree(9, [], 1);
    expect(estimate(await merged.propose(REQ()), 6)).toBeCloseTo(alonePrior, 5);
  });

  it("corrects a source's estimates in buckets it has not measured yet by how far off it was in the others", async () => {
    const a = new Scripted('a');
    const merged = new MergedDrafter([{ label: 'a', drafter: a, selfSized: true }], () => null);
    // Low estimates (0.25 on the midpoint) that always hold.
    a.next = chainTree(9, [5], 0.22);
    for (let round = 0; round < 12; round++) {
      const tree = await merged.propose(REQ());
      merged.accept(tree, verdict(tree, [1]), OUTPUTS);
    }
    // A guess in a bucket never measured (0.35 on the midpoint) is now estimated well above its midpoint.
    a.next = chainTree(9, [6], 0.33);
    const tree = await merged.propose(REQ());
    expect(tree.values?.[1]).toBeGreaterThan(0.7);
  });
});
