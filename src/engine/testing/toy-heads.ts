/**
 * Draft heads for engine tests, over a toy target that returns hidden states. The toy target's "hidden state" at a
 * position encodes its context (its length and last tokens: the toy logits depend on no more), so heads built on
 * it draft like the real ones: Medusa's heads guess several tokens ahead from one state (here by a greedy rollout of
 * a noisy copy of the target), the EAGLE-3 head runs rows of (feature or parent output, next token) through a cache
 * and predicts the token after. Each checks what the engine feeds it (positions, attention, which state), so a wrong
 * row, position or mask shows up as an error or a changed distribution, never silently.
 */

import type { HeadsResource } from '../drafters/method';
import type { Eagle3Head, Eagle3RowInput, ForwardInput, HeadsTop, HiddenStatesLM, MedusaHeads } from '../lm';
import { softmaxTop } from '../sampling';
import { type LogitsFn, SkippingToyLM, ToyCache } from './toy-lm';

/** Tokens of context a state keeps (the toy logits read only the last 2). */
const KEEP = 3;
/** Width of an encoded context: [length, last KEEP tokens (oldest first, -1 when absent)]. */
export const STATE_WIDTH = 1 + KEEP;

export function encodeContext(context: readonly number[], width = STATE_WIDTH): Float32Array {
  const out = new Float32Array(width);
  out[0] = context.length;
  for (let i = 0; i < KEEP; i++) out[1 + i] = context[context.length - KEEP + i] ?? -1;
  return out;
}

/** The tail of the context a state encodes, and its length. */
export function decodeContext(state: ArrayLike<number>): { length: number; tail: number[] } {
  const tail: number[] = [];
  for (let i = 0; i < KEEP; i++) if ((state[1 + i] as number) >= 0) tail.push(state[1 + i] as number);
  return { length: state[0] as number, tail };
}

const argmax = (v: Float32Array): number => v.reduce((b, x, i, a) => (x > (a[b] as number) ? i : b), 0);

/**
 * A toy target built with hidden states: 'last' (Medusa) returns the encoded context; 'eagle3' a [3 x width] row
 * (the encoded context and two copies, standing in for three layers' inputs).
 */
export class HiddenToyLM extends SkippingToyLM implements HiddenStatesLM {
  private hidden = new Float32Array(0);
  readonly hiddenWidth: number;

  constructor(
    vocab: number,
    fn: LogitsFn,
    readonly hiddenKind: 'last' | 'eagle3',
    numLayers: number,
    importance: readonly number[],
    options: { maxPositions?: number; eos?: number[] } = {},
  ) {
    super(vocab, fn, numLayers, importance, options);
    this.hiddenWidth = hiddenKind === 'last' ? STATE_WIDTH : 3 * STATE_WIDTH;
  }

  override async forward(input: ForwardInput): Promise<Float32Array> {
    const logits = await super.forward(input);
    const rows = Array.from(input.hiddenRows ?? input.rows);
    const q = input.tokens.length;
    const contexts = this.lastContexts(q);
    this.hidden = new Float32Array(rows.length * this.hiddenWidth);
    rows.forEach((r, k) => {
      const e = encodeContext(contexts[r] as number[]);
      for (let c = 0; c < this.hiddenWidth / STATE_WIDTH; c++)
        this.hidden.set(e, k * this.hiddenWidth + c * STATE_WIDTH);
    });
    return logits;
  }

  lastHidden(): Float32Array {
    return this.hidden;
  }
}

/** Medusa-like heads over HiddenToyLM('last'): head k's logits are the draft's at step k + 1 of a greedy rollout. */
export class ToyMedusaHeads implements MedusaHeads {
  calls = 0;
  constructor(
    readonly count: number,
    readonly vocab: number,
    private readonly draft: LogitsFn,
    /** Width of the target's hidden rows (the encoded context comes first). */
    private readonly rowWidth = STATE_WIDTH,
  ) {}

  async predict(hidden: Float32Array): Promise<Float32Array> {
    if (hidden.length % this.rowWidth !== 0) throw new Error(`toy medusa: ${hidden.length} is not whole rows`);
    const rows = hidden.length / this.rowWidth;
    const out = new Float32Array(this.count * rows * this.vocab);
    for (let r = 0; r < rows; r++) {
      // The state at position t predicted x_{t+1} (the root); head k guesses x_{t+k+2}.
      const ctx = decodeContext(hidden.subarray(r * this.rowWidth, r * this.rowWidth + STATE_WIDTH)).tail;
      ctx.push(argmax(this.draft(ctx)));
      for (let k = 0; k < this.count; k++) {
        const l = this.draft(ctx);
        out.set(l, (k * rows + r) * this.vocab);
        ctx.push(argmax(l));
      }
    }
    this.calls++;
    return out;
  }

