/**
 * Adaptive draft length, as Hugging Face's assisted generation does it: +2 after a fully accepted draft, -1
 * otherwise (between 1 and maxGamma), and the draft stops early when its confidence in its own token drops below
 * a threshold (0.4, transformers' assistant_confidence_threshold).
 */
import type { VerifyResult } from '../verify';
import { ChainDrafter } from './chain';
import type { DraftModelState } from './draft-model';
import type { DraftTree } from './drafter';

export interface AdaptiveChainOptions {
  initialGamma: number;
  maxGamma: number;
  confidence: number;
}

export const ADAPTIVE_DEFAULTS: AdaptiveChainOptions = { initialGamma: 5, maxGamma: 16, confidence: 0.4 };

export class AdaptiveChainDrafter extends ChainDrafter {
  override readonly name = 'adaptive';
  private current: number;

  constructor(
    draft: DraftModelState['lm'],
    private readonly adaptive: AdaptiveChainOptions = ADAPTIVE_DEFAULTS,
  ) {
    super(draft, { gamma: adaptive.initialGamma, confidence: adaptive.confidence });
    this.current = adaptive.initialGamma;
  }

  /** The draft length the next round will use. */
  get draftLength(): number {
    return this.current;
  }

  protected override gamma(): number {
    return this.current;
  }

  override accept(tree: DraftTree, result: VerifyResult): void {
    super.accept(tree, result);
    const drafted = tree.tokens.length - 1;
    const allAccepted = result.path.length - 1 === drafted && drafted >= this.current;
    this.current = allAccepted ? Math.min(this.adaptive.maxGamma, this.current + 2) : Math.max(1, this.current - 1);
  }

  override reset(): void {
    super.reset();
    this.current = this.adaptive.initialGamma;
  }
}
