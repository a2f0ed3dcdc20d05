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
 * deterministic children follow (see verify.ts). Which sampled nodes are verified must not depend on what was drawn
 * (SampledBudget), so a sampled round of the union is cut to the size chosen on the previous one, in an order where a
 * sampled node ranks with its parent (never by its own drawn value) and before its deterministic siblings.
 */
import { AcceptanceTable, type BudgetChoice, chooseBudget, countLike, SampledBudget } from '../budget';
import { relativeCost } from '../calibrate';
import { isGreedy } from '../sampling';
import { childrenOf } from '../tree';
import type { NodeStatus, VerifyResult } from '../verify';
import { AdaptiveChainDrafter } from './adaptive-chain';
import type { Drafter, DrafterNote, DraftRequest, DraftTree, TargetOutputs } from './drafter';
import { LOOKUP_DEFAULTS, LookupDrafter } from './lookup';
import { type CostModel, draftOf, type MethodSpec, widthNearlyFree } from './method';

export interface MergeSource {
  /** Short name shown in the tree view (e.g. "lookup"). */
  label: string;
  drafter: Drafter;
  /** Drafts without model calls (prompt lookup): proposed first, and may make the others' calls unnecessary. */
  free?: boolean;
  /**
   * Sizes its own tree on the measured curve (the adaptive chain): when it is the only source with a proposal, its
   * tree is verified as it stands. Others' trees are always sized by the merge (a cost-aware dynamic tree passed
   * through grew to 6 nodes a round on a steep curve where the merge keeps fewer than 5).
   */
  selfSized?: boolean;
  /**
   * Where width is not nearly free (widthNearlyFree: wasm), a free source's tree joins the round only when its best
   * first guess is valued at least this (its own estimate that the target accepts it); weaker ones are left out and
   * the round goes on as if it had found nothing. On wasm with the bundled pair, lookup's one-token guesses widened
   * the call more than they brought: left out below 0.7, merged went from 0.91-0.94x to 0.96-0.97x of the adaptive
   * chain alone (in-process, 36 prompts x 2, tools/method-ab.ts, two runs), better in every category; 0.5 and 0.85
   * did no better. Where width is nearly free (a GPU) a weak guess costs next to nothing, and all join.
   */
  joinsAt?: number;
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
 * nothing: no other source proposed anything there (alone, as in rounds where the others sat out).
 */
const bucket = (conditional: number): string => String(Math.min(9, Math.max(0, Math.floor(conditional * 10))));
const contextOf = (key: string): string => key.replace(/^[0-9]+/, '');
/** A bucket's estimate before measuring: its midpoint, a contested one's half of that. */
const bucketPrior = (key: string): number => ((Number.parseInt(key, 10) + 0.5) / 10) * (key.endsWith('!') ? 0.5 : 1);

/**
 * One source's measured acceptance per bucket. A bucket starts from its midpoint scaled by how far the source's
 * estimates have been off in the same context so far (accepted over the midpoints offered, all buckets together):
 * a draft model's probabilities understate greedy acceptance (over the bench prompts its one-node chains were
 * estimated at 0.31 on the midpoints and held 0.66 of the time), and ten buckets per context see too few rounds
 * each in one generation to learn that alone.
 */
class SourceCalibration {
  private readonly buckets = new AcceptanceTable((key) => Math.min(0.98, bucketPrior(key) * this.scale(key)), 4);
  /** Per context: the proposals judged, their midpoints summed, and the proposals accepted. */
  private readonly judged = new Map<string, number>();
  private readonly expected = new Map<string, number>();
  private readonly accepted = new Map<string, number>();

  /** Measured over estimated acceptance in this key's context (1 before any evidence; a prior of two proposals). */
  private scale(key: string): number {
    const context = contextOf(key);
    return ((this.accepted.get(context) ?? 0) + 2) / ((this.expected.get(context) ?? 0) + 2);
  }

  rate(key: string): number {
    return this.buckets.rate(key);
  }

  /** Proposals judged so far in this key's context. */
  verdicts(key: string): number {
    return this.judged.get(contextOf(key)) ?? 0;
  }

  record(key: string, accepted: boolean): void {
    this.buckets.record(key, accepted);
    const context = contextOf(key);
    this.judged.set(context, (this.judged.get(context) ?? 0) + 1);
    this.expected.set(context, (this.expected.get(context) ?? 0) + bucketPrior(key));
    if (accepted) this.accepted.set(context, (this.accepted.get(context) ?? 0) + 1);
  }

