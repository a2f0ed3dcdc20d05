import { describe, expect, it } from 'vitest';
import type { Drafter } from './drafters/drafter';
import { createDrafter, METHOD_NAMES, type Method } from './drafters/index';
import { LOOKAHEAD_DEFAULTS } from './drafters/lookahead';
import type { GenerationResult, RoundEvent } from './events';
import { generateAll } from './generate';
import type { ForwardInput, TopLogits } from './lm';
import { argmax, GREEDY, topK } from './sampling';
import { statsFromEvents } from './stats';
import { HiddenToyLM, toyHeads } from './testing/toy-heads';
import { hashedLogits, noisyCopy, ToyLM } from './testing/toy-lm';

const VOCAB = 50;
const tokenizer = { decode: (ids: readonly number[]) => ids.map((i) => String.fromCharCode(97 + (i % 26))).join('') };
const fn = hashedLogits(VOCAB, 1, 2, 3);

/** Sub-layer importances of the toy target's 6 layers (attention 0..5, MLP 0..5), for methods that skip layers. */
const IMPORTANCE = [0, 0.1, 0.8, 0.1, 0.6, 0, 0, 0.05, 0.9, 0.2, 0.1, 0];

/**
 * A toy target that, like ModelRunner, can return argmax ids only, and counts what its verifying calls return
 * (a layer-skipping drafter's own calls on it are not verification and are not counted).
 */
class ArgmaxToyLM extends HiddenToyLM {
  bytesRead = 0;
  logitsCalls = 0;
  argmaxCalls = 0;
  private drafting = false;

  constructor() {
    super(VOCAB, fn, 'eagle3', 6, IMPORTANCE);
  }

  override async forward(input: ForwardInput): Promise<Float32Array> {
    const out = await super.forward(input);
    if (!this.drafting) {
      this.logitsCalls++;
      this.bytesRead += out.byteLength;
    }
    return out;
  }

  override async forwardSkipping(input: ForwardInput, skip: Uint8Array): Promise<Float32Array> {
    this.drafting = true;
    try {
      return await super.forwardSkipping(input, skip);
    } finally {
      this.drafting = false;
    }
  }

  topKCalls = 0;

  async forwardTopK(input: ForwardInput, k: number): Promise<TopLogits> {
    this.topKCalls++;
    this.drafting = true;
    const logits = await super.forward(input).finally(() => {
      this.drafting = false;
    });
    const rows = logits.length / VOCAB;
    const values = new Float32Array(rows * k);
    const ids = new Int32Array(rows * k);
    for (let r = 0; r < rows; r++) {
      const row = logits.subarray(r * VOCAB, (r + 1) * VOCAB);
      topK(row, k).forEach((id, j) => {
        ids[r * k + j] = id;
        values[r * k + j] = row[id] as number;
      });
    }
    this.bytesRead += rows * k * 12;
    return { k, values, ids };
  }

  async forwardArgmax(input: ForwardInput): Promise<Int32Array> {
    this.argmaxCalls++;
    this.drafting = true;
    const logits = await super.forward(input).finally(() => {
      this.drafting = false;
    });
    const rows = logits.length / VOCAB;
    this.bytesRead += rows * 8;
    return Int32Array.from({ length: rows }, (_, r) => argmax(logits.subarray(r * VOCAB, (r + 1) * VOCAB)));
  }
}

async function run(target: ToyLM, method: Method, temperature = 0, drafterPatch?: Partial<Drafter>, topk = 0) {
  const draft = new ToyLM(VOCAB, noisyCopy(fn, VOCAB, 2, 1.5));
  const heads = target instanceof HiddenToyLM ? { heads: toyHeads(target, draft.fn) } : {};
  const drafter = Object.assign(
    createDrafter(method, { target, draft, ...heads, costs: () => null }),
    drafterPatch ?? {},
  );
  const events: RoundEvent[] = [];
  const sampling = temperature === 0 ? GREEDY : { temperature, topK: topk, topP: topk ? 0.95 : 1, seed: 7 };
  const result: GenerationResult = await generateAll(
    { target, drafter, tokenizer },
    [3, 14, 15, 9],
    { maxNewTokens: 24, sampling },
    (e) => events.push(e),
  );
  return { result, events };
}

