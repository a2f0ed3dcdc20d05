/**
 * Measuring what one model call costs on this hardware: the verify-cost curve T(q) / T(1) (how much more a call
 * over q tokens costs than a call over one), the thing that decides whether speculation can win at all.
 */

import type { CausalLM } from './lm';
import { chainBias } from './tree';

export interface CostPoint {
  q: number;
  /**
   * Milliseconds of one call appending q tokens after `context` cached ones: the fastest of the width's timed calls,
   * lowered to the fastest of any wider width's where that was faster (noDearerThanWider).
   */
  ms: number;
  /** ms / ms at q = 1. */
  relative: number;
  /** The width's own fastest call, where a wider width's lowered it (absent where it did not). */
  measuredMs?: number;
}

export interface CostCurve {
  context: number;
  points: CostPoint[];
}

/**
 * Time calls of width q after a fixed cached context (compacted back to it before every call), reading every row's
 * output as a round does (verification reads a row per tree node, a tree drafter one per node it expands). Reading
 * the last row alone left out the output layer's work for the others: on wasm (2 threads) T(64) of the bundled
 * target (4096-token vocabulary) measured 10% cheaper than a call reading all 64 rows, and T(16) of the SmolLM2-135M
 * shape (49k) 13% cheaper (114.8 against 131.9 ms), so cost-aware trees were sized as if verifying cost less.
 */
export async function measureCurve(
  lm: CausalLM,
  tokens: readonly number[],
  asked: readonly number[] = [1, 2, 4, 8, 16, 32, 64],
  reps = 5,
  context = 64,
  warmRounds = 2,
  /**
   * How the repeats of one width become its time: the fastest. What else runs on the machine only ever adds time, and
   * unevenly: with the median of five, one bench run's calibration put T(2) at 1.01x T(1) (T(1) 5.7 ms while plain
   * decoding ran at 3.8 ms a token), every cost-aware method drafted as if verifying were free, and EAGLE and Medusa
   * fell to 0.87x and 0.82x. Six calibrations each, right after loading (two fresh processes): T(2)/T(1) 1.09-1.28 with
   * the median, 1.14-1.19 with the fastest; T(16)/T(1) 2.79-3.31 against 2.96-3.07.
   */
  summary: (times: number[]) => number = (times) => Math.min(...times),
  /** Run (untimed) before every timed call: another model's call, as calls alternate in a round. */
  between?: () => Promise<void>,
): Promise<CostCurve> {
  const pick = (n: number, offset: number) =>
    Array.from({ length: n }, (_, i) => tokens[(offset + i) % tokens.length] as number);
  // Widths the model's context holds after at least one cached token (a model with a 32-token context cannot take
  // a 32-wide call: its calibration once prefilled nothing and failed with "forward: no tokens").
  const fits = asked.filter((q) => q + 1 <= lm.config.maxPositions);
  const qs = fits.length > 0 ? fits : [1];
  const ctx = Math.max(1, Math.min(context, lm.config.maxPositions - Math.max(...qs)));
  lm.reset();
  const prefix = pick(ctx, 0);
  await lm.forward({ tokens: prefix, positions: prefix.map((_, i) => i), bias: chainBias(0, ctx), rows: [ctx - 1] });
  const keep = Array.from({ length: ctx }, (_, i) => i);
  const call = async (q: number, offset: number) => {
    lm.keep(keep);
    const batch = pick(q, ctx + offset);
    await between?.();
    const t = performance.now();
    await lm.forward({
      tokens: batch,
      positions: batch.map((_, i) => ctx + i),
      bias: chainBias(ctx, q),
      rows: batch.map((_, i) => i),
    });
    return performance.now() - t;
  };
  // Warm up first: a fresh session's first calls are slow (memory growth, first-touch of the weights, shader
  // compilation on WebGPU), which would inflate the small widths measured first.
  for (let w = 0; w < warmRounds; w++) for (const q of qs) await call(q, w);
  // Then interleave the widths, so drifting machine load hits all of them alike.
  const times = new Map<number, number[]>(qs.map((q) => [q, []]));
  for (let r = 0; r < reps; r++) for (const q of qs) times.get(q)?.push(await call(q, r));
  const points = noDearerThanWider(qs.map((q) => ({ q, ms: summary(times.get(q) ?? []) })));
  lm.reset();
  return { context: ctx, points };
}

/**
 * Measured widths (ascending q) as a curve that never falls: each width's time lowered to the fastest of the wider
 * widths' where one was faster, then relative to q = 1. A call over more tokens does all of a narrower call's work and
 * more, and what else runs on the machine only ever adds time to a timed call, so where a wider width measured faster
 * the narrower one's calls were slowed and the wider one's time is the better estimate for it. Left as measured, such a
 * dip made the widths past it look free or cheaper than narrower ones: of 690 curves kept in bench/results, 293 fell
 * somewhere (by more than 5% of T(1) in 128), most of them on WebGPU, e.g. T(4) 1.11 and T(8) 1.07 on SwiftShader, or
 * T(2) 0.93 on wasm, where a one-node tree cost less than plain decoding's call, so chooseBudget kept a node every
 * round whatever its chance.
 */
