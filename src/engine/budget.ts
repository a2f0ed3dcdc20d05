/**
 * How much of a candidate tree to verify on this hardware. Each candidate node carries a value: the estimated
 * probability that the target accepts the whole path to it. A round that verifies root + n nodes is expected to
 * produce 1 + (sum of their values) tokens and to cost T(1 + n) / T(1) single-token calls on the measured
 * verify-cost curve, plus any drafting cost. Taking candidates best-first (values never grow along a path, so
 * every best-first prefix is a tree) and keeping the prefix with the most expected tokens per unit of time is
 * EAGLE-2's rerank with Sequoia's hardware awareness; on a steep curve it shrinks to a short chain or to nothing,
 * on a flat one it keeps everything.
 */
import { type CostCurve, relativeCost } from './calibrate';
import { childrenOf } from './tree';

export interface BudgetChoice {
  /** How many of the best-first candidates to keep (0 = verify the root alone). */
  keep: number;
  /** Expected tokens per round with that many. */
  expectedTokens: number;
  /** Predicted speedup over plain decoding: expected tokens / relative round cost. */
  predictedSpeedup: number;
}

/**
 * @param values candidate values in best-first order (non-increasing; a parent before its children)
 * @param curve the target's measured verify-cost curve, or null when unknown (then everything is kept)
 * @param extraCost drafting cost of the round relative to one single-token target call
 * @param auxNodes nodes the call carries besides the candidates (they widen the call, not the expectation)
 */
export function chooseBudget(
  values: readonly number[],
  curve: CostCurve | null,
  extraCost = 0,
  auxNodes = 0,
): BudgetChoice {
  let expected = 1;
  if (!curve || curve.points.length === 0) {
    for (const v of values) expected += v;
    return { keep: values.length, expectedTokens: expected, predictedSpeedup: Number.NaN };
  }
  const cost = (n: number) => relativeCost(curve, 1 + n + auxNodes) + extraCost;
  let best: BudgetChoice = { keep: 0, expectedTokens: 1, predictedSpeedup: 1 / cost(0) };
  values.forEach((v, i) => {
    expected += v;
    const speedup = expected / cost(i + 1);
    if (speedup > best.predictedSpeedup) best = { keep: i + 1, expectedTokens: expected, predictedSpeedup: speedup };
  });
  return best;
}

/**
 * Acceptance rates kept per bucket (e.g. per n-gram length and depth): accepted / offered with a prior, so an
 * unseen bucket starts at the prior mean and measured rounds take over.
 */
export class AcceptanceTable {
  private readonly offered = new Map<string, number>();
  private readonly accepted = new Map<string, number>();

  constructor(
    private readonly prior: (key: string) => number,
    private readonly priorWeight = 2,
  ) {}

  /** Outcomes recorded so far, over all buckets. */
  get observations(): number {
    let n = 0;
    for (const o of this.offered.values()) n += o;
    return n;
  }

  rate(key: string): number {
    const o = this.offered.get(key) ?? 0;
    const a = this.accepted.get(key) ?? 0;
    return (a + this.prior(key) * this.priorWeight) / (o + this.priorWeight);
  }

  /**
   * One verified round: every node offered on the accepted path (a child of a path node) counts once for its
   * bucket, accepted if the path went through it.
   */
  recordOffered(parents: readonly number[], path: readonly number[], keyOf: (node: number) => string): void {
    const kids = childrenOf(parents);
    const onPath = new Set(path);
    for (const node of path) for (const child of kids[node] ?? []) this.record(keyOf(child), onPath.has(child));
  }

  record(key: string, accepted: boolean): void {
    this.offered.set(key, (this.offered.get(key) ?? 0) + 1);
    if (accepted) this.accepted.set(key, (this.accepted.get(key) ?? 0) + 1);
  }

  clear(): void {
    this.offered.clear();
    this.accepted.clear();
  }

  /** The counts as plain data: [bucket, offered, accepted] (to remember them between sessions). */
  snapshot(): [string, number, number][] {
    return [...this.offered].map(([key, o]) => [key, o, this.accepted.get(key) ?? 0]);
  }

