/**
 * SWIFT: the target drafts for itself with some of its sub-layers skipped (Xia et al. 2024; seeds section 002).
 * One session and one copy of the weights: draft calls are the target's own calls with a skip set, over the
 * target's own cache; whatever they append is dropped (compaction fused into the verification call).
 *
 * Each round:
 * 1. while optimising (from gamma generated tokens on): one optimisation step. A candidate skip set (random search,
 *    Gaussian-process UCB every beta steps) is scored by matchness: the gamma latest tokens run teacher-forced
 *    through the skipping model in ONE call, and its argmax is compared with what the target actually produced;
 *    the best set is kept (search.ts). The search ends at its step limit, on stagnation or at matchness >= 0.95;
 *    with measured costs, a step counts as many steps as target calls it costs (at least one), so on a steep curve
 *    (wasm: a 32-token call costs about eight one-token calls) the search ends after as much time as the paper's
 *    budgets take on a GPU, not after as many steps.
 * 2. drafting with the best set: autoregressively from the root, stopping when the draft's top-1 probability falls
 *    below epsilon; each step is widened to its top-k by confidence (the paper's 10/5/3/1 buckets under sampling,
 *    the reference code's 10/8/5/3 under greedy) into a caterpillar tree: the top-1 spine with leaf siblings.
 *    With measured costs, only as much of the tree is verified as pays (budget.ts).
 * 3. verification by the round loop (greedy or lossless recursive rejection: siblings are Gumbel-top-k draws).
 *
 * The found set is remembered per model and device (a KeyValueStore: a file in Node, IndexedDB in the browser), so a
 * later session starts from it; a record for another model, precision or device is ignored.
 */
import { bestFirstOrder, chooseBudget, SampledBudget } from '../budget';
import { relativeCost } from '../calibrate';
import { isLayerSkipping, type LayerSkippingLM } from '../lm';
import { isGreedy } from '../sampling';
import { type KeyValueStore, MemoryStore, safeGet, safeSet } from '../store';
import { SEARCH_DEFAULTS, type SearchOptions, type SearchPhase, SkipSearch, type SkipSet } from '../swift/search';
import { chainBias } from '../tree';
import { DraftDist } from './draft-model';
import { type Drafter, type DrafterNote, type DraftRequest, type DraftTree, rootOnly } from './drafter';
import type { CostModel, DrafterResources, MethodSpec } from './method';
import { pruneTree } from './tree-prune';

export interface SwiftOptions {
  /** Skip ratio r (share of switchable sub-layers skipped). */
  ratio: number;
  /** epsilon: stop drafting once the draft's top-1 probability falls below this (reference default 0.8). */
  epsilon: number;
  /** N_D: longest draft (spine). */
  maxDraft: number;
  /** Most tree nodes verified per round. */
  maxNodes: number;
  search: Omit<SearchOptions, 'layers' | 'ratio'>;
}

export const SWIFT_DEFAULTS: SwiftOptions = {
  ratio: 0.45,
  epsilon: 0.8,
  maxDraft: 25,
  maxNodes: 48,
  search: SEARCH_DEFAULTS,
};

