/**
 * SWIFT's context-based layer-set optimisation (Xia et al., "SWIFT: On-the-Fly Self-Speculative Decoding for LLM
 * Inference Acceleration"; seeds-medusa-swift-eagle.md section 1.5). The search space is the attention and MLP
 * sub-layers of every decoder layer but the first and the last; a skip set holds N = floor(2 (L - 2) r) of them.
 * Each optimisation step proposes one candidate (random search, or Gaussian-process UCB every beta steps), the
 * caller scores it (matchness of its teacher-forced argmax against the gamma tokens already generated) and the best
 * set so far is kept. The search ends at maxSteps, after `patience` steps without improvement, or once matchness
 * reaches `enough`. Deterministic for a fixed seed.
 *
 * maxSteps and patience count steps of unit weight: the paper's values assume a GPU, where the step's gamma-token
 * teacher-forced call costs about one target call. Where a step costs more (a steep verify-cost curve: on wasm a
 * 32-token call costs about eight one-token calls), the caller weighs each step by its cost in target calls, so the
 * budgets bound the time spent searching rather than the number of steps.
 */
import { Rng } from '../sampling';
import { GaussianProcess } from './gp';

export interface SearchOptions {
  /** Decoder layers of the model. */
  layers: number;
  /** Skip ratio r: the share of switchable sub-layers skipped. */
  ratio: number;
  /** gamma: context tokens matched per step. */
  gamma: number;
  /** beta: every beta-th step is a Bayesian-optimisation step; the others are random search. */
  beta: number;
  /** S: at most this many steps. */
  maxSteps: number;
  /** Stop after this many steps without a better set. */
  patience: number;
  /** Stop once matchness reaches this. */
  enough: number;
  seed: number;
}

/** The paper's settings (gamma 32, beta 25, S 1000, patience 300, 0.95); r is the caller's. */
export const SEARCH_DEFAULTS: Omit<SearchOptions, 'layers' | 'ratio'> = {
  gamma: 32,
  beta: 25,
  maxSteps: 1000,
  patience: 300,
  enough: 0.95,
  seed: 1,
};

/** 1 = skipped. Attention switches first (layer 0..L-1), then MLP switches. */
export type SkipSet = Uint8Array;

export type SearchPhase = 'optimising' | 'accelerating';

/** What is remembered per model and device between sessions. */
export interface SearchRecord {
  version: 1;
  fingerprint: string;
  ratio: number;
  best: number[];
  bestScore: number;
  steps: number;
  /** Weighted steps (record's weights); absent in older records, where it is taken as steps. */
  spent?: number;
  /** Weighted steps since the best last improved (patience used up); absent in older records (0). */
  stale?: number;
  phase: SearchPhase;
}

const MAX_GP_POINTS = 200;
const BO_CANDIDATES = 256;

export class SkipSearch {
  readonly switchable: number[];
  readonly count: number;
  private readonly rng: Rng;
  best: SkipSet;
  bestScore = -1;
  steps = 0;
  /** Weighted steps so far, and since the last improvement (see record). */
  private spent = 0;
  private stale = 0;
  phase: SearchPhase = 'optimising';
  private readonly observed: { x: number[]; y: number }[] = [];

  constructor(readonly options: SearchOptions) {
    const L = options.layers;
    if (L < 3) throw new RangeError('layer skipping needs at least 3 decoder layers (the first and last always run)');
    // Switch indices into a SkipSet: attention of layers 1..L-2, then MLP of layers 1..L-2.
    this.switchable = [
      ...Array.from({ length: L - 2 }, (_, i) => i + 1),
      ...Array.from({ length: L - 2 }, (_, i) => L + i + 1),
    ];
    this.count = Math.floor(this.switchable.length * options.ratio);
    this.rng = new Rng(options.seed);
    this.best = SkipSearch.uniform(L);
  }

  /** The reference code's start: attention and MLP of the odd layers 1, 3, 5, … (never the last). */
  static uniform(layers: number): SkipSet {
    const z = new Uint8Array(2 * layers);
    for (let l = 1; l < layers - 1; l += 2) {
      z[l] = 1;
      z[layers + l] = 1;
    }
    return z;
  }

  /** A point of the search space as the GP sees it: one coordinate per switchable sub-layer. */
  private coordinates(z: SkipSet): number[] {
    return this.switchable.map((i) => z[i] as number);
  }

