/**
 * Shared machinery of the draft-model drafters: keeping the draft's KV cache in step with the committed sequence,
 * running one tree level per call, and compacting to the accepted path after verification.
 */

import { expSumBelow } from '../../util/exp-sum';
import { relativeCost } from '../calibrate';
import { type CausalLM, checkLogits } from '../lm';
import { argmax, GREEDY, gumbelTopK, isGreedy, type Rng, type SamplingParams, toProbs, topK } from '../sampling';
import { appendBias, chainBias } from '../tree';
import type { VerifyResult } from '../verify';
import { forwardDiscarding } from '../verify-call';
import type { DraftRequest, DraftTree, TargetOutputs } from './drafter';
import type { CostModel } from './method';

/**
 * What a tree drafter grows its tree with, one level per call: a draft model over its own cache
 * (DraftModelState), or a draft head over the target's features (eagle.ts).
 */
export interface TreeDraftModel {
  /** Model calls so far. */
  readonly calls: number;
  /**
   * Catch up with the committed sequence; the root's next-token logits over the target's vocabulary, or null when
   * nothing can be drafted this round. `judgeFrom` (greedy decoding: where the target's own tokens begin, see
   * judgeFrom()): a model that catches up on tokens committed while it did not run may judge its first choices on
   * them (DraftModelState.firstChoice).
   */
  sync(committed: readonly number[], judgeFrom?: number): Promise<DraftRow | null>;
  /** A round with nothing to draft: make no call, and let the round's accept() keep the state as it is. */
  idle?(): void;
  /** Room left in the drafting model's context for this round's nodes. */
  room(): number;
  /** Nodes its cache can still take this round. */
  capacity(): number;
  /** Run one level of nodes (each sees the committed prefix, its drafted ancestors and itself): one logits row each. */
  expand(tree: DraftTree, nodes: readonly number[], depths: readonly number[]): Promise<DraftRow[]>;
  /** Re-key per-node state after the drafter renumbers its working tree. */
  renumber(index: ReadonlyMap<number, number>): void;
  /** Keep what the verified round accepted. */
  accept(tree: DraftTree, result: VerifyResult, outputs: TargetOutputs): void;
  /** One single-row call of the drafting model, in single-token target calls. */
  callCost(costs: CostModel): number;
  /** This round's calls, in single-token target calls. */
  roundCost(costs: CostModel): number;
  /** Milliseconds this round's sync spent on text committed while the model did not run (Drafter.catchUpMs). */
  catchUpMs?(): number;
  reset(): void;
}

/**
 * Logits over a subset of the target's vocabulary (an EAGLE head's draft vocabulary): every other token has
 * probability zero. Drafting reads the subset directly: no row over the whole vocabulary is built under greedy.
 */
export interface SubsetLogits {
  readonly logits: Float32Array;
  /** The target token of each subset index. */
  readonly tokens: Int32Array;
  /** The subset index of each target token, -1 outside the subset (its length is the target's vocabulary). */
  readonly index: Int32Array;
}

/** A drafting model's scores at one node: logits over the target's vocabulary, or over a subset of it. */
export type DraftRow = Float32Array | SubsetLogits;

/**
 * The draft's distribution at one node, computed only as far as needed: under greedy decoding the drafters need
 * the top few tokens and their probabilities (a partial selection and one softmax normaliser, no sort, no full
 * probability vector); under sampling they need the processed distribution the verifier compares against, over
 * the target's vocabulary.
 */
export class DraftDist {
  private max = Number.NaN;
  private norm = Number.NaN;
  private processed: Float32Array | null = null;
  /** Logits by the row's own index (the target token, or the subset index). */
  private readonly scores: Float32Array;
  private readonly subset: SubsetLogits | null;

  constructor(
    row: DraftRow,
    private readonly sampling: SamplingParams,
  ) {
    this.subset = row instanceof Float32Array ? null : row;
    this.scores = row instanceof Float32Array ? row : row.logits;
  }

