import { describe, expect, it } from 'vitest';
import { DraftModelState } from './drafters/draft-model';
import type { Drafter, DraftRequest, DraftTree } from './drafters/drafter';
import { METHODS, type Method, makeDrafter } from './drafters/index';
import { type GenerateOptions, generate, generateAll } from './generate';
import { ContextLimitError } from './lm';
import { GREEDY, type SamplingParams, toProbs, topK } from './sampling';
import { chiSquare, totalVariation } from './testing/stats';
import { hashedLogits, type LogitsFn, noisyCopy, ToyLM } from './testing/toy-lm';
import type { VerifyResult } from './verify';

const tokenizer = { decode: (ids: readonly number[]) => ids.map((i) => String.fromCharCode(97 + (i % 26))).join('') };

function pair(vocab: number, noise: number, options: { eos?: number[]; maxPositions?: number } = {}) {
  const fn = hashedLogits(vocab, 1, 2, 3);
  const target = new ToyLM(vocab, fn, options);
  const draft = new ToyLM(vocab, noisyCopy(fn, vocab, 2, noise), options);
  return { fn, target, draft };
}

async function run(method: Method, prompt: number[], options: GenerateOptions, vocab = 50, noise = 1.5) {
  const { target, draft } = pair(vocab, noise);
  const drafter = makeDrafter(method, draft);
  const events: Awaited<ReturnType<typeof collect>>['events'] = [];
  const result = await generateAll({ target, drafter, tokenizer }, prompt, options, (e) => events.push(e));
  return { result, events, target, draft };
}

async function collect(it: AsyncGenerator<import('./events').RoundEvent, import('./events').GenerationResult>) {
  const events = [];
  for (;;) {
    const s = await it.next();
    if (s.done) return { events, result: s.value };
    events.push(s.value);
  }
}

const prompts = Array.from({ length: 25 }, (_, i) => [i % 50, (i * 7) % 50, (i * 13 + 5) % 50]);

describe('greedy identity on a toy pair: every method gives plain greedy decoding token for token', () => {
  for (const method of METHODS) {
    it(method, async () => {
      let rounds = 0;
      let targetCalls = 0;
      let arCalls = 0;
      for (const prompt of prompts) {
        const ar = await run('ar', prompt, { maxNewTokens: 40, sampling: GREEDY });
        const spec = await run(method, prompt, { maxNewTokens: 40, sampling: GREEDY });
        expect(spec.result.tokens).toEqual(ar.result.tokens);
        expect(spec.result.tokens.length).toBe(40);
        rounds += spec.result.stats.rounds;
        targetCalls += spec.result.stats.targetCalls;
        arCalls += ar.result.stats.targetCalls;
        // At least one token per round; never more target calls than plain decoding.
        for (const e of spec.events) expect(e.accepted.length + e.target.length).toBeGreaterThanOrEqual(1);
        expect(spec.result.stats.targetCalls).toBeLessThanOrEqual(ar.result.stats.targetCalls);
      }
      if (method !== 'ar') expect(targetCalls).toBeLessThan(arCalls); // the toy draft agrees often enough to save calls
      expect(rounds).toBeGreaterThan(0);
    });
  }
});

/** The exact distribution of the first `n` generated tokens under the target (vocabulary V, all V^n sequences). */
function exactJoint(fn: LogitsFn, prompt: number[], sampling: SamplingParams, vocab: number, n: number): number[] {
  const out: number[] = [];
  const walk = (ctx: number[], prob: number, depth: number) => {
    if (depth === n) {
      out.push(prob);
      return;
    }
    const p = toProbs(fn(ctx), sampling);
    for (let x = 0; x < vocab; x++) walk([...ctx, x], prob * (p[x] as number), depth + 1);
  };
  walk(prompt, 1, 0);
  return out;
}

/** The trap from lossless-trees.md: a tree of the draft's deterministic top-k children, verified by rejection. */
class TopKTreeDrafter implements Drafter {
  readonly name = 'topk-trap';
  private readonly state: DraftModelState;
  constructor(draft: ToyLM) {
    this.state = new DraftModelState(draft);
  }
  get calls() {
    return this.state.calls;
  }
  async propose(req: DraftRequest): Promise<DraftTree> {
    const logits = await this.state.sync(req.committed);
    const q = toProbs(logits, req.sampling);
    const kids = topK(q, 3);
    return {
      tokens: [req.committed[req.committed.length - 1] as number, ...kids],
      parents: [-1, ...kids.map(() => 0)],
      draftProbs: [q, ...kids.map(() => null)],
    };
  }
  accept(tree: DraftTree, result: VerifyResult) {
    this.state.accept(tree, result);
  }
  reset() {
    this.state.reset();
  }
}

describe('losslessness under sampling: the engine output has exactly the target distribution', () => {
  const V = 5;
  const N = 20_000;
  const prompt = [1, 3];
  const sampling: SamplingParams = { temperature: 0.9, topK: 4, topP: 0.95, seed: 0 };

  async function histogram(makeDrafterFor: (draft: ToyLM) => Drafter) {
    const fn = hashedLogits(V, 1, 2, 1.5);
    const target = new ToyLM(V, fn);
    const draft = new ToyLM(V, noisyCopy(fn, V, 2, 1.5));
    const drafter = makeDrafterFor(draft);
    const counts = new Array(V ** 3).fill(0);
    for (let seed = 1; seed <= N; seed++) {
      const r = await generateAll({ target, drafter, tokenizer }, prompt, {
        maxNewTokens: 3,
        sampling: { ...sampling, seed },
      });
      counts[(r.tokens[0] as number) * V * V + (r.tokens[1] as number) * V + (r.tokens[2] as number)]++;
    }
    const exact = exactJoint(fn, prompt, sampling, V, 3);
    return { tv: totalVariation(counts, exact), p: chiSquare(counts, exact).pValue };
  }

  for (const method of ['chain', 'tree', 'dynamic', 'adaptive'] as const) {
    it(`${method}: first three tokens match the target's joint distribution (${N} draws, chi-square)`, async () => {
      const r = await histogram((d) => makeDrafter(method, d));
      expect(r.p).toBeGreaterThan(1e-3);
      expect(r.tv).toBeLessThan(Math.sqrt(V ** 3 / N)); // the noise level for this many draws
    });
  }

  it('negative control: deterministic top-k children under sampling fail the same test', async () => {
    const r = await histogram((d) => new TopKTreeDrafter(d));
    expect(r.p).toBeLessThan(1e-6);
    expect(r.tv).toBeGreaterThan(Math.sqrt(V ** 3 / N));
  });
});

