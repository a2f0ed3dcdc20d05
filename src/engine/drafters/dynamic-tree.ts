/**
 * Draft-model dynamic tree (EAGLE-2 style): grow the tree level by level, expanding only the `expand` most
 * promising frontier nodes by cumulative draft score, each with its `branch` best children; then keep the best
 * `budget` nodes overall (best-first from the root, so the kept set is always a tree).
 *
 * Scores: greedy uses the draft's log-probabilities. Sampling uses perturbed scores (log q + Gumbel noise): a
 * node's children are then drawn without replacement from q, in draw order, and any kept subset of siblings is a
 * prefix of that order, which keeps recursive rejection sampling lossless (see shared/reference/lossless-trees.md).
 *
 * With `adaptive`, depth and budget follow the measured acceptance: deeper after rounds that accept (nearly) the
 * whole depth, shallower after rounds that accept little.
 */

import { AcceptanceTable, bestFirstOrder, chooseBudget, SampledBudget } from '../budget';
import { relativeCost } from '../calibrate';
import type { CausalLM } from '../lm';
import { isGreedy } from '../sampling';
import { childrenOf } from '../tree';
import type { VerifyResult } from '../verify';
import {
  confidenceBucket,
  DraftDist,
  DraftModelState,
  type DraftRow,
  type FirstChoiceCounts,
  judgeFrom,
  nothingToDraft,
  type TreeDraftModel,
} from './draft-model';
import { type Drafter, type DraftRequest, type DraftTree, rootOnly, type TargetOutputs } from './drafter';
import { type CostModel, draftOf, type MethodSpec } from './method';

export interface DynamicTreeOptions {
  /** Levels to grow. */
  depth: number;
  /** Frontier nodes expanded per level. */
  expand: number;
  /** Children per expanded node. */
  branch: number;
  /** Nodes kept (besides the root). */
  budget: number;
  adaptive?: boolean;
  /**
   * Grow only while it pays on this hardware: a level is drafted only when its best frontier node is likely enough
   * to be accepted to cover one draft call plus verifying one more node (needs the measured costs).
   */
  costAware?: boolean;
  /**
   * Estimate acceptance from what was measured, not from the draft's own probabilities: each node's conditional
   * probability is bucketed (tenths), and each bucket's measured acceptance replaces it in the node's value. Growth
   * (with costAware) and a final cut of the best-first order on the measured verify-cost curve use those values.
   * For draft heads, whose probabilities are far from calibrated (a head trained by KL to a sharp target is often
   * under-confident), this is what lets the tree grow as deep as acceptance really goes, and no deeper.
   */
  calibrated?: boolean;
  /** The drafter's name (default: 'dynamic', or 'adaptive-tree' when adaptive). */
  name?: string;
}

/**
 * Calibration buckets: a child's rank among its siblings (its draw order; 3 = the fourth and later) and its
 * conditional probability in tenths. A bucket's prior acceptance is the probability's midpoint.
 */
const bucketPrior = (key: string): number => (Number(key.split(':')[1]) + 0.5) / 10;
/** The adaptive tree's depth moves within these bounds. */
const MIN_ADAPTIVE_DEPTH = 2;
const MAX_ADAPTIVE_DEPTH = 12;
/** Offered nodes measured before a calibrated tree may be cut below two nodes. */
const EXPLORE_OBSERVATIONS = 24;

export const DYNAMIC_DEFAULTS: DynamicTreeOptions = { depth: 6, expand: 4, branch: 4, budget: 24 };

interface Candidate {
  token: number;
  parent: number;
  depth: number;
  /** Cumulative ranking score: log q (greedy) or log q + Gumbel noise (sampling). */
  score: number;
  /** The draft's probability of the whole path (unperturbed). */
  prob: number;
  /** Estimated probability that the target accepts the path: prob, or the calibrated estimate. */
  value: number;
  /** Calibration bucket of the node's conditional probability. */
  key: string;
}

export class DynamicTreeDrafter implements Drafter {
  readonly name: string;
  protected readonly state: TreeDraftModel;
  private depth: number;
  private budget: number;
  /** Measured acceptance per bucket of conditional draft probability (options.calibrated). */
  private readonly table = new AcceptanceTable(bucketPrior, 4);
  /** Calibration bucket of each node of the last proposed tree. */
  private keys: string[] = [];
  /** The size of a sampled round's tree, chosen on the previous sampled round (SampledBudget). */
  private readonly sampledBudget = new SampledBudget();