describe('verification that reads less', () => {
  for (const method of METHOD_NAMES) {
    it(`greedy, ${method}: only token ids come back (8 bytes a row) unless the drafter reads logits; same text`, async () => {
      const withIds = new ArgmaxToyLM();
      const fromLogits = new HiddenToyLM(VOCAB, fn, 'eagle3', 6, IMPORTANCE);
      const a = await run(withIds, method);
      const b = await run(fromLogits, method);
      expect(a.result.tokens).toEqual(b.result.tokens);
      const { stats } = a.result;
      expect(withIds.logitsCalls).toBe(0);
      expect(withIds.argmaxCalls).toBe(stats.targetCalls);
      // Lookahead's Jacobi update reads the argmax of its window's last level (W rows): their ids come back too.
      const auxRows = method === 'lookahead' ? LOOKAHEAD_DEFAULTS.window : 0;
      expect(stats.targetBytesPerRound).toBeCloseTo(8 * (stats.meanTreeSize + auxRows), 6);
      expect(stats.targetBytesPerRound).toBeLessThanOrEqual(1024);
      expect(statsFromEvents(a.events).targetBytes).toBe(stats.targetBytes);
      // A target without the capability still works, and reports no bytes (it does not count them).
      expect(b.result.stats.targetBytes).toBe(0);
    });
  }

  it('sampling reads whole logits rows (and gives the same tokens as a target without forwardArgmax)', async () => {
    const target = new ArgmaxToyLM();
    const a = await run(target, 'dynamic', 1);
    const b = await run(new HiddenToyLM(VOCAB, fn, 'eagle3', 6, IMPORTANCE), 'dynamic', 1);
    expect(a.result.tokens).toEqual(b.result.tokens);
    expect(target.logitsCalls).toBe(a.result.stats.rounds);
    expect(a.result.stats.targetBytesPerRound).toBeCloseTo(4 * VOCAB * a.result.stats.meanTreeSize, 6);
  });

  for (const method of METHOD_NAMES.filter((m) => m !== 'ar')) {
    it(`sampling with top-k, ${method}: each row's top k comes back (12k bytes a row) unless the drafter reads logits; same text`, async () => {
      const target = new ArgmaxToyLM();
      const a = await run(target, method, 1.2, undefined, 6);
      const b = await run(new HiddenToyLM(VOCAB, fn, 'eagle3', 6, IMPORTANCE), method, 1.2, undefined, 6);
      // The same probabilities bit for bit, so the same random numbers give the same text (auto's choices follow real
      // time when it has no cost model, as here, so its text may differ).
      if (method !== 'auto') expect(a.result.tokens).toEqual(b.result.tokens);
      const { stats } = a.result;
      // Medusa's typical acceptance (the default there) reads whole rows (their entropy); its rejection rule does not.
      const typical = method === 'medusa' && target.logitsCalls > 0;
      expect(target.topKCalls).toBe(typical ? 0 : stats.rounds);
      const auxRows = method === 'lookahead' ? LOOKAHEAD_DEFAULTS.window : 0;
      if (!typical) expect(stats.targetBytesPerRound).toBeCloseTo(6 * 12 * (stats.meanTreeSize + auxRows), 6);
    });
  }

  it('a drafter that reads the target logits gets them under greedy too', async () => {
    const target = new ArgmaxToyLM();
    const a = await run(target, 'chain', 0, { readsTargetLogits: true });
    expect(target.logitsCalls).toBe(a.result.stats.rounds);
    expect(a.result.stats.targetBytesPerRound).toBeCloseTo(4 * VOCAB * a.result.stats.meanTreeSize, 6);
  });
});
