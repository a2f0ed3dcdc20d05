/**
 * A table-driven causal LM for engine tests: logits are a fixed function of the visible context. It honours the
 * attention bias exactly (each row's context is the cached and new tokens its bias row shows), and it checks the
 * engine's position ids against that context, so a wrong mask or position shows up as a wrong distribution.
 */
import { type CausalLM, ContextLimitError, type ForwardInput, type LayerSkippingLM } from '../lm';

export type LogitsFn = (context: readonly number[]) => Float32Array;

/**
 * A toy KV cache: one entry per slot, compacted like ModelRunner's (keep() takes indices into the cache as `length`
 * sees it; a second keep before the next call composes with the first; applied when the next call starts).
 */
export class ToyCache<T> {
  private slots: T[] = [];
  private pendingKeep: number[] | null = null;

  get length(): number {
    return this.pendingKeep ? this.pendingKeep.length : this.slots.length;
  }

  keep(indices: ArrayLike<number>): void {
    const list = Array.from(indices);
    const pending = this.pendingKeep;
    this.pendingKeep = pending ? list.map((i) => pending[i] as number) : list;
  }

  reset(): void {
    this.slots = [];
    this.pendingKeep = null;
  }

  /** The slots a call sees: pending compaction applied. */
  begin(): readonly T[] {
    if (this.pendingKeep) {
      const pending = this.pendingKeep;
      this.slots = pending.map((i) => this.slots[i] as T);
      this.pendingKeep = null;
    }
    return this.slots;
  }

  push(...entries: T[]): void {
    this.slots.push(...entries);
  }

  /** The last n slots. */
  last(n: number): T[] {
    return this.slots.slice(this.slots.length - n);
  }
}

export class ToyLM implements CausalLM {
  private readonly cache = new ToyCache<number[]>();
  calls = 0;
  readonly config: { vocabSize: number; maxPositions: number; eosTokenIds: number[] };

  constructor(
    vocabSize: number,
    /** The logits of a context (heads built over a toy draft read it). */
    readonly fn: LogitsFn,
    options: { maxPositions?: number; eos?: number[] } = {},
  ) {
    this.config = { vocabSize, maxPositions: options.maxPositions ?? 4096, eosTokenIds: options.eos ?? [] };
  }

  get length(): number {
    return this.cache.length;
  }

  /** Like ModelRunner.keep: indices into the logical cache; a second keep before the next call composes. */
  keep(indices: ArrayLike<number>): void {
    this.cache.keep(indices);
  }

  reset(): void {
    this.cache.reset();
  }

  /** The full context of each row of the last call. */
  protected lastContexts(q: number): number[][] {
    return this.cache.last(q);
  }

  /** Each slot stores the full context of its token (so a row's context is its visible slots' tokens). */
  async forward(input: ForwardInput): Promise<Float32Array> {
    this.calls++;
    const slots = this.cache.begin();
    const cache = slots.length;
    const q = input.tokens.length;
    const width = cache + q;
    // Like a real model: no positions beyond its context.
    if (width > this.config.maxPositions)
      throw new ContextLimitError(`toy: ${width} tokens exceed the maximum of ${this.config.maxPositions}`);
    if (input.bias.length !== q * width) throw new Error(`toy: bias ${input.bias.length} != ${q} x ${width}`);
    const contexts: number[][] = [];
    for (let i = 0; i < q; i++) {
      const ctx: number[] = [];
      for (let j = 0; j < width; j++) {
        if (input.bias[i * width + j] !== 0) continue;
        ctx.push(
          j < cache
            ? ((slots[j] as number[])[(slots[j] as number[]).length - 1] as number)
            : (input.tokens[j - cache] as number),
        );
      }
      if (ctx[ctx.length - 1] !== input.tokens[i]) throw new Error(`toy: row ${i} does not see itself last`);
      if (input.positions[i] !== ctx.length - 1) {
        throw new Error(`toy: row ${i} has position ${input.positions[i]} but sees ${ctx.length} tokens`);
      }
      contexts.push(ctx);
    }
    this.cache.push(...contexts);
    const V = this.config.vocabSize;
    const out = new Float32Array(input.rows.length * V);
    Array.from(input.rows).forEach((r, k) => {
      out.set(this.fn(contexts[r] as number[]), k * V);
    });
    return out;
  }
}

/** Deterministic pseudo-random logits for a context (depends on its last `order` tokens). */
export function hashedLogits(vocab: number, seed: number, order = 2, scale = 3): LogitsFn {
  return (context) => {
    let h = (seed * 2654435761) >>> 0;
    for (const t of context.slice(-order)) h = Math.imul(h ^ (t + 0x9e3779b9), 2246822519) >>> 0;
    const out = new Float32Array(vocab);
    for (let i = 0; i < vocab; i++) {
      h = Math.imul(h ^ (h >>> 15), 2246822519) >>> 0;
      h = Math.imul(h ^ (h >>> 13), 3266489917) >>> 0;
      out[i] = ((h >>> 0) / 2 ** 32 - 0.5) * 2 * scale;
    }
    return out;
  };
}

/** A draft that resembles the target: the target's logits plus its own noise. */
export function noisyCopy(target: LogitsFn, vocab: number, seed: number, noise: number): LogitsFn {
  const n = hashedLogits(vocab, seed, 2, noise);
  return (context) => {
    const a = target(context);
    const b = n(context);
    return a.map((v, i) => v + (b[i] as number));
  };
}

/**
 * A toy model with "layers" for self-speculation tests: skipping sub-layers adds noise to the logits, more for the
 * sub-layers that matter more (importance per switch), deterministically per context and skip set. Skipping nothing
 * is the target exactly.
 */
export class SkippingToyLM extends ToyLM implements LayerSkippingLM {
  readonly canSkipLayers = true;
  readonly fingerprint: string;
  private skipping: Uint8Array | null = null;

  constructor(
    vocabSize: number,
    private readonly base: LogitsFn,
    readonly numLayers: number,
    /** How much each sub-layer switch (attention 0..L-1, MLP 0..L-1) perturbs the logits when skipped. */
    readonly importance: readonly number[],
    options: { maxPositions?: number; eos?: number[] } = {},
  ) {
    super(vocabSize, (ctx) => this.logitsFor(ctx), options);
    this.fingerprint = `toy:${vocabSize}:${numLayers}:${importance.join(',')}`;
  }

  private logitsFor(ctx: readonly number[]): Float32Array {
    const out = this.base(ctx);
    const z = this.skipping;
    if (!z) return out;
    let scale = 0;
    for (let i = 0; i < z.length; i++) if (z[i]) scale += this.importance[i] ?? 0;
    if (scale === 0) return out;
    let seed = 7;
    for (let i = 0; i < z.length; i++) seed = (Math.imul(seed, 31) + (z[i] as number)) >>> 0;
    const noise = hashedLogits(this.config.vocabSize, seed, 2, 1)(ctx);
    return out.map((v, i) => v + scale * (noise[i] as number));
  }

  async forwardSkipping(input: ForwardInput, skip: Uint8Array): Promise<Float32Array> {
    this.skipping = skip;
    try {
      return await this.forward(input);
    } finally {
      this.skipping = null;
    }
  }
}
