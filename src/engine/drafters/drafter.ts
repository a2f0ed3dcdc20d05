/** The one interface every drafting method implements (one method per file in this folder). */
import type { Rng, SamplingParams } from '../sampling';
import type { VerifyResult, VerifyTree } from '../verify';

export interface DraftRequest {
  /** The committed sequence; its last token is the tree's root (not yet seen by the target). */
  committed: readonly number[];
  /** Most draft nodes (besides the root) and deepest depth this round may use. */
  maxNodes: number;
  maxDepth: number;
  sampling: SamplingParams;
  rng: Rng;
  /** Tokens that end generation: drafters do not draft past them. */
  eos: ReadonlySet<number>;
}

/** A proposed token tree: node 0 is the root; draftProbs[i] is the draft's distribution for i's children. */
export interface DraftTree extends VerifyTree {
  tokens: number[];
  parents: number[];
  draftProbs: (Float32Array | null)[];
}

export interface Drafter {
  readonly name: string;
  /** Draft-model forward calls so far. */
  readonly calls: number;
  propose(request: DraftRequest): Promise<DraftTree>;
  /** Called after verification, so the drafter can keep the accepted part of its cache and adapt. */
  accept(tree: DraftTree, result: VerifyResult): void;
  /** Forget all state (a new prompt). */
  reset(): void;
}

export const rootOnly = (committed: readonly number[]): DraftTree => ({
  tokens: [committed[committed.length - 1] as number],
  parents: [-1],
  draftProbs: [null],
});