describe('engine behaviour', () => {
  it('same seed, same output under sampling; a different seed differs', async () => {
    const s = { temperature: 1, topK: 0, topP: 1, seed: 42 };
    const a = await run('dynamic', [1, 2, 3], { maxNewTokens: 30, sampling: s });
    const b = await run('dynamic', [1, 2, 3], { maxNewTokens: 30, sampling: s });
    const c = await run('dynamic', [1, 2, 3], { maxNewTokens: 30, sampling: { ...s, seed: 43 } });
    expect(a.result.tokens).toEqual(b.result.tokens);
    expect(a.result.tokens).not.toEqual(c.result.tokens);
  });

  it('cancellation stops between rounds and leaves the engine reusable', async () => {
    const { target, draft } = pair(50, 1.5);
    const drafter = makeDrafter('tree', draft);
    const controller = new AbortController();
    const it = generate({ target, drafter, tokenizer }, [4, 5], {
      maxNewTokens: 40,
      sampling: GREEDY,
      signal: controller.signal,
    });
    await it.next();
    await it.next();
    controller.abort();
    const { result } = await collect(it);
    expect(result.stopReason).toBe('cancelled');
    expect(result.tokens.length).toBeLessThan(40);
    // The same parts run a full generation afterwards, identical to a fresh engine's.
    const again = await generateAll({ target, drafter, tokenizer }, [4, 5], { maxNewTokens: 40, sampling: GREEDY });
    const fresh = await run('tree', [4, 5], { maxNewTokens: 40, sampling: GREEDY });
    expect(again.tokens).toEqual(fresh.result.tokens);
  });

  it('stops at end-of-sequence, including an accepted draft EOS, and never emits past it', async () => {
    for (const method of METHODS) {
      const { target, draft } = pair(12, 0.5, { eos: [3] });
      const drafter = makeDrafter(method, draft);
      const r = await generateAll({ target, drafter, tokenizer }, [1, 2], { maxNewTokens: 60, sampling: GREEDY });
      const plain = await generateAll(
        { target: new ToyLM(12, hashedLogits(12, 1, 2, 3), { eos: [3] }), drafter: makeDrafter('ar', null), tokenizer },
        [1, 2],
        { maxNewTokens: 60, sampling: GREEDY },
      );
      expect(r.tokens).toEqual(plain.tokens);
      if (r.stopReason === 'eos') {
        expect(r.tokens[r.tokens.length - 1]).toBe(3);
        expect(r.tokens.indexOf(3)).toBe(r.tokens.length - 1);
      }
    }
  });

  it('stops at extra stop tokens (a chat template end of turn) like end-of-sequence', async () => {
    const free = await run('chain', [1, 2], { maxNewTokens: 30, sampling: GREEDY });
    const stop = free.result.tokens[5] as number;
    const cut = free.result.tokens.indexOf(stop);
    const stopped = await run('chain', [1, 2], { maxNewTokens: 30, sampling: GREEDY, stopTokens: [stop] });
    expect(stopped.result.stopReason).toBe('eos');
    expect(stopped.result.tokens).toEqual(free.result.tokens.slice(0, cut + 1));
  });

  it('an over-long prompt is refused with a clear error and the engine stays usable; output stops at the context', async () => {
    const { target, draft } = pair(50, 1.5, { maxPositions: 32 });
    const drafter = makeDrafter('chain', draft);
    const long = Array.from({ length: 40 }, (_, i) => i % 50);
    await expect(
      generateAll({ target, drafter, tokenizer }, long, { maxNewTokens: 5, sampling: GREEDY }),
    ).rejects.toThrow(ContextLimitError);
    const r = await generateAll({ target, drafter, tokenizer }, [1, 2, 3], { maxNewTokens: 100, sampling: GREEDY });
    expect(r.stopReason).toBe('context');
    expect(r.tokens.length).toBe(32 - 3 + 1);
  });

  it('reports tau, acceptance per depth, calls and timings', async () => {
    const { result, events } = await run('chain', [1, 2], { maxNewTokens: 40, sampling: GREEDY }, 50, 0.3);
    const s = result.stats;
    expect(s.tau).toBeCloseTo(result.tokens.length / s.rounds, 6);
    expect(s.tau).toBeGreaterThan(1);
    expect(s.acceptanceByDepth.length).toBeGreaterThan(0);
    for (const a of s.acceptanceByDepth) expect(a).toBeGreaterThanOrEqual(0);
    expect(s.targetCalls).toBe(s.rounds + 1);
    expect(s.draftCalls).toBeGreaterThan(0);
    expect(events[events.length - 1]?.counts.tokens).toBe(40);
    for (const e of events)
      expect(e.timings.totalMs).toBeGreaterThanOrEqual(e.timings.draftMs + e.timings.verifyMs - 1e-6);
  });
});
