/**
 * Merged drafting: one tree from several drafters within one node budget. Each source proposes its own tree with
 * per-node values (its estimate that the target accepts the path to the node); the trees are merged by path (a node
 * two sources propose is one node). Each source's estimates are calibrated by what it measured so far: its
 * conditional estimate for a node (value / parent's value) is bucketed, and each bucket's measured acceptance
 * replaces it; so a source whose guesses hold up gets a larger share of the budget. The best nodes of the union are
 * kept best-first, as many as pay on the measured verify-cost curve once the round's draft calls are counted. The
 * round event says which source proposed each node. Sources that draft without model calls (prompt lookup) go
 * first; when their tree alone is predicted to beat what the whole union has been doing by a margin (a long match
 * in a passage being copied), the others sit the round out and their calls are saved.
 *
 * Lossless under sampling: a node's sampled children (drawn without replacement from one source's distribution)
 * stay first and in draw order, and a deterministic duplicate of a sampled node is dropped in its favour; the other
 * deterministic children follow (see verify.ts). Values are clamped along each sampled sibling group, so whatever
 * budget is chosen keeps a prefix of the draw order.
 */
import { AcceptanceTable, type BudgetChoice, chooseBudget } from '../budget';
import { childrenOf } from '../tree';
import type { NodeStatus, VerifyResult } from '../verify';
import { AdaptiveChainDrafter } from './adaptive-chain';
import type { Drafter, DrafterNote, DraftRequest, DraftTree, TargetOutputs } from './drafter';
import { LOOKUP_DEFAULTS, LookupDrafter } from './lookup';
import { type CostModel, draftOf, type MethodSpec } from './method';

export interface MergeSource {
  /** Short name shown in the tree view (e.g. "lookup"). */
  label: string;
  drafter: Drafter;
  /** Drafts without model calls (prompt lookup): proposed first, and may make the others' calls unnecessary. */
  free?: boolean;
}

interface UnionNode {
  token: number;
  parent: number;
  value: number;
  /** The sampling distribution this node was drawn from is its parent's draft distribution (not deterministic). */
  sampled: boolean;
  /** For a sampled node: its index in the source tree it was drawn in (siblings there are in draw order). */
  drawRank: number;
  /** Per source: that source's node index, or -1. */
  from: number[];
  /** Children of this node's sampled group come from this source's draft distribution. */
  probs: Float32Array | null;
  /** Per source: the calibration bucket its proposal of this node counts in (null: not proposed by it). */
  keys: (string | null)[];
}

/**
 * Conditional estimates are bucketed in tenths, and by what the other sources said at the same place: "=" another
 * source proposed the same token (agreed), "!" another proposed a different one and none this one (contested),
 * nothing: no other source proposed anything there (alone, as in rounds where the others sat out). A bucket's prior
 * is its midpoint, a contested one's half of that.
 */
const bucket = (conditional: number): string => String(Math.min(9, Math.max(0, Math.floor(conditional * 10))));
const bucketPrior = (key: string): number => ((Number.parseInt(key, 10) + 0.5) / 10) * (key.endsWith('!') ? 0.5 : 1);

/** A source node's own conditional estimate: its value over its parent's (0.5 when the source gave none). */
function conditional(tree: DraftTree, i: number): number {
  const v = tree.values?.[i];
  if (v === undefined) return 0.5;
  const p = tree.values?.[tree.parents[i] as number] ?? 1;
  return p > 0 ? Math.min(1, v / p) : 0;
}

/**
 * How far ahead of the union's recent rounds (predicted speedup) the free sources' tree alone must be predicted to
 * be before the others sit a round out: weak matches (a one-token guess) predict about what the union does, and
 * skipping on those lost 10-15% on held-out text; long matches (a copy in progress) predict far more.
 */
const SKIP_MARGIN = 0.15;

export class MergedDrafter implements Drafter {
  readonly name = 'merged';
  /** Per source: measured acceptance per bucket of the source's own conditional estimate. */
  private readonly calibration: AcceptanceTable[];
  private trees: DraftTree[] = [];
  /** Per source: whether it drafted this round (a source that costs model calls may sit a round out). */
  private active: boolean[] = [];
  /** Recent predicted speedup of rounds where every source drafted (null until one has). */
  private unionSpeedup: number | null = null;
  /** For the merged tree of this round: per node, per source, that source's node index or -1. */
  private origin: number[][] = [];
  /** For the merged tree of this round: per node, per source, the calibration bucket of its proposal. */
  private keys: (string | null)[][] = [];
  private lastNote: DrafterNote | null = null;