  /** `draft`: a draft model (its cache kept by DraftModelState), or any other tree-drafting model (a draft head). */
  constructor(
    draft: CausalLM | TreeDraftModel,
    private readonly options: DynamicTreeOptions = DYNAMIC_DEFAULTS,
    private readonly costs: () => CostModel | null = () => null,
  ) {
    this.name = options.name ?? (options.adaptive ? 'adaptive-tree' : 'dynamic');
    this.state = 'forward' in draft ? new DraftModelState(draft) : draft;
    this.depth = options.depth;
    this.budget = options.budget;
  }

  get calls(): number {
    return this.state.calls;
  }

  /** Current depth and node budget (they move when adaptive). */
  get shape(): { depth: number; budget: number } {
    return { depth: this.depth, budget: this.budget };
  }

  async propose(req: DraftRequest): Promise<DraftTree> {
    if (nothingToDraft(req, this.state)) return rootOnly(req.committed);
    const rootLogits = await this.state.sync(req.committed, judgeFrom(req));
    if (!rootLogits) return rootOnly(req.committed);
    // A sampled round of a calibrated tree on measured costs is sized before its tokens are drawn (SampledBudget)
    // and chosen by cumulative perturbed score, not by the drawn tokens' values.
    const costs = this.costs();
    const sampledRound = this.options.calibrated && !isGreedy(req.sampling) && !!costs && costs.curve.points.length > 0;
    const size = sampledRound && costs ? this.sampledBudget.size(costs.curve) : Number.POSITIVE_INFINITY;
    const budget = Math.min(this.budget, req.maxNodes, this.state.room() - 1, size);
    const maxDepth = Math.min(this.depth, req.maxDepth, size);
    // Work tree over all candidates (index 0 = root); DraftModelState slots are keyed by these indices.
    const cands: Candidate[] = [
      {
        token: req.committed[req.committed.length - 1] as number,
        parent: -1,
        depth: 0,
        score: 0,
        prob: 1,
        value: 1,
        key: '',
      },
    ];
    this.keys = [''];
    const work: DraftTree = { tokens: [cands[0]?.token as number], parents: [-1], draftProbs: [] };
    const dists = new Map<number, Float32Array>();
    const grow = (node: number, logits: DraftRow) => {
      const d = new DraftDist(logits, req.sampling);
      if (d.verify) dists.set(node, d.verify);
      const parent = cands[node] as Candidate;
      d.children(this.options.branch, req.rng).forEach(({ token, score }, rank) => {
        const q = d.prob(token);
        const prob = parent.prob * q;
        const key = `${Math.min(rank, 3)}:${confidenceBucket(q)}`;
        const value = this.options.calibrated ? parent.value * this.table.rate(key) : prob;
        cands.push({ token, parent: node, depth: parent.depth + 1, score: parent.score + score, prob, value, key });
        work.tokens.push(token);
        work.parents.push(node);
      });
    };
    if (budget > 0 && maxDepth > 0) grow(0, rootLogits);
    // Not under sampling: the growth rules go by the drafted nodes' values, so whether a level is drafted would
    // depend on a frontier node's own draw, and the nodes it adds compete with that node for the tree's places.
    const rule = isGreedy(req.sampling) ? this.growthRule() : null;
    for (let depth = 1; depth < maxDepth; depth++) {
      let frontier = cands
        .map((c, i) => [c, i] as const)
        .filter(([c]) => c.depth === depth && !req.eos.has(c.token))
        .sort((a, b) => b[0].score - a[0].score)
        .slice(0, Math.min(this.options.expand, this.state.capacity()))
        .map(([, i]) => i);
      if (rule && frontier.length > 0) {
        if (!rule.level(Math.max(...frontier.map((i) => (cands[i] as Candidate).value)), cands.length - 1)) break;
        frontier = frontier.filter((i) => rule.node(cands, i));
      }
      if (frontier.length === 0) break;
      const logits = await this.state.expand(
        work,
        frontier,
        cands.map((c) => c.depth),
      );
      frontier.forEach((node, i) => {
        grow(node, logits[i] as DraftRow);
      });
    }
    return this.select(cands, dists, budget, sampledRound);
  }

