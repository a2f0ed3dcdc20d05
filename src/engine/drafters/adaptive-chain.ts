/**
 * Adaptive draft length. Without a cost model it follows Hugging Face's assisted generation: +2 after a fully
 * accepted draft, -1 otherwise (between 1 and maxGamma), and the draft stops early when its confidence in its own
 * token drops below a threshold (0.4, transformers' assistant_confidence_threshold).
 *
 * With a cost model (the measured verify-cost curve of this hardware and the draft's cost per call, see
 * calibrate.ts) it is hardware-aware: token by token it drafts on while one more token raises the round's expected
 * tokens per unit time (calibrate.ts worthExtending, EAGLE-2's expected-gain rule on Sequoia's measured costs). Each
 * token's acceptance is estimated from the draft's own probability, calibrated by the ratio of the acceptance
 * measured so far to the draft's mean confidence on the same tokens, so an over- or under-confident draft is
 * corrected. The rule replaces the 0.4 confidence threshold and the +2/-1 length, which cut chains the hardware
 * would pay for.
 */
import { countLike } from '../budget';
import { relativeCost, worthExtending } from '../calibrate';
import type { VerifyResult } from '../verify';
import { ChainDrafter } from './chain';
import type { DraftModelState } from './draft-model';
import type { DraftRequest, DraftTree } from './drafter';
import { type CostModel, draftOf, type MethodSpec } from './method';

/** Chain lengths beyond the current one the stopping rule looks at (calibrate.ts worthExtending). */
const LOOKAHEAD = 3;

export interface AdaptiveChainOptions {
  initialGamma: number;
  maxGamma: number;
  confidence: number;
}

export const ADAPTIVE_DEFAULTS: AdaptiveChainOptions = { initialGamma: 5, maxGamma: 16, confidence: 0.4 };

export class AdaptiveChainDrafter extends ChainDrafter {
  override readonly name = 'adaptive';
  private current: number;
  /** Discounted counts of accepted draft tokens and of draft tokens tried. */
  private accepted = 0;
  private tried = 0;
  /** Discounted sum of the draft's probabilities of the tokens counted in `tried`. */
  private confidence = 0;
  /** Per-round time besides the model calls, relative to T(1), measured (smoothed); and this round's start. */
  private overheadRelative = 0;
  private roundStarted: number | null = null;

  constructor(
    draft: DraftModelState['lm'] | DraftModelState,
    /** This hardware's measured costs, once known (null: the +2/-1 heuristic). */
    private readonly costs: () => CostModel | null = () => null,
    private readonly adaptive: AdaptiveChainOptions = ADAPTIVE_DEFAULTS,
    /** Milliseconds (tests pass a virtual clock). */
    private readonly clock: () => number = () => performance.now(),
  ) {
    super(draft, { gamma: adaptive.initialGamma, confidence: adaptive.confidence });
    this.current = adaptive.initialGamma;
  }

  /** Per-token acceptance measured so far (a prior of 0.6 before any evidence). */
  get acceptance(): number {
    return (this.accepted + 0.6 * 2) / (this.tried + 2);
  }

  /** What a round costs besides its model calls, relative to a single-token target call (measured). */
  get overhead(): number {
    return this.overheadRelative;
  }

  override async propose(req: DraftRequest): Promise<DraftTree> {
    this.roundStarted = this.clock();
    return super.propose(req);
  }

  /** Acceptance measured over the draft's mean confidence on the same tokens (1 before any evidence). */
  get calibration(): number {
    return this.acceptance / ((this.confidence + 0.6 * 2) / (this.tried + 2));
  }

  protected override gamma(): number {
    // With measured costs the expected-gain rule ends the chain; the cap only bounds a round.
    return this.costs() ? this.adaptive.maxGamma : this.current;
  }

  protected override continueAfter(tree: DraftTree, d: number, p: number): boolean {
    const costs = this.costs();
    if (!costs) return super.continueAfter(tree, d, p);
    if (tree.draftProbs[0]) {
      // Sampling. A sampled token's draft probability says little of its acceptance (min(1, p_target/p_draft)), so
      // each token is estimated by the measured acceptance. The per-round overhead is left out: it is wall-clock
      // time, and a seed must give the same text for the same measured costs (the tree shape changes the draws).
      return worthExtending(new Array<number>(d).fill(this.acceptance), costs.curve, costs.draftRelative);
    }
    const scale = this.calibration;
    const accept = tokenProbs(tree, d).map((q) => Math.min(1, q * scale));
    return worthExtending(accept, costs.curve, costs.draftRelative, this.overheadRelative, LOOKAHEAD);
  }

