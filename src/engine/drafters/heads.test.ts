/**
 * Draft heads over a toy target with hidden states: with heads that know the target exactly, every proposal along
 * the top path must be accepted, which only holds when each head reads the right state at the right position
 * (a Medusa state one node off, or an EAGLE row one position off, breaks it).
 */
import { describe, expect, it } from 'vitest';
import { generateAll } from '../generate';
import { GREEDY } from '../sampling';
import { HiddenToyLM, ToyEagle3Head, ToyMedusaHeads } from '../testing/toy-heads';
import { hashedLogits, type LogitsFn, noisyCopy, ToyLM } from '../testing/toy-lm';
import { DynamicTreeDrafter } from './dynamic-tree';
import { EAGLE_DEFAULTS } from './eagle';
import { createDrafter } from './index';
import type { CostModel } from './method';

const tokenizer = { decode: (ids: readonly number[]) => ids.join(' ') };
const V = 40;

function setup(kind: 'last' | 'eagle3', noise: number) {
  const fn = hashedLogits(V, 3, 2, 12); // a confident target: its top token has most of the mass
  const target = new HiddenToyLM(V, fn, kind, 4, [0, 0, 0, 0, 0, 0, 0, 0]);
  const guess: LogitsFn = noise === 0 ? fn : noisyCopy(fn, V, 5, noise);
  return { target, guess };
}

/** A cost model with the given verify-cost curve (relative cost of q nodes). */
function costsWith(relative: (q: number) => number): CostModel {
  const curve = {
    context: 0,
    points: [1, 2, 4, 8, 16, 32, 64].map((q) => ({ q, ms: relative(q), relative: relative(q) })),
  };
  return { curve, draftRelative: 0, draftCurve: { context: 0, points: [] } };
}

async function tauOf(
  method: 'medusa' | 'eagle',
  noise: number,
  prompt: number[],
  costs: CostModel | null = null,
  soften = 1,
  /** One heads call in single-token target calls. */
  headsCost = 0.05,
) {
  const setupResult = setup(method === 'medusa' ? 'last' : 'eagle3', noise);
  const { target } = setupResult;
  // soften > 1: the head's probabilities are flatter than the target's (an under-confident head), same argmax.
  const guess: LogitsFn = (ctx) => setupResult.guess(ctx).map((v) => v / soften);
  const heads = {
    spec: 'toy',
    ...(method === 'medusa' ? { medusa: new ToyMedusaHeads(4, V, guess) } : { eagle3: new ToyEagle3Head(V, guess) }),
    relativeCost: () => headsCost,
  };
  const drafter = createDrafter(method, { target, heads, costs: () => costs });
  const r = await generateAll({ target, drafter, tokenizer }, prompt, { maxNewTokens: 60, sampling: GREEDY });
  const plain = await generateAll(
    { target: new ToyLM(V, target.fn), drafter: createDrafter('ar', { target, costs: () => null }), tokenizer },
    prompt,
    { maxNewTokens: 60, sampling: GREEDY },
  );
  expect(r.tokens).toEqual(plain.tokens);
  return r.stats;
}

