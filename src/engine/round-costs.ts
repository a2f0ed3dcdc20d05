/**
 * What a chain's rounds cost on this machine, measured in the rounds themselves (greedy decoding, where real time may
 * steer the drafting without changing the text): the target's verify call per width, the draft's cost per call, and
 * the time between rounds (the generation loop's bookkeeping, the round event's consumer). Each starts from the
 * calibrated cost model and follows the rounds.
 *
 * Why not the calibrated curve alone: a quick calibration is a few calls per width right after loading, and on our
 * 2-core machine two processes in a row measured T(16)/T(1) at 2.78 and 3.98 and a draft call at 0.086 and 0.171 of a
 * target call. The expected-gain rule then drafted 4.4 tokens a round in one process and 2.0 in the other, on the
 * same prompts. In Chromium's wasm a calibration put the draft at 0.19 of a target call where its calls in the rounds
 * cost 0.13, and chains stopped at 1.5 tokens while a fixed chain of 4 ran faster.
 */
import { relativeCost, singleCallMs } from './calibrate';
import type { CostModel } from './drafters/method';

/** Discount per round of the measured sums (a window of about 20 rounds). */
const DECAY = 0.95;
/** A calibrated value counts as this many measured rounds. */
const PRIOR_ROUNDS = 2;
/** Discounted rounds a width needs for the line through the measured widths. */
const MIN_ROUNDS = 0.5;
/** Time between rounds longer than this is not a round's (a pause of the caller, a new prompt). */
const MAX_GAP_MS = 250;
/**
 * The first round measured is not counted, and a later one's times count for at most this many times what the costs
 * so far expect (the verify call at its width, a draft call). The first calls of a fresh process run on cold code: in
 * `npm run generate` the draft's first calls took 3.6 ms where warm ones take 0.35, and counted in full they put a
 * draft call at 1.5-2 ms for the next ten rounds, so the chain drafted one token a round, every one accepted, for
 * 12-15 rounds of a 20-round generation (2 fresh processes in 6). A pause later (garbage collection, compiling) is
 * held the same way, and a lasting slowdown still comes through: each round moves the estimate by up to this factor.
 */
const OUTLIER_CAP = 2;

export interface MeasuredRound {
  /** Tokens in the verify call (root included). */
  width: number;
  /** The draft's calls this round (catching up left out) and their milliseconds, with the work on their results. */
  draftCalls: number;
  draftMs: number;
  /** From the end of drafting to the verdict: the verify call and verifying. */
  verifyMs: number;
  /** From the end of the previous round to the start of this one (null: none before it in this text). */
  gapMs: number | null;
}

export class RoundCosts {
  /** Per verify width: discounted sums of measured milliseconds and of rounds. */
  private readonly verify = new Map<number, { ms: number; n: number }>();
  /** Over all widths: discounted sums of measured and of calibrated milliseconds (to move unmeasured widths). */
  private measuredAll = 0;
  private calibratedAll = 0;
  private draftMsSum = 0;
  private draftCallSum = 0;
  private gapMsSum = 0;
  private gapRounds = 0;
  /**
   * The line through the measured widths (verifyMs), fitted when first asked for after a round is recorded: the rule
   * asks for several widths per drafted token. Undefined: not fitted since the last round; null: fewer than two widths.
   */
  private line: { width: number; ms: number; slope: number } | null | undefined;
  /** Whether a round has been seen since construction or clear() (the first is not counted). */
  private warmed = false;

  constructor(private readonly calibrated: () => CostModel | null) {}

  /** The calibrated milliseconds of a verify call of this width (0: no calibration). */
  private calibratedVerifyMs(width: number): number {
    const costs = this.calibrated();
    return costs ? relativeCost(costs.curve, width) * singleCallMs(costs.curve) : 0;
  }