  clear(): void {
    this.buckets.clear();
    this.judged.clear();
    this.expected.clear();
    this.accepted.clear();
  }

  /** Plain data: the buckets' counts, and per context [judged, expected, accepted]. */
  snapshot(): { buckets: [string, number, number][]; contexts: [string, number, number, number][] } {
    const contexts = [...this.judged].map(
      ([c, j]) => [c, j, this.expected.get(c) ?? 0, this.accepted.get(c) ?? 0] as [string, number, number, number],
    );
    return { buckets: this.buckets.snapshot(), contexts };
  }

  restore(state: unknown): void {
    this.clear();
    const s = state as { buckets?: unknown; contexts?: unknown } | null;
    this.buckets.restore(s?.buckets);
    if (!Array.isArray(s?.contexts)) return;
    for (const row of s.contexts) {
      const [c, j, e, a] = Array.isArray(row) ? row : [];
      if (typeof c !== 'string' || !countLike(j) || !countLike(e) || !countLike(a) || a > j) continue;
      this.judged.set(c, j);
      this.expected.set(c, e);
      this.accepted.set(c, a);
    }
  }
}

/** A source node's own conditional estimate: its value over its parent's (0.5 when the source gave none). */
function conditional(tree: DraftTree, i: number): number {
  const v = tree.values?.[i];
  if (v === undefined) return 0.5;
  const p = tree.values?.[tree.parents[i] as number] ?? 1;
  return p > 0 ? Math.min(1, v / p) : 0;
}

/** The highest value among a tree's first guesses (the root's children); null when it proposes nothing. */
function firstGuess(tree: DraftTree): number | null {
  let best: number | null = null;
  tree.parents.forEach((p, i) => {
    if (p === 0) best = Math.max(best ?? 0, tree.values?.[i] ?? 1);
  });
  return best;
}

/**
 * How far ahead of the union's recent rounds (predicted speedup) the free sources' tree alone must be predicted to
 * be before the others sit a round out: weak matches (a one-token guess) predict about what the union does, and
 * skipping on those lost 10-15% on held-out text; long matches (a copy in progress) predict far more.
 */
const SKIP_MARGIN = 0.15;
/** Verdicts in a context before a source's estimates there may keep its guesses out of every tree. */
const EXPLORE_VERDICTS = 8;

export class MergedDrafter implements Drafter {
  readonly name = 'merged';
  /** Per source: measured acceptance per bucket of the source's own conditional estimate. */
  private readonly calibration: SourceCalibration[];
  private trees: DraftTree[] = [];
  /** Recent predicted speedup of rounds where every source drafted (null until one has). */
  private unionSpeedup: number | null = null;
  /** The size of a sampled round's union, chosen on the previous sampled round (SampledBudget). */
  private readonly sampledBudget = new SampledBudget();
  /** For the merged tree of this round: per node, per source, that source's node index or -1. */
  private origin: number[][] = [];
  /** For the merged tree of this round: per node, per source, the calibration bucket of its proposal. */
  private keys: (string | null)[][] = [];
  private lastNote: DrafterNote | null = null;
  /** Per source: the value of its best first guess when this round's tree was left out (joinsAt). */
  private leftOut: number[] = [];
  /**
   * The source whose own tree is this round's as it stands (passThrough; -1: the round's tree is a merge): its nodes
   * are the verified tree's, so accept() hands the round to it without mapping nodes between trees.
   */
  private passed = -1;
  /** The passed-through source's calibration bucket per node (its own estimates). */
  private passedKeys: string[] = [];
  private readonly labels: readonly string[];