  override accept(tree: DraftTree, result: VerifyResult): void {
    this.measureOverhead(tree);
    super.accept(tree, result);
    const drafted = tree.tokens.length - 1;
    const acceptedNow = result.path.length - 1;
    const triedNow = acceptedNow + (acceptedNow < drafted ? 1 : 0);
    this.accepted = 0.95 * this.accepted + acceptedNow;
    this.tried = 0.95 * this.tried + triedNow;
    this.confidence = 0.95 * this.confidence + tokenProbs(tree, triedNow).reduce((a, b) => a + b, 0);
    // With measured costs the expected-gain rule sizes each chain; the heuristic's length is for rounds without them.
    if (this.costs()) return;
    const allAccepted = acceptedNow === drafted && drafted >= this.current;
    this.current = allAccepted ? Math.min(this.adaptive.maxGamma, this.current + 2) : Math.max(1, this.current - 1);
  }

  /**
   * The round's time from propose to accept (drafting, the verify call, verification) less what its model calls cost
   * on the measured curves: JavaScript work (softmaxes, trees, cache bookkeeping) and calls dearer than calibrated.
   * A fixed cost per round favours longer chains. Clamped to [0, 2] target calls; smoothed over rounds.
   */
  private measureOverhead(tree: DraftTree): void {
    const costs = this.costs();
    const started = this.roundStarted;
    this.roundStarted = null;
    const oneCall = costs?.curve.points.find((p) => p.q === 1)?.ms;
    if (!costs || started === null || !oneCall) return;
    // The draft's catching up on text it did not see is timed apart (draft-model.ts), as in the round's cost.
    const predicted = relativeCost(costs.curve, tree.tokens.length) + this.state.roundCost(costs);
    const measured = (this.clock() - started - this.state.catchUpMs()) / oneCall;
    const sample = Math.min(2, Math.max(0, measured - predicted));
    this.overheadRelative = 0.9 * this.overheadRelative + 0.1 * sample;
  }

  learned(): unknown {
    return { current: this.current, accepted: this.accepted, tried: this.tried, confidence: this.confidence };
  }

  relearn(state: unknown): void {
    const s = state as { current?: unknown; accepted?: unknown; tried?: unknown; confidence?: unknown } | null;
    const { current, accepted, tried, confidence } = s ?? {};
    if (!Number.isInteger(current) || (current as number) < 1 || (current as number) > this.adaptive.maxGamma) return;
    if (!countLike(accepted) || !countLike(tried) || accepted > tried) return;
    this.current = current as number;
    this.accepted = accepted;
    this.tried = tried;
    // Records from before the calibration was kept: the draft's confidence taken as the measured acceptance.
    this.confidence = countLike(confidence) && confidence <= tried ? confidence : accepted;
  }

  override reset(keepLearned = false): void {
    super.reset();
    this.roundStarted = null;
    if (keepLearned) return;
    this.current = this.adaptive.initialGamma;
    this.accepted = 0;
    this.tried = 0;
    this.confidence = 0;
    this.overheadRelative = 0;
  }
}

/** The draft's probability of each of the first n drafted tokens of a chain (from its path values). */
function tokenProbs(tree: DraftTree, n: number): number[] {
  const values = tree.values ?? [];
  const out: number[] = [];
  for (let i = 1; i <= n && i < values.length; i++) {
    const before = values[i - 1] as number;
    out.push(before > 0 ? (values[i] as number) / before : 0);
  }
  return out;
}

export const adaptive = {
  name: 'adaptive',
  description:
    'draft model, chain drafted while one more token pays on the measured costs (before calibration: +2/-1 and a 0.4 confidence stop)',
  needs: ['draft-model'],
  lossless: true,
  usesCostModel: true,
  create: (r) => new AdaptiveChainDrafter(draftOf(r), r.costs),
} as const satisfies MethodSpec<'adaptive'>;
