import { describe, expect, it } from 'vitest';
import { DraftModelState } from './drafters/draft-model';
import type { Drafter, DraftRequest, DraftTree } from './drafters/drafter';
import { createDrafter, METHOD_NAMES, METHODS, type Method } from './drafters/index';
import type { CostModel } from './drafters/method';
import { NoDrafter } from './drafters/none';
import { GenerationError, type RoundEvent } from './events';
import { type GenerateOptions, generate, generateAll } from './generate';
import { ContextLimitError } from './lm';
import { GREEDY, type SamplingParams, toProbs, topK } from './sampling';
import { chiSquare, totalVariation } from './testing/stats';
import { HiddenToyLM, toyHeads } from './testing/toy-heads';
import { hashedLogits, type LogitsFn, noisyCopy, ToyLM } from './testing/toy-lm';
import type { VerifyResult } from './verify';

const tokenizer = { decode: (ids: readonly number[]) => ids.map((i) => String.fromCharCode(97 + (i % 26))).join('') };

/** Layer importances of the toy target's 6 "layers" (attention then MLP): skipping the light ones costs little. */
const IMPORTANCE = [0, 0.1, 0.8, 0.1, 0.6, 0, 0, 0.05, 0.9, 0.2, 0.1, 0];

function pair(vocab: number, noise: number, options: { eos?: number[]; maxPositions?: number } = {}) {
  const fn = hashedLogits(vocab, 1, 2, 3);
  const target = new HiddenToyLM(vocab, fn, 'eagle3', 6, IMPORTANCE, options);
  const draft = new ToyLM(vocab, noisyCopy(fn, vocab, 2, noise), options);
  return { fn, target, draft };
}

/**
 * A drafter for a registered method over toy models (the registry's factory, as the engine uses it). Methods that
 * need heads get toy heads over the draft's logits (Medusa: 4 heads; EAGLE-3: a head over the target's features).
 */
function makeDrafter(method: Method, target: ToyLM, draft: ToyLM, costs: CostModel | null = null): Drafter {
  const heads = target instanceof HiddenToyLM ? { heads: toyHeads(target, draft.fn) } : {};
  return createDrafter(method, { target, draft, ...heads, costs: () => costs });
}

/**
 * Measured costs on steep curves (each verified node costs a quarter of a call more, as on wasm, or a whole call):
 * cost-aware drafters cut their trees on them, round by round.
 */
const STEEP_COSTS: CostModel[] = [0.25, 1].map((slope) => {
  const curve = (ms: number) => ({
    context: 64,
    points: [1, 2, 4, 8, 16, 32].map((q) => ({ q, ms: ms * (1 + slope * (q - 1)), relative: 1 + slope * (q - 1) })),
  });
  return { curve: curve(2), draftRelative: 0.15, draftCurve: curve(0.3) };
});