/** Top-k per draft step by the step's confidence p (top-1 probability). */
export function siblingsFor(p: number, greedy: boolean): number {
  const [k1, k2, k3, k4] = greedy ? [3, 5, 8, 10] : [1, 3, 5, 10];
  return p > 0.95 ? (k1 as number) : p > 0.8 ? (k2 as number) : p > 0.5 ? (k3 as number) : (k4 as number);
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

export class SwiftDrafter implements Drafter {
  readonly name = 'swift';
  /**
   * The search in use: the remembered one (`kept`, resumed from the store and saved after every step) in greedy
   * generations; in a sampled one a fresh search of its own, from the uniform set and never saved, so that a seed
   * gives the same text whatever ran before (the set shapes the draft, and the draft which random numbers are drawn).
   */
  private search: SkipSearch;
  private readonly kept: SkipSearch;
  private sampled = false;
  private restored: Promise<void> | null = null;
  private draftCalls = 0;
  /** Widths and running shares of this round's calls (the optimisation step's and the drafting's). */
  private roundCalls: SkippingCall[] = [];
  private lastNote: DrafterNote | null = null;
  /** The size of a sampled round's tree, chosen on the previous sampled round (SampledBudget). */
  private readonly sampledBudget = new SampledBudget();
  /**
   * Matchness of each optimisation step since the last fresh search (a sampled generation's, which starts it anew:
   * a greedy generation after it resumes the kept search, whose earlier steps are no longer listed).
   */
  readonly matchness: number[] = [];
  /** Milliseconds spent in optimisation steps. */
  optimisingMs = 0;
  /** One-token drafting calls with the best set: how many, and their milliseconds (what a draft step costs). */
  private stepCalls = { calls: 0, ms: 0 };

  constructor(
    private readonly target: LayerSkippingLM,
    private readonly costs: () => CostModel | null = () => null,
    private readonly store: KeyValueStore = new MemoryStore(),
    private readonly options: SwiftOptions = SWIFT_DEFAULTS,
  ) {
    this.kept = this.newSearch();
    this.search = this.kept;
  }

  private newSearch(): SkipSearch {
    return new SkipSearch({ layers: this.target.numLayers, ratio: this.options.ratio, ...this.options.search });
  }

  get calls(): number {
    return this.draftCalls;
  }

  get phase(): SearchPhase {
    return this.search.phase;
  }

  get skipSet(): SkipSet {
    return this.search.best;
  }

  /** How far the skip-set search has gone (steps, weighted steps, patience used). */
  get searchProgress(): { steps: number; spent: number; stale: number } {
    return this.search.progress;
  }

  private get key(): string {
    return `swift:${this.target.fingerprint}`;
  }

  /** Once per drafter: resume a remembered search for this model and device. */
  private restore(): Promise<void> {
    this.restored ??= safeGet(this.store, this.key).then((record) => {
      this.kept.restore(record, this.target.fingerprint);
    });
    return this.restored;
  }

  async propose(req: DraftRequest): Promise<DraftTree> {
    if (!this.sampled) await this.restore();
    const lm = this.target;
    const seq = req.committed;
    const base = seq.length - 1;
    this.roundCalls = [];
    let matchness: number | null = null;
    const gamma = this.search.options.gamma;
    // 1. One optimisation step, teacher-forced over the gamma latest tokens (before the root).
    if (this.search.phase === 'optimising' && base - gamma >= 1 && req.maxNodes >= gamma) {
      const started = performance.now();
      const candidate = this.search.candidate();
      const tokens = seq.slice(base - gamma, base);
      const logits = await lm.forwardSkipping(
        {
          tokens,
          positions: tokens.map((_, i) => base - gamma + i),
          bias: teacherForcedBias(base, base - gamma, gamma),
          rows: range(gamma),
        },
        candidate,
      );
      this.draftCalls++;
      const step: SkippingCall = { width: gamma, share: runningShare(candidate) };
      this.roundCalls.push(step);
      lm.keep(range(base));
      const V = lm.config.vocabSize;
      let hits = 0;
      for (let i = 0; i < gamma; i++) {
        // Row i saw tokens up to position base - gamma + i: it predicts the token after it.
        const row = logits.subarray(i * V, (i + 1) * V);
        if (argmaxRow(row) === seq[base - gamma + i + 1]) hits++;
      }
      matchness = hits / gamma;
      this.matchness.push(matchness);
      // The step's cost in target calls: the search's budgets are meant in time (search.ts).
      const costs = this.costs();
      const weight = costs?.curve.points.length ? skippingCallCost(costs, step) : 1;
      this.search.record(candidate, matchness, weight);
      this.optimisingMs += performance.now() - started;
      // Every step is remembered, not only an improvement: a later session (a CLI run is one 64-token generation)
      // goes on from here, with the patience used up so far, instead of repeating the steps since the last one.
      if (!this.sampled) await safeSet(this.store, this.key, this.search.toRecord(lm.fingerprint));
    }
    // 2. Draft with the best set: a caterpillar tree.
    const tree = await this.draft(req);
    lm.keep(range(base)); // drop the draft's slots; the verification call compacts first
    const chosen = this.budget(tree, req);
    const runs = SkipSearch.describe(this.search.best, lm.numLayers);
    this.lastNote = {
      text: `swift: ${this.search.phase}${matchness !== null ? `, step ${this.search.steps} matchness ${matchness.toFixed(2)}` : ''}, best ${this.search.bestScore >= 0 ? this.search.bestScore.toFixed(2) : 'unscored'}, ${chosen.tokens.length - 1} nodes; runs ${runs}`,
      fields: {
        phase: this.search.phase,
        step: this.search.steps,
        ...(matchness !== null ? { matchness } : {}),
        best: this.search.bestScore,
        skipped: Array.from(this.search.best).join(''),
        runs,
        nodes: chosen.tokens.length - 1,
        // Totals since this drafter was made (it lives as long as the engine): the search's cost, and a draft step's.
        optimisingMs: this.optimisingMs,
        ...(this.stepCalls.calls > 0 ? { draftCallMs: this.stepCalls.ms / this.stepCalls.calls } : {}),
      },
    };
    return chosen;
  }

  private async draft(req: DraftRequest): Promise<DraftTree> {
    const lm = this.target;
    const tree = rootOnly(req.committed);
    tree.values = [1];
    const greedy = isGreedy(req.sampling);
    const depthLimit = Math.min(this.options.maxDraft, req.maxDepth);
    // Under sampling the tree's size is chosen before its tokens are drawn (SampledBudget): its first nodes in
    // drafting order, each kept or not by what came before it (its ancestors and earlier siblings), never by itself.
    const costs = this.costs();
    const sampledSize = greedy || !costs?.curve.points.length ? null : this.sampledBudget.size(costs.curve);
    const room = Math.min(this.options.maxNodes, req.maxNodes, sampledSize ?? Number.POSITIVE_INFINITY);
    let spine = 0;
    let token = tree.tokens[0] as number;
    for (let depth = 1; depth <= depthLimit && tree.tokens.length - 1 < room; depth++) {
      const started = performance.now();
      const logits = await lm.forwardSkipping(
        { tokens: [token], positions: [req.committed.length - 2 + depth], bias: chainBias(lm.length, 1), rows: [0] },
        this.search.best,
      );
      this.stepCalls.calls++;
      this.stepCalls.ms += performance.now() - started;
      this.draftCalls++;
      this.roundCalls.push({ width: 1, share: runningShare(this.search.best) });
      const dist = new DraftDist(logits, req.sampling);
      // The step's confidence: the draft's top-1 probability (of its processed distribution under sampling).
      const confidence = greedy ? dist.prob(argmaxRow(logits)) : Math.max(...(dist.verify as Float32Array));
      const children = dist.children(siblingsFor(confidence, greedy), req.rng);
      if (children.length === 0) break;
      tree.draftProbs[spine] = dist.verify;
      const parentValue = tree.values[spine] as number;
      const first = tree.tokens.length;
      for (const c of children) {
        if (tree.tokens.length - 1 >= room) break;
        tree.tokens.push(c.token);
        tree.parents.push(spine);
        tree.draftProbs.push(null);
        tree.values.push(parentValue * dist.prob(c.token));
      }
      spine = first;
      token = tree.tokens[spine] as number;
      if (confidence < this.options.epsilon || req.eos.has(token)) break;
    }
    return tree;
  }

  /**
   * With measured costs: verify only the best-first part of the tree that pays, the draft calls counted. Under
   * sampling that choice sizes the next sampled round instead (SampledBudget): this one was sized before drafting.
   */
  private budget(tree: DraftTree, req: DraftRequest): DraftTree {
    const costs = this.costs();
    if (!costs || costs.curve.points.length === 0) return tree;
    const order = bestFirstOrder(tree.parents, tree.values ?? [], () => !isGreedy(req.sampling));
    const { keep } = chooseBudget(
      order.map((i) => tree.values?.[i] ?? 0),
      costs.curve,
      this.draftCost(costs),
    );
    if (!isGreedy(req.sampling)) {
      this.sampledBudget.record(keep, order.length);
      return tree;
    }
    return pruneTree(tree, new Set(order.slice(0, keep))).tree;
  }

  /** This round's skipping calls: each a target call of its width, times the share of sub-layers that ran. */
  draftCost(costs: CostModel): number {
    return this.roundCalls.reduce((sum, c) => sum + skippingCallCost(costs, c), 0);
  }

  accept(): void {}

  /**
   * A new prompt: in a greedy generation the search and the found set carry over (the paper's optimiser state
   * persists); a sampled one searches afresh (see `search`).
   */
  reset(keepLearned = false): void {
    this.lastNote = null;
    // A generation's sampled rounds size each other, from its first: a seed gives the same text whatever ran before.
    this.sampledBudget.clear();
    this.sampled = !keepLearned;
    this.search = keepLearned ? this.kept : this.newSearch();
    // Every sampled generation searches afresh: kept across them, the steps' matchness grew with every generation.
    if (!keepLearned) this.matchness.length = 0;
  }

  note(): DrafterNote | null {
    return this.lastNote;
  }
}

/** A skipping call: its width and the share of sub-layers that ran. */
interface SkippingCall {
  width: number;
  share: number;
}

/** A skipping call's cost in target calls: a target call of its width, times the share of sub-layers that ran. */
function skippingCallCost(costs: CostModel, call: SkippingCall): number {
  return relativeCost(costs.curve, call.width) * call.share;
}

/** The share of a call's work a skip set leaves: its running sub-layers over all (attention and MLP alike). */
function runningShare(skip: SkipSet): number {
  return 1 - skip.reduce((a, b) => a + b, 0) / skip.length;
}

function argmaxRow(row: Float32Array): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if ((row[i] as number) > (row[best] as number)) best = i;
  return best;
}

