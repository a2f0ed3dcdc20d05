/**
 * The adaptive chain's length: with measured costs it drafts on while one more token raises the round's expected
 * tokens per unit time (calibrate.ts worthExtending), reading each token's confidence calibrated by the acceptance
 * measured so far; without them, the +2/-1 heuristic and the 0.4 confidence stop.
 */
import { describe, expect, it } from 'vitest';
import { type CostCurve, worthExtending } from '../calibrate';
import { GREEDY, Rng } from '../sampling';
import { hashedLogits, ToyLM } from '../testing/toy-lm';
import { childrenOf } from '../tree';
import type { VerifyResult } from '../verify';
import { AdaptiveChainDrafter } from './adaptive-chain';
import { DraftModelState } from './draft-model';
import type { Counterfactual, DraftRequest, DraftTree } from './drafter';
import { DYNAMIC_DEFAULTS, DynamicTreeDrafter } from './dynamic-tree';
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

  /**
   * Greedy rounds on the test's clock: a draft call takes `draftMs`, the verify call `verifyMs(width)`, the time
   * between rounds `gapMs`; the target accepts the first half of each chain. Calibrated: T(q) = `calibrated(q)` ms,
   * a draft call 0.05 of a target call.
   */
  async function timedRounds(o: {
    draftMs: number;
    verifyMs: (width: number) => number;
    gapMs: number;
    calibrated: (q: number) => number;
    rounds: number;
    /** Auxiliary nodes riding along in each round's call (auto's lookahead window). */
    aux?: number;
    /** Other nodes verified with the chain in one tree (merged), handed back as the call's width. */
    merged?: number;
    /** What a draft call takes in the first round (a fresh process: cold code); `draftMs` after it. */
    coldDraftMs?: number;
  }): Promise<{ drafter: AdaptiveChainDrafter; last: number[]; all: number[] }> {
    const clock = { now: 0 };
    let r = 0;
    class Timed extends ToyLM {
      override async forward(input: Parameters<ToyLM['forward']>[0]): Promise<Float32Array> {
        clock.now += r === 0 && o.coldDraftMs !== undefined ? o.coldDraftMs : o.draftMs;
        return super.forward(input);
      }
    }
    const drafter = new AdaptiveChainDrafter(
      new Timed(V, confidentUntil(PROMPT.length + 4000)),
      () => costsOf(curveOf(o.calibrated)),
      undefined,
      () => clock.now,
    );
    const committed = [...PROMPT];
    const lengths: number[] = [];
    for (r = 0; r < o.rounds; r++) {
      const tree = await drafter.propose(request(committed));
      lengths.push(tree.tokens.length - 1);
      const aux = o.aux ?? 0;
      if (aux > 0) {
        const nodes = Array.from({ length: aux }, (_, i) => i);
        tree.aux = { tokens: nodes, positions: nodes, sees: nodes.map(() => ({ tree: [0], aux: [] })), rows: [] };
      }
      const extra = o.merged ?? 0;
      clock.now += o.verifyMs(tree.tokens.length + aux + extra);
      const keep = Math.floor((tree.tokens.length - 1) / 2);
      const path = Array.from({ length: keep + 1 }, (_, i) => i);
      const own = extra > 0 ? { ...tree, callWidth: tree.tokens.length + aux + extra } : tree;
      drafter.accept(own, { path, token: 0, kind: 'correction', status: [] });
      committed.push(...path.slice(1).map((i) => tree.tokens[i] as number), 0);
      clock.now += o.gapMs;
    }
    return { drafter, last: lengths.slice(-10), all: lengths };
  }

  it('measures what its rounds cost: the verify call per width, a draft call, the time between rounds', async () => {
    const { drafter } = await timedRounds({
      draftMs: 0.3,
      verifyMs: (w) => 2 + 0.5 * w,
      gapMs: 0.7,
      calibrated: (q) => 1 + 0.1 * (q - 1),
      rounds: 80,
    });
    const costs = drafter.roundCosts;
    expect(costs.draftCallMs()).toBeCloseTo(0.3, 1);
    expect(costs.betweenMs()).toBeGreaterThan(0.6);
    expect(costs.betweenMs()).toBeLessThan(0.7);
    // Widths it verified read their measured time; the others the calibration, moved by how the measured compare.
    for (let w = 2; w <= 17; w++) expect(costs.verifyMs(w)).toBeGreaterThan(1.5 * (1 + 0.1 * (w - 1)));
  });

  it.each([
    ['auxiliary nodes riding along (auto)', { aux: 10 }],
    ["another drafter's nodes verified with it (merged, DraftTree.callWidth)", { merged: 10 }],
  ])('records a round under the width of its call: %s', async (_, wider) => {
    const { drafter } = await timedRounds({
      draftMs: 0.3,
      verifyMs: (w) => 2 + 0.5 * w,
      gapMs: 0,
      calibrated: (q) => 1 + 0.1 * (q - 1),
      rounds: 80,
      ...wider,
    });
    // Its calls were 10 nodes wider than its chains: each width reads what a call of that width took (2 + 0.5 w),
    // not what a call 10 nodes wider did (5 ms more).
    for (const w of [13, 15, 17]) expect(Math.abs(drafter.roundCosts.verifyMs(w) - (2 + 0.5 * w))).toBeLessThan(1);
  });

  it("a fresh process's cold first round does not keep its chains short: one slow call counts for at most twice the estimate", async () => {
    const steady = {
      draftMs: 0.05,
      verifyMs: (w: number) => 1 + 0.1 * (w - 1),
      gapMs: 0,
      calibrated: (q: number) => 1 + 0.1 * (q - 1),
      rounds: 12,
    };
    const warm = await timedRounds(steady);
    // The first round's draft calls take 20x as long (3.6 ms against 0.35 on wasm in a fresh CLI process).
    const cold = await timedRounds({ ...steady, coldDraftMs: 1 });
    expect(cold.all.slice(1, 6)).toEqual(warm.all.slice(1, 6));
  });

  it('drafts by what its rounds cost, not by the calibration: dearer draft calls, shorter chains; a flatter verify, longer ones', async () => {
    const steady = { gapMs: 0, calibrated: (q: number) => 1 + 0.1 * (q - 1), rounds: 60 };
    // Calls as calibrated (0.05 ms), then 4x dearer (0.2 ms).
    const honest = await timedRounds({ ...steady, draftMs: 0.05, verifyMs: (w) => 1 + 0.1 * (w - 1) });
    const dear = await timedRounds({ ...steady, draftMs: 0.2, verifyMs: (w) => 1 + 0.1 * (w - 1) });
    expect(Math.max(...dear.last)).toBeLessThan(Math.min(...honest.last));
    // Calibrated steep (each token half a call) where verifying costs the same at any width.
    const steep = { ...steady, draftMs: 0.05, calibrated: (q: number) => 1 + 0.5 * (q - 1) };
    const asCalibrated = await timedRounds({ ...steep, verifyMs: (w) => 1 + 0.5 * (w - 1) });
    const flatter = await timedRounds({ ...steep, verifyMs: () => 1 });
    expect(Math.min(...flatter.last)).toBeGreaterThan(Math.max(...asCalibrated.last));
  });

  it('measures the acceptance by the confidence of the token: an unsure draft right most of the time is trusted', async () => {
    // The draft alternates sure tokens (p 0.95, always accepted) and unsure ones (p 0.15, accepted three times in four):
    // one scale on the confidence, the measured acceptance over the mean confidence, says 0.15 x 1.6 = 0.24 for those.
    const row = (sure: boolean) => {
      const r = new Float32Array(V);
      r[3] = sure ? Math.log((0.95 * (V - 1)) / 0.05) : Math.log((0.15 * (V - 1)) / 0.85);
      return r;
    };
    const draft = new ToyLM(V, (context) => row(context.length % 2 === 0));
    // Verifying takes 1 ms at any width on the test's clock, drafting nothing: chains run long.
    const clock = { now: 0 };
    const curve = curveOf((q) => 1 + 0.02 * (q - 1));
    const drafter = new AdaptiveChainDrafter(
      draft,
      () => costsOf(curve),
      undefined,
      () => clock.now,
    );
    const committed = [...PROMPT];
    let unsure = 0;
    for (let r = 0; r < 40; r++) {
      const tree = await drafter.propose(request(committed));
      clock.now += 1;
      const path = [0];
      for (let i = 1; i < tree.tokens.length; i++) {
        const sure = (committed.length + i - 1) % 2 === 0;
        if (!sure && ++unsure % 4 === 0) break;
        path.push(i);
      }
      drafter.accept(tree, { path, token: 5, kind: 'correction', status: [] });
      committed.push(...path.slice(1).map((i) => tree.tokens[i] as number), 5);
    }
    expect(drafter.acceptanceOf(0.15)).toBeGreaterThan(0.65);
    expect(drafter.acceptanceOf(0.15)).toBeLessThan(0.85);
    expect(0.15 * drafter.calibration).toBeLessThan(0.35);
    expect(drafter.acceptanceOf(0.95)).toBeGreaterThan(0.95);
    // Remembered between sessions with the rest of what it learned.
    const resumed = new AdaptiveChainDrafter(new ToyLM(V, () => row(true)), () => null);
    resumed.relearn(drafter.learned());
    expect(resumed.acceptanceOf(0.15)).toBeCloseTo(drafter.acceptanceOf(0.15), 9);
    resumed.relearn({ ...(drafter.learned() as object), byConfidence: { offered: [1], accepted: [2] } });
    expect(resumed.acceptanceOf(0.15)).toBeCloseTo(drafter.acceptanceOf(0.15), 9); // a table that does not fit: kept
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
  it("learns the draft's first choices from a tree drafting with the same model too (auto's chain and tree arms)", async () => {
    const state = new DraftModelState(new ToyLM(V, hashedLogits(V, 5)));
    const chain = new AdaptiveChainDrafter(state, () => costsOf(FLAT));
    const tree = new DynamicTreeDrafter(state, DYNAMIC_DEFAULTS);
    const before = Array.from({ length: 10 }, (_, b) => chain.acceptanceOf((b + 0.5) / 10));
    // Greedy rounds of the tree whose target text is the draft's first choices, all the way down.
    const committed = [...PROMPT];
    for (let r = 0; r < 6; r++) {
      const t = await tree.propose(request(committed));
      const kids = childrenOf(t.parents);
      const firstChild = (n: number) => kids[n]?.[0];
      const path = [0];
      for (let c = firstChild(0); c !== undefined; c = firstChild(c)) path.push(c);
      const bonus = 3;
      const argmax = (n: number) => {
        const c = firstChild(n);
        return c === undefined ? bonus : (t.tokens[c] as number);
      };
      tree.accept(
        t,
        { path, token: bonus, kind: 'bonus', status: [] },
        { logits: () => new Float32Array(V), auxLogits: () => new Float32Array(V), argmax },
      );
      committed.push(...path.slice(1).map((n) => t.tokens[n] as number), bonus);
    }
    const judged = state.firstChoice.offered;
    expect(judged.reduce((a, b) => a + b, 0)).toBeGreaterThan(5);
    // Every first choice was the target's: where the tree's rounds judged some, the chain now expects more.
    judged.forEach((n, b) => {
      if (n > 0) expect(chain.acceptanceOf((b + 0.5) / 10)).toBeGreaterThan(before[b] as number);
    });
  });
});