  /** Start from remembered counts (replacing these); rows that do not fit are ignored. */
  restore(rows: unknown): void {
    this.clear();
    if (!Array.isArray(rows)) return;
    for (const row of rows) {
      const [key, o, a] = Array.isArray(row) ? row : [];
      if (typeof key !== 'string' || !countLike(o) || !countLike(a) || a > o) continue;
      this.offered.set(key, o);
      if (a > 0) this.accepted.set(key, a);
    }
  }
}

/** A remembered count: finite and not negative. */
export function countLike(x: unknown): x is number {
  return typeof x === 'number' && Number.isFinite(x) && x >= 0;
}

/**
 * The size of a sampled round's tree, chosen before its tokens are drawn. Under sampling, which drawn nodes are
 * verified must not depend on what was drawn: a cut by the drawn tokens' own values (their draft probabilities,
 * acceptance by probability bucket) verifies a likely draw more often than an unlikely one, and the output leaves the
 * target's distribution, though every cut keeps a prefix of each draw order (p = (0.5, 0.5), q = (0.9, 0.1), the
 * drawn child kept only when q >= 0.5: 0.55 against 0.45). Layer skipping on the bundled target gave too few unlikely
 * tokens that way, and the EAGLE head's tree on a toy pair failed the chi-square test at p = 5e-51.
 *
 * So a sampled round is cut to the size the measured costs chose on the previous sampled round's tree (its values
 * best-first, as under greedy decoding), in an order that depends on nothing drawn in this round but its nodes'
 * ancestors (drafting order along a chain, or cumulative perturbed scores: recursive speculative decoding's
 * stochastic beam). A round that kept all it was given may grow by one next time. A generation's first sampled round
 * gets what the curve pays for a chain whose every token holds with PRIOR_ACCEPTANCE (uncut, the EAGLE head's first
 * round verified up to 64 nodes on wasm, where each costs a fifth of a call).
 */
export class SampledBudget {
  private last: number | null = null;
  /** The size the current round was given (size()). */
  private given: number | null = null;

  /** This round's size: the previous sampled round's choice, or the prior's (nothing drawn in this round decides). */
  size(curve: CostCurve): number {
    if (this.last === null) {
      const values: number[] = [];
      for (let k = 1, v = PRIOR_ACCEPTANCE; k <= PRIOR_MOST; k++, v *= PRIOR_ACCEPTANCE) values.push(v);
      this.given = Math.max(1, chooseBudget(values, curve).keep);
    } else this.given = this.last;
    return this.given;
  }

  /**
   * What the measured costs would have kept of this round's tree (best-first by value) of the `offered` nodes it had:
   * the next round's size (one more than this round's where it kept all it was given).
   */
  record(keep: number, offered: number): void {
    const given = this.given ?? offered;
    this.last = keep < offered ? keep : offered >= given ? given + 1 : given;
  }

  clear(): void {
    this.last = null;
    this.given = null;
  }
}

/** The acceptance per token a generation's first sampled round is sized for (SampledBudget). */
const PRIOR_ACCEPTANCE = 0.6;
const PRIOR_MOST = 64;

/**
 * A tree's nodes best-first by value, parents before children. Among a node's sampled children (drawn without
 * replacement, listed in draw order), a later draw never outranks an earlier one (its value is clamped), so every
 * best-first prefix keeps a prefix of each draw order. That is needed under recursive rejection sampling but not
 * enough: where the values are the drawn tokens' own, a prefix whose length follows them is not lossless, so sampled
 * rounds are sized before drawing (SampledBudget) and this order only measures what a cut would keep.
 */
export function bestFirstOrder(
  parents: readonly number[],
  values: readonly number[],
  sampled: (node: number) => boolean,
): number[] {
  const effective = [...values];
  const lastDraw = new Map<number, number>(); // parent -> effective value of its latest sampled child
  for (let i = 1; i < parents.length; i++) {
    const p = parents[i] as number;
    let v = Math.min(effective[i] as number, effective[p] as number);
    if (sampled(i)) {
      const cap = lastDraw.get(p);
      if (cap !== undefined) v = Math.min(v, cap);
      lastDraw.set(p, v);
    }
    effective[i] = v;
  }
  return [...parents.keys()].slice(1).sort((a, b) => (effective[b] as number) - (effective[a] as number) || a - b);
}