  constructor(
    private readonly sources: readonly MergeSource[],
    private readonly costs: () => CostModel | null = () => null,
  ) {
    this.calibration = sources.map(() => new SourceCalibration());
    this.labels = sources.map((s) => s.label);
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
    this.leftOut = [];
    this.passed = -1;
    const gate = !widthNearlyFree(costs);
    for (const [i, s] of this.sources.entries()) {
      if (!s.free) continue;
      const joinsAt = gate ? s.joinsAt : undefined;
      const own = await s.drafter.propose(joinsAt === undefined ? req : { ...req, minFirstGuess: joinsAt });
      const best = firstGuess(own);
      if (joinsAt !== undefined && best !== null && best < joinsAt) this.leftOut[i] = best;
      else this.trees[i] = own;
    }
    // The free sources' tree alone, sized on the curve: when it holds a match predicted to do better than the whole
    // union has been doing lately, the sources that cost model calls sit this round out (their caches catch up next
    // time). Without a match they always draft, so the union's record stays current.
    let alone: number | null = null;
    const matched = this.sources.some((src, i) => src.free && (this.trees[i]?.tokens.length ?? 0) > 1);
    if (costs && matched && this.unionSpeedup !== null && this.sources.some((src) => !src.free)) {
      const { choice } = this.choose(this.merge(req), costs, req.maxNodes);
      if (choice.keep > 0) alone = choice.predictedSpeedup;
    }
    const skip = alone !== null && alone > (this.unionSpeedup as number) * (1 + SKIP_MARGIN);
    if (!skip) {
      for (const [i, s] of this.sources.entries()) {
        if (s.free) continue;
        this.trees[i] = await s.drafter.propose(req);
      }
    }
    // Only a source that sizes its own tree proposed anything (prompt lookup found no match): its tree is verified
    // as it stands, as that source alone would; the union's bookkeeping cost 0.2-0.3 ms a round, 4% of a round on
    // wasm with the bundled pair.
    const proposing = this.sources.flatMap((_, i) => ((this.trees[i]?.tokens.length ?? 0) > 1 ? [i] : []));
    const only = proposing.length === 1 ? (proposing[0] as number) : -1;
    if (
      only >= 0 &&
      this.sources[only]?.selfSized &&
      (this.trees[only] as DraftTree).tokens.length - 1 <= req.maxNodes
    ) {
      return this.passThrough(only, costs);
    }
    const union = this.merge(req);
    const { order, choice } = this.choose(union, costs, req.maxNodes);
    // The best candidate is verified even when it is not predicted to pay while its sources' guesses in that context
    // have had fewer than EXPLORE_VERDICTS verdicts: a source whose estimates start low would otherwise never be
    // measured, and its calibration never corrected. Once measured, the prediction decides.
    let keep = choice.keep > 0 || !this.unmeasured(union, order[0]) ? choice.keep : Math.min(1, req.maxNodes);
    let cut = order;
    if (costs && !isGreedy(req.sampling) && union.some((n) => n.sampled)) {
      // A sampled round: sized before this round's draws, in an order they do not decide (SampledBudget).
      const offered = Math.min(order.length, req.maxNodes);
      const size = this.sampledBudget.size(costs.curve);
      this.sampledBudget.record(keep, offered);
      cut = this.sampledOrder(union);
      keep = Math.min(size, offered);
    }
    if (!skip) this.recordUnion(choice.predictedSpeedup);
    const tree = this.build(union, new Set(cut.slice(0, keep)));
    this.writeNote(
      union.length - 1,
      choice,
      skip
        ? ` (free sources alone predicted ${(alone as number).toFixed(2)}x, the union lately ${(this.unionSpeedup as number).toFixed(2)}x)`
        : '',
    );
    return tree;
  }

  /** Whether a source that proposed this node has had too few verdicts in the node's context to trust its estimate. */
  private unmeasured(union: UnionNode[], node: number | undefined): boolean {
    if (node === undefined) return false;
    return (union[node] as UnionNode).keys.some(
      (key, s) => key !== null && (this.calibration[s] as SourceCalibration).verdicts(key) < EXPLORE_VERDICTS,
    );
  }

  /** A source's own tree as this round's, with its values calibrated (for the prediction and the round event). */
  private passThrough(s: number, costs: CostModel | null): DraftTree {
    const own = this.trees[s] as DraftTree;
    const table = this.calibration[s] as SourceCalibration;
    const n = own.tokens.length;
    const values = new Array<number>(n);
    const keys = new Array<string>(n);
    const sources = new Array<string>(n);
    const label = (this.sources[s] as MergeSource).label;
    values[0] = 1;
    keys[0] = '';
    sources[0] = '';
    let expectedTokens = 1;
    for (let i = 1; i < n; i++) {
      const key = bucket(conditional(own, i));
      keys[i] = key;
      sources[i] = label;
      values[i] = (values[own.parents[i] as number] as number) * table.rate(key);
      expectedTokens += values[i] as number;
    }
    this.passed = s;
    this.passedKeys = keys;
    const nodes = n - 1;
    const predictedSpeedup = costs
      ? expectedTokens / (relativeCost(costs.curve, 1 + nodes) + this.draftCost(costs))
      : Number.NaN;
    this.recordUnion(predictedSpeedup);
    this.writeNote(nodes, { keep: nodes, expectedTokens, predictedSpeedup }, '');
    return { ...own, values, sources };
  }

