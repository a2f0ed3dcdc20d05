/**
 * Sizing trees from the hardware: on a steep verify-cost curve the best tree is a short chain (or nothing), on a
 * flat one a wide, deep tree. Both for the budget rule alone and end to end through the cost-aware draft tree that
 * `auto` and `merged` use.
 */
import { describe, expect, it } from 'vitest';
import { AcceptanceTable, bestFirstOrder, chooseBudget, SampledBudget } from './budget';
import type { CostCurve } from './calibrate';
import { DraftModelState } from './drafters/draft-model';
import { DYNAMIC_DEFAULTS, DynamicTreeDrafter } from './drafters/dynamic-tree';
import { LOOKUP_DEFAULTS, LookupDrafter } from './drafters/lookup';
import { MergedDrafter } from './drafters/merged';
import type { CostModel } from './drafters/method';
import { generateAll } from './generate';
import { GREEDY } from './sampling';
import { hashedLogits, noisyCopy, ToyLM } from './testing/toy-lm';
import { childrenOf } from './tree';

const curve = (relative: (q: number) => number): CostCurve => ({
  context: 64,
  points: [1, 2, 4, 8, 16, 32, 64].map((q) => ({ q, ms: relative(q), relative: relative(q) })),
});
/** The wasm curve measured in Node (T(q)/T(1) = 1, 1.14, 1.53, 2.47, 3.98, 7.3, 14.3). */
const STEEP = curve((q) => [1, 1.14, 1.53, 2.47, 3.98, 7.3, 14.3][Math.log2(q)] as number);
/** A GPU-like curve: a call over 64 tokens costs what one over a single token does. */
const FLAT = curve(() => 1);
const costs =
  (c: CostCurve, draftRelative: number): (() => CostModel) =>
  () => ({
    curve: c,
    draftRelative,
    draftCurve: { context: 64, points: [] },
  });

describe('hardware-aware tree size', () => {
  it('keeps few candidates on a steep curve, all of them on a flat one, none when nothing pays', () => {
    const values = [0.9, 0.8, 0.7, 0.5, 0.4, 0.3, 0.2, 0.2, 0.1, 0.1, 0.05, 0.05];
    const steep = chooseBudget(values, STEEP);
    expect(steep.keep).toBeGreaterThan(0);
    expect(steep.keep).toBeLessThanOrEqual(4);
    expect(steep.predictedSpeedup).toBeGreaterThan(1);
    expect(chooseBudget(values, FLAT).keep).toBe(values.length);
    expect(chooseBudget([0.05, 0.01], STEEP).keep).toBe(0);
    // Drafting that cost five target calls can never pay back: whatever is verified, the prediction says so.
    expect(chooseBudget([0.9, 0.8], STEEP, 5).predictedSpeedup).toBeLessThan(1);
  });

  it('orders candidates best-first with parents first, and keeps a sampled sibling group a prefix of its draws', () => {
    // root -> 1 (0.5), 2 (0.6, drawn after 1); 1 -> 3 (0.45)
    const order = bestFirstOrder([-1, 0, 0, 1], [1, 0.5, 0.6, 0.45], () => true);
    expect(order).toEqual([1, 2, 3]); // 2 is clamped to 1's value: it cannot outrank the earlier draw
    expect(bestFirstOrder([-1, 0, 0, 1], [1, 0.5, 0.6, 0.45], () => false)).toEqual([2, 1, 3]);
  });

  it('end to end: a chain on the steep curve, a wide tree on the flat one (the draft arm of auto)', async () => {
    const shape = async (c: CostCurve) => {
      const fn = hashedLogits(30, 1, 2, 3);
      const target = new ToyLM(30, fn);
      const draft = new ToyLM(30, noisyCopy(fn, 30, 2, 1.0));
      const drafter = new MergedDrafter(
        [
          { label: 'lookup', drafter: new LookupDrafter(costs(c, 0.06), { ...LOOKUP_DEFAULTS, selfBudget: false }) },
          {
            label: 'draft',
            drafter: new DynamicTreeDrafter(draft, { ...DYNAMIC_DEFAULTS, costAware: true }, costs(c, 0.06)),
          },
        ],
        costs(c, 0.06),
      );
      let nodes = 0;
      let branching = 0;
      let rounds = 0;
      await generateAll(
        { target, drafter, tokenizer: { decode: () => '' } },
        [1, 2, 3],
        { maxNewTokens: 60, sampling: GREEDY },
        (e) => {
          rounds++;
          nodes += e.tree.tokens.length;
          branching += childrenOf(e.tree.parents).filter((k) => k.length > 1).length;
        },
      );
      return { meanTree: nodes / rounds, branchingPerRound: branching / rounds };
    };
    const steep = await shape(STEEP);
    const flat = await shape(FLAT);
    expect(steep.meanTree).toBeLessThan(5);
    expect(steep.branchingPerRound).toBeLessThan(0.5); // essentially a chain
    expect(flat.meanTree).toBeGreaterThan(12);
    expect(flat.branchingPerRound).toBeGreaterThan(2); // a wide tree
  });
});

