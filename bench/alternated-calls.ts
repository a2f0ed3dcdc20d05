/**
 * Model calls of q tokens at a given context, timed alternately on two or more runners of one model in one process
 * (each call followed by the compaction back to the context that a round does, so all always attend to the same
 * number of slots): the calls meet the same machine drift. Used by host-cache-ab.ts and call-ab.ts.
 */
import type { ForwardInput } from '../src/engine/lm';
import { chainBias } from '../src/engine/tree';
import type { ModelRunner } from '../src/model/runner';
import { median } from '../src/util/median';

export interface AlternatedOptions {
  contexts: readonly number[];
  qs: readonly number[];
  /** Timed calls per runner, context and q. */
  calls: number;
  /** Untimed calls per runner first (V8 compiles and tiers up onnxruntime's kernels over the first calls). */
  warmup: number;
  /** One call: greedy verification's read (each row's argmax) or the logits of the last row. */
  call: (runner: ModelRunner, input: ForwardInput) => Promise<unknown>;
}

/** Per context and q: each runner's median ms per call. */
export async function timeAlternated<K extends string>(
  runners: Record<K, ModelRunner>,
  options: AlternatedOptions,
): Promise<{ context: number; q: number; ms: Record<K, number> }[]> {
  const kinds = Object.keys(runners) as K[];
  const lengths = Object.fromEntries(kinds.map((k) => [k, 0])) as Record<K, number>;
  const call = async (kind: K, q: number) => {
    const length = lengths[kind];
    const tokens = Array.from({ length: q }, (_, i) => 5 + ((length + i) % 300));
    await options.call(runners[kind], {
      tokens,
      positions: tokens.map((_, i) => length + i),
      bias: chainBias(length, q),
      rows: tokens.map((_, i) => i),
    });
    lengths[kind] += q;
  };
  for (const kind of kinds) {
    for (let i = 0; i < options.warmup; i++) await call(kind, i % 2 === 0 ? 1 : 8);
    runners[kind].reset();
    lengths[kind] = 0;
  }
  const rows: { context: number; q: number; ms: Record<K, number> }[] = [];
  for (const context of options.contexts) {
    for (const kind of kinds) while (lengths[kind] < context) await call(kind, Math.min(32, context - lengths[kind]));
    for (const q of options.qs) {
      const ms = Object.fromEntries(kinds.map((k) => [k, [] as number[]])) as Record<K, number[]>;
      for (let i = 0; i < options.calls; i++) {
        // Which runner goes first alternates too.
        for (const kind of i % 2 === 0 ? kinds : [...kinds].reverse()) {
          const t = performance.now();
          await call(kind, q);
          ms[kind].push(performance.now() - t);
          runners[kind].keep(Array.from({ length: context }, (_, j) => j));
          lengths[kind] = context;
        }
      }
      rows.push({ context, q, ms: Object.fromEntries(kinds.map((k) => [k, median(ms[k])])) as Record<K, number> });
    }
  }
  return rows;
}

/** Greedy verification's read: every row's argmax. */
export const argmaxCall = (runner: ModelRunner, input: ForwardInput) => runner.forwardArgmax(input);
/** The logits of the call's last row. */
export const lastLogitsCall = (runner: ModelRunner, input: ForwardInput) =>
  runner.forward({ ...input, rows: [input.tokens.length - 1] });