  record(round: MeasuredRound): void {
    // The first round measured (in a fresh process: cold code, first shapes) is not counted (OUTLIER_CAP).
    if (!this.warmed) {
      this.warmed = true;
      return;
    }
    // Against the estimates before this round (OUTLIER_CAP); a zero estimate (no calibration) caps nothing.
    const cap = (ms: number, expected: number) => (expected > 0 ? Math.min(ms, OUTLIER_CAP * expected) : ms);
    const verifyMs = cap(round.verifyMs, this.verifyMs(round.width));
    const draftMs =
      round.draftCalls > 0 ? cap(round.draftMs / round.draftCalls, this.draftCallMs()) * round.draftCalls : 0;
    this.line = undefined;
    for (const v of this.verify.values()) {
      v.ms *= DECAY;
      v.n *= DECAY;
    }
    this.measuredAll *= DECAY;
    this.calibratedAll *= DECAY;
    this.draftMsSum *= DECAY;
    this.draftCallSum *= DECAY;
    this.gapMsSum *= DECAY;
    this.gapRounds *= DECAY;
    const v = this.verify.get(round.width) ?? { ms: 0, n: 0 };
    v.ms += verifyMs;
    v.n += 1;
    this.verify.set(round.width, v);
    this.measuredAll += verifyMs;
    this.calibratedAll += this.calibratedVerifyMs(round.width);
    if (round.draftCalls > 0) {
      this.draftMsSum += draftMs;
      this.draftCallSum += round.draftCalls;
    }
    if (round.gapMs !== null && round.gapMs >= 0 && round.gapMs <= MAX_GAP_MS) {
      this.gapMsSum += round.gapMs;
      this.gapRounds += 1;
    }
  }

  /**
   * Milliseconds of a verify call of this width: its measured rounds, with an expected time counting as PRIOR_ROUNDS
   * more. Expected: a line through the measured widths (least squares, weighted by their rounds, never falling with
   * width) once two widths are measured; before that the calibrated time, moved by how the measured widths compare
   * with their calibration. The line, not the calibrated shape, so that a chain finds out that widths it has not
   * tried cost less than calibrated: with the calibrated shape moved, a curve calibrated twice as steep as it is
   * kept every width past the measured ones looking as dear as calibrated, and chains never grew into them.
   */
  verifyMs(width: number): number {
    const v = this.verify.get(width) ?? { ms: 0, n: 0 };
    return (v.ms + PRIOR_ROUNDS * this.expectedVerifyMs(width)) / (v.n + PRIOR_ROUNDS);
  }

  private expectedVerifyMs(width: number): number {
    if (this.line === undefined) this.line = this.fitLine();
    if (this.line) return Math.max(0, this.line.ms + this.line.slope * (width - this.line.width));
    const scale = this.calibratedAll > 0 ? this.measuredAll / this.calibratedAll : 1;
    return this.calibratedVerifyMs(width) * scale;
  }

  /** Least squares through the measured widths' mean times, weighted by their rounds (null: under two widths). */
  private fitLine(): { width: number; ms: number; slope: number } | null {
    let n = 0;
    let sw = 0;
    let sm = 0;
    let sww = 0;
    let swm = 0;
    let widths = 0;
    for (const [w, v] of this.verify) {
      if (v.n < MIN_ROUNDS) continue;
      const mean = v.ms / v.n;
      widths++;
      n += v.n;
      sw += v.n * w;
      sm += v.n * mean;
      sww += v.n * w * w;
      swm += v.n * w * mean;
    }
    const spread = sww - (sw * sw) / (n || 1);
    if (widths < 2 || !(spread > 0)) return null;
    return { width: sw / n, ms: sm / n, slope: Math.max(0, (swm - (sw * sm) / n) / spread) };
  }

  /** Milliseconds of one draft call with the work on its result. */
  draftCallMs(): number {
    const costs = this.calibrated();
    const prior = costs ? costs.draftRelative * singleCallMs(costs.curve) : 0;
    return (this.draftMsSum + PRIOR_ROUNDS * prior) / (this.draftCallSum + PRIOR_ROUNDS);
  }

  /** Milliseconds between rounds (0 before any are measured). */
  betweenMs(): number {
    return this.gapMsSum / (this.gapRounds + PRIOR_ROUNDS);
  }

  /** Milliseconds of a round that drafts a chain of k tokens (k draft calls, a verify call of k + 1 tokens). */
  chainRoundMs(k: number): number {
    return this.verifyMs(k + 1) + k * this.draftCallMs() + this.betweenMs();
  }

  clear(): void {
    this.warmed = false;
    this.line = undefined;
    this.verify.clear();
    this.measuredAll = 0;
    this.calibratedAll = 0;
    this.draftMsSum = 0;
    this.draftCallSum = 0;
    this.gapMsSum = 0;
    this.gapRounds = 0;
  }
}