async function run(method: Method, prompt: number[], options: GenerateOptions, vocab = 50, noise = 1.5) {
  const { target, draft } = pair(vocab, noise);
  const drafter = makeDrafter(method, target, draft);
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
  for (const method of METHOD_NAMES) {
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

  async function histogram(makeDrafterFor: (target: ToyLM, draft: ToyLM) => Drafter, from = prompt) {
    const fn = hashedLogits(V, 1, 2, 1.5);
    const target = new HiddenToyLM(V, fn, 'eagle3', 6, IMPORTANCE);
    const draft = new ToyLM(V, noisyCopy(fn, V, 2, 1.5));
    const drafter = makeDrafterFor(target, draft);
    const counts = new Array(V ** 3).fill(0);
    for (let seed = 1; seed <= N; seed++) {
      const r = await generateAll({ target, drafter, tokenizer }, from, {
        maxNewTokens: 3,
        sampling: { ...sampling, seed },
      });
      counts[(r.tokens[0] as number) * V * V + (r.tokens[1] as number) * V + (r.tokens[2] as number)]++;
    }
    const exact = exactJoint(fn, from, sampling, V, 3);
    return { tv: totalVariation(counts, exact), p: chiSquare(counts, exact).pValue };
  }

  for (const method of METHODS.filter((m) => m.lossless && m.name !== 'ar').map((m) => m.name)) {
    it(`${method}: first three tokens match the target's joint distribution (${N} draws, chi-square)`, async () => {
      const r = await histogram((t, d) => makeDrafter(method, t, d));
      expect(r.p).toBeGreaterThan(1e-3);
      expect(r.tv).toBeLessThan(Math.sqrt(V ** 3 / N)); // the noise level for this many draws
    });
  }

  // With measured costs the cost-aware drafters cut their trees on the curve: which drawn nodes are verified must
  // not depend on what was drawn (a cut by the drawn tokens' own probabilities kept likely draws more often than
  // unlikely ones, and layer skipping gave too few unlikely tokens on the real models).
  for (const method of METHODS.filter((m) => m.lossless && m.usesCostModel && m.name !== 'ar').map((m) => m.name)) {
    it(`${method}, trees cut on measured costs: the same joint distribution (${N} draws, chi-square)`, async () => {
      for (const costs of STEEP_COSTS) {
        const r = await histogram((t, d) => makeDrafter(method, t, d, costs));
        expect(r.p, `T(2)/T(1) = ${costs.curve.points[1]?.relative}`).toBeGreaterThan(1e-3);
        expect(r.tv).toBeLessThan(Math.sqrt(V ** 3 / N));
      }
    });
  }

  it('merged, prompt lookup matching beside the sampled chain, a nearly flat curve: the same joint distribution', async () => {
    // Both sources in the union, cut on the curve: by the drawn tokens' values the cut gave p = 3e-151.
    const flat = (ms: number) => ({
      context: 64,
      points: [1, 2, 4, 8, 16, 32].map((q) => ({ q, ms: ms * (1 + 0.05 * (q - 1)), relative: 1 + 0.05 * (q - 1) })),
    });
    const costs = { curve: flat(2), draftRelative: 0.01, draftCurve: flat(0.02) };
    const r = await histogram((t, d) => makeDrafter('merged', t, d, costs), [1, 3, 2, 1, 3, 2, 1, 3]);
    expect(r.p).toBeGreaterThan(1e-3);
    expect(r.tv).toBeLessThan(Math.sqrt(V ** 3 / N));
  });

  it('negative control: a merge that drops the first of the drawn children (not a prefix of the draws) fails', async () => {
    const r = await histogram((t, d) => {
      const inner = makeDrafter('dynamic', t, d);
      return {
        name: 'drop-first-draw',
        get calls() {
          return inner.calls;
        },
        async propose(req: DraftRequest) {
          const tree = await inner.propose(req);
          // Keep the root's children but the first draw (and its subtree): a budget cut that ignores draw order.
          const first = tree.parents.indexOf(0);
          const gone = new Set<number>();
          tree.parents.forEach((p, i) => {
            if (i === first || gone.has(p)) gone.add(i);
          });
          const keep = tree.tokens.map((_, i) => i).filter((i) => !gone.has(i));
          const index = new Map(keep.map((old, i) => [old, i]));
          return {
            tokens: keep.map((i) => tree.tokens[i] as number),
            parents: keep.map((i) => (i === 0 ? -1 : (index.get(tree.parents[i] as number) as number))),
            draftProbs: keep.map((i) => tree.draftProbs[i] ?? null),
          };
        },
        accept() {},
        reset() {
          inner.reset();
        },
      };
    });
    expect(r.p).toBeLessThan(1e-6);
    expect(r.tv).toBeGreaterThan(Math.sqrt(V ** 3 / N));
  });

  it('negative control: deterministic top-k children under sampling fail the same test', async () => {
    const r = await histogram((_, d) => new TopKTreeDrafter(d));
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

  it('what a drafter learned carries over between greedy generations, never into a sampled one', async () => {
    const sampled = { temperature: 0.9, topK: 0, topP: 1, seed: 11 };
    const trees = (events: readonly RoundEvent[]) => events.map((e) => e.tree.tokens.join(' '));
    const changed: string[] = [];
    for (const method of METHODS.filter((m) => !m.learns).map((m) => m.name)) {
      const { target, draft } = pair(50, 1.5);
      // A measured cost model, so that the cost-aware drafters size their trees on what they learned.
      const points = (slope: number) =>
        [1, 2, 4, 8, 16, 32, 64].map((q) => ({ q, ms: 1, relative: 1 + slope * (q - 1) }));
      const costs = {
        curve: { context: 0, points: points(0.1) },
        draftRelative: 0.1,
        draftCurve: { context: 0, points: points(0.05) },
      };
      const heads = { heads: toyHeads(target, draft.fn) };
      const fresh = () => createDrafter(method, { target, draft, ...heads, costs: () => costs });
      const go = async (drafter: Drafter, prompt: number[], sampling: SamplingParams) => {
        const events: RoundEvent[] = [];
        const result = await generateAll({ target, drafter, tokenizer }, prompt, { maxNewTokens: 30, sampling }, (e) =>
          events.push(e),
        );
        return { tokens: result.tokens, trees: trees(events) };
      };
      const used = fresh();
      for (const p of prompts.slice(0, 4)) await go(used, p, GREEDY);
      // Sampled: exactly what a fresh drafter gives for the seed, trees and all.
      expect(await go(used, [9, 8, 7], sampled), method).toEqual(await go(fresh(), [9, 8, 7], sampled));
      // Greedy: the same text; the trees may differ (what was learned).
      const warm = await go(used, [9, 8, 7], GREEDY);
      const cold = await go(fresh(), [9, 8, 7], GREEDY);
      expect(warm.tokens, method).toEqual(cold.tokens);
      if (JSON.stringify(warm.trees) !== JSON.stringify(cold.trees)) changed.push(method);
    }
    // The drafters that size their trees on measured acceptance start the next greedy generation from it.
    expect(changed).toEqual(expect.arrayContaining(['lookup', 'merged', 'adaptive-tree', 'eagle', 'medusa']));
  });

  it('auto on a flat curve under greedy decoding runs lookahead decoding among its arms, its window read from the target, and still gives plain greedy decoding', async () => {
    const { target, draft } = pair(500, 1.5);
    // Every width costs one call of 0.01 ms, so lookahead is among the arms; auto tries the chain, the tree and layer
    // skipping before it. A vocabulary of 500 keeps the toy text from repeating itself within the run: over 50
    // tokens it soon repeats, copy rounds took every round from then on, and lookahead drafted at most the last one
    // (none in 2 runs of 5 with 60 tokens, where the copies' lengths followed the rounds' real times).
    const flat = [1, 2, 4, 8, 16, 32, 64].map((q) => ({ q, ms: 0.01, relative: 1 }));
    const costs = { curve: { context: 0, points: flat }, draftRelative: 0.6, draftCurve: { context: 0, points: flat } };
    const drafter = createDrafter('auto', { target, draft, costs: () => costs });
    const events: RoundEvent[] = [];
    const prompt = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5];
    const result = await generateAll(
      { target, drafter, tokenizer },
      prompt,
      { maxNewTokens: 200, sampling: GREEDY },
      (e) => events.push(e),
    );
    const plain = await generateAll(
      { target, drafter: createDrafter('ar', { target, costs: () => costs }), tokenizer },
      prompt,
      {
        maxNewTokens: 200,
        sampling: GREEDY,
      },
    );
    expect(result.tokens).toEqual(plain.tokens);
    const lookahead = events.filter((e) => e.note?.fields?.arm === 'lookahead');
    expect(lookahead.length).toBeGreaterThan(0);
    expect(lookahead.every((e) => (e.tree.aux?.tokens.length ?? 0) > 0)).toBe(true);
  });

  it('cancellation stops between rounds and leaves the engine reusable', async () => {
    const { target, draft } = pair(50, 1.5);
    const drafter = makeDrafter('tree', target, draft);
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
    // The end-of-sequence token is one that plain greedy decoding reaches a few tokens in, so every run must stop.
    const free = await generateAll(
      { target: new ToyLM(12, hashedLogits(12, 1, 2, 3)), drafter: new NoDrafter(), tokenizer },
      [1, 2],
      { maxNewTokens: 60, sampling: GREEDY },
    );
    const eos = free.tokens[5] as number;
    const expected = free.tokens.slice(0, free.tokens.indexOf(eos) + 1);
    let draftedEosAccepted = 0;
    for (const method of METHOD_NAMES) {
      const { target, draft } = pair(12, 0.5, { eos: [eos] });
      const drafter = makeDrafter(method, target, draft);
      const events: RoundEvent[] = [];
      const r = await generateAll({ target, drafter, tokenizer }, [1, 2], { maxNewTokens: 60, sampling: GREEDY }, (e) =>
        events.push(e),
      );
      expect(r.stopReason, method).toBe('eos');
      expect(r.tokens, method).toEqual(expected);
      // The end-of-sequence token adds no text (its text is a marker); the streamed pieces make up the text.
      expect(r.text, method).toBe(tokenizer.decode(expected.slice(0, -1)));
      const pieces = events.flatMap((e) => [...e.accepted, ...e.target]);
      expect(pieces.map((p) => p.id)).toEqual(expected);
      expect(pieces.map((p) => p.text).join(''), method).toBe(r.text);
      expect((pieces[pieces.length - 1] as { text: string }).text).toBe('');
      const last = events[events.length - 1] as RoundEvent;
      if (last.accepted.some((t) => t.id === eos)) draftedEosAccepted++;
    }
    // The draft's own EOS was accepted (and nothing after it emitted) for some methods.
    expect(draftedEosAccepted).toBeGreaterThan(0);
  });

  it('stops at extra stop tokens (a chat template end of turn) like end-of-sequence', async () => {
    const free = await run('chain', [1, 2], { maxNewTokens: 30, sampling: GREEDY });
    const stop = free.result.tokens[5] as number;
    const cut = free.result.tokens.indexOf(stop);
    const stopped = await run('chain', [1, 2], { maxNewTokens: 30, sampling: GREEDY, stopTokens: [stop] });
    expect(stopped.result.stopReason).toBe('eos');
    expect(stopped.result.tokens).toEqual(free.result.tokens.slice(0, cut + 1));
    expect(stopped.result.text).toBe(tokenizer.decode(free.result.tokens.slice(0, cut)));
    // stopAtEos: false turns the model's end of sequence off, not the stop tokens given.
    const given = await run('chain', [1, 2], {
      maxNewTokens: 30,
      sampling: GREEDY,
      stopTokens: [stop],
      stopAtEos: false,
    });
    expect(given.result.tokens).toEqual(stopped.result.tokens);
  });

  it('bad options and token ids are refused in one line naming them, before anything runs', async () => {
    const { target, draft } = pair(50, 1.5);
    const drafter = makeDrafter('chain', target, draft);
    const run = (prompt: number[], options: Record<string, unknown>) =>
      generateAll({ target, drafter, tokenizer }, prompt, { maxNewTokens: 4, sampling: GREEDY, ...options } as never);
    await expect(run([1, 2], { maxNewTokens: '5' })).rejects.toThrow(
      'max new tokens must be a whole number >= 1; got "5"',
    );
    await expect(run([1, 2], { maxNewTokens: Number.NaN })).rejects.toThrow(
      'max new tokens must be a whole number >= 1; got NaN',
    );
    await expect(run([1, 2], { verifyRule: 'bogus' })).rejects.toThrow(
      'verify rule "bogus" is not one of greedy, rejection, typical',
    );
    await expect(run([1, 50, 2], {})).rejects.toThrow("prompt token 1 is 50, not in the target's vocabulary [0, 50)");
    await expect(run([1, -1], {})).rejects.toThrow("prompt token 1 is -1, not in the target's vocabulary [0, 50)");
    await expect(run([1.5], {})).rejects.toThrow("prompt token 0 is 1.5, not in the target's vocabulary [0, 50)");
    await expect(run([1, 2], { stopTokens: [3, 99999] })).rejects.toThrow(
      "stop token 99999 is not in the target's vocabulary [0, 50)",
    );
    // Values of the wrong kind are refused, not read as something else: a string of stop tokens threw a TypeError
    // about .find, stopAtEos 'no' stopped at the end of sequence, a misspelt sampling setting decoded greedily.
    await expect(run([1, 2], { stopTokens: '5' })).rejects.toThrow(
      'stop tokens must be an array of token ids; got "5"',
    );
    await expect(run([1, 2], { stopAtEos: 'no' })).rejects.toThrow('stopAtEos must be true or false; got "no"');
    await expect(run([1, 2], { sampling: { ...GREEDY, temprature: 1 } })).rejects.toThrow(
      'sampling has no setting "temprature" (its settings: temperature, topK, topP, seed)',
    );
    // A sampling value that is not an object of settings (a bare temperature) decoded greedily.
    for (const bad of [0.8, true, '0.8', [0.8]])
      await expect(run([1, 2], { sampling: bad })).rejects.toThrow(
        /^sampling must be an object \{ temperature, topK, topP, seed \} or left out \(greedy\); got /,
      );
    expect((await run([1, 2], { stopTokens: [49] })).tokens.length).toBeGreaterThan(0);
    // A typed array of ids is taken as prompts are (it was refused as {"0":49}), and its ids are checked the same.
    const typed = await run([1, 2], { stopTokens: new Int32Array([49]) });
    expect(typed.tokens).toEqual((await run([1, 2], { stopTokens: [49] })).tokens);
    await expect(run([1, 2], { stopTokens: new Int32Array([3, 99999]) })).rejects.toThrow(
      "stop token 99999 is not in the target's vocabulary [0, 50)",
    );
  });

  it('an over-long prompt is refused with a clear error and the engine stays usable; output stops at the context', async () => {
    const { target, draft } = pair(50, 1.5, { maxPositions: 32 });
    const drafter = makeDrafter('chain', target, draft);
    const long = Array.from({ length: 40 }, (_, i) => i % 50);
    await expect(
      generateAll({ target, drafter, tokenizer }, long, { maxNewTokens: 5, sampling: GREEDY }),
    ).rejects.toThrow(ContextLimitError);
    await expect(
      generateAll({ target, drafter, tokenizer }, long, { maxNewTokens: 5, sampling: GREEDY }),
    ).rejects.toThrow("context limit: the prompt has 40 tokens; the target's context is 32");
    // A limit the caller set below the target's is named as such, not as the target's.
    await expect(
      generateAll({ target, drafter, tokenizer, contextLimit: 20 }, long.slice(0, 25), {
        maxNewTokens: 5,
        sampling: GREEDY,
      }),
    ).rejects.toThrow("context limit: the prompt has 25 tokens; the context limit is 20 (the target's 32)");
    const r = await generateAll({ target, drafter, tokenizer }, [1, 2, 3], { maxNewTokens: 100, sampling: GREEDY });
    expect(r.stopReason).toBe('context');
    expect(r.tokens.length).toBe(32 - 3 + 1);
  });

  it('every method stops cleanly at the smaller context of the two models, near it too, keeping all it generated', async () => {
    for (const method of METHOD_NAMES) {
      for (const promptLength of [3, 35, 40]) {
        const fn = hashedLogits(50, 1, 2, 3);
        const target = new HiddenToyLM(50, fn, 'eagle3', 6, IMPORTANCE, { maxPositions: 48 });
        const draft = new ToyLM(50, noisyCopy(fn, 50, 2, 1.5), { maxPositions: 40 });
        const drafter = makeDrafter(method, target, draft);
        const prompt = Array.from({ length: promptLength }, (_, i) => (i * 7) % 50);
        const r = await generateAll({ target, drafter, tokenizer, contextLimit: 40 }, prompt, {
          maxNewTokens: 1000,
          sampling: GREEDY,
        });
        expect(r.stopReason, method).toBe('context');
        expect(r.tokens.length, method).toBe(40 - promptLength + 1);
      }
    }
  });

  it("auto runs to the target's context past a shorter draft model's (greedy and sampled, costs or none, heads or none): its draft arms stand aside", async () => {
    const flat = (ms: number) => ({ context: 64, points: [1, 2, 4, 8, 16].map((q) => ({ q, ms, relative: 1 })) });
    // A flat curve: the merged tree arm runs too, and copy rounds and refreshes with it.
    const measured = { curve: flat(2), draftRelative: 0.2, draftCurve: flat(0.4) };
    for (const sampling of [GREEDY, { temperature: 1, topK: 0, topP: 1, seed: 3 }]) {
      for (const withHeads of [false, true]) {
        for (const costs of [measured, null]) {
          const fn = hashedLogits(50, 1, 2, 3);
          const target = new HiddenToyLM(50, fn, 'eagle3', 6, IMPORTANCE, { maxPositions: 100 });
          const draft = new ToyLM(50, noisyCopy(fn, 50, 2, 0.5), { maxPositions: 40 });
          const heads = withHeads ? { heads: toyHeads(target, draft.fn) } : {};
          const drafter = createDrafter('auto', { target, draft, ...heads, costs: () => costs });
          const plain = createDrafter('ar', { target, costs: () => null });
          for (const length of [3, 38, 39, 41, 60]) {
            const prompt = Array.from({ length }, (_, i) => (i * 7) % 50);
            const what = `${sampling === GREEDY ? 'greedy' : 'sampled'}, heads ${withHeads}, costs ${!!costs}, prompt ${length}`;
            const r = await generateAll({ target, drafter, tokenizer }, prompt, { maxNewTokens: 1000, sampling });
            expect(r.stopReason, what).toBe('context');
            expect(r.tokens.length, what).toBe(100 - length + 1);
            if (sampling === GREEDY) {
              const p = await generateAll({ target, drafter: plain, tokenizer }, prompt, {
                maxNewTokens: 1000,
                sampling,
              });
              expect(r.tokens, what).toEqual(p.tokens);
            }
          }
        }
      }
    }
  });

  it("tells the drafter where the generation's own tokens begin (the prompt's length), every round", async () => {
    const { target, draft } = pair(50, 1.5);
    const inner = makeDrafter('chain', target, draft);
    const seen: (number | undefined)[] = [];
    const drafter: Drafter = {
      name: 'recording',
      get calls() {
        return inner.calls;
      },
      async propose(req) {
        seen.push(req.generatedFrom);
        return inner.propose(req);
      },
      accept: (t, r, o) => inner.accept(t, r, o),
      reset: () => inner.reset(),
    };
    await generateAll({ target, drafter, tokenizer }, [1, 2, 3], { maxNewTokens: 20, sampling: GREEDY });
    expect(seen.length).toBeGreaterThan(1);
    expect(new Set(seen)).toEqual(new Set([3]));
  });

  it('an error part-way keeps everything generated so far, and the parts are usable afterwards', async () => {
    const { target, draft } = pair(50, 1.5);
    const inner = makeDrafter('chain', target, draft);
    let rounds = 0;
    let fail = true;
    const flaky: Drafter = {
      name: 'flaky',
      get calls() {
        return inner.calls;
      },
      async propose(req) {
        const tree = await inner.propose(req); // the failing round has made its draft calls
        if (fail && ++rounds === 4) throw new Error('the draft went away');
        return tree;
      },
      accept: (t, r, o) => inner.accept(t, r, o),
      reset: () => inner.reset(),
    };
    const events: RoundEvent[] = [];
    const error = await generateAll(
      { target, drafter: flaky, tokenizer },
      [1, 2],
      { maxNewTokens: 40, sampling: GREEDY },
      (e) => events.push(e),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GenerationError);
    const partial = (error as GenerationError).partial;
    expect(partial.stopReason).toBe('error');
    expect(partial.tokens).toEqual(events.flatMap((e) => [...e.accepted, ...e.target].map((t) => t.id)));
    expect(partial.tokens.length).toBeGreaterThan(3);
    // The partial stats count the completed rounds, all of them alike: the failed round's draft calls are not in them.
    const last = events[events.length - 1] as RoundEvent;
    expect(partial.stats.rounds).toBe(events.length);
    expect(partial.stats.draftCalls).toBe(last.counts.draftCalls);
    expect(partial.stats.targetCalls).toBe(last.counts.targetCalls);
    fail = false;
    const again = await generateAll({ target, drafter: flaky, tokenizer }, [1, 2], {
      maxNewTokens: 40,
      sampling: GREEDY,
    });
    const fresh = await run('chain', [1, 2], { maxNewTokens: 40, sampling: GREEDY });
    expect(again.tokens).toEqual(fresh.result.tokens);
  });

  it('a stop that comes in the last round leaves a complete generation complete (max-tokens, not cancelled)', async () => {
    for (const method of ['ar', 'chain'] as const) {
      const { target, draft } = pair(50, 1.5);
      const controller = new AbortController();
      const it = generate({ target, drafter: makeDrafter(method, target, draft), tokenizer }, [4, 5], {
        maxNewTokens: 5,
        sampling: GREEDY,
        signal: controller.signal,
      });
      for (let s = await it.next(); ; s = await it.next()) {
        if (s.done) {
          expect(s.value.tokens).toHaveLength(5);
          expect(s.value.stopReason, method).toBe('max-tokens');
          break;
        }
        if (s.value.counts.tokens >= 5) controller.abort();
      }
    }
  });

  it("a round with nothing left to draft makes no draft call (a generation's last token)", async () => {
    for (const method of ['chain', 'adaptive', 'dynamic', 'tree'] as const) {
      const { result } = await run(method, [1, 2, 3], { maxNewTokens: 1, sampling: GREEDY });
      expect(result.tokens, method).toEqual(
        (await run('ar', [1, 2, 3], { maxNewTokens: 1, sampling: GREEDY })).result.tokens,
      );
      expect(result.stats.draftCalls, method).toBe(0);
    }
  });

  it("a draft model's or EAGLE head's read of the prompt counts as prefill, not as the first round's drafting", async () => {
    class SlowPrefillLM extends ToyLM {
      override async forward(input: Parameters<ToyLM['forward']>[0]): Promise<Float32Array> {
        if (input.tokens.length > 8) await new Promise((r) => setTimeout(r, 80)); // a long prompt's read
        return super.forward(input);
      }
    }
    for (const method of ['chain', 'dynamic'] as const) {
      const { fn, target } = pair(50, 1.5);
      const draft = new SlowPrefillLM(50, noisyCopy(fn, 50, 2, 1.5));
      const drafter = makeDrafter(method, target, draft);
      const prompt = Array.from({ length: 40 }, (_, i) => (i * 7) % 50);
      const events: RoundEvent[] = [];
      const result = await generateAll(
        { target, drafter, tokenizer },
        prompt,
        { maxNewTokens: 8, sampling: GREEDY },
        (e) => events.push(e),
      );
      expect(result.stats.prefillMs, method).toBeGreaterThanOrEqual(79);
      expect(events[0]?.timings.draftMs, method).toBeLessThan(60);
      expect(events[0]?.timings.totalMs, method).toBeLessThan(60);
    }
    // An EAGLE head reads the prompt's features in its first round: prefill too.
    const { target, draft } = pair(50, 1.5);
    const heads = toyHeads(target, draft.fn);
    const head = heads.eagle3 as NonNullable<typeof heads.eagle3>;
    const forward = head.forward.bind(head);
    head.forward = async (input) => {
      if (input.tokens.length > 8) await new Promise((r) => setTimeout(r, 80));
      return forward(input);
    };
    const drafter = createDrafter('eagle', { target, draft, heads, costs: () => null });
    const events: RoundEvent[] = [];
    const prompt = Array.from({ length: 40 }, (_, i) => (i * 7) % 50);
    const result = await generateAll(
      { target, drafter, tokenizer },
      prompt,
      { maxNewTokens: 8, sampling: GREEDY },
      (e) => events.push(e),
    );
    expect(result.stats.prefillMs).toBeGreaterThanOrEqual(79);
    expect(events[0]?.timings.draftMs).toBeLessThan(60);
  });

  it("a round's tree texts are each node's own text, decoded only when read (also through structured clone)", async () => {
    const { target, draft } = pair(50, 0.3);
    let decodes = 0;
    const counting = {
      decode: (ids: readonly number[]) => {
        decodes++;
        return tokenizer.decode(ids);
      },
    };
    const drafter = makeDrafter('lookahead', target, draft);
    const events: RoundEvent[] = [];
    const options = { maxNewTokens: 24, sampling: GREEDY };
    await generateAll({ target, drafter, tokenizer: counting }, [1, 2, 3, 1, 2], options, (e) => events.push(e));
    const streaming = decodes;
    const withAux = events.find((e) => (e.tree.aux?.tokens.length ?? 0) > 0) as RoundEvent;
    expect(withAux).toBeDefined();
    expect(decodes).toBe(streaming);
    expect(withAux.tree.texts).toEqual(withAux.tree.tokens.map((t) => tokenizer.decode([t])));
    expect(decodes).toBe(streaming + withAux.tree.tokens.length);
    expect(withAux.tree.texts).toBe(withAux.tree.texts); // decoded once, then kept
    expect(decodes).toBe(streaming + withAux.tree.tokens.length);
    const posted = structuredClone(events[0] as RoundEvent);
    expect(posted.tree.texts).toEqual((events[0] as RoundEvent).tree.tokens.map((t) => tokenizer.decode([t])));
    const aux = structuredClone(withAux.tree.aux);
    expect(aux?.texts).toEqual(aux?.tokens.map((t) => tokenizer.decode([t])));
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
