/**
 * Lookahead decoding (Fu et al. 2024, "Break the Sequential Dependency of LLM Inference Using Lookahead Decoding";
 * hao-ai-lab/LookaheadDecoding). No draft model: ONE target call per round carries two branches besides the root.
 *
 * - The lookahead branch (auxiliary nodes, never verified) is a 2-D window of Jacobi iteration: N - 1 levels of W
 *   columns. Level 0 is the root followed by W - 1 guesses; level l >= 1 holds W guesses. With the root at position
 *   P, level-0 column c sits at P + c and level-l column c at P + l + c. Token (l, c) sees the committed prefix,
 *   level-0 columns 0..c and levels 1..l of its own column: one token at every position up to its own, i.e. a
 *   causal sequence. The target's argmax at the last level gives each column's next guess (a Jacobi update), and
 *   each column's trajectory (level 0 .. last level, then the new guess) is an N-gram for the pool.
 * - The verification branch is a tree of up to G pool n-grams (N - 1 tokens each) whose key is the root token,
 *   shared prefixes merged. They are deterministic proposals, verified losslessly like any other tree.
 *
 * As in the reference implementation the window moves forward one position per round however many tokens were
 * accepted, and starts from tokens copied at random from the context; the pool is also seeded with the context's own
 * n-grams (the reference's POOL_FROM_PROMPT option), so text that repeats is caught too.
 */
import { argmax } from '../sampling';
import type { VerifyResult } from '../verify';
import {
  type AuxNodes,
  type Drafter,
  type DrafterNote,
  type DraftRequest,
  type DraftTree,
  rootOnly,
  type TargetOutputs,
} from './drafter';
import type { MethodSpec } from './method';

export interface LookaheadOptions {
  /** W: lookahead window (columns). */
  window: number;
  /** N: n-gram size (the window keeps N - 1 levels). */
  ngram: number;
  /** G: most pool n-grams verified per round (and kept per key). */
  guesses: number;
  /** Seed the pool with the context's own n-grams. */
  poolFromContext: boolean;
}

/**
 * The paper's usual setting is W = 7 (up to 15), N = 5, G = 7 on a GPU, where a call over 60 tokens costs about
 * what a call over one does. Our CPU-bound verify-cost curve is steep, so the defaults are scaled down.
 */
export const LOOKAHEAD_DEFAULTS: LookaheadOptions = { window: 5, ngram: 4, guesses: 4, poolFromContext: true };

/** Nodes of the lookahead branch: W - 1 level-0 guesses plus W per further level (N - 1 levels). */
function windowSize(o: LookaheadOptions): number {
  return o.window - 1 + (o.ngram - 2) * o.window;
}

/**
 * The widest target call a round of lookahead decoding makes: the root, the lookahead branch and G pool n-grams of
 * N - 1 tokens (fewer where they share prefixes).
 */
export function lookaheadWidth(o: LookaheadOptions): number {
  return 1 + windowSize(o) + o.guesses * (o.ngram - 1);
}

/** Where each lookahead-branch node sits and what it sees (pure; property-tested against the paper's mask). */
export interface WindowLayout {
  /** Per auxiliary node: its level, column, and position offset from the root. */
  cells: { level: number; column: number; offset: number }[];
  /** Per auxiliary node: tree nodes (only the root, 0) and auxiliary nodes it attends to besides itself. */
  sees: { tree: number[]; aux: number[] }[];
  /** Auxiliary index of level l, column c (column 0 of level 0 is the root: -1). */
  index: (level: number, column: number) => number;
}

/** The lookahead branch for `levels` levels (>= 1) of `window` columns, laid out as the auxiliary nodes. */
export function windowLayout(window: number, levels: number): WindowLayout {
  const cells: WindowLayout['cells'] = [];
  const at = new Map<string, number>();
  for (let l = 0; l < levels; l++) {
    for (let c = l === 0 ? 1 : 0; c < window; c++) {
      at.set(`${l},${c}`, cells.length);
      cells.push({ level: l, column: c, offset: l + c });
    }
  }
  const index = (l: number, c: number) => (l === 0 && c === 0 ? -1 : (at.get(`${l},${c}`) ?? -2));
  const sees = cells.map(({ level, column }, self) => {
    const aux: number[] = [];
    for (let c = 1; c <= column; c++) aux.push(index(0, c)); // level 0 up to this column
    for (let l = 1; l <= level; l++) aux.push(index(l, column)); // this column's levels up to this one
    return { tree: [0], aux: aux.filter((i) => i !== self) };
  });
  return { cells, sees, index };
}