describe("the chain's rounds replayed over text it caught up on (auto judges an arm on the text others drafted)", () => {
  /**
   * A draft sure of one token (p about 0.99) at most positions and unsure (uniform, p 1/16) at every sixth; the
   * target's text takes the sure token except at every eleventh position, and never the unsure guess (token 0).
   */
  const sureAt = (n: number) => n % 6 !== 0;
  const sureToken = (n: number) => (n * 5 + 1) % V;
  const draftFn = (context: readonly number[]): Float32Array => {
    const row = new Float32Array(V);
    if (sureAt(context.length)) row[sureToken(context.length)] = 8;
    return row;
  };
  const targetToken = (n: number) => (!sureAt(n) ? 3 : n % 11 === 4 ? (sureToken(n) + 1) % V : sureToken(n));

  /** A chain on the test's clock (a draft call 1 ms, a verify call 10 ms whatever its width, 2 ms between rounds). */
  function timedChain(clock: { now: number }) {
    class Timed extends ToyLM {
      override async forward(input: Parameters<ToyLM['forward']>[0]): Promise<Float32Array> {
        clock.now += 1;
        return super.forward(input);
      }
    }
    const chain = new AdaptiveChainDrafter(
      new Timed(V, draftFn),
      // Calibrated as the clock runs (T(q) 10 ms, a draft call 0.1 of it), so what a chain measures of its rounds
      // agrees with what it was told, and its rule decides alike whatever rounds it has measured.
      () => costsOf({ context: 64, points: [1, 2, 4, 8, 16, 32].map((q) => ({ q, ms: 10, relative: 1 })) }, 0.1),
      undefined,
      () => clock.now,
    );
    /** One greedy round at `committed`: what it drafted and brought. */
    const round = async (committed: number[], generatedFrom: number) => {
      const tree = await chain.propose({ ...request(committed), generatedFrom });
      clock.now += 10;
      const at = committed.length;
      let kept = 0;
      while (kept + 1 < tree.tokens.length && tree.tokens[kept + 1] === targetToken(at + kept)) kept++;
      const path = Array.from({ length: kept + 1 }, (_, i) => i);
      chain.accept(tree, { path, token: targetToken(at + kept), kind: 'correction', status: [] });
      committed.push(...Array.from({ length: kept + 1 }, (_, i) => targetToken(at + i)));
      clock.now += 2; // between rounds
      return { drafted: tree.tokens.length - 1, brought: kept + 1 };
    };
    return { chain, round };
  }

  /** Others (another of auto's arms) commit the target's next `n` tokens of a text. */
  const others = (text: number[], n: number) => {
    for (let i = 0; i < n; i++) text.push(targetToken(text.length));
  };

  /** Two chains on one clock, each with its text after 10 rounds of its own (their measured costs alike). */
  async function twoChains() {
    const clock = { now: 0 };
    const runs = [0, 1].map(() => ({ chain: timedChain(clock), text: [...PROMPT] }));
    for (let r = 0; r < 10; r++) for (const { chain, text } of runs) await chain.round(text, 4);
    return runs.map(({ chain, text }) => [chain, text] as const) as [
      readonly [ReturnType<typeof timedChain>, number[]],
      readonly [ReturnType<typeof timedChain>, number[]],
    ];
  }

  it('drafts and brings, round by round, what the chain does when it drafts that text itself', async () => {
    const clock = { now: 0 };
    const real = timedChain(clock);
    const replaying = timedChain(clock);
    // Both measure their costs on rounds of another text first, and start the text alike.
    for (const c of [real, replaying]) {
      const other = [9, 9, 9, 9];
      for (let r = 0; r < 30; r++) await c.round(other, 4);
      c.chain.reset(true);
    }
    const start = PROMPT.length;
    const text = [...PROMPT];
    const rounds: { drafted: number; brought: number }[] = [];
    while (text.length < start + 150) rounds.push(await real.round(text, start));

    expect(replaying.chain.counterfactual()).toBeNull();
    const full = Array.from({ length: text.length }, (_, n) => (n < start ? (PROMPT[n] as number) : targetToken(n)));
    await replaying.chain.propose({ ...request(full), generatedFrom: start });
    const replay = replaying.chain.counterfactual();
    expect(replay).not.toBeNull();
    const { rounds: n, tokens, ms } = replay as { rounds: number; tokens: number; ms: number };
    expect(n).toBeGreaterThan(rounds.length - 3);
    expect(n).toBeLessThanOrEqual(rounds.length);
    const first = rounds.slice(0, n);
    // Lengths vary with the draft's confidence (it drafts through sure tokens and stops after an unsure one).
    expect(new Set(first.map((r) => r.drafted)).size).toBeGreaterThan(2);
    expect(tokens).toBe(first.reduce((sum, r) => sum + r.brought, 0));
    const costs = replaying.chain.roundCosts;
    const expected = first.reduce((sum, r) => sum + costs.chainRoundMs(r.drafted) - costs.betweenMs(), 0);
    expect(ms).toBeCloseTo(expected, 6);

    // Positions named to skip (auto's copy rounds) split the text: no round crosses them, none is counted in them.
    const skipped = replaying.chain.counterfactual((p) => p >= start + 40 && p < start + 60) as { tokens: number };
    expect(skipped.tokens).toBeLessThan(tokens - 15);
    // Under sampling nothing is judged, so nothing is replayed.
    await replaying.chain.propose({
      ...request(full),
      generatedFrom: start,
      sampling: { temperature: 1, topK: 0, topP: 1, seed: 1 },
    });
    expect(replaying.chain.counterfactual()).toBeNull();
  });

  it('refreshed while set aside, it catches up and replays that text; its next round replays only what came after', async () => {
    const clock = { now: 0 };
    const { chain, round } = timedChain(clock);
    const text = [...PROMPT];
    for (let r = 0; r < 10; r++) await round(text, PROMPT.length);
    const others = (n: number) => {
      for (let i = 0; i < n; i++) text.push(targetToken(text.length));
    };
    others(40);
    const before = chain.calls;
    await chain.refresh({ ...request([...text]), generatedFrom: PROMPT.length });
    expect(chain.calls).toBeGreaterThan(before);
    const first = chain.counterfactual() as { tokens: number };
    expect(first.tokens).toBeGreaterThan(25);
    expect(first.tokens).toBeLessThanOrEqual(40);
    // Not behind: nothing to catch up on, no call.
    const calls = chain.calls;
    await chain.refresh({ ...request([...text]), generatedFrom: PROMPT.length });
    expect(chain.calls).toBe(calls);
    others(12);
    await chain.propose({ ...request([...text]), generatedFrom: PROMPT.length });
    const next = chain.counterfactual() as Counterfactual;
    // Less the credit it takes back of a round the refresh's text left undecided.
    const added = next.tokens - (next.retract?.tokens ?? 0);
    expect(added).toBeLessThanOrEqual(12);
    expect(added).toBeGreaterThan(4);
  });

  it('a catch-up too short for a whole round of its rule credits what it shows of it, and the next, where the text follows on, adds the rest', async () => {
    const [[split, a], [whole, b]] = await twoChains();
    // Set aside, `split` is refreshed after 4 tokens others drafted and again after 36 more; `whole` once after all 40.
    others(a, 4);
    await split.chain.refresh({ ...request([...a]), generatedFrom: PROMPT.length });
    // No round of its rule fits in 4 tokens: the one it began is credited with the tokens the text confirms so far
    // (every guess but the unsure one at every sixth position is right here), at the cost of the chain drafted so far.
    const first = split.chain.counterfactual() as { rounds: number; tokens: number; ms: number };
    expect(first.rounds).toBe(1);
    expect(first.tokens).toBeGreaterThanOrEqual(1);
    expect(first.tokens).toBeLessThanOrEqual(4);
    expect(first.ms).toBeGreaterThan(0);
    others(a, 36);
    await split.chain.refresh({ ...request([...a]), generatedFrom: PROMPT.length });
    const second = split.chain.counterfactual() as Counterfactual;
    // Replayed again for the same catch-up (other positions skipped, as auto may), it starts from the same rows.
    expect(split.chain.counterfactual()).toEqual(second);
    // It takes back the credit of the round it now decides.
    expect(second.retract).toEqual({ rounds: 1, tokens: first.tokens, ms: first.ms });
    others(b, 40);
    await whole.chain.refresh({ ...request([...b]), generatedFrom: PROMPT.length });
    const once = whole.chain.counterfactual() as { rounds: number; tokens: number; ms: number };
    expect(once.tokens).toBeGreaterThan(25);
    // No round was decided in the first part: the second replays the text from the credited round's start, in full,
    // as the whole does (the parts, less what the second takes back, add up to the whole).
    expect(second.tokens).toBe(once.tokens);
    expect(second.rounds).toBe(once.rounds);
    expect(second.ms).toBeCloseTo(once.ms, 6);
  });

  it('caught up on in many short parts, its replays add up to the replay of the whole text caught up on at once', async () => {
    const [[parts, a], [whole, b]] = await twoChains();
    const sum = { rounds: 0, tokens: 0, ms: 0 };
    for (const n of [3, 1, 5, 2, 7, 4, 6, 3, 9, 4]) {
      others(a, n);
      const calls = parts.chain.calls;
      await parts.chain.refresh({ ...request([...a]), generatedFrom: PROMPT.length });
      // A refresh within an ordinary round's sync of the text catches up on nothing (auto refreshes after 4 rounds).
      if (parts.chain.calls === calls) continue;
      const r = parts.chain.counterfactual();
      if (!r) continue;
      sum.rounds += r.rounds - (r.retract?.rounds ?? 0);
      sum.tokens += r.tokens - (r.retract?.tokens ?? 0);
      sum.ms += r.ms - (r.retract?.ms ?? 0);
    }
    others(b, 44);
    await whole.chain.refresh({ ...request([...b]), generatedFrom: PROMPT.length });
    const once = whole.chain.counterfactual() as { rounds: number; tokens: number; ms: number };
    expect(sum.tokens).toBe(once.tokens);
    expect(sum.rounds).toBe(once.rounds);
    expect(sum.ms).toBeCloseTo(once.ms, 6);
  });

  it("replays only text others committed: not the target's token of its own last round, taken whole", async () => {
    const state = new DraftModelState(new ToyLM(V, draftFn));
    const committed = [...PROMPT];
    await state.sync(committed, PROMPT.length);
    // One drafted token, accepted, and the target's own after it: the draft never ran the accepted token.
    const tree: DraftTree = {
      tokens: [committed.at(-1) as number, targetToken(4)],
      parents: [-1, 0],
      draftProbs: [null, null],
    };
    state.accept(tree, { path: [0, 1], token: targetToken(5), kind: 'bonus', status: [] });
    committed.push(targetToken(4), targetToken(5));
    const ownEnd = committed.length;
    // Others commit 10 tokens; then the state catches up.
    for (let i = 0; i < 10; i++) committed.push(targetToken(committed.length));
    await state.sync(committed, PROMPT.length);
    expect(state.judged[0]?.position).toBe(ownEnd - 1);
    expect(state.judgedOthers.map((r) => r.position)).toEqual(Array.from({ length: 10 }, (_, i) => ownEnd + i));
  });
});
