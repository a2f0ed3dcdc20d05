/**
 * The target's call in a round, reading back as little as the round needs. Under greedy verification, with a target
 * that computes argmax ids itself (CausalLM.forwardArgmax) and a drafter that does not read the target's logits
 * (Drafter.readsTargetLogits), only the token ids leave the model (8 bytes a row instead of a vocabulary row
 * each); otherwise every requested row's logits come back (and are checked for NaN or infinite values, which token
 * ids cannot show: weights holding them are refused at load, so only an fp16 overflow goes unseen on that path).
 */
import type { TargetOutputs } from './drafters';
import { type CausalLM, checkLogits, type ForwardInput, type HiddenStatesLM } from './lm';

export interface TargetCall {
  /** Logits rows of the tree's nodes and of the auxiliary rows; they throw when only token ids came back. */
  outputs: TargetOutputs;
  /** Each tree node's argmax token when only ids came back; null when the logits did. */
  best: ((node: number) => number) | null;
  /** Bytes the call returned. */
  bytes: number;
}

/**
 * Run `input` (tree nodes first: `treeSize` of them, their rows first) and return what verification and the drafter
 * read. `tokensOnly` asks for argmax ids alone; the target must offer forwardArgmax for it to take effect.
 */
export async function callTarget(
  target: CausalLM,
  input: ForwardInput,
  treeSize: number,
  tokensOnly: boolean,
  drafterName = 'the drafter',
  hidden: HiddenStatesLM | null = null,
): Promise<TargetCall> {
  const before = target.bytesRead ?? 0;
  // The hidden states of the tree's nodes, in node order (the drafter's heads read them after verification).
  if (hidden) input = { ...input, hiddenRows: Array.from({ length: treeSize }, (_, i) => i) };
  const hiddenOf = () => {
    if (!hidden) return {};
    const rows = hidden.lastHidden();
    const w = hidden.hiddenWidth;
    return { hidden: (node: number) => rows.subarray(node * w, (node + 1) * w) };
  };
  if (tokensOnly && target.forwardArgmax) {
    const ids = await target.forwardArgmax(input);
    const missing = (): Float32Array => {
      throw new Error(
        `${drafterName} read the target's logits in a greedy round that fetched token ids only; a drafter that reads them must set readsTargetLogits`,
      );
    };
    return {
      outputs: { logits: missing, auxLogits: missing, ...hiddenOf() },
      best: (node) => ids[node] as number,
      bytes: (target.bytesRead ?? 0) - before,
    };
  }
  const logits = await target.forward(input);
  const vocab = target.config.vocabSize;
  checkLogits(logits, vocab, 'the target model');
  const row = (i: number) => logits.subarray(i * vocab, (i + 1) * vocab);
  return {
    outputs: { logits: row, auxLogits: (i) => row(treeSize + i), ...hiddenOf() },
    best: null,
    bytes: (target.bytesRead ?? 0) - before,
  };
}

/** A call whose outputs nobody reads (the prompt's prefill): the smallest read-back the model offers. */
export async function forwardDiscarding(target: CausalLM, input: ForwardInput): Promise<void> {
  if (target.forwardArgmax) await target.forwardArgmax(input);
  else await target.forward(input);
}