  constructor(
    private readonly sources: readonly MergeSource[],
    private readonly costs: () => CostModel | null = () => null,
  ) {
    this.calibration = sources.map(() => new AcceptanceTable(bucketPrior, 4));
  }

  get calls(): number {
    return this.sources.reduce((sum, s) => sum + s.drafter.calls, 0);
  }

  /** Whether any source reads the target's logits (they are passed through to it). */
  get readsTargetLogits(): boolean {
    return this.sources.some((s) => s.drafter.readsTargetLogits === true);
  }

  async propose(req: DraftRequest): Promise<DraftTree> {
    const costs = this.costs();
    this.trees = [];
    this.active = this.sources.map((s) => s.free === true);
    for (const [i, s] of this.sources.entries()) if (s.free) this.trees[i] = await s.drafter.propose(req);
    // The free sources' tree alone, sized on the curve: when it is predicted to do better than the whole union has
    // been doing lately, the sources that cost model calls sit this round out (their caches catch up next time).
    let alone: number | null = null;
    if (costs && this.unionSpeedup !== null && this.active.some(Boolean) && !this.active.every(Boolean)) {
      alone = this.choose(this.merge(req), costs, req.maxNodes).choice.predictedSpeedup;
    }
    const skip = alone !== null && alone > (this.unionSpeedup as number) * (1 + SKIP_MARGIN);
    if (!skip) {
      for (const [i, s] of this.sources.entries()) {
        if (s.free) continue;
        this.trees[i] = await s.drafter.propose(req);
        this.active[i] = true;
      }
    }
    const union = this.merge(req);
    const { order, choice } = this.choose(union, costs, req.maxNodes);
    const { keep, predictedSpeedup } = choice;
    if (!skip && costs && Number.isFinite(predictedSpeedup)) {
      this.unionSpeedup =
        this.unionSpeedup === null ? predictedSpeedup : 0.8 * this.unionSpeedup + 0.2 * predictedSpeedup;
    }
    const tree = this.build(union, new Set(order.slice(0, keep)));
    const counts = this.sources.map((_, s) => this.origin.filter((o) => (o[s] as number) >= 0).length - 1);
    const parts = this.sources.map((s, i) => (this.active[i] ? `${s.label} ${counts[i]}` : `${s.label} skipped`));
    this.lastNote = {
      text: `merged: ${parts.join(', ')} of ${union.length - 1} candidates kept${Number.isFinite(predictedSpeedup) ? `, predicted ${predictedSpeedup.toFixed(2)}x` : ''}${skip ? ` (free sources alone predicted ${(alone as number).toFixed(2)}x, the union lately ${(this.unionSpeedup as number).toFixed(2)}x)` : ''}`,
      fields: {
        ...Object.fromEntries(this.sources.map((s, i) => [s.label, this.active[i] ? (counts[i] as number) : -1])),
        expected: Number(choice.expectedTokens.toFixed(3)),
      },
    };
    return tree;
  }

  /** Candidates best-first and how many of them pay on the measured curve once this round's drafting is counted. */
  private choose(
    union: UnionNode[],
    costs: CostModel | null,
    maxNodes: number,
  ): { order: number[]; choice: BudgetChoice } {
    const order = this.bestFirst(union);
    const limit = Math.min(order.length, maxNodes);
    const choice = chooseBudget(
      order.slice(0, limit).map((i) => (union[i] as UnionNode).value),
      costs?.curve ?? null,
      costs ? this.draftCost(costs) : 0,
    );
    return { order, choice };
  }

