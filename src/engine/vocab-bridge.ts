/**
 * A draft model whose vocabulary is padded to another size than the target's. The tokenizers agree token for token
 * (the load checks it), but the embedding and output rows are padded per model: Qwen2.5-0.5B has 151936 rows, 7B
 * 152064. Drafting reads the draft over the target's vocabulary:
 * - its rows past the target's are dropped: the target could not be fed those ids (they are padding: no text);
 * - ids the draft has no row for get probability zero in its distribution, so rejection sampling stays lossless
 *   (a shorter q read as NaN dropped those ids from the residual distribution);
 * - a committed id past the draft's rows (a padding id the target sampled) is read by the draft as token 0: its
 *   guesses after it are worse, the text is still the target's.
 */
import type { CausalLM, ForwardInput } from './lm';

/** The logit of an id the draft has no row for: far below any real logit, finite (checkLogits refuses infinities). */
const ABSENT = -1e30;

export function onTargetVocabulary(draft: CausalLM, vocab: number): CausalLM {
  const own = draft.config.vocabSize;
  if (own === vocab) return draft;
  const config = { ...draft.config, vocabSize: vocab };
  const mapped = (input: ForwardInput): ForwardInput => ({
    ...input,
    tokens: Array.from(input.tokens, (t) => (t < own ? t : 0)),
  });
  const { fingerprint } = draft as { fingerprint?: string };
  const forwardArgmax = draft.forwardArgmax?.bind(draft);
  return {
    // What remembered records are keyed by (auto's arms): the draft's own, not "none".
    ...(fingerprint !== undefined ? { fingerprint } : {}),
    // Argmax ids where they are all the target's (a draft with fewer rows: the ids it lacks never win); a draft with
    // more rows could name a padding id, so its rows are read whole.
    ...(forwardArgmax && own < vocab ? { forwardArgmax: (input: ForwardInput) => forwardArgmax(mapped(input)) } : {}),
    get length() {
      return draft.length;
    },
    get calls() {
      return draft.calls;
    },
    get bytesRead() {
      return draft.bytesRead;
    },
    config,
    keep: (indices) => draft.keep(indices),
    reset: () => draft.reset(),
    async forward(input: ForwardInput): Promise<Float32Array> {
      const logits = await draft.forward(mapped(input));
      const rows = Math.floor(logits.length / own);
      const out = new Float32Array(rows * vocab);
      const width = Math.min(own, vocab);
      for (let r = 0; r < rows; r++) {
        out.set(logits.subarray(r * own, r * own + width), r * vocab);
        if (own < vocab) out.fill(ABSENT, r * vocab + own, (r + 1) * vocab);
      }
      return out;
    },
  };
}