/** The n-gram pool: key token -> up to `cap` continuations of N - 1 tokens, most recently seen last. */
class NgramPool {
  private readonly map = new Map<number, number[][]>();
  constructor(private readonly cap: number) {}

  add(key: number, tail: readonly number[]): void {
    const list = this.map.get(key) ?? [];
    const same = list.findIndex((t) => t.length === tail.length && t.every((x, i) => x === tail[i]));
    if (same >= 0) list.splice(same, 1);
    list.push([...tail]);
    if (list.length > this.cap) list.shift();
    this.map.set(key, list);
  }

  /** Continuations for a key, most recent first. */
  get(key: number): number[][] {
    return [...(this.map.get(key) ?? [])].reverse();
  }

  clear(): void {
    this.map.clear();
  }
}

export class LookaheadDrafter implements Drafter {
  readonly name = 'lookahead';
  readonly calls = 0;
  private readonly pool: NgramPool;
  /** levels[0]: W - 1 guesses after the root; levels[1..N-2]: W guesses each. Empty before the first round. */
  private levels: number[][] = [];
  /** Committed tokens already added to the pool (poolFromContext). */
  private pooled = 0;
  private layout: WindowLayout | null = null;
  private lastNote: DrafterNote | null = null;
  /** The window it gave to ride along in another drafter's round (ride()), until that round is observed. */
  private riding: AuxNodes | null = null;

  constructor(private readonly options: LookaheadOptions = LOOKAHEAD_DEFAULTS) {
    if (options.window < 2 || options.ngram < 2 || options.guesses < 0)
      throw new RangeError('lookahead needs window >= 2, ngram >= 2 and guesses >= 0');
    this.pool = new NgramPool(Math.max(1, options.guesses));
  }

  private get levelCount(): number {
    return this.options.ngram - 1;
  }

  /** Size of the lookahead branch: W - 1 level-0 guesses plus W per further level. */
  private get windowSize(): number {
    return windowSize(this.options);
  }

  /** Adds the context's new n-grams to the pool (poolFromContext) and starts the window if it has not started. */
  private prepare(req: DraftRequest): void {
    const seq = req.committed;
    const { window: W, ngram: N } = this.options;
    if (this.options.poolFromContext) {
      for (let i = Math.max(0, this.pooled - N + 1); i + N <= seq.length; i++) {
        this.pool.add(seq[i] as number, seq.slice(i + 1, i + N));
      }
      this.pooled = seq.length;
    }
    if (this.levels.length === 0) {
      // Start the Jacobi window from tokens copied at random from the context (the reference's default).
      const copy = () => seq[Math.floor(req.rng.next() * seq.length)] as number;
      this.levels = Array.from({ length: this.levelCount }, (_, l) =>
        Array.from({ length: l === 0 ? W - 1 : W }, copy),
      );
      this.layout = windowLayout(W, this.levelCount);
    }
  }

