/**
 * The target's call in a round, reading back as little as the round needs, when the drafter does not read the
 * target's logits (Drafter.readsTargetLogits):
 * - greedy verification, with a target that computes argmax ids itself (CausalLM.forwardArgmax): only the token ids
 *   leave the model (8 bytes a row instead of a vocabulary row each);
 * - sampling with top-k (rejection verification), with a target that computes its top k itself
 *   (CausalLM.forwardTopK): each row's k largest logits and their ids (12k bytes a row); verification reads each
 *   row rebuilt with -Infinity elsewhere, which gives exactly the full row's probabilities (sampling.ts's toProbs
 *   never looks past the top k when top-k is set);
 * - otherwise every requested row's logits come back.
 * What comes back is checked for NaN or infinite values (token ids cannot show them: weights holding them are
 * refused at load, so only an fp16 overflow goes unseen on that path).
 */
import type { TargetOutputs } from './drafters';
import { type CausalLM, checkLogits, type ForwardInput, type HiddenStatesLM } from './lm';
import { argmax } from './sampling';
import type { VerifyRule } from './verify';

/** What the round needs back: argmax ids (greedy), each row's k largest logits (sampling with top-k), or all. */
export type TargetRead = { kind: 'ids' } | { kind: 'top'; k: number } | { kind: 'logits' };

/** The smallest read that serves this round, given what the target offers. */
export function targetRead(
  target: CausalLM,
  greedy: boolean,
  topK: number,
  rule: VerifyRule,
  drafterReadsLogits: boolean,
): TargetRead {
  if (drafterReadsLogits) return { kind: 'logits' };
  if (greedy && target.forwardArgmax) return { kind: 'ids' };
  // Typical acceptance reads the whole distribution (its entropy), whatever top-k says.
  if (!greedy && rule === 'rejection' && topK > 0 && topK < target.config.vocabSize && target.forwardTopK)
    return { kind: 'top', k: topK };
  return { kind: 'logits' };
}

export interface TargetCall {
  /** Logits rows of the tree's nodes and of the auxiliary rows; they throw when only token ids came back. */
  outputs: TargetOutputs;
  /** Each tree node's argmax token when only ids came back; null when logits (all, or each row's top k) did. */
  best: ((node: number) => number) | null;
  /** Bytes the call returned. */
  bytes: number;
}

/**
 * Run `input` (tree nodes first: `treeSize` of them, their rows first) and return what verification and the drafter
 * read; `read` (targetRead) says how much comes back.
 */
export async function callTarget(
  target: CausalLM,
  input: ForwardInput,
  treeSize: number,
  read: TargetRead,
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
  const missing = (what: string) => (): Float32Array => {
    throw new Error(
      `${drafterName} read the target's logits in a round that fetched ${what} only; a drafter that reads them must set readsTargetLogits`,
    );
  };
  if (read.kind === 'ids' && target.forwardArgmax) {
    const ids = await target.forwardArgmax(input);
    const best = (node: number) => ids[node] as number;
    return {
      outputs: {
        logits: missing('token ids'),
        auxLogits: missing('token ids'),
        argmax: best,
        auxArgmax: (i) => best(treeSize + i),
        ...hiddenOf(),
      },
      best,
      bytes: (target.bytesRead ?? 0) - before,
    };
  }
  if (read.kind === 'top' && target.forwardTopK) {
    const top = await target.forwardTopK(input, read.k);
    const vocab = target.config.vocabSize;
    checkLogits(top.values, top.k, 'the target model');
    const rows = new Map<number, Float32Array>();
    const row = (i: number): Float32Array => {
      let r = rows.get(i);
      if (!r) {
        if (i < 0 || (i + 1) * top.k > top.ids.length) throw new RangeError(`no logits row ${i} in this call`);
        r = new Float32Array(vocab).fill(Number.NEGATIVE_INFINITY);
        for (let j = i * top.k; j < (i + 1) * top.k; j++) r[top.ids[j] as number] = top.values[j] as number;
        rows.set(i, r);
      }
      return r;
    };
    return {
      outputs: {
        logits: row,
        auxLogits: missing(`each row's top ${read.k}`),
        argmax: (node) => argmax(row(node)),
        auxArgmax: (i) => argmax(row(treeSize + i)),
        ...hiddenOf(),
      },
      best: null,
      bytes: (target.bytesRead ?? 0) - before,
    };
  }
  const logits = await target.forward(input);
  const vocab = target.config.vocabSize;
  checkLogits(logits, vocab, 'the target model');
  const row = (i: number) => logits.subarray(i * vocab, (i + 1) * vocab);
  return {
    outputs: {
      logits: row,
      auxLogits: (i) => row(treeSize + i),
      argmax: (node) => argmax(row(node)),
      auxArgmax: (i) => argmax(row(treeSize + i)),
      ...hiddenOf(),
    },
    best: null,
    bytes: (target.bytesRead ?? 0) - before,
  };
}

/** A call whose outputs nobody reads (the prompt's prefill): the smallest read-back the model offers. */
export async function forwardDiscarding(target: CausalLM, input: ForwardInput): Promise<void> {
  if (target.forwardArgmax) await target.forwardArgmax(input);
  else await target.forward(input);
}