export function noDearerThanWider(measured: readonly { q: number; ms: number }[]): CostPoint[] {
  const points: CostPoint[] = measured.map(({ q, ms }) => ({ q, ms, relative: 0 }));
  for (let i = points.length - 2; i >= 0; i--) {
    const p = points[i] as CostPoint;
    const wider = (points[i + 1] as CostPoint).ms;
    if (wider < p.ms) {
      p.measuredMs = p.ms;
      p.ms = wider;
    }
  }
  const base = points[0]?.ms ?? 1;
  for (const p of points) p.relative = p.ms / base;
  return points;
}

/** Relative cost of a call of width q, interpolated linearly on the measured curve (extrapolated at the ends). */
export function relativeCost(curve: CostCurve, q: number): number {
  const pts = curve.points;
  if (pts.length === 0) return q;
  let lo = pts[0] as CostPoint;
  for (const p of pts) {
    if (p.q === q) return p.relative;
    if (p.q < q) lo = p;
    else {
      const t = (q - lo.q) / (p.q - lo.q || 1);
      return lo.relative + t * (p.relative - lo.relative);
    }
  }
  const last = pts[pts.length - 1] as CostPoint;
  const prev = pts[pts.length - 2] ?? last;
  const slope = (last.relative - prev.relative) / (last.q - prev.q || 1);
  return last.relative + slope * (q - last.q);
}

/**
 * Expected tokens per round of a chain of length gamma with per-token acceptance alpha (Leviathan et al.):
 * (1 - alpha^(gamma+1)) / (1 - alpha).
 */
export function expectedTokens(alpha: number, gamma: number): number {
  if (alpha >= 1) return gamma + 1;
  return (1 - alpha ** (gamma + 1)) / (1 - alpha);
}

/**
 * The chain length that maximises tokens per unit time: expected tokens / (target cost of gamma+1 tokens +
 * gamma draft calls), all relative to one single-token target call.
 */
export function bestGamma(
  alpha: number,
  curve: CostCurve,
  draftRelative: number,
  maxGamma = 16,
): { gamma: number; speedup: number } {
  let best = { gamma: 0, speedup: 1 };
  for (let g = 1; g <= maxGamma; g++) {
    const speedup = expectedTokens(alpha, g) / (relativeCost(curve, g + 1) + g * draftRelative);
    if (speedup > best.speedup) best = { gamma: g, speedup };
  }
  return best;
}

/** Milliseconds of a single-token call on a measured curve (0: the curve has no such point). */
export function singleCallMs(curve: CostCurve): number {
  return curve.points.find((p) => p.q === 1)?.ms ?? 0;
}

/**
 * A cost of `relative` single-token calls in the unit `auto` measures arms in: the same ('model'), or seconds on the
 * measured curve ('time'; null where the curve has no single-token call to scale by).
 */
export function costIn(curve: CostCurve, relative: number, measure: 'model' | 'time'): number | null {
  if (measure === 'model') return relative;
  const ms = singleCallMs(curve);
  return ms > 0 ? (ms * relative) / 1000 : null;
}

/**
 * The expected-gain stopping rule of a chain being drafted (EAGLE-2's "expand while it pays", on this hardware's
 * costs): given the estimated acceptance of each token drafted so far, whether drafting on raises the round's
 * expected tokens per unit time, the tokens to come predicted to be accepted like the last one. A round of k drafted
 * tokens yields 1 + sum of the path probabilities in expectation and costs `roundCost(k)` (any unit). Unlike
 * bestGamma's one average acceptance, it reads this round's own confidences, so it drafts on through text the draft
 * is sure of and stops where it wavers. With `lookahead` > 1 it drafts on when any of the next `lookahead` lengths
 * pays, not only the next one: a measured curve is not convex (wasm: T(2) 1.07, T(4) 1.47, T(8) 2.11), so one token
 * more can lose where two or three more win.
 */
export function paysToExtend(accept: readonly number[], roundCost: (k: number) => number, lookahead = 1): boolean {
  const k = accept.length;
  let expected = 1;
  let path = 1;
  for (const a of accept) {
    path *= a;
    expected += path;
  }
  const next = accept[k - 1] ?? 0;
  const now = expected / roundCost(k);
  for (let j = 1; j <= lookahead; j++) {
    path *= next;
    expected += path;
    if (expected / roundCost(k + j) > now) return true;
  }
  return false;
}

/**
 * paysToExtend on the calibrated costs: a round of k drafted tokens costs T(k+1) + k draft calls (relative to a
 * single-token target call), as in bestGamma, plus a fixed per-round overhead.
 */
export function worthExtending(
  accept: readonly number[],
  curve: CostCurve,
  draftRelative: number,
  /** Per-round cost besides the model calls, relative to T(1) (a round's fixed cost favours longer chains). */
  overhead = 0,
  lookahead = 1,
): boolean {
  return paysToExtend(accept, (k) => relativeCost(curve, k + 1) + k * draftRelative + overhead, lookahead);
}
