/**
 * Draft-model static tree (Medusa-style choice list): a fixed tree shape where each node is named by the ranks of
 * its tokens along the path, e.g. [0, 1] = the draft's 2nd choice after its 1st choice. Greedy takes the draft's
 * top-k; sampling draws the children without replacement (Gumbel-top-k), which keeps verification lossless.
 */
import type { VerifyResult } from '../verify';
import { DraftDist, DraftModelState, judgeFrom, nothingToDraft } from './draft-model';
import { type Drafter, type DraftRequest, type DraftTree, rootOnly } from './drafter';
import { type CostModel, draftOf, type MethodSpec } from './method';

/** 20 nodes, depth 6: wide near the root, a long spine down the draft's first choices. */
export const DEFAULT_TREE_CHOICES: number[][] = [
  [0],
  [1],
  [2],
  [3],
  [0, 0],
  [0, 1],
  [0, 2],
  [1, 0],
  [1, 1],
  [2, 0],
  [0, 0, 0],
  [0, 0, 1],
  [0, 1, 0],
  [1, 0, 0],
  [0, 0, 0, 0],
  [0, 0, 0, 1],
  [0, 1, 0, 0],
  [0, 0, 0, 0, 0],
  [0, 0, 0, 0, 1],
  [0, 0, 0, 0, 0, 0],
];

interface ShapeNode {
  key: string;
  depth: number;
  /** Number of children (ranks 0..k-1) in the shape. */
  width: number;
}

/** Validate a choice list: every prefix present, children ranks contiguous from 0. */
export function shapeOf(choices: readonly (readonly number[])[]): Map<string, ShapeNode> {
  const shape = new Map<string, ShapeNode>([['', { key: '', depth: 0, width: 0 }]]);
  const sorted = [...choices].sort((a, b) => a.length - b.length);
  for (const c of sorted) {
    const parent = shape.get(c.slice(0, -1).join(','));
    if (!parent) throw new RangeError(`tree choices: [${c}] has no parent [${c.slice(0, -1)}] in the list`);
    if (c[c.length - 1] !== parent.width) {
      throw new RangeError(
        `tree choices: children of [${c.slice(0, -1)}] must be ranks 0, 1, 2, … in order; got [${c}]`,
      );
    }
    parent.width++;
    shape.set(c.join(','), { key: c.join(','), depth: c.length, width: 0 });
  }
  return shape;
}

export class StaticTreeDrafter implements Drafter {
  readonly name = 'tree';
  private readonly state: DraftModelState;
  private readonly shape: Map<string, ShapeNode>;

  constructor(draft: DraftModelState['lm'], choices: readonly (readonly number[])[] = DEFAULT_TREE_CHOICES) {
    this.state = new DraftModelState(draft);
    this.shape = shapeOf(choices);
  }

  get calls(): number {
    return this.state.calls;
  }

  async propose(req: DraftRequest): Promise<DraftTree> {
    if (nothingToDraft(req, this.state)) return rootOnly(req.committed);
    const rootLogits = await this.state.sync(req.committed, judgeFrom(req));
    const tree = rootOnly(req.committed);
    const depths = [0];
    const keyOf = [''];
    const budget = Math.min(req.maxNodes, this.state.room() - 1);
    let level = [0];
    let levelLogits = [rootLogits];
    for (let depth = 1; depth <= req.maxDepth && level.length > 0; depth++) {
      const next: number[] = [];
      level.forEach((node, i) => {
        const width = this.shape.get(keyOf[node] as string)?.width ?? 0;
        if (width === 0 || req.eos.has(tree.tokens[node] as number)) return;
        const dist = new DraftDist(levelLogits[i] as Float32Array, req.sampling);
        tree.draftProbs[node] = dist.verify;
        const tokens = dist.children(width, req.rng).map((c) => c.token);
        tokens.forEach((token, rank) => {
          if (tree.tokens.length - 1 >= budget) return;
          tree.tokens.push(token);
          tree.parents.push(node);
          tree.draftProbs.push(null);
          depths.push(depth);
          keyOf.push(keyOf[node] ? `${keyOf[node]},${rank}` : `${rank}`);
          next.push(tree.tokens.length - 1);
        });
      });
      // Run the draft only on the new nodes that will have children of their own.
      level = next
        .filter(
          (n) =>
            depth < req.maxDepth &&
            (this.shape.get(keyOf[n] as string)?.width ?? 0) > 0 &&
            !req.eos.has(tree.tokens[n] as number),
        )
        .slice(0, this.state.capacity()); // never past the draft's context
      levelLogits =
        level.length > 0 && tree.tokens.length - 1 < budget ? await this.state.expand(tree, level, depths) : [];
      if (levelLogits.length === 0) break;
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

export const tree = {
  name: 'tree',
  description: 'draft model, static tree (20 nodes, depth 6)',
  needs: ['draft-model'],
  lossless: true,
  usesCostModel: false,
  create: (r) => new StaticTreeDrafter(draftOf(r)),
} as const satisfies MethodSpec<'tree'>;