  /**
   * With costAware and measured costs, how far drafting can pay:
   * - `level`: whether one more level can, given the best frontier node's value and the candidates drafted so far
   *   (one draft call plus one more verified node on the curve);
   * - `node`: whether a frontier node is worth running. Its children's values are at most its own, and in the
   *   best-first order they come after every candidate valued above it, so when its value does not cover verifying
   *   one more node at that place, a child of it is unlikely to be kept (the final cut weighs the whole tree, so
   *   this is the marginal rule, not a bound). On a steep curve (wasm) this drafts the one or two nodes the cut
   *   keeps children of instead of the whole frontier: narrower draft calls, nearly the same trees (EAGLE on the
   *   held-out prompts: tau 3.38 against 3.46, 4.56 against 5.12 ms/token). On a flat one every node passes.
   */
  private growthRule(): {
    level: (best: number, size: number) => boolean;
    node: (cands: readonly Candidate[], i: number) => boolean;
  } | null {
    const costs = this.options.costAware ? this.costs() : null;
    if (!costs || costs.curve.points.length === 0) return null;
    const marginal = (size: number) => relativeCost(costs.curve, size + 2) - relativeCost(costs.curve, size + 1);
    return {
      level: (best, size) => best > this.state.callCost(costs) + marginal(size),
      node: (cands, i) => {
        const value = (cands[i] as Candidate).value;
        let ahead = 0; // candidates (the root aside) valued at or above it, itself included
        for (let j = 1; j < cands.length; j++) if ((cands[j] as Candidate).value >= value) ahead++;
        return value > marginal(ahead);
      },
    };
  }

  /** Best-first from the root over cumulative scores: an ancestor-closed set of `budget` nodes, renumbered. */
  private select(
    cands: Candidate[],
    dists: Map<number, Float32Array>,
    budget: number,
    /** A sampled round of a calibrated tree, sized before drawing (SampledBudget). */
    sampledRound = false,
  ): DraftTree {
    const kids = childrenOf(cands.map((c) => c.parent));
    let chosen: number[] = [];
    const costs = this.options.calibrated ? this.costs() : null;
    if (sampledRound && costs) {
      // What the measured costs would keep of this tree, best-first by value: the next sampled round's size.
      const byValue = bestFirstOrder(
        cands.map((c) => c.parent),
        cands.map((c) => c.value),
        (i) => dists.has((cands[i] as Candidate).parent),
      ).slice(0, budget);
      const { keep } = chooseBudget(
        byValue.map((c) => (cands[c] as Candidate).value),
        costs.curve,
        this.state.roundCost(costs),
      );
      this.sampledBudget.record(this.exploring(keep, byValue.length), byValue.length);
    }
    if (this.options.calibrated && !sampledRound) {
      // By calibrated value; among sampled siblings a later draw never outranks an earlier one, so any prefix
      // keeps a prefix of each draw order (lossless).
      const sampled = (i: number) => dists.has((cands[i] as Candidate).parent);
      chosen = bestFirstOrder(
        cands.map((c) => c.parent),
        cands.map((c) => c.value),
        sampled,
      ).slice(0, budget);
    } else {
      const open = [...(kids[0] ?? [])];
      while (chosen.length < budget && open.length > 0) {
        let best = 0;
        for (let i = 1; i < open.length; i++) {
          if ((cands[open[i] as number] as Candidate).score > (cands[open[best] as number] as Candidate).score)
            best = i;
        }
        const node = open.splice(best, 1)[0] as number;
        chosen.push(node);
        open.push(...(kids[node] ?? []));
      }
    }
    // Calibrated, greedy: keep the prefix of the best-first order that pays most on the measured curve.
    if (costs && costs.curve.points.length > 0 && !sampledRound) {
      const values = chosen.map((c) => (cands[c] as Candidate).value);
      const { keep } = chooseBudget(values, costs.curve, this.state.roundCost(costs));
      chosen.length = this.exploring(keep, chosen.length);
    }
    // Topological order: by depth, siblings by score (their draw order under sampling).
    chosen.sort(
      (a, b) =>
        (cands[a] as Candidate).depth - (cands[b] as Candidate).depth ||
        (cands[b] as Candidate).score - (cands[a] as Candidate).score,
    );
    const index = new Map<number, number>([[0, 0]]);
    chosen.forEach((c, i) => {
      index.set(c, i + 1);
    });
    const tree: DraftTree = {
      tokens: [cands[0]?.token as number],
      parents: [-1],
      draftProbs: [dists.get(0) ?? null],
      values: [1],
    };
    for (const c of chosen) {
      const cand = cands[c] as Candidate;
      tree.tokens.push(cand.token);
      tree.parents.push(index.get(cand.parent) as number);
      tree.draftProbs.push(dists.get(c) ?? null);
      tree.values?.push(cand.value);
      this.keys.push(cand.key);
    }
    this.state.renumber(index);
    return tree;
  }

