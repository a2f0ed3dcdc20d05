/**
 * The draft model's cache between rounds: text it did not see (a new prompt, rounds another of auto's arms drafted)
 * is fed in a call of its own, timed apart and left out of the round's cost, with the same logits as one call.
 */
import { describe, expect, it } from 'vitest';
import { hashedLogits, ToyLM } from '../testing/toy-lm';
import type { VerifyResult } from '../verify';
import { DraftModelState } from './draft-model';
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
});