  async predictTop(hidden: Float32Array, k: number): Promise<HeadsTop> {
    return softmaxTop(await this.predict(hidden), this.vocab, k);
  }
}

/**
 * An EAGLE-3-like head over HiddenToyLM('eagle3'): a row pairs a state (a target feature, or its parent's output)
 * with the next token and predicts the token after it (the draft's logits for that context); its output is the
 * state of that longer context. It keeps a cache of row contexts and checks each row's attention and position: a
 * row must see, in order, the tokens of its context among the slots visible to it.
 */
export class ToyEagle3Head implements Eagle3Head {
  calls = 0;
  readonly hiddenSize = STATE_WIDTH;
  /** The token of each cached row. */
  private readonly cache = new ToyCache<number>();

  constructor(
    private readonly vocab: number,
    private readonly draft: LogitsFn,
    /** Draft-vocabulary index -> target token (the identity when absent). */
    private readonly d2t: readonly number[] | null = null,
  ) {}

  get draftVocab(): number {
    return this.d2t ? this.d2t.length : this.vocab;
  }

  targetToken(i: number): number {
    return this.d2t ? (this.d2t[i] as number) : i;
  }

  get length(): number {
    return this.cache.length;
  }

  keep(indices: ArrayLike<number>): void {
    this.cache.keep(indices);
  }

  reset(): void {
    this.cache.reset();
  }

  async forward(input: {
    tokens: readonly number[];
    inputs: readonly Eagle3RowInput[];
    positions: readonly number[];
    bias: Float32Array;
    rows: readonly number[];
  }): Promise<{ logits: Float32Array; out: Float32Array }> {
    this.calls++;
    const slots = this.cache.begin();
    const cache = slots.length;
    const q = input.tokens.length;
    const width = cache + q;
    if (input.bias.length !== q * width) throw new Error(`toy eagle: bias ${input.bias.length} != ${q} x ${width}`);
    const outs: Float32Array[] = [];
    for (let i = 0; i < q; i++) {
      const row = input.inputs[i] as Eagle3RowInput;
      const state = 'feature' in row ? row.feature.subarray(0, STATE_WIDTH) : row.drafted;
      if ('feature' in row && row.feature.length !== 3 * STATE_WIDTH) throw new Error('toy eagle: feature width');
      const { length, tail } = decodeContext(state);
      const ctx = [...tail, input.tokens[i] as number];
      // Row j pairs the state through x_j with x_{j+1}, at position j.
      if (input.positions[i] !== length - 1)
        throw new Error(`toy eagle: row ${i} at position ${input.positions[i]} pairs a state of ${length} tokens`);
      const seen: number[] = [];
      for (let j = 0; j < width; j++)
        if (input.bias[i * width + j] === 0)
          seen.push(j < cache ? (slots[j] as number) : (input.tokens[j - cache] as number));
      // Visible rows carry x_1 .. x_{j+1}: one per position, ending with this row's own token.
      if (seen.length !== length) throw new Error(`toy eagle: row ${i} sees ${seen.length} rows, wants ${length}`);
      const want = ctx.slice(-Math.min(ctx.length, seen.length));
      if (seen.slice(-want.length).join() !== want.join())
        throw new Error(`toy eagle: row ${i} sees ${seen.slice(-want.length)} but its context ends ${want}`);
      outs.push(encodeContext([...Array(Math.max(0, length + 1 - ctx.length)).fill(0), ...ctx]));
    }
    this.cache.push(...input.tokens);
    const logits = new Float32Array(input.rows.length * this.draftVocab);
    input.rows.forEach((r, k) => {
      const o = outs[r] as Float32Array;
      const full = this.draft(decodeContext(o).tail);
      for (let i = 0; i < this.draftVocab; i++) logits[k * this.draftVocab + i] = full[this.targetToken(i)] as number;
    });
    const out = new Float32Array(q * STATE_WIDTH);
    outs.forEach((o, i) => {
      out.set(o, i * STATE_WIDTH);
    });
    return { logits, out };
  }
}

/**
 * Heads for every method that needs them, over a toy target with hidden states and a toy draft's logits: Medusa
 * (4 heads, reading the first state of each hidden row) and an EAGLE-3 head.
 */
export function toyHeads(target: HiddenToyLM, draft: LogitsFn): HeadsResource {
  return {
    spec: 'toy heads',
    medusa: new ToyMedusaHeads(4, target.config.vocabSize, draft, target.hiddenWidth),
    eagle3: new ToyEagle3Head(target.config.vocabSize, draft),
    relativeCost: () => 0.05,
  };
}
