/**
 * The model contract the engine owns: what a model must do for the round loop. A KV-cached causal LM appends
 * tokens (a chain or a flattened token tree) under an additive attention bias and returns logits rows.
 * ModelRunner (onnxruntime-web, src/model/) implements it; tests use small table-driven models. The engine never
 * imports the model layer or its graph builder.
 */

/** The additive bias for hidden positions: finite in fp16 and fp32, so no -inf ever reaches softmax. */
export const MASKED = -65504;

export interface ForwardInput {
  /** Token ids, q of them. */
  tokens: ArrayLike<number>;
  /** Position id of each token (committed length + tree depth). */
  positions: ArrayLike<number>;
  /** Row-major [q, length + q] additive bias (0 visible, MASKED hidden), `length` = the model's length before the call. */
  bias: Float32Array;
  /** Which of the q rows need logits (in the order wanted). */
  rows: ArrayLike<number>;
  /** Which rows' hidden states to return (models built with hidden states; default: none). */
  hiddenRows?: ArrayLike<number>;
}

/** Each requested row's k largest logits, largest first, and their token ids: [rows, k] row-major. */
export interface TopLogits {
  k: number;
  values: Float32Array;
  ids: Int32Array;
}

/** A call would need more positions than the model has: a clean stop, never a crash. */
export class ContextLimitError extends Error {
  override name = 'ContextLimitError';
}

export interface CausalLM {
  /** Cache slots the next call attends to. */
  readonly length: number;
  /** Forward calls so far. */
  readonly calls: number;
  /** Append the tokens to the cache and return logits for the requested rows: [rows, vocab], row-major. */
  forward(input: ForwardInput): Promise<Float32Array>;
  /**
   * Optional: like forward, but return only each requested row's argmax token id (the first on ties), computed where
   * the logits are, so only q ids come back instead of q logits rows. Greedy verification needs no more.
   */
  forwardArgmax?(input: ForwardInput): Promise<Int32Array>;
  /**
   * Optional: like forward, but return only each requested row's k largest logits and their token ids, largest
   * first (ties: lower id first), computed where the logits are: [rows, k] each. Sampling with top-k needs no more.
   */
  forwardTopK?(input: ForwardInput, k: number): Promise<TopLogits>;
  /** Optional: bytes of outputs copied back from the model so far (logits rows or token ids). */
  readonly bytesRead?: number;
  /**
   * Keep only these cache slots (indices into the cache as `length` sees it, in order); applied before the next
   * call. A second keep before that call composes with the first.
   */
  keep(indices: ArrayLike<number>): void;
  /** Drop the whole cache (a new prompt). */
  reset(): void;
  readonly config: { vocabSize: number; maxPositions: number; eosTokenIds: number[] };
}

/** A model produced NaN or infinite logits: its weights or config are broken (or overflow in this precision). */
export class ModelOutputError extends Error {
  override name = 'ModelOutputError';
}

/**
 * Spot-check logits rows for NaN/infinity (8 evenly spaced entries per row: a NaN anywhere upstream of the LM head
 * reaches every entry of its row, and scanning whole 150k-token rows every round would cost real time).
 */
export function checkLogits(logits: Float32Array, vocab: number, who: string): void {
  const rows = Math.floor(logits.length / vocab);
  for (let r = 0; r < rows; r++) {
    for (let k = 0; k < 8; k++) {
      const v = logits[r * vocab + Math.floor((k * (vocab - 1)) / 7)] as number;
      if (!Number.isFinite(v)) {
        throw nonFinite(who, Number.isNaN(v) ? 'NaN' : 'infinite');
      }
    }
  }
}

/** The same check on a top-k selection's probabilities (a NaN logit makes its whole row's softmax NaN). */
export function checkTop(top: HeadsTop, who: string): void {
  for (const p of top.probs) if (!Number.isFinite(p)) throw nonFinite(who, 'NaN or infinite');
}

function nonFinite(who: string, what: string): ModelOutputError {
  return new ModelOutputError(
    `${who} produced ${what} logits: its weights or config.json are broken, or the values overflow this precision`,
  );
}

/**
 * A model that can run with some of its own sub-layers skipped, over its own cache and weights (self-speculation:
 * SWIFT). One session, one copy of the weights; the skip set may change on every call.
 */
export interface LayerSkippingLM extends CausalLM {
  /** True when this model was built with layer switches (a runner built without them has none). */
  readonly canSkipLayers: true;
  /** Decoder layers (each has an attention and an MLP sub-layer). */
  readonly numLayers: number;
  /** Identifies the model, its precision and its device (remembered skip sets are keyed by it). */
  readonly fingerprint: string;
  /** Like forward, with the sub-layers marked 1 in `skip` skipped: [attention of layer 0..L-1, MLP of 0..L-1]. */
  forwardSkipping(input: ForwardInput, skip: Uint8Array): Promise<Float32Array>;
}

/**
 * A model that also returns hidden states, for draft heads: 'last' is the final-normed state (Medusa, EAGLE-1/2),
 * 'eagle3' the inputs of three layers (low, mid, high) concatenated (EAGLE-3).
 */
export interface HiddenStatesLM extends CausalLM {
  readonly hiddenKind: 'last' | 'eagle3';
  /** Width of one hidden row. */
  readonly hiddenWidth: number;
  /** The hidden rows of the last call ([hiddenRows, hiddenWidth], row-major). */
  lastHidden(): Float32Array;
}

export function hasHiddenStates(lm: CausalLM): lm is HiddenStatesLM {
  return typeof (lm as Partial<HiddenStatesLM>).hiddenKind === 'string';
}

export function isLayerSkipping(lm: CausalLM): lm is LayerSkippingLM {
  return (lm as Partial<LayerSkippingLM>).canSkipLayers === true;
}

/** Medusa's K heads: from a hidden state of the target, logits for the K next-but-one positions. */
export interface MedusaHeads {
  /** K heads. */
  readonly count: number;
  readonly vocab: number;
  readonly calls: number;
  /** Logits of every head for each hidden row: [K, rows, vocab] row-major. */
  predict(hidden: Float32Array): Promise<Float32Array>;
  /**
   * Each head's k most probable tokens for each hidden row under the softmax of its logits, what drafting reads:
   * [K, rows, k] row-major, most probable first (ties: the lower id first), as softmaxTop (sampling.ts) computes from
   * predict's logits.
   */
  predictTop(hidden: Float32Array, k: number): Promise<HeadsTop>;
}

/** Per logits row (head-major for heads): its k most probable tokens and their probabilities, most probable first. */
export interface HeadsTop {
  k: number;
  probs: Float32Array;
  ids: Int32Array;
}

/** One row of an EAGLE-3 head call: the next token, and a target feature (real rows) or the parent's output. */
export type Eagle3RowInput = { feature: Float32Array } | { drafted: Float32Array };

/** The EAGLE-3 head: one decoder layer over target features with its own KV cache and a draft vocabulary. */
export interface Eagle3Head {
  readonly calls: number;
  readonly length: number;
  readonly hiddenSize: number;
  readonly draftVocab: number;
  /** Target token id of a draft-vocabulary index. */
  targetToken(draftIndex: number): number;
  forward(input: {
    tokens: readonly number[];
    inputs: readonly Eagle3RowInput[];
    positions: readonly number[];
    bias: Float32Array;
    rows: readonly number[];
  }): Promise<{ logits: Float32Array; out: Float32Array }>;
  keep(indices: ArrayLike<number>): void;
  reset(): void;
}