  /**
   * Until enough is measured, verify a little anyway: a tree cut to nothing measures nothing, and priors taken from
   * the draft's own probabilities would keep an under-confident head from ever being tried.
   */
  private exploring(keep: number, offered: number): number {
    return this.table.observations < EXPLORE_OBSERVATIONS ? Math.max(keep, Math.min(2, offered)) : keep;
  }

  accept(tree: DraftTree, result: VerifyResult, outputs: TargetOutputs): void {
    this.state.accept(tree, result, outputs);
    if (this.state instanceof DraftModelState && !tree.draftProbs[0])
      this.recordFirstChoices(this.state.firstChoice, tree, result, outputs);
    if (this.options.calibrated) this.table.recordOffered(tree.parents, result.path, (n) => this.keys[n] as string);
    if (!this.options.adaptive) return;
    const accepted = result.path.length - 1;
    if (accepted >= this.depth - 1) this.depth = Math.min(this.depth + 1, MAX_ADAPTIVE_DEPTH);
    else if (accepted < this.depth / 3) this.depth = Math.max(this.depth - 1, MIN_ADAPTIVE_DEPTH);
    this.budget = this.budgetAt(this.depth);
  }

  /**
   * Under greedy decoding, what this round showed of the draft's first choices (DraftModelState.firstChoice): at each
   * node of the accepted path the target's own token is known, and so whether the draft's first choice there (its
   * first child, whatever was verified of it) was the target's, at the draft's confidence in it.
   */
  private recordFirstChoices(
    table: FirstChoiceCounts,
    tree: DraftTree,
    result: VerifyResult,
    outputs: TargetOutputs,
  ): void {
    const kids = childrenOf(tree.parents);
    for (const node of result.path) {
      const first = (kids[node] ?? []).find((c) => this.keys[c]?.startsWith('0:'));
      const target = outputs.argmax?.(node);
      if (first === undefined || target === undefined) continue;
      const bucket = Number((this.keys[first] as string).split(':')[1]);
      table.record(bucket, tree.tokens[first] === target);
    }
  }

  /** The adaptive tree's node budget at a depth: the configured budget scaled with it, at least 8. */
  private budgetAt(depth: number): number {
    return Math.max(8, Math.round((this.options.budget * depth) / this.options.depth));
  }

  draftCost(costs: CostModel): number {
    return this.state.roundCost(costs);
  }

  catchUpMs(): number {
    return this.state.catchUpMs?.() ?? 0;
  }

  learned(): unknown {
    return { table: this.table.snapshot(), depth: this.depth };
  }

  relearn(state: unknown): void {
    const s = state as { table?: unknown; depth?: unknown } | null;
    this.table.restore(s?.table);
    // The adaptive tree's depth, within what accept() reaches; its budget follows from it.
    const depth = s?.depth;
    if (!this.options.adaptive || !Number.isInteger(depth)) return;
    if ((depth as number) < MIN_ADAPTIVE_DEPTH || (depth as number) > MAX_ADAPTIVE_DEPTH) return;
    this.depth = depth as number;
    this.budget = this.budgetAt(this.depth);
  }

  reset(keepLearned = false): void {
    this.state.reset();
    this.keys = [];
    // A generation's sampled rounds size each other, from its first: a seed gives the same text whatever ran before.
    this.sampledBudget.clear();
    if (keepLearned) return;
    this.table.clear();
    this.depth = this.options.depth;
    this.budget = this.options.budget;
  }
}

export const dynamic = {
  name: 'dynamic',
  description: 'draft model, dynamic tree (EAGLE-2 style: depth 6, 4 x 4 expansion, 24 nodes)',
  needs: ['draft-model'],
  lossless: true,
  usesCostModel: false,
  create: (r) => new DynamicTreeDrafter(draftOf(r), DYNAMIC_DEFAULTS),
} as const satisfies MethodSpec<'dynamic'>;

export const adaptiveTree = {
  name: 'adaptive-tree',
  description: 'draft model, dynamic tree whose depth and node budget follow the measured acceptance',
  needs: ['draft-model'],
  lossless: true,
  usesCostModel: false,
  create: (r) => new DynamicTreeDrafter(draftOf(r), { ...DYNAMIC_DEFAULTS, adaptive: true }),
} as const satisfies MethodSpec<'adaptive-tree'>;