  /** The processed distribution (temperature, top-k, top-p) the verifier uses; null under greedy. */
  get verify(): Float32Array | null {
    if (isGreedy(this.sampling)) return null;
    if (this.processed) return this.processed;
    const probs = toProbs(this.scores, this.sampling);
    const subset = this.subset;
    if (!subset) this.processed = probs;
    else {
      // Tokens outside the subset have logit -infinity: zero after any temperature, top-k and top-p.
      const full = new Float32Array(subset.index.length);
      for (let i = 0; i < probs.length; i++) full[subset.tokens[i] as number] = probs[i] as number;
      this.processed = full;
    }
    return this.processed;
  }

  /** The draft's probability of its token: the temperature-1 softmax under greedy, the processed one otherwise. */
  prob(token: number): number {
    const v = this.verify;
    if (v) return v[token] as number;
    const i = this.subset ? (this.subset.index[token] ?? -1) : token;
    return i < 0 ? 0 : this.softmaxAt(i);
  }

  /** Temperature-1 softmax at the row's own index i (an estimate: the normaliser is expSumBelow's, within 1e-5). */
  private softmaxAt(i: number): number {
    const scores = this.scores;
    if (Number.isNaN(this.norm)) {
      let max = Number.NEGATIVE_INFINITY;
      for (let j = 0; j < scores.length; j++) {
        const x = scores[j] as number;
        if (x > max) max = x;
      }
      this.max = max;
      this.norm = expSumBelow(scores, max);
    }
    return Math.exp((scores[i] as number) - this.max) / this.norm;
  }

  /**
   * The k children to draft, best first, with their log-scores: greedy takes the k most likely tokens; sampling
   * draws k without replacement (Gumbel-top-k: log q + Gumbel noise, in draw order), which keeps any prefix of
   * them a valid draw for recursive rejection sampling.
   */
  children(k: number, rng: Rng): { token: number; score: number }[] {
    const v = this.verify;
    if (v) return gumbelTopK(v, k, rng);
    const tokens = this.subset?.tokens;
    return topK(this.scores, k).map((i) => ({
      token: tokens ? (tokens[i] as number) : i,
      score: Math.log(this.softmaxAt(i)),
    }));
  }
}

/**
 * Tokens an ordinary round's sync feeds: the target's own token and the last accepted draft token, which the draft
 * proposed but never ran. More means the draft fell behind: it catches up in a call of its own.
 */
const ORDINARY_SYNC = 2;

/**
 * Where in the committed text a catch-up may judge the draft's first choices (TreeDraftModel.sync): under greedy
 * decoding, the tokens this generation produced, which are the target's greedy choices (a prompt is someone's text,
 * and a sampled token is one draw). Undefined: judge nothing.
 */
export function judgeFrom(req: DraftRequest): number | undefined {
  return isGreedy(req.sampling) ? req.generatedFrom : undefined;
}

/**
 * Whether the round leaves nothing to draft (no depth or room: a generation's last round). Then the model is told
 * so (TreeDraftModel.idle: no call, and the round's accept() keeps its state) and the drafter proposes the root alone.
 */
export function nothingToDraft(req: DraftRequest, model: Pick<TreeDraftModel, 'idle'>): boolean {
  if (Math.min(req.maxDepth, req.maxNodes) >= 1 || !model.idle) return false;
  model.idle();
  return true;
}

/** A judged row of a catch-up: the position of the token it predicts, the draft's first choice's confidence, a hit. */
export interface JudgedRow {
  position: number;
  confidence: number;
  hit: boolean;
}

/** Buckets of the draft's confidence in a token: [0, 0.1), [0.1, 0.2), ... [0.9, 1]. */
export const CONFIDENCE_BUCKETS = 10;
export function confidenceBucket(q: number): number {
  return Math.min(CONFIDENCE_BUCKETS - 1, Math.max(0, Math.floor(q * CONFIDENCE_BUCKETS)));
}

/**
 * Greedy acceptance of the draft's first choice by its confidence in it: per bucket, the tokens the target judged
 * and those it accepted (the target's greedy token was the draft's first choice).
 */