  async propose(req: DraftRequest): Promise<DraftTree> {
    const seq = req.committed;
    const { window: W, ngram: N, guesses: G } = this.options;
    this.prepare(req);
    this.riding = null;
    const tree = rootOnly(seq);
    const root = seq[seq.length - 1] as number;
    // Verification branch: pool n-grams keyed by the root, as a trie, within depth and room (the window needs its
    // own room first; without it this round carries no lookahead branch).
    const withWindow = req.maxNodes >= this.windowSize;
    const room = req.maxNodes - (withWindow ? this.windowSize : 0);
    const depth = Math.min(N - 1, req.maxDepth);
    const guesses = depth > 0 ? this.pool.get(root).slice(0, G) : [];
    const child = new Map<string, number>();
    for (const g of guesses) {
      let node = 0;
      for (const token of g.slice(0, depth)) {
        const key = `${node}:${token}`;
        let next = child.get(key);
        if (next === undefined) {
          if (tree.tokens.length - 1 >= room) break;
          next = tree.tokens.length;
          tree.tokens.push(token);
          tree.parents.push(node);
          tree.draftProbs.push(null);
          child.set(key, next);
        }
        node = next;
        if (req.eos.has(token)) break;
      }
    }
    if (withWindow && this.layout) tree.aux = this.auxNodes(this.layout, seq.length - 1);
    this.lastNote = {
      text: `lookahead: ${guesses.length} pool n-grams (${tree.tokens.length - 1} nodes) verified, window ${withWindow ? `${W} x ${N - 1}` : 'skipped (no room)'}`,
      fields: { guesses: guesses.length, nodes: tree.tokens.length - 1, window: withWindow ? this.windowSize : 0 },
    };
    return tree;
  }

  private auxNodes(layout: WindowLayout, rootPosition: number): AuxNodes {
    const last = this.levelCount - 1;
    return {
      tokens: layout.cells.map(
        ({ level, column }) => (this.levels[level] as number[])[level === 0 ? column - 1 : column] as number,
      ),
      positions: layout.cells.map(({ offset }) => rootPosition + offset),
      sees: layout.sees,
      // The last level's outputs are the next guesses (with one level, the root's own row stands for column 0).
      rows: Array.from({ length: this.options.window }, (_, c) => layout.index(last, c)).filter((i) => i >= 0),
    };
  }

  ride(req: DraftRequest, room: number): AuxNodes | null {
    this.prepare(req);
    this.riding = room >= this.windowSize && this.layout ? this.auxNodes(this.layout, req.committed.length - 1) : null;
    return this.riding;
  }

  observe(tree: DraftTree, result: VerifyResult, outputs: TargetOutputs): void {
    if (this.riding && tree.aux === this.riding) this.accept(tree, result, outputs);
    this.riding = null;
  }

  accept(tree: DraftTree, _result: VerifyResult, outputs: TargetOutputs): void {
    if (!tree.aux || !this.layout) return;
    const W = this.options.window;
    const last = this.levelCount - 1;
    // Column c's next guess: the argmax at the last level, whose rows were asked for column by column (with one
    // level, column 0 is the root: its row is the tree's own row 0).
    // Only the argmax is read: in a greedy round the token ids that came back are enough.
    const aux = (i: number) => outputs.auxArgmax?.(i) ?? argmax(outputs.auxLogits(i));
    const next = Array.from({ length: W }, (_, c) => {
      if (last > 0) return aux(c);
      return c === 0 ? (outputs.argmax?.(0) ?? argmax(outputs.logits(0))) : aux(c - 1);
    });
    // Each column's trajectory is an N-gram: level 0 (the root for column 0), levels 1.., then the new guess.
    for (let c = 0; c < W; c++) {
      const key = c === 0 ? (tree.tokens[0] as number) : ((this.levels[0] as number[])[c - 1] as number);
      const tail = [...this.levels.slice(1).map((level) => level[c] as number), next[c] as number];
      this.pool.add(key, tail);
    }
    // Move the window one position forward (as the reference does, however many tokens were accepted).
    if (this.levelCount === 1) this.levels = [next.slice(1)];
    else this.levels = [(this.levels[1] as number[]).slice(1), ...this.levels.slice(2), next];
  }

  reset(): void {
    this.pool.clear();
    this.riding = null;
    this.levels = [];
    this.pooled = 0;
    this.lastNote = null;
  }

  note(): DrafterNote | null {
    return this.lastNote;
  }
}

export const lookahead = {
  name: 'lookahead',
  description: 'lookahead decoding: Jacobi window (W 5, N 4) and up to 4 pool n-grams verified in the same call',
  needs: [],
  lossless: true,
  usesCostModel: false,
  create: () => new LookaheadDrafter(),
} as const satisfies MethodSpec<'lookahead'>;
