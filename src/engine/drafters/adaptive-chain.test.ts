/**
 * The adaptive chain's length: with measured costs it drafts on while one more token raises the round's expected
 * tokens per unit time (calibrate.ts worthExtending), reading each token's confidence calibrated by the acceptance
 * measured so far; without them, the +2/-1 heuristic and the 0.4 confidence stop.
 */
import { describe, expect, it } from 'vitest';
import { type CostCurve, worthExtending } from '../calibrate';
import { GREEDY, Rng } from '../sampling';
import { ToyLM } from '../testing/toy-lm';
import type { VerifyResult } from '../verify';
import { AdaptiveChainDrafter } from './adaptive-chain';
import type { DraftRequest, DraftTree } from './drafter';
import type { CostModel } from './method';

const curveOf = (relative: (q: number) => number): CostCurve => ({
  context: 64,
  points: [1, 2, 4, 8, 16, 32].map((q) => ({ q, ms: relative(q), relative: relative(q) })),
});
/** A GPU-like curve (verifying 32 tokens costs what one does) and a wasm-like one (each token costs a call). */
const FLAT = curveOf(() => 1);
const STEEP = curveOf((q) => q);

describe('the expected-gain stopping rule', () => {
  it('extends a confident chain on a flat curve and stops where the confidence drops', () => {
    expect(worthExtending([0.9, 0.9, 0.9], FLAT, 0.05)).toBe(true);
    expect(worthExtending([0.9, 0.1], FLAT, 0.05)).toBe(false);
  });

  it('stops where verifying one more token costs more than it is expected to yield', () => {
    expect(worthExtending([0.9], STEEP, 0.05)).toBe(false);
    // A draft call as dear as a target call (the H100 through Dawn measured 0.62x) stops a wavering chain sooner.
    expect(worthExtending([0.7, 0.7], FLAT, 0.05)).toBe(true);
    expect(worthExtending([0.7, 0.7], FLAT, 0.6)).toBe(false);
  });

  it('drafts longer where each round pays a fixed overhead besides its model calls', () => {
    const slope = curveOf((q) => 1 + 0.3 * (q - 1));
    expect(worthExtending([0.6], slope, 0.05)).toBe(false);
    expect(worthExtending([0.6], slope, 0.05, 1)).toBe(true);
    expect(worthExtending([0.6, 0.6], slope, 0.05, 1)).toBe(false);
  });

  it('looks past a step in the curve: one token more can lose where two more win', () => {
    // Verifying 3 or 4 tokens costs 1.5 calls, 1 or 2 tokens one call (a curve is not convex: wasm's T(2) is 1.07).
    const step: CostCurve = {
      context: 64,
      points: [1, 2, 3, 4].map((q) => ({ q, ms: q > 2 ? 1.5 : 1, relative: q > 2 ? 1.5 : 1 })),
    };
    expect(worthExtending([0.9], step, 0.05, 0, 1)).toBe(false);
    expect(worthExtending([0.9], step, 0.05, 0, 2)).toBe(true);
    // A wavering token is not worth a longer look.
    expect(worthExtending([0.3], step, 0.05, 0, 3)).toBe(false);
  });
});

const V = 16;
const PROMPT = [1, 2, 3, 4];
/** A draft sure of its next token (p about 0.995) until the context reaches `sureUntil` tokens, then uniform. */
const confidentUntil =
  (sureUntil: number) =>
  (context: readonly number[]): Float32Array => {
    const row = new Float32Array(V);
    if (context.length < sureUntil) row[(context.length * 7) % V] = 8;
    return row;
  };

const request = (committed: readonly number[] = PROMPT): DraftRequest => ({
  committed,
  maxNodes: 32,
  maxDepth: 32,
  sampling: GREEDY,
  rng: new Rng(1),
  eos: new Set(),
});

const costsOf = (curve: CostCurve, draftRelative = 0.05): CostModel => ({ curve, draftRelative, draftCurve: curve });

async function drafted(curve: CostCurve | null, sureUntil: number): Promise<number> {
  const drafter = new AdaptiveChainDrafter(new ToyLM(V, confidentUntil(sureUntil)), () =>
    curve ? costsOf(curve) : null,
  );
  const tree = await drafter.propose(request());
  return tree.tokens.length - 1;
}

describe('the adaptive chain with measured costs', () => {
  it('drafts through what the draft is sure of on a flat curve, one token past it, up to its cap', async () => {
    // Sure at contexts 4..9: six tokens, then the first uniform one (p 1/16) ends the chain.
    expect(await drafted(FLAT, PROMPT.length + 6)).toBe(7);
    // Past the heuristic's 5 tokens: the cap (16) is the only bound.
    expect(await drafted(FLAT, PROMPT.length + 40)).toBe(16);
  });

  it('drafts one token where each verified token costs a call', async () => {
    expect(await drafted(STEEP, PROMPT.length + 40)).toBe(1);
  });

  it('without costs keeps the heuristic: its initial length, and the confidence stop', async () => {
    expect(await drafted(null, PROMPT.length + 40)).toBe(5);
    expect(await drafted(null, PROMPT.length + 2)).toBe(3);
  });

  it('measures what a round costs besides its model calls, on its clock', async () => {
    let now = 0;
    const curve = curveOf((q) => 1 + 0.3 * (q - 1)); // T(1) = 1 ms
    const drafter = new AdaptiveChainDrafter(
      new ToyLM(V, confidentUntil(PROMPT.length + 80)),
      () => costsOf(curve),
      undefined,
      () => now,
    );
    const committed = [...PROMPT];
    const round = async (ms: number) => {
      const tree = await drafter.propose(request(committed));
      now += ms;
      const token = ((tree.tokens[1] as number) + 1) % V;
      drafter.accept(tree, { path: [0], token, kind: 'correction', status: [] });
      committed.push(token);
    };
    // Rounds as fast as their model calls: nothing beside them.
    for (let r = 0; r < 5; r++) await round(0);
    expect(drafter.overhead).toBe(0);
    // Rounds that take 12 ms where their calls explain at most 6.1 (a 16-token chain): the overhead grows towards
    // its cap of two target calls.
    for (let r = 0; r < 40; r++) await round(12);
    expect(drafter.overhead).toBeGreaterThan(1.9);
    expect(drafter.overhead).toBeLessThanOrEqual(2);
  });

  it('calibrates the confidence by the acceptance it measures: a draft sure and wrong drafts shorter', async () => {
    const draft = new ToyLM(V, confidentUntil(PROMPT.length + 40));
    // A curve where a token costs a tenth of a call: a sure draft pays for long chains, a wrong one does not.
    const drafter = new AdaptiveChainDrafter(draft, () => costsOf(curveOf((q) => 1 + 0.1 * (q - 1))));
    const first = await drafter.propose(request());
    expect(first.tokens.length - 1).toBe(16);
    // The target rejects the first token, round after round, though the draft gave it p 0.995.
    const committed = [...PROMPT];
    for (let r = 0; r < 20; r++) {
      const tree: DraftTree = await drafter.propose(request(committed));
      const token = ((tree.tokens[1] as number) + 1) % V;
      const result: VerifyResult = { path: [0], token, kind: 'correction', status: [] };
      drafter.accept(tree, result);
      committed.push(token);
    }
    expect(drafter.calibration).toBeLessThan(0.2);
    expect((await drafter.propose(request(committed))).tokens.length - 1).toBeLessThan(4);
  });
});