export class FirstChoiceCounts {
  offered = new Array<number>(CONFIDENCE_BUCKETS).fill(0);
  accepted = new Array<number>(CONFIDENCE_BUCKETS).fill(0);

  record(bucket: number, accepted: boolean): void {
    this.offered[bucket] = (this.offered[bucket] as number) + 1;
    if (accepted) this.accepted[bucket] = (this.accepted[bucket] as number) + 1;
  }

  clear(): void {
    this.offered.fill(0);
    this.accepted.fill(0);
  }
}

/** The draft's first choice at a position: its token and the draft's probability of it. */
interface FirstGuess {
  position: number;
  token: number;
  confidence: number;
}

/** A logits row's first choice and its probability (greedy decoding). */
function firstChoiceOf(row: Float32Array): { token: number; confidence: number } {
  const token = argmax(row);
  return { token, confidence: new DraftDist(row, GREEDY).prob(token) };
}

export class DraftModelState implements TreeDraftModel {
  /**
   * What greedy rounds showed of the draft's first choices, from every drafter drafting with this state, and from
   * the text it catches up on (judge()): auto's chain sizes its chains on it (adaptive-chain.ts), and its tree arm,
   * drafting with the same model, adds what its rounds show. Learned by the chain alone, it was learned only in the
   * rounds auto gave the chain, after the other arms' trials: on lavapipe auto's chain drafted 3 to 5 tokens through
   * the first two prompts where the adaptive chain alone, the same model, drafted 6 to 16.
   */
  readonly firstChoice = new FirstChoiceCounts();
  /** Tokens whose K/V are in the draft cache, slot by slot (committed tokens only, between rounds). */
  private cached: number[] = [];
  /** Cache length at the start of this round's drafting (the committed prefix including the root). */
  private roundBase = 0;
  /** Cache slot of each tree node the draft has run this round (node 0, the root, is at roundBase - 1). */
  private slots = new Map<number, number>();

  constructor(readonly lm: CausalLM) {}

  /** Widths of the draft calls made since the last sync (this round's drafting). */
  private roundWidths: number[] = [];
  /** Milliseconds the last sync spent catching up (0 when it was an ordinary round's). */
  private caughtUpMs = 0;
  /**
   * The last sync's judged rows, in text order (none when it judged nothing): the position in the committed text of
   * the token each row predicts, the draft's confidence in its first choice there, and whether the target chose it.
   */
  private judgedRows: JudgedRow[] = [];
  /**
   * The committed length after this state's last own round (its drafter's round: the accepted path and the target's
   * token), 0 before any; at a sync, the text from there on was committed by rounds it did not draft.
   */
  private ownEnd = 0;
  /** ownEnd as it was when the last sync began: its judged rows from this position on are text others drafted. */
  private othersFrom = 0;
  /**
   * The draft's first choice after the last sync's root (the next position, not committed then), so that the next
   * catch-up judges it too: judged only from the text after it, a catch-up left a hole at each refresh's root, and a
   * round of the chain replayed over two catch-ups could not span it.
   */
  private rootGuess: FirstGuess | null = null;

  get calls(): number {
    return this.lm.calls;
  }

  callCost(costs: CostModel): number {
    return costs.draftRelative;
  }

  /** This round's draft calls in single-token target calls: each call's width on the draft's curve. */
  roundCost(costs: CostModel): number {
    const t1 = costs.draftCurve.points[0]?.ms;
    if (!t1) return this.roundWidths.length * costs.draftRelative;
    return this.roundWidths.reduce((sum, w) => sum + relativeCost(costs.draftCurve, w), 0) * costs.draftRelative;
  }

  catchUpMs(): number {
    return this.caughtUpMs;
  }

  /** What the last sync judged (judge()): one row per position of the text caught up on, in order. */
  get judged(): readonly JudgedRow[] {
    return this.judgedRows;
  }

  /**
   * The last sync's judged rows of text committed by rounds this state's drafters did not draft (from the end of
   * their last round on). After a round whose chain was accepted whole, the draft never ran its last token, so the
   * catch-up starts one token early, at the target's token of that round: judged (the draft had not guessed it), but
   * that round's own.
   */
  get judgedOthers(): readonly JudgedRow[] {
    const from = this.othersFrom;
    return this.judgedRows.filter((r) => r.position >= from);
  }