  /**
   * Union of the sources' trees by path, then calibrated values. A node's conditional estimate (value over its
   * parent's) is its source's measured acceptance for the bucket of the source's own estimate and of what the other
   * sources said there (agreed, contested or alone: a guess another source shares holds far more often than one it
   * contradicts); where sources agree the larger estimate is kept. Siblings' estimates are scaled down when they sum
   * past one (at most one child is accepted).
   */
  private merge(req: DraftRequest): UnionNode[] {
    const union: UnionNode[] = [
      {
        token: req.committed[req.committed.length - 1] as number,
        parent: -1,
        value: 1,
        sampled: false,
        drawRank: 0,
        from: this.sources.map(() => 0),
        probs: null,
        keys: this.sources.map(() => null),
      },
    ];
    const byPath = new Map<string, number>();
    this.trees.forEach((tree, s) => {
      const at: number[] = [0]; // this source's node -> union node
      for (let i = 1; i < tree.tokens.length; i++) {
        const parent = at[tree.parents[i] as number] as number;
        const token = tree.tokens[i] as number;
        const sampled = !tree.deterministic?.[i] && tree.draftProbs[tree.parents[i] as number] != null;
        const key = `${parent}:${token}`;
        let u = byPath.get(key);
        if (u === undefined) {
          u = union.length;
          byPath.set(key, u);
          union.push({
            token,
            parent,
            value: 0,
            sampled,
            drawRank: i,
            from: this.sources.map(() => -1),
            probs: null,
            keys: this.sources.map(() => null),
          });
        } else {
          const node = union[u] as UnionNode;
          if (sampled && !node.sampled) {
            // A sampled proposal of the same token wins over a deterministic one, and keeps its draw position.
            node.sampled = true;
            node.drawRank = i;
          }
        }
        (union[u] as UnionNode).from[s] = i;
        at[i] = u;
      }
      // Each node's sampled children were drawn from this source's distribution at that node.
      tree.draftProbs.forEach((q, i) => {
        if (q) (union[at[i] as number] as UnionNode).probs ??= q;
      });
    });
    const kids = childrenOf(union.map((n) => n.parent));
    const rate = union.map(() => 1);
    for (const siblings of kids) {
      for (const u of siblings) {
        const node = union[u] as UnionNode;
        let best = 0;
        node.from.forEach((mine, s) => {
          if (mine < 0) return;
          const agreed = node.from.some((theirs, o) => o !== s && theirs >= 0);
          const contested = !agreed && siblings.some((o) => (union[o] as UnionNode).from[s] === -1);
          const key = `${bucket(conditional(this.trees[s] as DraftTree, mine))}${agreed ? '=' : contested ? '!' : ''}`;
          node.keys[s] = key;
          best = Math.max(best, (this.calibration[s] as AcceptanceTable).rate(key));
        });
        rate[u] = best;
      }
      const sum = siblings.reduce((a, u) => a + (rate[u] as number), 0);
      if (sum > 1) for (const u of siblings) rate[u] = (rate[u] as number) / sum;
    }
    // Parents come before their children in the union.
    for (let u = 1; u < union.length; u++) {
      const node = union[u] as UnionNode;
      node.value = (union[node.parent] as UnionNode).value * (rate[u] as number);
    }
    return union;
  }

  /**
   * Candidates best-first by value, parents before children; sampled siblings keep their draw order (values
   * clamped so a later draw never outranks an earlier one).
   */
  private bestFirst(union: UnionNode[]): number[] {
    const kids = childrenOf(union.map((n) => n.parent));
    const effective = union.map((n) => n.value);
    // Preorder rank in emission order: parents before children, earlier draws before later ones (the tie-break).
    const rank: number[] = union.map(() => 0);
    let next = 0;
    const visit = (node: number) => {
      rank[node] = next++;
      let cap = effective[node] as number;
      for (const c of this.childOrder(union, kids[node] ?? [])) {
        const n = union[c] as UnionNode;
        effective[c] = Math.min(effective[c] as number, effective[node] as number);
        if (n.sampled) {
          effective[c] = Math.min(effective[c] as number, cap);
          cap = effective[c] as number;
        }
        visit(c);
      }
    };
    visit(0);
    return [...union.keys()]
      .slice(1)
      .sort((a, b) => (effective[b] as number) - (effective[a] as number) || (rank[a] as number) - (rank[b] as number));
  }

  /** Children in emission order: sampled ones first in their source's draw order, then deterministic ones. */
  private childOrder(union: UnionNode[], children: readonly number[]): number[] {
    const key = (i: number) => {
      const n = union[i] as UnionNode;
      return n.sampled ? n.drawRank : Number.MAX_SAFE_INTEGER;
    };
    return [...children].sort((a, b) => key(a) - key(b) || a - b);
  }