describe("a sampled round's size, chosen before its tokens are drawn", () => {
  const line = (slope: number): CostCurve => ({
    context: 64,
    points: [1, 2, 4, 8, 16, 32, 64].map((q) => ({ q, ms: 1 + slope * (q - 1), relative: 1 + slope * (q - 1) })),
  });
  it('starts from a prior chain: short on a steep curve, long on a flat one, at least one node', () => {
    expect(new SampledBudget().size(line(0.2))).toBe(2);
    expect(new SampledBudget().size(line(0.002))).toBeGreaterThan(8);
    expect(new SampledBudget().size(line(5))).toBe(1);
  });
  it('then takes what the costs chose on the last round, growing by one when all it was given was kept', () => {
    const b = new SampledBudget();
    expect(b.size(line(0.2))).toBe(2);
    b.record(1, 2); // the round had 2 nodes and 1 would have paid
    expect(b.size(line(0.2))).toBe(1);
    b.record(1, 1); // all it was given paid
    expect(b.size(line(0.2))).toBe(2);
    b.record(1, 1); // drafting stopped short of the size, all of it paid: no evidence for more
    expect(b.size(line(0.2))).toBe(2);
    b.clear();
    expect(b.size(line(0.2))).toBe(2);
  });
});

describe('drafting only what can pay', () => {
  it('on a steep curve runs the frontier nodes whose children could be kept, not the whole frontier; all on a flat one', async () => {
    const run = async (c: CostCurve) => {
      const fn = hashedLogits(30, 1, 2, 3);
      const state = new DraftModelState(new ToyLM(30, noisyCopy(fn, 30, 2, 1.0)));
      const widths: number[] = []; // nodes per level call
      const expand = state.expand.bind(state);
      state.expand = (tree, nodes, depths) => {
        widths.push(nodes.length);
        return expand(tree, nodes, depths);
      };
      const drafter = new DynamicTreeDrafter(state, { ...DYNAMIC_DEFAULTS, costAware: true }, costs(c, 0.06));
      const result = await generateAll(
        { target: new ToyLM(30, fn), drafter, tokenizer: { decode: () => '' } },
        [1, 2, 3],
        { maxNewTokens: 60, sampling: GREEDY },
      );
      return { tokens: result.tokens, levelWidth: widths.reduce((a, b) => a + b, 0) / widths.length };
    };
    const steep = await run(STEEP);
    const flat = await run(FLAT);
    expect(steep.tokens).toEqual(flat.tokens); // greedy: the same text either way
    expect(steep.levelWidth).toBeLessThan(2);
    expect(flat.levelWidth).toBeGreaterThan(3);
  });
});

describe('remembered acceptance', () => {
  it('round-trips through plain data, and rows that do not fit are ignored', () => {
    const table = new AcceptanceTable(() => 0.5);
    for (const ok of [true, true, false]) table.record('a', ok);
    table.record('b', false);
    const copy = new AcceptanceTable(() => 0.5);
    copy.restore(JSON.parse(JSON.stringify(table.snapshot())));
    expect(['a', 'b', 'c'].map((k) => copy.rate(k))).toEqual(['a', 'b', 'c'].map((k) => table.rate(k)));
    // Garbage, negative or impossible counts (more accepted than offered) leave the priors.
    copy.restore([['a', -1, 0], ['b', 2, 3], ['c', Number.NaN, 0], [7, 1, 1], 'x']);
    expect(['a', 'b', 'c'].map((k) => copy.rate(k))).toEqual([0.5, 0.5, 0.5]);
    copy.restore({ not: 'rows' });
    expect(copy.observations).toBe(0);
  });
});