  /**
   * The draft's first choice at each judged row of a catch-up against the token the target chose there
   * (firstChoice). Auto's chain sizes its chains on that table; learned only in its own rounds, it was learned only in
   * the rounds auto gave the chain: on an H200, with the EAGLE head ahead after the first prompts, the chain's
   * revisits drafted 3 tokens a round and brought 1.75-2.5 where the chain alone drafted 7-8 and brought 4.6-5.0, and
   * its revisits stopped. Judged this way, each revisit learns from every token committed since the last (a catch-up
   * then reads back a logits row per judged token instead of none).
   */
  private judge(logits: Float32Array, rows: readonly number[], committed: readonly number[], common: number): void {
    const vocab = this.lm.config.vocabSize;
    checkLogits(logits, vocab, 'the draft model');
    this.judgedRows = rows.map((i, k) =>
      this.verdict(
        { position: common + i + 1, ...firstChoiceOf(logits.subarray(k * vocab, (k + 1) * vocab)) },
        committed,
      ),
    );
  }

  /** The draft's first choice at a position against the target's token there, counted in firstChoice. */
  private verdict(guess: FirstGuess, committed: readonly number[]): JudgedRow {
    const hit = guess.token === committed[guess.position];
    this.firstChoice.record(confidenceBucket(guess.confidence), hit);
    return { position: guess.position, confidence: guess.confidence, hit };
  }

  /** Whether the cache is further behind the committed text than an ordinary round's sync: the next sync catches up. */
  fellBehind(committed: readonly number[]): boolean {
    return committed.length - this.cached.length > ORDINARY_SYNC;
  }

  /** Room left in the draft's context for this round's nodes. */
  room(): number {
    return this.lm.config.maxPositions - this.roundBase;
  }

  /** Nodes the draft's cache can still take this round (its context limit). */
  capacity(): number {
    return Math.max(0, this.lm.config.maxPositions - this.lm.length);
  }

  /** Feed the committed tokens the cache lacks (always at least the root); returns the root's logits. */
  async sync(committed: readonly number[], judgeFrom?: number): Promise<Float32Array> {
    let common = 0;
    while (common < this.cached.length && common < committed.length - 1 && this.cached[common] === committed[common]) {
      common++;
    }
    if (common < this.cached.length) {
      // Diverged (should not happen between rounds): keep the common prefix only.
      this.lm.keep(Array.from({ length: common }, (_, i) => i));
      this.cached = this.cached.slice(0, common);
    }
    let missing = committed.slice(common);
    this.caughtUpMs = 0;
    this.judgedRows = [];
    this.othersFrom = this.ownEnd;
    const catchUp = missing.length > ORDINARY_SYNC;
    if (catchUp) {
      // Text committed while this draft did not run (a new prompt, rounds another of auto's arms drafted): fed in a
      // call of its own and timed apart, so that the round's own calls are an ordinary round's.
      const behind = missing.slice(0, -1);
      const from = this.lm.length;
      const started = performance.now();
      const input = {
        tokens: behind,
        positions: behind.map((_, i) => from + i),
        bias: chainBias(from, behind.length),
        rows: [behind.length - 1],
      };
      // Row i predicts committed[common + i + 1]: the rows whose next token the target chose.
      const judged =
        judgeFrom === undefined ? [] : Array.from(behind.keys()).filter((i) => common + i + 1 >= judgeFrom);
      if (judged.length === 0) await forwardDiscarding(this.lm, input);
      else this.judge(await this.lm.forward({ ...input, rows: judged }), judged, committed, common);
      // The previous sync's guess after its root, where that root is still in the text and the text after it is
      // others' (after a round of its own, that round judged it).
      const guess = this.rootGuess;
      if (
        judgeFrom !== undefined &&
        guess &&
        guess.position <= common &&
        guess.position >= Math.max(this.ownEnd, judgeFrom) &&
        (this.judgedRows[0]?.position ?? guess.position + 1) === guess.position + 1
      )
        this.judgedRows.unshift(this.verdict(guess, committed));
      this.caughtUpMs = performance.now() - started;
      missing = missing.slice(-1);
    }
    const start = this.lm.length;
    this.roundWidths = [missing.length];
    const logits = await this.lm.forward({
      tokens: missing,
      positions: missing.map((_, i) => start + i),
      bias: chainBias(start, missing.length),
      rows: [missing.length - 1],
    });
    checkLogits(logits, this.lm.config.vocabSize, 'the draft model');
    this.rootGuess = null;
    // After a catch-up only: a round of its own (an ordinary sync) judges its root's guess itself.
    if (judgeFrom !== undefined && catchUp)
      this.rootGuess = {
        position: committed.length,
        ...firstChoiceOf(logits.subarray(logits.length - this.lm.config.vocabSize)),
      };
    this.cached = [...committed];
    this.roundBase = this.cached.length;
    this.slots = new Map([[0, this.roundBase - 1]]);
    return logits;
  }

