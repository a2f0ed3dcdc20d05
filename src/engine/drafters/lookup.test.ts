import { describe, expect, it } from 'vitest';
import { GREEDY, Rng } from '../sampling';
import { childrenOf, pathTo } from '../tree';
import type { DraftRequest } from './drafter';
import { findMatches, LOOKUP_DEFAULTS, LookupDrafter } from './lookup';

const request = (committed: number[], extra: Partial<DraftRequest> = {}): DraftRequest => ({
  committed,
  maxNodes: 64,
  maxDepth: 16,
  sampling: GREEDY,
  rng: new Rng(1),
  eos: new Set(),
  ...extra,
});

/** Every root-to-leaf token path of a proposed tree (root excluded). */
function paths(tree: { tokens: number[]; parents: number[] }): number[][] {
  const kids = childrenOf(tree.parents);
  return tree.tokens
    .map((_, i) => i)
    .filter((i) => i > 0 && (kids[i]?.length ?? 0) === 0)
    .map((leaf) =>
      pathTo(tree.parents, leaf)
        .slice(1)
        .map((n) => tree.tokens[n] as number),
    );
}

describe('prompt lookup', () => {
  it('finds earlier occurrences of the suffix, newest first, each followed by a token', () => {
    //          0  1  2  3  4  5  6  7  8
    const seq = [5, 6, 7, 1, 5, 6, 2, 5, 6];
    expect(findMatches(seq, 2, 8)).toEqual([4, 0]);
    expect(findMatches(seq, 3, 8)).toEqual([]);
    expect(findMatches(seq, 1, 1)).toEqual([5]);
    expect(findMatches([1, 2], 2, 8)).toEqual([]);
  });

  it('proposes the continuation of the longest matching n-gram, branching where occurrences differ', async () => {
    const d = new LookupDrafter(() => null, { ...LOOKUP_DEFAULTS, maxTokens: 3 });
    // "5 6 7" is followed once by "1 2 3" and once by "8 9"; the suffix "5 6 7" matches both (3-gram).
    const tree = await d.propose(request([5, 6, 7, 1, 2, 3, 0, 5, 6, 7, 8, 9, 0, 4, 5, 6, 7]));
    expect(tree.tokens[0]).toBe(7);
    expect(paths(tree).sort()).toEqual([
      [1, 2, 3],
      [8, 9, 0],
    ]);
    expect(tree.draftProbs.every((q) => q === null)).toBe(true); // deterministic proposals
    expect(d.note()?.fields?.ngram).toBe(3);
    // Siblings most recent first when counts tie: "8" (later occurrence) before "1".
    expect(tree.tokens[1]).toBe(8);
  });

  it('falls back to shorter n-grams, proposes nothing without a match, and stops at end-of-sequence', async () => {
    const d = new LookupDrafter(() => null, { ...LOOKUP_DEFAULTS, maxTokens: 4 });
    expect((await d.propose(request([1, 2, 3, 4]))).tokens).toEqual([4]);
    const short = await d.propose(request([3, 9, 8, 7, 1, 2, 3]));
    expect(paths(short)).toEqual([[9, 8, 7, 1]]);
    expect(d.note()?.fields?.ngram).toBe(1);
    const eos = await d.propose(request([3, 9, 0, 7, 1, 2, 3], { eos: new Set([0]) }));
    expect(paths(eos)).toEqual([[9, 0]]);
  });

  it('respects the room and depth it is given', async () => {
    const d = new LookupDrafter(() => null);
    const seq = [...Array.from({ length: 30 }, (_, i) => i), 0, 1, 2];
    expect((await d.propose(request(seq, { maxNodes: 2 }))).tokens.length).toBe(3);
    expect((await d.propose(request(seq, { maxDepth: 3 }))).tokens.length).toBe(4);
    expect((await d.propose(request(seq, { maxDepth: 0 }))).tokens.length).toBe(1);
  });

  it('on a steep cost curve it verifies a weak single-token match not at all, a long agreement deeply', async () => {
    const steep = { context: 64, points: [1, 2, 4, 8, 16].map((q) => ({ q, ms: q, relative: q })) };
    const d = new LookupDrafter(() => ({ curve: steep, draftRelative: 0, draftCurve: { context: 0, points: [] } }));
    // One earlier "9", followed by 1 2 3: a 1-gram guess is not worth a token's worth of verification here.
    expect((await d.propose(request([4, 9, 1, 2, 3, 5, 9]))).tokens).toEqual([9]);
    const flat = { context: 64, points: [1, 2, 4, 8, 16].map((q) => ({ q, ms: 1, relative: 1 })) };
    const e = new LookupDrafter(() => ({ curve: flat, draftRelative: 0, draftCurve: { context: 0, points: [] } }));
    const text = Array.from({ length: 40 }, (_, i) => i % 10);
    expect((await e.propose(request(text))).tokens.length).toBe(1 + LOOKUP_DEFAULTS.maxTokens);
  });

  it('values a continuation the text took several times above one it took once', async () => {
    // T(2)/T(1) = 1.3: one drafted token pays if it is accepted with probability above 0.3.
    const curve = {
      context: 64,
      points: [1, 2, 4, 8].map((q) => ({ q, ms: 1 + 0.3 * (q - 1), relative: 1 + 0.3 * (q - 1) })),
    };
    const costs = () => ({ curve, draftRelative: 0, draftCurve: { context: 0, points: [] } });
    // "5" was followed by "9" once: a 1-token agreement seen once (about 0.25) is not drafted on this curve.
    const once = new LookupDrafter(costs, { ...LOOKUP_DEFAULTS, maxTokens: 1 });
    expect((await once.propose(request([5, 9, 1, 7, 5]))).tokens).toEqual([5]);
    // Three times, each time after a different token: still a 1-token agreement, now likelier, and drafted.
    const thrice = new LookupDrafter(costs, { ...LOOKUP_DEFAULTS, maxTokens: 1 });
    expect((await thrice.propose(request([5, 9, 1, 5, 9, 2, 5, 9, 3, 7, 5]))).tokens).toEqual([5, 9]);
    expect(thrice.note()?.fields).toMatchObject({ ngram: 1, matches: 3, agreement: 1 });
  });

  it('with a floor on its first guess, proposes just the best guess when it falls short, and the whole tree when not', async () => {
    const options = { ...LOOKUP_DEFAULTS, maxTokens: 3, selfBudget: false };
    // "7" was followed by "8 9 0" twice and by "1 2 3" once: the best first guess is "8", valued by its bucket's
    // prior times its share of the matches.
    const seq = [7, 8, 9, 0, 7, 1, 2, 3, 7, 8, 9, 0, 4, 7];
    const whole = await new LookupDrafter(() => null, options).propose(request(seq));
    const best = whole.values?.[1] as number;
    expect(whole.tokens[1]).toBe(8);
    expect(whole.tokens.length).toBe(7);
    const short = await new LookupDrafter(() => null, options).propose(request(seq, { minFirstGuess: best + 0.01 }));
    expect(short.tokens).toEqual([7, 8]);
    expect(short.values?.[1]).toBeCloseTo(best, 12);
    const enough = await new LookupDrafter(() => null, options).propose(request(seq, { minFirstGuess: best }));
    expect(enough).toEqual(whole);
  });
});
