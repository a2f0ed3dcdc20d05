/**
 * Adaptive draft length. Without a cost model it follows Hugging Face's assisted generation: +2 after a fully
 * accepted draft, -1 otherwise (between 1 and maxGamma), and the draft stops early when its confidence in its own
 * token drops below a threshold (0.4, transformers' assistant_confidence_threshold).
 *
 * With a cost model (the measured verify-cost curve of this hardware and the draft's cost per call, see
 * calibrate.ts) it is hardware-aware, in the spirit of Sequoia: each round it drafts the length that maximises
 * expected tokens per unit time for the acceptance rate measured so far.
 */
import { countLike } from '../budget';
import { bestGamma } from '../calibrate';
import type { VerifyResult } from '../verify';
import { ChainDrafter } from './chain';
import type { DraftModelState } from './draft-model';
import type { DraftTree } from './drafter';
import { type CostModel, draftOf, type MethodSpec } from './method';

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

  constructor(
    draft: DraftModelState['lm'] | DraftModelState,
    /** This hardware's measured costs, once known (null: the +2/-1 heuristic). */
    private readonly costs: () => CostModel | null = () => null,
    private readonly adaptive: AdaptiveChainOptions = ADAPTIVE_DEFAULTS,
  ) {
    super(draft, { gamma: adaptive.initialGamma, confidence: adaptive.confidence });
    this.current = adaptive.initialGamma;
  }

  /** The draft length the next round will use. */
  get draftLength(): number {
    return this.current;
  }

  /** Per-token acceptance measured so far (a prior of 0.6 before any evidence). */
  get acceptance(): number {
    return (this.accepted + 0.6 * 2) / (this.tried + 2);
  }

  protected override gamma(): number {
    return this.current;
  }

  override accept(tree: DraftTree, result: VerifyResult): void {
    super.accept(tree, result);
    const drafted = tree.tokens.length - 1;
    const acceptedNow = result.path.length - 1;
    this.accepted = 0.95 * this.accepted + acceptedNow;
    this.tried = 0.95 * this.tried + acceptedNow + (acceptedNow < drafted ? 1 : 0);
    const costs = this.costs();
    if (costs) {
      const { gamma } = bestGamma(this.acceptance, costs.curve, costs.draftRelative, this.adaptive.maxGamma);
      this.current = Math.max(1, gamma);
      return;
    }
    const allAccepted = acceptedNow === drafted && drafted >= this.current;
    this.current = allAccepted ? Math.min(this.adaptive.maxGamma, this.current + 2) : Math.max(1, this.current - 1);
  }

  learned(): unknown {
    return { current: this.current, accepted: this.accepted, tried: this.tried };
  }

  relearn(state: unknown): void {
    const s = state as { current?: unknown; accepted?: unknown; tried?: unknown } | null;
    const { current, accepted, tried } = s ?? {};
    if (!Number.isInteger(current) || (current as number) < 1 || (current as number) > this.adaptive.maxGamma) return;
    if (!countLike(accepted) || !countLike(tried) || accepted > tried) return;
    this.current = current as number;
    this.accepted = accepted;
    this.tried = tried;
  }

  override reset(keepLearned = false): void {
    super.reset();
    if (keepLearned) return;
    this.current = this.adaptive.initialGamma;
    this.accepted = 0;
    this.tried = 0;
  }
}

export const adaptive = {
  name: 'adaptive',
  description:
    'draft model, chain with adaptive length (+2/-1 and a 0.4 confidence stop; from the measured cost curve once calibrated)',
  needs: ['draft-model'],
  lossless: true,
  usesCostModel: true,
  create: (r) => new AdaptiveChainDrafter(draftOf(r), r.costs),
} as const satisfies MethodSpec<'adaptive'>;