  /**
   * Run one level of tree nodes (all at the same depth) through the draft in one call; each sees the committed
   * prefix, its drafted ancestors and itself. Returns one logits row per node, in order.
   */
  async expand(tree: DraftTree, nodes: readonly number[], depths: readonly number[]): Promise<Float32Array[]> {
    const cacheLength = this.lm.length;
    if (nodes.length > this.capacity()) {
      throw new RangeError(`draft: ${nodes.length} nodes exceed the ${this.capacity()} slots left in its context`);
    }
    const visible = nodes.map((node) => {
      const slots: number[] = [];
      for (let a = tree.parents[node] as number; a > 0; a = tree.parents[a] as number) {
        const slot = this.slots.get(a);
        if (slot === undefined) throw new Error(`draft: ancestor ${a} of node ${node} was never run`);
        slots.push(slot);
      }
      return slots;
    });
    this.roundWidths.push(nodes.length);
    const logits = await this.lm.forward({
      tokens: nodes.map((n) => tree.tokens[n] as number),
      positions: nodes.map((n) => this.roundBase - 1 + (depths[n] as number)),
      bias: appendBias(cacheLength, this.roundBase, visible),
      rows: nodes.map((_, i) => i),
    });
    const vocab = this.lm.config.vocabSize;
    return nodes.map((node, i) => {
      this.slots.set(node, cacheLength + i);
      return logits.subarray(i * vocab, (i + 1) * vocab);
    });
  }

  /** Re-key the slots after a drafter renumbers its working tree (old node -> new node; others are dropped). */
  renumber(index: ReadonlyMap<number, number>): void {
    const slots = new Map<number, number>();
    for (const [oldNode, slot] of this.slots) {
      const n = index.get(oldNode);
      if (n !== undefined) slots.set(n, slot);
    }
    this.slots = slots;
  }

  /**
   * A round with nothing to draft (no depth or room left: a generation's last round): no call is made, and the
   * round's accept() keeps the cache as it is (the next sync catches up on what the target committed).
   */
  idle(): void {
    this.roundBase = this.lm.length;
    this.slots.clear();
    this.roundWidths = [];
    this.caughtUpMs = 0;
    this.judgedRows = [];
  }

  /** Keep the committed prefix plus the accepted nodes the draft has run (their slots, in path order). */
  accept(tree: DraftTree, result: VerifyResult): void {
    this.ownEnd = this.roundBase + result.path.length;
    const keep = Array.from({ length: this.roundBase }, (_, i) => i);
    for (const node of result.path.slice(1)) {
      const slot = this.slots.get(node);
      if (slot === undefined) break;
      keep.push(slot);
      this.cached.push(tree.tokens[node] as number);
    }
    this.lm.keep(keep);
    this.slots.clear();
  }

  reset(): void {
    this.lm.reset();
    this.judgedRows = [];
    this.rootGuess = null;
    this.ownEnd = 0;
    this.othersFrom = 0;
    this.cached = [];
    this.roundBase = 0;
    this.slots.clear();
  }
}
