/**
 * The draft model's cache between rounds: text it did not see (a new prompt, rounds another of auto's arms drafted)
 * is fed in a call of its own, timed apart and left out of the round's cost, with the same logits as one call. And a
 * draft distribution over a subset of the vocabulary (an EAGLE head's) drafts as the full row would.
 */
import { describe, expect, it } from 'vitest';
import { GREEDY, Rng } from '../sampling';
import { hashedLogits, ToyLM } from '../testing/toy-lm';
import type { VerifyResult } from '../verify';
import { DraftDist, DraftModelState } from './draft-model';
import type { DraftTree } from './drafter';
import type { CostModel } from './method';

const V = 16;
const fn = hashedLogits(V, 3);
/** A draft whose calls cost 1, 1.5, 2 and 3 (of a single-token call, itself a tenth of a target call) at widths 1, 2, 4, 8. */
const COSTS: CostModel = {
  curve: { context: 64, points: [{ q: 1, ms: 5, relative: 1 }] },
  draftRelative: 0.1,
  draftCurve: {
    context: 64,
    points: [1, 2, 4, 8].map((q, i) => ({ q, ms: 0.5 * [1, 1.5, 2, 3][i]!, relative: [1, 1.5, 2, 3][i]! })),
  },
};

describe('the draft model catching up', () => {
  it('feeds text it did not see in a call of its own, left out of the round cost, with the same logits', async () => {
    const lm = new ToyLM(V, fn);
    const state = new DraftModelState(lm);
    const prompt = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    const root = await state.sync(prompt);
    expect(Array.from(root)).toEqual(Array.from(fn(prompt)));
    // The prompt minus its last token, then the root alone: the round's own call is an ordinary round's.
    expect(lm.calls).toBe(2);
    expect(state.catchUpMs()).toBeGreaterThanOrEqual(0);
    expect(state.roundCost(COSTS)).toBeCloseTo(0.1);

    // A round drafts two tokens and the target accepts both, then adds its own: the next sync feeds 2 tokens (the
    // last draft token, never run, and the target's), an ordinary round: one call, no catching up.
    const tree: DraftTree = { tokens: [10, 11, 12], parents: [-1, 0, 1], draftProbs: [null, null, null] };
    await state.expand(tree, [1], [0, 1, 2]);
    const result: VerifyResult = { path: [0, 1, 2], token: 13, kind: 'bonus', status: [] };
    state.accept(tree, result);
    const committed = [...prompt, 11, 12, 13];
    const calls = lm.calls;
    expect(Array.from(await state.sync(committed))).toEqual(Array.from(fn(committed)));
    expect(lm.calls).toBe(calls + 1);
    expect(state.catchUpMs()).toBe(0);
    expect(state.roundCost(COSTS)).toBeCloseTo(0.15);

    // Ten rounds drafted by someone else: caught up apart again, and the logits are still the one-call ones.
    const later = [...committed, 1, 3, 5, 7, 9, 11, 13, 15, 2, 4];
    expect(Array.from(await state.sync(later))).toEqual(Array.from(fn(later)));
    expect(lm.calls).toBe(calls + 3);
    expect(state.roundCost(COSTS)).toBeCloseTo(0.1);
  });

  it("judges its first choices on the target's tokens it catches up on (greedy), never on the prompt", async () => {
    const state = new DraftModelState(new ToyLM(V, fn));
    const prompt = [1, 2, 3, 4, 5, 6];
    await state.sync(prompt, prompt.length);
    const judged = () => state.firstChoice.offered.reduce((a, b) => a + b, 0);
    const matched = () => state.firstChoice.accepted.reduce((a, b) => a + b, 0);
    expect(judged()).toBe(0); // the prompt is someone's text, not the target's choices
    // Eight tokens the target produced while another arm drafted: four the draft's own first choices, then not.
    const text = [...prompt];
    const firstChoice = (context: number[]) => Array.from(fn(context)).reduce((b, v, i, a) => (v > a[b]! ? i : b), 0);
    for (let i = 0; i < 8; i++) text.push(i < 4 ? firstChoice(text) : (firstChoice(text) + 1) % V);
    await state.sync(text, prompt.length);
    // All eight judged: each catch-up row predicts the next token, and the first sync's root (the prompt's last token,
    // run in the round's call) kept its guess of the first, which this catch-up judges.
    expect(judged()).toBe(8);
    expect(matched()).toBe(4);
    // Under sampling (no judgeFrom) nothing is judged.
    await state.sync([...text, ...[1, 2, 3, 4]]);
    expect(judged()).toBe(8);
  });
});

describe('a draft distribution over a subset of the vocabulary', () => {
  // An EAGLE head's draft vocabulary: 5 of 12 tokens, mapped out of order; every other token has probability zero.
  const tokens = Int32Array.from([9, 2, 7, 0, 4]);
  const index = new Int32Array(12).fill(-1);
  tokens.forEach((t, i) => {
    index[t] = i;
  });
  const logits = Float32Array.from([1.5, -0.25, 2.75, 0.5, 2]);
  const full = new Float32Array(12).fill(Number.NEGATIVE_INFINITY);
  tokens.forEach((t, i) => {
    full[t] = logits[i] as number;
  });
  const subset = { logits, tokens, index };

  it('drafts the same tokens with the same probabilities as the row over the whole vocabulary', () => {
    const rng = new Rng(1);
    const a = new DraftDist(subset, GREEDY);
    const b = new DraftDist(full, GREEDY);
    expect(a.children(3, rng).map((c) => c.token)).toEqual([7, 4, 9]);
    expect(a.children(3, rng)).toEqual(b.children(3, rng));
    for (let t = 0; t < 12; t++) expect(a.prob(t)).toBeCloseTo(b.prob(t), 12);
    expect(a.prob(1)).toBe(0);
    expect(a.verify).toBeNull();
  });

  it("gives the verifier the same processed distribution over the target's vocabulary under sampling", () => {
    for (const params of [
      { temperature: 0.7, topK: 0, topP: 1, seed: 3 },
      { temperature: 1.3, topK: 2, topP: 1, seed: 3 },
      { temperature: 1, topK: 0, topP: 0.6, seed: 3 },
    ]) {
      const a = new DraftDist(subset, params);
      const b = new DraftDist(full, params);
      expect(Array.from(a.verify as Float32Array)).toEqual(Array.from(b.verify as Float32Array));
      expect(a.children(3, new Rng(5))).toEqual(b.children(3, new Rng(5)));
      expect(a.prob(0)).toBe(b.prob(0));
    }
  });
});
