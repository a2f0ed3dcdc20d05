/**
 * Draft heads opened next to their target: which hidden states the target must return for them, and the session
 * that runs them (Medusa's K heads, or the EAGLE-3 head with its own cache).
 */

import { MEDUSA_DEFAULTS } from '../../engine/drafters/medusa';
import { chainBias } from '../../engine/tree';
import { median } from '../../util/median';
import { type DeviceTiming, PROBE } from '../device-choice';
import type { HiddenKind } from '../graph/llama';
import type { LoadedModel } from '../load';
import type { Device } from '../precision';
import type { HeadsKind, LoadedHeads } from './load';
import { Eagle3HeadRunner, MedusaHeadsRunner } from './runner';

export { type HeadsKind, type HeadsLoadOptions, type LoadedHeads, loadHeads } from './load';
export { Eagle3HeadRunner, embeddingRows, MedusaHeadsRunner } from './runner';

type Ort = Parameters<typeof MedusaHeadsRunner.create>[0];

/** The hidden states a target must return for heads of this kind (tools/heads_layouts.md). */
export function hiddenKindFor(kind: HeadsKind): HiddenKind {
  return kind === 'medusa' ? 'last' : 'eagle3';
}

/** Heads ready to run: exactly one of medusa / eagle3 is set. */
export interface OpenedHeads {
  loaded: LoadedHeads;
  /** What the heads compute in: the target's float type on its device, fp32 on the CPU (the CLI's JSON says it). */
  compute: 'fp32' | 'fp16';
  medusa?: MedusaHeadsRunner;
  eagle3?: Eagle3HeadRunner;
  release(): Promise<void>;
}

/** Build the heads' session on `device`, computing in the target's float type. */
export async function openHeads(
  ort: Ort,
  heads: LoadedHeads,
  target: LoadedModel,
  device: Device,
  compute: 'fp32' | 'fp16',
): Promise<OpenedHeads> {
  if (heads.kind === 'medusa') {
    const medusa = await MedusaHeadsRunner.create(ort, heads, device, compute);
    return { loaded: heads, compute, medusa, release: () => medusa.release() };
  }
  const eagle3 = await Eagle3HeadRunner.create(ort, heads, target, device, compute);
  return { loaded: heads, compute, eagle3, release: () => eagle3.release() };
}

/**
 * The heads' calls as drafting makes them, timed as the draft model's are (device-choice.ts PROBE: fastest of five
 * after two untimed, after sixteen rows): Medusa's one prediction per round (its q4 the same call), the EAGLE-3 head's
 * one-row and four-row calls (its cache reset after).
 */
export async function timeHeadsCalls(heads: OpenedHeads, hiddenWidth: number, device: Device): Promise<DeviceTiming> {
  /** The fastest of PROBE.reps runs after PROBE.warm untimed (as the draft's probe); each gives its call's ms. */
  const fastest = async (run: () => Promise<number>) => {
    const times: number[] = [];
    for (let r = 0; r < PROBE.warm + PROBE.reps; r++) {
      const ms = await run();
      if (r >= PROBE.warm) times.push(ms);
    }
    return Math.min(...times);
  };
  if (heads.medusa) {
    const m = heads.medusa;
    const q1 = await fastest(async () => {
      const t = performance.now();
      await m.predictTop(new Float32Array(hiddenWidth), MEDUSA_DEFAULTS.topK);
      return performance.now() - t;
    });
    return { device, q1, q4: q1 };
  }
  const e = heads.eagle3;
  if (!e) return { device, q1: 0, q4: 0 };
  const d = e.hiddenSize;
  const ctx = PROBE.context;
  const call = async (q: number) => {
    await prefillEagle(e, ctx);
    const drafted = Array.from({ length: q }, (_, i) => ctx + i);
    const t = performance.now();
    await e.forward({
      tokens: drafted.map((i) => i % 7),
      inputs: drafted.map(() => ({ drafted: new Float32Array(d) })),
      positions: drafted,
      bias: chainBias(ctx, q),
      rows: drafted.map((_, i) => i),
    });
    return performance.now() - t;
  };
  const q1 = await fastest(() => call(1));
  const q4 = await fastest(() => call(4));
  e.reset();
  return { device, q1, q4 };
}

/** The EAGLE-3 head's cache reset and filled with `context` rows of (zero) target features, as after a prompt. */
async function prefillEagle(e: NonNullable<OpenedHeads['eagle3']>, context: number): Promise<void> {
  e.reset();
  const rows = Array.from({ length: context }, (_, i) => i);
  await e.forward({
    tokens: rows,
    inputs: rows.map(() => ({ feature: new Float32Array(3 * e.hiddenSize) })),
    positions: rows,
    bias: chainBias(0, context),
    rows: [context - 1],
  });
}

/**
 * A few calls at the shapes drafting uses, so the first round runs warm: Medusa on one hidden row; the EAGLE-3
 * head on a prompt-sized chunk of real rows, then a few drafted rows (its cache is reset afterwards).
 */
export async function warmupHeads(heads: OpenedHeads, hiddenWidth: number): Promise<void> {
  if (heads.medusa) {
    for (let i = 0; i < 3; i++) await heads.medusa.predictTop(new Float32Array(hiddenWidth), MEDUSA_DEFAULTS.topK);
    return;
  }
  const e = heads.eagle3;
  if (!e) return;
  const d = e.hiddenSize;
  for (const q of [16, 4, 1]) {
    e.reset();
    const rows = Array.from({ length: q }, (_, i) => i);
    await e.forward({
      tokens: rows,
      inputs: rows.map((i) => (i % 2 ? { drafted: new Float32Array(d) } : { feature: new Float32Array(3 * d) })),
      positions: rows,
      bias: chainBias(0, q),
      rows: [q - 1],
    });
  }
  e.reset();
}

/**
 * Median milliseconds of one single-row heads call as drafting makes it: Medusa on one hidden row; the EAGLE-3
 * head on one drafted row over a 64-row cache (its cache is reset afterwards). The engine divides it by a
 * single-token target call to get the heads' cost per call on this hardware. `between` runs (untimed) before each
 * call: a target call, as in a round, where the target's weights have pushed the head's out of the CPU's caches.
 */
export async function timeHeadsCall(
  heads: OpenedHeads,
  hiddenWidth: number,
  reps = 5,
  between?: () => Promise<void>,
): Promise<number> {
  const e = heads.eagle3;
  const context = e ? 64 : 0;
  if (e) await prefillEagle(e, context);
  const kept = Array.from({ length: context }, (_, i) => i);
  const times: number[] = [];
  for (let i = 0; i <= reps; i++) {
    await between?.();
    const started = performance.now();
    if (heads.medusa) await heads.medusa.predictTop(new Float32Array(hiddenWidth), MEDUSA_DEFAULTS.topK);
    else if (e) {
      await e.forward({
        tokens: [0],
        inputs: [{ drafted: new Float32Array(e.hiddenSize) }],
        positions: [context],
        bias: new Float32Array(context + 1),
        rows: [0],
      });
      e.keep(kept);
    }
    // The first call pays for the new shape; the rest are the steady state.
    if (i > 0) times.push(performance.now() - started);
  }
  e?.reset();
  return median(times);
}