  /** The set skipping the `count` switchable sub-layers with the largest coordinates. */
  private fromCoordinates(x: readonly number[]): SkipSet {
    const order = [...x.keys()].sort((a, b) => (x[b] as number) - (x[a] as number));
    const z = new Uint8Array(2 * this.options.layers);
    for (const k of order.slice(0, this.count)) z[this.switchable[k] as number] = 1;
    return z;
  }

  /** The next candidate: Bayesian optimisation every beta-th step (once there is data), random search otherwise. */
  candidate(): SkipSet {
    const next = this.steps + 1;
    if (next % this.options.beta === 0 && this.observed.length >= 2) {
      const recent = this.observed.slice(-MAX_GP_POINTS);
      const gp = new GaussianProcess(
        recent.map((o) => o.x),
        recent.map((o) => o.y),
      );
      let bestX: number[] = [];
      let bestUcb = Number.NEGATIVE_INFINITY;
      for (let c = 0; c < BO_CANDIDATES; c++) {
        const x = this.switchable.map(() => this.rng.next());
        const u = gp.ucb(this.coordinates(this.fromCoordinates(x)));
        if (u > bestUcb) {
          bestUcb = u;
          bestX = x;
        }
      }
      return this.fromCoordinates(bestX);
    }
    return this.fromCoordinates(this.switchable.map(() => this.rng.next()));
  }

  /**
   * Register a candidate's matchness; keeps it if better, ends the search when it should (returns true then). The
   * step counts `weight` steps against maxSteps and patience (its cost in target calls, at least 1).
   */
  record(z: SkipSet, matchness: number, weight = 1): boolean {
    const w = Math.max(1, Number.isFinite(weight) ? weight : 1);
    this.steps++;
    this.spent += w;
    this.observed.push({ x: this.coordinates(z), y: matchness });
    if (matchness > this.bestScore) {
      this.best = Uint8Array.from(z);
      this.bestScore = matchness;
      this.stale = 0;
    } else this.stale += w;
    if (
      this.spent >= this.options.maxSteps ||
      this.stale >= this.options.patience ||
      this.bestScore >= this.options.enough
    ) {
      this.phase = 'accelerating';
      return true;
    }
    return false;
  }

  toRecord(fingerprint: string): SearchRecord {
    return {
      version: 1,
      fingerprint,
      ratio: this.options.ratio,
      best: Array.from(this.best),
      bestScore: this.bestScore,
      steps: this.steps,
      spent: this.spent,
      stale: this.stale,
      phase: this.phase,
    };
  }

  /** Steps taken, weighted steps spent, and weighted steps since the best last improved. */
  get progress(): { steps: number; spent: number; stale: number } {
    return { steps: this.steps, spent: this.spent, stale: this.stale };
  }

  /** Resume from a remembered record; a stale or mismatched one is ignored (returns false). */
  restore(record: unknown, fingerprint: string): boolean {
    const r = record as Partial<SearchRecord> | null;
    const L = this.options.layers;
    if (
      r?.version !== 1 ||
      r.fingerprint !== fingerprint ||
      r.ratio !== this.options.ratio ||
      !Array.isArray(r.best) ||
      r.best.length !== 2 * L ||
      !r.best.every((v) => v === 0 || v === 1) ||
      r.best[0] === 1 ||
      r.best[L - 1] === 1 ||
      r.best[L] === 1 ||
      r.best[2 * L - 1] === 1 ||
      typeof r.bestScore !== 'number' ||
      !(r.bestScore >= 0 && r.bestScore <= 1) ||
      (r.phase !== 'optimising' && r.phase !== 'accelerating')
    ) {
      return false;
    }
    this.best = Uint8Array.from(r.best);
    this.bestScore = r.bestScore;
    this.steps = typeof r.steps === 'number' ? r.steps : 0;
    this.spent = typeof r.spent === 'number' && r.spent >= this.steps ? r.spent : this.steps;
    this.stale = typeof r.stale === 'number' && r.stale >= 0 && r.stale <= this.spent ? r.stale : 0;
    this.phase = r.phase;
    return true;
  }

  /** Which sub-layers run, e.g. "attn 0 2 4 6 8 10 11 | mlp 0 1 2 … " (for the round event and the element). */
  static describe(z: SkipSet, layers: number): string {
    const runs = (offset: number) =>
      Array.from({ length: layers }, (_, l) => l)
        .filter((l) => z[offset + l] === 0)
        .join(' ');
    return `attn ${runs(0)} | mlp ${runs(layers)}`;
  }
}