describe('Medusa heads', () => {
  it('heads that know the target are accepted all the way: K + 1 tokens per round', async () => {
    const s = await tauOf('medusa', 0, [1, 2, 3]);
    // At most 5 tokens per round (4 heads + the target's own); the first rounds spend nodes on siblings until the
    // measured acceptance says the heads' top guesses hold.
    expect(s.tau).toBeGreaterThan(4);
    // Depth 1 misses only in the first round: the prompt's last token is not the one the heads' state predicted.
    expect(s.acceptanceByDepth[0]).toBeGreaterThan(0.9);
    expect(s.acceptanceByDepth.slice(1, 4)).toEqual([1, 1, 1]);
  });

  it('imperfect heads still save target calls, and a steep cost curve shrinks the tree to what pays', async () => {
    const free = await tauOf('medusa', 1.5, [4, 5, 6]);
    expect(free.tau).toBeGreaterThan(1.3);
    // Every extra node costs as much as a whole call (a compute-bound device): only near-certain nodes pay.
    const steep = costsWith((q) => q);
    const tight = await tauOf('medusa', 1.5, [4, 5, 6], steep);
    expect(tight.tau).toBeLessThan(free.tau);
  });

  it('backs off calling the heads while no tree pays, so a steep curve costs about plain decoding', async () => {
    // Every node costs a whole call: no tree pays, and each heads call would be paid for nothing.
    const s = await tauOf(
      'medusa',
      1.5,
      [4, 5, 6],
      costsWith((q) => q),
    );
    expect(s.tau).toBe(1);
    // Rests of 1, 2, 4, 8, 16, then 32 rounds between calls: 6 calls in the 60 rounds.
    expect(s.draftCalls).toBeLessThan(s.rounds / 8);
    expect(s.draftCalls).toBeGreaterThan(0);
  });

  it('backs off too when the best tree only pays for verifying, not for the heads call that found it', async () => {
    // Heads that know the target, a flat curve, but a heads call costing 5 target calls: a 4-node tree is worth
    // verifying once the call is spent (5 tokens for 6 calls' cost against 1 for 6), never worth calling for (5 < 6).
    const flat = costsWith((q) => 1 + 0.01 * q);
    const s = await tauOf('medusa', 0, [1, 2, 3], flat, 1, 5);
    expect(s.draftCalls).toBeLessThan(s.rounds / 4);
    // A cheap call pays: called every round.
    const cheap = await tauOf('medusa', 0, [1, 2, 3], flat, 1, 0.5);
    expect(cheap.draftCalls).toBeGreaterThanOrEqual(cheap.rounds - 1);
  });

  it('does not rest after a call that found nothing while calls pay on balance, where a call costs next to nothing', async () => {
    // A node pays where it is accepted one time in five or more: the noisy heads find nothing worth verifying in
    // some rounds and pay in others.
    const curve = costsWith((q) => 1 + 0.2 * (q - 1));
    // Heads on the CPU beside a target on a GPU: a thousandth of a target call. Called every round.
    const cheap = await tauOf('medusa', 1.5, [4, 5, 6], curve, 1, 0.001);
    expect(cheap.draftCalls).toBeGreaterThanOrEqual(cheap.rounds - 1);
    // The same heads at half a target call (wasm): rests after calls that found nothing.
    const dear = await tauOf('medusa', 1.5, [4, 5, 6], curve, 1, 0.5);
    expect(dear.draftCalls).toBeLessThan(dear.rounds - 1);
  });

  it('a one-token prompt drafts from the second round on (no state before the root until the target has run)', async () => {
    const s = await tauOf('medusa', 0, [7]);
    expect(s.tau).toBeGreaterThan(3.5);
  });

  it('heads whose logits are not finite are refused in one line naming them, the round not verified', async () => {
    const { target, guess } = setup('last', 0);
    // Finite until the third heads call, then NaN (weights that overflow on some states).
    let calls = 0;
    const broken: LogitsFn = (ctx) => (++calls > 3 * 4 ? guess(ctx).map(() => Number.NaN) : guess(ctx));
    const heads = { spec: 'toy', medusa: new ToyMedusaHeads(4, V, broken), relativeCost: () => 0.05 };
    const drafter = createDrafter('medusa', { target, heads, costs: () => null });
    const run = generateAll({ target, drafter, tokenizer }, [1, 2, 3], { maxNewTokens: 40, sampling: GREEDY });
    await expect(run).rejects.toThrow(
      /^the Medusa heads produced NaN or infinite logits: its weights or config.json are broken/,
    );
    await expect(run).rejects.toHaveProperty('name', 'ModelOutputError');
  });
});

describe('EAGLE-3 head', () => {
  it('a head that knows the target drafts the same trees as a draft model that is the target (same rounds)', async () => {
    const prompt = [1, 2, 3];
    const s = await tauOf('eagle', 0, prompt);
    const { target } = setup('eagle3', 0);
    const same = new DynamicTreeDrafter(new ToyLM(V, target.fn), EAGLE_DEFAULTS, () => null);
    const d = await generateAll({ target, drafter: same, tokenizer }, prompt, { maxNewTokens: 60, sampling: GREEDY });
    expect(s.acceptanceByDepth.every((a) => a === 1)).toBe(true);
    expect(s.rounds).toBe(d.stats.rounds);
    expect(s.tau).toBeGreaterThan(3.5);
  });

  it('an under-confident head that is always right grows deep on a flat cost curve once acceptance is measured', async () => {
    const flat = costsWith((q) => 1 + 0.01 * q);
    const s = await tauOf('eagle', 0, [1, 2, 3], flat, 6);
    expect(s.tau).toBeGreaterThan(3.5);
    // On a steep curve the same head verifies far less.
    const steep = await tauOf(
      'eagle',
      0,
      [1, 2, 3],
      costsWith((q) => q),
      6,
    );
    expect(steep.tau).toBeLessThan(s.tau - 1);
  });

  it('on a flat cost curve a head that is always right drafts deeper than the draft model tree (depth 6)', async () => {
    // At depth 6 a round commits at most 7 tokens; the head's tree grows as deep as acceptance and the curve allow.
    // A confident head (sharper than the target, same argmax), so its values start high.
    const s = await tauOf(
      'eagle',
      0,
      [1, 2, 3],
      costsWith((q) => 1 + 0.01 * q),
      0.25,
    );
    expect(s.tau).toBeGreaterThan(8);
    expect(s.acceptanceByDepth.length).toBeGreaterThan(8);
  });

  it('an imperfect head still saves target calls', async () => {
    expect((await tauOf('eagle', 1.5, [4, 5, 6])).tau).toBeGreaterThan(1.3);
  });

  it('a one-token prompt drafts from the second round on (the head needs a target feature first)', async () => {
    const s = await tauOf('eagle', 0, [9]);
    expect(s.tau).toBeGreaterThan(3.5);
  });
});
