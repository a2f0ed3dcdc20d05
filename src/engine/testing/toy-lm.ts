/**
 * A table-driven causal LM for engine tests: logits are a fixed function of the visible context. It honours the
 * attention bias exactly (each row's context is the cached and new tokens its bias row shows), and it checks the
 * engine's position ids against that context, so a wrong mask or position shows up as a wrong distribution.
 */
import { type CausalLM, ContextLimitError, type ForwardInput } from '../lm';

export type LogitsFn = (context: readonly number[]) => Float32Array;

export class ToyLM implements CausalLM {
  private slots: number[][] = [];
  private pendingKeep: number[] | null = null;
  calls = 0;
  readonly config: { vocabSize: number; maxPositions: number; eosTokenIds: number[] };

  constructor(
    vocabSize: number,
    private readonly fn: LogitsFn,
    options: { maxPositions?: number; eos?: number[] } = {},
  ) {
    this.config = { vocabSize, maxPositions: options.maxPositions ?? 4096, eosTokenIds: options.eos ?? [] };
  }

  get length(): number {
    return this.pendingKeep ? this.pendingKeep.length : this.slots.length;
  }

  keep(indices: ArrayLike<number>): void {
    this.pendingKeep = Array.from(indices);
  }

  reset(): void {
    this.slots = [];
    this.pendingKeep = null;
  }

  /** Each slot stores the full context of its token (so a row's context is its visible slots' tokens). */
  async forward(input: ForwardInput): Promise<Float32Array> {
    this.calls++;
    if (this.pendingKeep) {
      this.slots = this.pendingKeep.map((i) => this.slots[i] as number[]);
      this.pendingKeep = null;
    }
    const cache = this.slots.length;
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
            ? ((this.slots[j] as number[])[(this.slots[j] as number[]).length - 1] as number)
            : (input.tokens[j - cache] as number),
        );
      }
      if (ctx[ctx.length - 1] !== input.tokens[i]) throw new Error(`toy: row ${i} does not see itself last`);
      if (input.positions[i] !== ctx.length - 1) {
        throw new Error(`toy: row ${i} has position ${input.positions[i]} but sees ${ctx.length} tokens`);
      }
      contexts.push(ctx);
    }
    this.slots.push(...contexts);
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