  private build(union: UnionNode[], chosen: ReadonlySet<number>): DraftTree {
    const kids = childrenOf(union.map((n) => n.parent));
    const root = union[0] as UnionNode;
    const tree: DraftTree = {
      tokens: [root.token],
      parents: [-1],
      draftProbs: [root.probs],
      deterministic: [false],
      values: [1],
      sources: [''],
    };
    this.origin = [root.from];
    this.keys = [root.keys];
    const visit = (node: number, at: number) => {
      for (const c of this.childOrder(union, kids[node] ?? [])) {
        if (!chosen.has(c)) continue;
        const n = union[c] as UnionNode;
        tree.tokens.push(n.token);
        tree.parents.push(at);
        tree.draftProbs.push(n.probs);
        tree.deterministic?.push(!n.sampled);
        tree.values?.push(n.value);
        tree.sources?.push(
          this.sources
            .filter((_, s) => (n.from[s] as number) >= 0)
            .map((s) => s.label)
            .join('+'),
        );
        this.origin.push(n.from);
        this.keys.push(n.keys);
        visit(c, tree.tokens.length - 1);
      }
    };
    visit(0, 0);
    return tree;
  }

  accept(tree: DraftTree, result: VerifyResult, outputs: TargetOutputs): void {
    this.sources.forEach((source, s) => {
      if (!this.active[s]) return;
      const own = this.trees[s] as DraftTree;
      const map = this.origin.map((o) => o[s] as number);
      // The accepted path as far as this source's tree follows it.
      const path: number[] = [];
      for (const n of result.path) {
        const mine = map[n] as number;
        if (mine < 0) break;
        path.push(mine);
      }
      const status: NodeStatus[] = own.tokens.map(() => 'unreached');
      status[0] = 'root';
      for (const n of path.slice(1)) status[n] = 'accepted';
      const back = new Map(map.map((mine, merged) => [mine, merged] as const).filter(([mine]) => mine >= 0));
      source.drafter.accept(
        own,
        { ...result, path, status },
        {
          logits: (node) => {
            const m = back.get(node);
            if (m === undefined) throw new Error(`merged: ${source.label} node ${node} was not in the verified tree`);
            return outputs.logits(m);
          },
          auxLogits: (i) => outputs.auxLogits(i),
        },
      );
      // Calibration: every node of this source that the target got to judge (its parent on the accepted path)
      // counts for the bucket of the source's own estimate.
      const onPath = new Set(result.path);
      const table = this.calibration[s] as AcceptanceTable;
      for (let i = 1; i < tree.tokens.length; i++) {
        const mine = map[i] as number;
        const key = this.keys[i]?.[s];
        if (mine < 0 || !key || !onPath.has(tree.parents[i] as number)) continue;
        table.record(key, onPath.has(i));
      }
    });
  }

  /** This round's drafting cost: the sources that drafted. */
  draftCost(costs: CostModel): number {
    return this.sources.reduce((sum, s, i) => sum + (this.active[i] ? (s.drafter.draftCost?.(costs) ?? 0) : 0), 0);
  }

  reset(): void {
    for (const s of this.sources) s.drafter.reset();
    for (const c of this.calibration) c.clear();
    this.trees = [];
    this.active = [];
    this.unionSpeedup = null;
    this.origin = [];
    this.keys = [];
    this.lastNote = null;
  }

  note(): DrafterNote | null {
    return this.lastNote;
  }
}

export const merged = {
  name: 'merged',
  description:
    "prompt lookup merged with the draft model's adaptive chain: one tree, shares set by measured acceptance, size by the cost curve; the draft sits out rounds where a long match alone is predicted to do better",
  needs: ['draft-model'],
  lossless: true,
  usesCostModel: true,
  create: (r) =>
    new MergedDrafter(
      [
        {
          label: 'lookup',
          drafter: new LookupDrafter(r.costs, { ...LOOKUP_DEFAULTS, selfBudget: false }),
          free: true,
        },
        { label: 'draft', drafter: new AdaptiveChainDrafter(draftOf(r), r.costs) },
      ],
      r.costs,
    ),
} as const satisfies MethodSpec<'merged'>;