/**
 * Bias for re-running q cached tokens teacher-forced: row i sees cache slots [0, prefix) and rows 0..i of this call,
 * not the slots [prefix, cacheLength) that hold the same tokens already. Row-major [q, cacheLength + q].
 */
export function teacherForcedBias(cacheLength: number, prefix: number, q: number): Float32Array {
  const causal = chainBias(prefix, q); // [q, prefix + q]
  const width = cacheLength + q;
  const bias = new Float32Array(q * width).fill(-65504);
  for (let i = 0; i < q; i++) {
    bias.set(causal.subarray(i * (prefix + q), i * (prefix + q) + prefix), i * width);
    bias.set(causal.subarray(i * (prefix + q) + prefix, (i + 1) * (prefix + q)), i * width + cacheLength);
  }
  return bias;
}

function swiftTarget(r: DrafterResources): LayerSkippingLM {
  if (!isLayerSkipping(r.target)) {
    throw new Error('method "swift" needs a target that can skip its own layers (a graph built with layer switches)');
  }
  return r.target;
}

export const swift = {
  name: 'swift',
  description:
    'self-speculation (SWIFT): the target drafts for itself with layers skipped, the skip set searched on the fly',
  needs: ['target-self'],
  lossless: true,
  usesCostModel: true,
  learns: true,
  create: (r) => new SwiftDrafter(swiftTarget(r), r.costs, r.store),
} as const satisfies MethodSpec<'swift'>;
