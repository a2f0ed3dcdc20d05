/**
 * Draft-model chain (Leviathan et al.; Chen et al.): the draft proposes gamma tokens one after another.
 * Greedy takes the draft's argmax; sampling draws from the draft's processed distribution.
 */
import { argmax, sampleFrom } from '../sampling';
import type { VerifyResult } from '../verify';
import { DraftDist, DraftModelState, judgeFrom, nothingToDraft } from './draft-model';
import { type Drafter, type DraftRequest, type DraftTree, rootOnly } from './drafter';
import { type CostModel, draftOf, type MethodSpec } from './method';

export interface ChainOptions {
  /** Draft length. */
  gamma: number;
  /** Stop drafting once the draft's probability of its own token falls below this (0 = never). */
  confidence?: number;
}

export class ChainDrafter implements Drafter {
  readonly name: string = 'chain';
  protected readonly state: DraftModelState;

  /** `draft`: a draft model, or the state of one shared with another drafter (auto's draft-model arms). */
  constructor(
    draft: DraftModelState['lm'] | DraftModelState,
    protected options: ChainOptions,
  ) {
    this.state = draft instanceof DraftModelState ? draft : new DraftModelState(draft);
  }

  get calls(): number {
    return this.state.calls;
  }

  /** The length to draft this round (subclasses adapt it). */
  protected gamma(): number {
    return this.options.gamma;
  }

  /**
   * Whether to pay one more draft call after the d-th token, whose draft probability is p (the chain so far is
   * `tree`, with its path values). Here: while the draft is confident enough (options.confidence; 0 = always).
   */
  protected continueAfter(_tree: DraftTree, _d: number, p: number): boolean {
    return !this.options.confidence || p >= this.options.confidence;
  }

  async propose(req: DraftRequest): Promise<DraftTree> {
    const tree = rootOnly(req.committed);
    // The draft's own estimate of each path (its probabilities multiplied along the chain), for callers that merge
    // or cut trees by value.
    tree.values = [1];
    if (nothingToDraft(req, this.state)) return tree;
    let logits = await this.state.sync(req.committed, judgeFrom(req));
    const limit = Math.min(this.gamma(), req.maxDepth, req.maxNodes, this.state.room() - 1);
    const depths = [0];
    for (let d = 1; d <= limit; d++) {
      const parent = d - 1;
      const dist = new DraftDist(logits, req.sampling);
      tree.draftProbs[parent] = dist.verify;
      const token = dist.verify ? sampleFrom(dist.verify, req.rng) : argmax(logits);
      tree.tokens.push(token);
      tree.parents.push(parent);
      tree.draftProbs.push(null);
      depths.push(d);
      const p = dist.prob(token);
      tree.values.push((tree.values[parent] as number) * p);
      if (d === limit || req.eos.has(token) || !this.continueAfter(tree, d, p)) break;
      [logits] = (await this.state.expand(tree, [d], depths)) as [Float32Array];
    }
    return tree;
  }

  accept(tree: DraftTree, result: VerifyResult): void {
    this.state.accept(tree, result);
  }

  draftCost(costs: CostModel): number {
    return this.state.roundCost(costs);
  }

  catchUpMs(): number {
    return this.state.catchUpMs?.() ?? 0;
  }

  reset(): void {
    this.state.reset();
  }
}

export const chain = {
  name: 'chain',
  description: 'draft model, chain of 4 tokens',
  needs: ['draft-model'],
  lossless: true,
  usesCostModel: false,
  create: (r) => new ChainDrafter(draftOf(r), { gamma: 4 }),
} as const satisfies MethodSpec<'chain'>;