  /** The predicted speedup of a round where every source drafted, into the recent average the gate compares with. */
  private recordUnion(predictedSpeedup: number): void {
    if (!Number.isFinite(predictedSpeedup)) return;
    this.unionSpeedup =
      this.unionSpeedup === null ? predictedSpeedup : 0.8 * this.unionSpeedup + 0.2 * predictedSpeedup;
  }

  private writeNote(candidates: number, choice: BudgetChoice, why: string): void {
    const passed = this.passed;
    const n = this.sources.length;
    const counts = new Array<number>(n).fill(0);
    if (passed >= 0) counts[passed] = candidates;
    else
      for (let i = 1; i < this.origin.length; i++)
        for (let s = 0; s < n; s++) if (((this.origin[i] as number[])[s] as number) >= 0) (counts[s] as number)++;
    const drafted = this.labels.map((_, i) => this.drafted(i));
    const leftOut = this.leftOut;
    const labels = this.labels;
    const fields: Record<string, number> = {};
    for (let i = 0; i < n; i++) fields[labels[i] as string] = drafted[i] ? (counts[i] as number) : -1;
    fields.expected = Math.round(choice.expectedTokens * 1000) / 1000;
    const predictedSpeedup = choice.predictedSpeedup;
    // The text is put together when it is read (the page's round view, a trace), not in every round of a run.
    this.lastNote = {
      get text() {
        const parts = labels.map((label, i) => {
          if (drafted[i]) return `${label} ${counts[i]}`;
          const best = leftOut[i];
          return best === undefined ? `${label} skipped` : `${label} left out (best guess ${best.toFixed(2)})`;
        });
        const predicted = Number.isFinite(predictedSpeedup) ? `, predicted ${predictedSpeedup.toFixed(2)}x` : '';
        return `merged: ${parts.join(', ')} of ${candidates} candidates kept${predicted}${why}`;
      },
      fields,
    };
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
          best = Math.max(best, (this.calibration[s] as SourceCalibration).rate(key));
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
   * clamped so a later draw never outranks an earlier one). `own` is a node's value before the clamps.
   */
  private bestFirst(union: UnionNode[], own: (n: UnionNode) => number = (n) => n.value): number[] {
    const kids = childrenOf(union.map((n) => n.parent));
    const effective = union.map(own);
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

  /**
   * Under sampling: candidates in an order the round's draws do not decide for the drawn nodes themselves. A sampled
   * node ranks with its parent (its own value, its drawn token's, plays no part), so it comes right after it, before
   * its deterministic siblings and in draw order; deterministic nodes rank by their value, at most their parent's.
   */
  private sampledOrder(union: UnionNode[]): number[] {
    return this.bestFirst(union, (n) => (n.sampled ? Number.POSITIVE_INFINITY : n.value));
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
    if (this.passed >= 0) {
      this.acceptPassed(this.passed, tree, result, outputs);
      return;
    }
    this.sources.forEach((source, s) => {
      // A source that sat the round out sees it as another drafter's: the time until its next round is no gap
      // between rounds of its own (the chain counted a skipped round in its fixed cost per round, and drew long).
      if (!this.drafted(s)) {
        source.drafter.observe?.(tree, result, outputs);
        return;
      }
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
      /** The merged tree's node for this source's node. */
      const inMerged = (node: number): number => {
        const m = back.get(node);
        if (m === undefined) throw new Error(`merged: ${source.label} node ${node} was not in the verified tree`);
        return m;
      };
      const { argmax, auxArgmax } = outputs;
      source.drafter.accept(
        { ...own, callWidth: tree.tokens.length + (tree.aux?.tokens.length ?? 0) },
        { ...result, path, status },
        {
          logits: (node) => outputs.logits(inMerged(node)),
          auxLogits: (i) => outputs.auxLogits(i),
          ...(argmax ? { argmax: (node: number) => argmax(inMerged(node)) } : {}),
          ...(auxArgmax ? { auxArgmax } : {}),
        },
      );
      // Calibration: every node of this source that the target got to judge (its parent on the accepted path)
      // counts for the bucket of the source's own estimate.
      const onPath = new Set(result.path);
      const table = this.calibration[s] as SourceCalibration;
      for (let i = 1; i < tree.tokens.length; i++) {
        const mine = map[i] as number;
        const key = this.keys[i]?.[s];
        if (mine < 0 || !key || !onPath.has(tree.parents[i] as number)) continue;
        table.record(key, onPath.has(i));
      }
    });
  }

  /**
   * A passed-through round: its tree is the source's own, node for node, so the source takes the round as it came;
   * the others proposed nothing (their root alone, which they accept as it is) or sat the round out (they observe
   * it). Every node the target got to judge (its parent on the accepted path) counts for its bucket.
   */
  private acceptPassed(passed: number, tree: DraftTree, result: VerifyResult, outputs: TargetOutputs): void {
    const own = this.trees[passed] as DraftTree;
    this.sources.forEach((source, s) => {
      if (s === passed) return;
      const theirs = this.trees[s];
      if (theirs) source.drafter.accept(theirs, { ...result, path: [0], status: ['root'] }, outputs);
      else source.drafter.observe?.(tree, result, outputs);
    });
    const callWidth = tree.tokens.length + (tree.aux?.tokens.length ?? 0);
    (this.sources[passed] as MergeSource).drafter.accept({ ...own, callWidth }, result, outputs);
    const onPath = new Uint8Array(tree.tokens.length);
    for (const n of result.path) onPath[n] = 1;
    const table = this.calibration[passed] as SourceCalibration;
    for (let i = 1; i < tree.tokens.length; i++)
      if (onPath[tree.parents[i] as number]) table.record(this.passedKeys[i] as string, onPath[i] === 1);
  }

  /** Whether this source drafted this round (a source that costs model calls may sit a round out). */
  private drafted(source: number): boolean {
    return this.trees[source] !== undefined;
  }

  /** A per-drafter figure summed over the sources that drafted this round. */
  private sumDrafted(of: (drafter: Drafter) => number | undefined): number {
    return this.sources.reduce((sum, s, i) => sum + (this.drafted(i) ? (of(s.drafter) ?? 0) : 0), 0);
  }

  /** This round's drafting cost: the sources that drafted. */
  draftCost(costs: CostModel): number {
    return this.sumDrafted((d) => d.draftCost?.(costs));
  }

  catchUpMs(): number {
    return this.sumDrafted((d) => d.catchUpMs?.());
  }

  learned(): unknown {
    return {
      calibration: this.calibration.map((c) => c.snapshot()),
      sources: this.sources.map((s) => s.drafter.learned?.()),
    };
  }

  relearn(state: unknown): void {
    const s = state as { calibration?: unknown; sources?: unknown } | null;
    const calibration = Array.isArray(s?.calibration) ? s.calibration : [];
    const sources = Array.isArray(s?.sources) ? s.sources : [];
    this.calibration.forEach((c, i) => {
      c.restore(calibration[i]);
    });
    this.sources.forEach((source, i) => {
      source.drafter.relearn?.(sources[i]);
    });
  }

  reset(keepLearned = false): void {
    for (const s of this.sources) s.drafter.reset(keepLearned);
    this.sampledBudget.clear();
    if (!keepLearned) for (const c of this.calibration) c.clear();
    this.trees = [];
    this.unionSpeedup = null;
    this.origin = [];
    this.keys = [];
    this.lastNote = null;
    this.leftOut = [];
    this.passed = -1;
    this.passedKeys = [];
  }

  note(): DrafterNote | null {
    return this.lastNote;
  }
}

export const merged = {
  name: 'merged',
  description:
    "prompt lookup merged with the draft model's adaptive chain: one tree, shares set by measured acceptance, size by the cost curve; on a steep curve lookup joins when its best guess is valued 0.7 or more, and the draft sits out rounds where a long match alone is predicted to do better",
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
          joinsAt: 0.7,
        },
        { label: 'draft', drafter: new AdaptiveChainDrafter(draftOf(r), r.costs), selfSized: true },
      ],
      r.costs,
    ),
} as const satisfies MethodSpec<'merged'>;
