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
/**
 * A verify call's spread about its width's mean, before any width has two measured rounds, as a share of the
 * calibrated single-token call (counted as PRIOR_ROUNDS rounds): 10%.
 */
const PRIOR_SPREAD = 0.1;
/**
 * The calibrated slope's uncertainty per token, at least, as a share of the calibrated single-token call. 1% is what
 * ran on the H200. On lavapipe (a draft call 0.3% of a target call, the target's calls 0.3-0.6 s at random) 5% let the
 * measured slope count for nearly all: one run there gave auto's chain arm 6 of 68 rounds, one with 1% 41 of 57 and
 * another 8 of 65, so the runs do not tell them apart; the adaptive chain alone made 4.18x and 3.82x with 1% against
 * 4.28x and 4.24x with the measured slope alone (4 prompts each, within the noise).
 */
const PRIOR_SLOPE_SPREAD = 0.01;
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
  /** Per verify width: discounted sums of measured milliseconds, of their squares and of rounds. */
  private readonly verify = new Map<number, { ms: number; sq: number; n: number }>();
  /**
   * Discounted sums of the nodes a call held besides the chain (auto's lookahead window riding along, merged's other
   * nodes) and of the rounds: a chain of k tokens is verified in a call of k + 1 + that many.
   */
  private extraSum = 0;
  private extraRounds = 0;
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
      v.sq *= DECAY;
      v.n *= DECAY;
    }
    this.extraSum *= DECAY;
    this.extraRounds *= DECAY;
    this.measuredAll *= DECAY;
    this.calibratedAll *= DECAY;
    this.draftMsSum *= DECAY;
    this.draftCallSum *= DECAY;
    this.gapMsSum *= DECAY;
    this.gapRounds *= DECAY;
    const v = this.verify.get(round.width) ?? { ms: 0, sq: 0, n: 0 };
    v.ms += verifyMs;
    v.sq += verifyMs * verifyMs;
    v.n += 1;
    this.extraSum += Math.max(0, round.width - round.draftCalls - 1);
    this.extraRounds += 1;
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
    const v = this.verify.get(width) ?? { ms: 0, sq: 0, n: 0 };
    return (v.ms + PRIOR_ROUNDS * this.expectedVerifyMs(width)) / (v.n + PRIOR_ROUNDS);
  }

  private expectedVerifyMs(width: number): number {
    if (this.line === undefined) this.line = this.fitLine();
    if (this.line) return Math.max(0, this.line.ms + this.line.slope * (width - this.line.width));
    const scale = this.calibratedAll > 0 ? this.measuredAll / this.calibratedAll : 1;
    return this.calibratedVerifyMs(width) * scale;
  }

  /**
   * Least squares through the measured widths' mean times, weighted by their rounds (null: under two widths), its
   * slope drawn towards the calibrated one as far as the calls' own spread leaves it uncertain: the posterior mean of
   * the slope with the calibrated slope (moved as the measured widths moved) as prior, a draft call's time as the
   * prior's standard deviation, and the spread of a width's calls about their mean as the noise. Where calls hardly
   * vary (wasm) two widths side by side set the slope; where they vary by a third from call to call (a real GPU's
   * 24-60 ms target calls) they do not. On an H200, auto's chain arm fitted its first few rounds at two widths side by
   * side: its line rose by up to 11 ms a token where the calibrated curve was flat to 2%, and it drafted 1-2 tokens a
   * round (3.1 and 2.3 tokens each) where the adaptive chain alone drafted 7-8 (4.7-4.8 tokens a round).
   */
  private fitLine(): { width: number; ms: number; slope: number } | null {
    let n = 0;
    let sw = 0;
    let sm = 0;
    let sww = 0;
    let swm = 0;
    let widths = 0;
    let within = 0;
    let dof = 0;
    for (const [w, v] of this.verify) {
      if (v.n < MIN_ROUNDS) continue;
      const mean = v.ms / v.n;
      widths++;
      n += v.n;
      sw += v.n * w;
      sm += v.n * mean;
      sww += v.n * w * w;
      swm += v.n * w * mean;
      within += Math.max(0, v.sq - v.n * mean * mean);
      dof += Math.max(0, v.n - 1);
    }
    const spread = sww - (sw * sw) / (n || 1);
    if (widths < 2 || !(spread > 0)) return null;
    const width = sw / n;
    const measured = (swm - (sw * sm) / n) / spread;
    const costs = this.calibrated();
    if (!costs) return { width, ms: sm / n, slope: Math.max(0, measured) };
    // The prior: the calibrated curve's slope over the widths a chain verifies (1 to 17), moved as the measured
    // widths moved; its uncertainty a draft call (what one token more costs besides verifying), and at least
    // PRIOR_SLOPE_SPREAD of a single-token call per token (where draft calls are next to free beside the target's:
    // lavapipe, SwiftShader).
    const scale = this.calibratedAll > 0 ? this.measuredAll / this.calibratedAll : 1;
    const prior = ((this.calibratedVerifyMs(17) - this.calibratedVerifyMs(1)) / 16) * scale;
    const t1 = singleCallMs(costs.curve);
    const priorVar = Math.max(this.draftCallMs(), PRIOR_SLOPE_SPREAD * t1) ** 2;
    const noiseVar = (within + PRIOR_ROUNDS * (PRIOR_SPREAD * t1) ** 2) / (dof + PRIOR_ROUNDS);
    const weight = spread / noiseVar / (spread / noiseVar + 1 / priorVar);
    return { width, ms: sm / n, slope: Math.max(0, weight * measured + (1 - weight) * prior) };
  }

  /** Rounds measured so far (discounted as the costs are; 0 before the first counted one). */
  get measuredRounds(): number {
    return this.extraRounds;
  }

  /** Nodes a call held besides the chain, on average over the measured rounds (0 before any). */
  extraWidth(): number {
    return this.extraRounds > 0 ? this.extraSum / this.extraRounds : 0;
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

  /**
   * Milliseconds of a round that drafts a chain of k tokens: k draft calls, and a verify call of k + 1 tokens and the
   * nodes that have ridden along with the chain (extraWidth). Asked at k + 1 alone, a chain verified beside auto's
   * lookahead window (14 nodes) read the line through its calls' widths (16-31) far below where it was measured.
   */
  chainRoundMs(k: number): number {
    return this.verifyMs(k + 1 + Math.round(this.extraWidth())) + k * this.draftCallMs() + this.betweenMs();
  }

  clear(): void {
    this.warmed = false;
    this.line = undefined;
    this.verify.clear();
    this.extraSum = 0;
    this.extraRounds = 0;
    this.measuredAll = 0;
    this.calibratedAll = 0;
    this.draftMsSum = 0;
    this.draftCallSum = 0;
    this.gapMsSum = 0;
    this.gapRounds = 0;
  }
}
