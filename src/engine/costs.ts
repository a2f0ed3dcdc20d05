/**
 * This hardware's cost model for the engine: the target's verify-cost curve and the draft's cost per call, measured
 * (calibrate.ts) or taken from a record remembered for the same models and device. A remembered record is checked
 * before it is trusted: a few single-token calls must still cost what the record says (within a factor of 1.5;
 * another machine, another browser or a busy one fails that) and it must be under 30 days old; otherwise the costs
 * are measured again and the record replaced.
 */
import { type CostCurve, measureCurve } from './calibrate';
import type { CostModel } from './drafters/method';
import type { CausalLM } from './lm';
import { type KeyValueStore, safeGet, safeSet } from './store';
import { chainBias } from './tree';
import { forwardDiscarding } from './verify-call';

export interface CostRecord {
  /**
   * 4: the curves never fall (a width's time lowered to a wider width's where that measured faster: calibrate.ts,
   * noDearerThanWider; version 3's could); 3: every row of a call read, as rounds read them, and the fastest of each
   * width's calls kept (version 2 read the last row alone, so wide calls looked too cheap, and kept the median); 2:
   * the draft timed between target calls (version 1 timed it alone, 1.6-2x too cheap).
   */
  version: 4;
  savedAt: number;
  target: string;
  draft: string;
  qs: number[];
  costs: CostModel;
}

export interface Calibration {
  costs: CostModel;
  source: 'measured' | 'remembered';
  ms: number;
}

const MAX_AGE_MS = 30 * 24 * 3600 * 1000;

function isCurve(c: unknown): c is CostCurve {
  const curve = c as Partial<CostCurve> | null;
  return (
    typeof curve === 'object' &&
    curve !== null &&
    Number.isInteger(curve.context) &&
    (curve.context as number) >= 0 &&
    Array.isArray(curve.points) &&
    curve.points.every(
      (p) => Number.isFinite(p?.q) && Number.isFinite(p?.ms) && p.ms > 0 && Number.isFinite(p?.relative),
    )
  );
}

function usable(record: unknown, target: string, draft: string, qs: readonly number[], now: number): CostRecord | null {
  const r = record as Partial<CostRecord> | null;
  if (
    r?.version !== 4 ||
    r.target !== target ||
    r.draft !== draft ||
    JSON.stringify(r.qs) !== JSON.stringify(qs) ||
    typeof r.savedAt !== 'number' ||
    !(now - r.savedAt < MAX_AGE_MS && now >= r.savedAt) ||
    !isCurve(r.costs?.curve) ||
    !isCurve(r.costs?.draftCurve) ||
    !Number.isFinite(r.costs?.draftRelative) ||
    r.costs.curve.points.length === 0
  ) {
    return null;
  }
  return r as CostRecord;
}

export interface CalibrationRequest {
  target: CausalLM & { readonly fingerprint: string };
  draft: (CausalLM & { readonly fingerprint: string }) | null;
  tokens: readonly number[];
  qs: readonly number[];
  reps: number;
  warmRounds: number;
  store: KeyValueStore;
  /** Measure even if a record is remembered (an explicit calibrate()). */
  fresh?: boolean;
  /**
   * The fastest single-token target call timed since the load (the engine's warm-up), if any: a remembered record
   * it agrees with is taken without the spot check's calls.
   */
  recentSingleMs?: number;
}

/** A single-token target call after a fixed context (up to 64 tokens), repeatable (compacted back before every call). */
export async function targetStep(target: CausalLM, tokens: readonly number[]): Promise<() => Promise<void>> {
  const ctx = Math.min(64, target.config.maxPositions - 1, tokens.length - 1);
  const prefix = tokens.slice(0, ctx);
  target.reset();
  await forwardDiscarding(target, {
    tokens: prefix,
    positions: prefix.map((_, i) => i),
    bias: chainBias(0, ctx),
    rows: [ctx - 1],
  });
  const keep = Array.from({ length: ctx }, (_, i) => i);
  return async () => {
    target.keep(keep);
    const token = tokens[ctx] as number;
    await forwardDiscarding(target, { tokens: [token], positions: [ctx], bias: chainBias(ctx, 1), rows: [0] });
  };
}

export async function calibrateCosts(req: CalibrationRequest): Promise<Calibration> {
  const started = performance.now();
  const key = `costs:${req.target.fingerprint}:${req.draft?.fingerprint ?? 'none'}`;
  const draftId = req.draft?.fingerprint ?? 'none';
  const record = req.fresh
    ? null
    : usable(await safeGet(req.store, key), req.target.fingerprint, draftId, req.qs, Date.now());
  if (record) {
    const then = record.costs.curve.points[0]?.ms ?? 0;
    const holds = (t1: number) => t1 > 0 && then > 0 && t1 / then < 1.5 && then / t1 < 1.5;
    // The warm-up's single-token calls, where they agree with the record, spare the spot check's eight calls (0.07 s
    // of a 2.2 s CLI run); where they do not (their first calls ran cold), the spot check decides.
    if (req.recentSingleMs !== undefined && holds(req.recentSingleMs))
      return { costs: record.costs, source: 'remembered', ms: performance.now() - started };
    // Spot check: what one token costs now, against the record. The fastest of five calls: in a fresh process the
    // first calls after loading still vary two- to three-fold (measured 4.9-14 ms against a steady 5-6 ms) while
    // the compiled code settles, which a median of three let through as "another machine" half the time.
    const now = await measureCurve(req.target, req.tokens, [1], 5, record.costs.curve.context, 2);
    if (holds(now.points[0]?.ms ?? 0)) {
      return { costs: record.costs, source: 'remembered', ms: performance.now() - started };
    }
  }
  const curve = await measureCurve(req.target, req.tokens, req.qs, req.reps, 64, req.warmRounds);
  // In a round the draft runs between target calls, which push its weights out of the CPU's caches: timed alone, in a
  // loop of its own calls, a draft call measured 1.6-2x cheaper than between target calls (wasm, 2 threads), and every
  // cost-aware choice drafted as if drafting cost that little. So each timed draft call follows a target call.
  const draftCurve = req.draft
    ? await measureCurve(
        req.draft,
        req.tokens,
        [1, 2, 4, 8],
        req.reps,
        64,
        req.warmRounds,
        undefined,
        await targetStep(req.target, req.tokens),
      )
    : { context: 0, points: [] };
  req.target.reset();
  const t1 = curve.points[0]?.ms ?? 1;
  const costs: CostModel = { curve, draftRelative: (draftCurve.points[0]?.ms ?? 0) / t1, draftCurve };
  await safeSet(req.store, key, {
    version: 4,
    savedAt: Date.now(),
    target: req.target.fingerprint,
    draft: draftId,
    qs: [...req.qs],
    costs,
  } satisfies CostRecord);
  return { costs, source: 'measured', ms: performance.now() - started };
}
