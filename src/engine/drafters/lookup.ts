/**
 * Prompt lookup (n-gram matching in the context; Saxena's prompt-lookup decoding, vLLM's ngram proposer, HF's
 * prompt_lookup_num_tokens). No model calls: the longest suffix of the committed text (n-gram sizes maxNgram down
 * to minNgram) is matched against everything earlier (prompt and generated text), and the tokens that followed
 * each match are proposed. Matches that continue differently become branches of one tree (a trie of the
 * continuations, most frequent first, then most recent).
 *
 * Proposals are deterministic (no distribution), so under sampling the verifier draws from the target and follows
 * the matching child, which stays lossless. How much of the trie to verify is chosen per round from the measured
 * verify-cost curve and the acceptance measured so far per (n-gram size, depth): on a steep curve (wasm) a weak
 * 1-gram match proposes little or nothing, a long quoted passage proposes a deep chain.
 */
import { AcceptanceTable, chooseBudget } from '../budget';
import { childrenOf } from '../tree';
import type { VerifyResult } from '../verify';
import { type Drafter, type DrafterNote, type DraftRequest, type DraftTree, rootOnly } from './drafter';
import type { CostModel, MethodSpec } from './method';

export interface LookupOptions {
  /** Longest and shortest suffix lengths tried, longest first. */
  maxNgram: number;
  minNgram: number;
  /** Longest continuation proposed (tree depth). */
  maxTokens: number;
  /** Earlier occurrences considered (the most recent ones). */
  maxMatches: number;
  /** Most tree nodes proposed. */
  maxNodes: number;
  /**
   * Choose how many nodes to verify from the measured cost curve (true), or propose every candidate with its value
   * and leave the choice to the caller (merged drafting).
   */
  selfBudget: boolean;
}

export const LOOKUP_DEFAULTS: LookupOptions = {
  maxNgram: 3,
  minNgram: 1,
  maxTokens: 8,
  maxMatches: 8,
  maxNodes: 24,
  selfBudget: true,
};

/**
 * A trie node is bucketed by how far back its matches really agree with the text (the n-gram, extended backwards up
 * to 16 tokens: a long agreement is a copy in progress, a single token is a guess) and by how many matches pass
 * through it (1, 2, 3 or more: a continuation the text took several times is likelier). Acceptance is measured per
 * bucket. Measured on the bundled target's greedy text over the bench prompts (the top continuation of the longest
 * matching n-gram against the token that came): agreement 1 with 1, 2 and 3 matches behind it 0.28, 0.43 and 0.75;
 * agreement 5 or more 0.80, 0.91 and 0.97. Bucketed by agreement alone, a 1-token agreement seen three times was
 * valued like one seen once, and was never drafted on a steep cost curve.
 */
const BUCKETS = [1, 2, 3, 5, 9, 16] as const;
const bucketOf = (agreement: number): number => BUCKETS.filter((b) => b <= agreement).length;
const COUNT_CLASSES = 3;
const bucketKey = (agreement: number, count: number): string =>
  `${bucketOf(agreement)}:${Math.min(COUNT_CLASSES, Math.max(1, count))}`;

/**
 * Prior acceptance per bucket, before anything is measured: by agreement for one match, and for c matches as if
 * each further match were 0.6 of another independent chance (0.25 -> 0.38, 0.48; 0.85 -> 0.95, 0.98).
 */
const prior = (key: string): number => {
  const [bucket, count] = key.split(':').map(Number) as [number, number];
  const one = [0, 0.25, 0.4, 0.55, 0.65, 0.75, 0.85][bucket] ?? 0.5;
  return 1 - (1 - one) ** (1 + 0.6 * ((count || 1) - 1));
};

/** How many tokens before position `end` (exclusive) of seq agree with the tokens before the end of seq. */
function agreement(seq: readonly number[], end: number, cap = 16): number {
  let k = 0;
  while (k < cap && end - 1 - k >= 0 && seq[end - 1 - k] === seq[seq.length - 1 - k]) k++;
  return k;
}

/**
 * A continuation trie: node i has token, parent, how many matches pass through it, the most recent one, and the
 * longest agreement among them.
 */
interface Trie {
  tokens: number[];
  parents: number[];
  counts: number[];
  recency: number[];
  agreement: number[];
}

/**
 * Start positions of the most recent earlier occurrences of the last n tokens of seq (each followed by at least one
 * token), newest first.
 */
export function findMatches(seq: readonly number[], n: number, limit: number): number[] {
  const len = seq.length;
  if (n < 1 || len <= n) return [];
  const tail = len - n;
  const out: number[] = [];
  for (let i = tail - 1; i >= 0 && out.length < limit; i--) {
    let j = 0;
    while (j < n && seq[i + j] === seq[tail + j]) j++;
    if (j === n) out.push(i);
  }
  return out;
}

/** Build the trie of the continuations after each match (root = node 0, the last committed token). */
function continuationTrie(
  seq: readonly number[],
  starts: readonly number[],
  n: number,
  depth: number,
  eos: ReadonlySet<number>,
): Trie {
  const trie: Trie = {
    tokens: [seq[seq.length - 1] as number],
    parents: [-1],
    counts: [starts.length],
    recency: [0],
    agreement: [0],
  };
  // Keyed by node * 2^32 + token: exact below 2^53 (a trie holds at most maxMatches x maxTokens nodes).
  const child = new Map<number, number>();
  starts.forEach((start, rank) => {
    const agree = agreement(seq, start + n);
    let node = 0;
    for (let k = 0; k < depth; k++) {
      const at = start + n + k;
      if (at >= seq.length) break;
      const token = seq[at] as number;
      const key = node * 0x100000000 + token;
      let next = child.get(key);
      if (next === undefined) {
        next = trie.tokens.length;
        trie.tokens.push(token);
        trie.parents.push(node);
        trie.counts.push(0);
        trie.recency.push(rank);
        trie.agreement.push(0);
        child.set(key, next);
      }
      trie.counts[next] = (trie.counts[next] as number) + 1;
      trie.agreement[next] = Math.max(trie.agreement[next] as number, agree);
      node = next;
      if (eos.has(token)) break; // never draft past the end of the text
    }
  });
  return trie;
}

export class LookupDrafter implements Drafter {
  readonly name = 'lookup';
  readonly calls = 0;
  private readonly table = new AcceptanceTable(prior);
  private lastNote: DrafterNote | null = null;
  /** The n-gram length matched in the current round (0: none). */
  private matched = 0;
  /** The bucket (agreement, matches) of each node of the tree proposed this round, to credit acceptance to it. */
  private buckets: string[] = [];

  constructor(
    private readonly costs: () => CostModel | null = () => null,
    private readonly options: LookupOptions = LOOKUP_DEFAULTS,
  ) {}

  async propose(req: DraftRequest): Promise<DraftTree> {
    const seq = req.committed;
    const depth = Math.min(this.options.maxTokens, req.maxDepth);
    this.matched = 0;
    this.buckets = [];
    this.lastNote = { text: 'lookup: no match', fields: { ngram: 0, matches: 0, nodes: 0 } };
    if (depth < 1 || req.maxNodes < 1) return rootOnly(seq);
    for (let n = Math.min(this.options.maxNgram, seq.length - 1); n >= this.options.minNgram; n--) {
      const starts = findMatches(seq, n, this.options.maxMatches);
      if (starts.length === 0) continue;
      this.matched = n;
      if (req.minFirstGuess !== undefined) {
        // The first guesses alone (a trie one token deep) decide whether the caller would take the tree at all.
        const guesses = this.select(continuationTrie(seq, starts, n, 1, req.eos), 1, false);
        const best = guesses.values?.[1] ?? 0;
        if (best < req.minFirstGuess) {
          this.lastNote = {
            text: `lookup: ${n}-gram matched ${starts.length}x, best first guess ${best.toFixed(2)} (below ${req.minFirstGuess})`,
            fields: { ngram: n, matches: starts.length, nodes: 1 },
          };
          return guesses;
        }
      }
      const trie = continuationTrie(seq, starts, n, depth, req.eos);
      const tree = this.select(trie, req.maxNodes);
      const agree = Math.max(...trie.agreement);
      this.lastNote = {
        text: `lookup: ${n}-gram matched ${starts.length}x (agreeing over ${agree} tokens), ${tree.tokens.length - 1} nodes verified`,
        fields: { ngram: n, matches: starts.length, agreement: agree, nodes: tree.tokens.length - 1 },
      };
      return tree;
    }
    return rootOnly(seq);
  }

  /**
   * Value each trie node (estimated probability that the target accepts the path to it), take them best-first and
   * keep as many as pay on the measured cost curve; renumber into a tree with siblings most frequent first.
   */
  private select(trie: Trie, room: number, budget = this.options.selfBudget): DraftTree {
    const depthOf: number[] = [0];
    const value: number[] = [1];
    const kids = childrenOf(trie.parents);
    // Matches that run into the end of the text stop early: a child's share is among the matches that go on.
    const continuing = kids.map((c) => c.reduce((sum, k) => sum + (trie.counts[k] as number), 0));
    for (let i = 1; i < trie.tokens.length; i++) {
      const p = trie.parents[i] as number;
      depthOf[i] = (depthOf[p] as number) + 1;
      const share = (trie.counts[i] as number) / (continuing[p] as number);
      const bucket = bucketKey(trie.agreement[i] as number, trie.counts[i] as number);
      value[i] = (value[p] as number) * this.table.rate(bucket) * share;
    }
    // Best-first over values; ties broken by frequency then recency (parents always outrank their children).
    const order = [...trie.tokens.keys()]
      .slice(1)
      .sort(
        (a, b) =>
          (value[b] as number) - (value[a] as number) ||
          (depthOf[a] as number) - (depthOf[b] as number) ||
          (trie.counts[b] as number) - (trie.counts[a] as number) ||
          (trie.recency[a] as number) - (trie.recency[b] as number),
      );
    const limit = Math.min(this.options.maxNodes, room, order.length);
    const keep = budget
      ? chooseBudget(
          order.slice(0, limit).map((i) => value[i] as number),
          this.costs()?.curve ?? null,
        ).keep
      : limit;
    const chosen = new Set(order.slice(0, keep));
    // Emit in topological order, siblings by frequency then recency.
    const tree: DraftTree = { tokens: [trie.tokens[0] as number], parents: [-1], draftProbs: [null], values: [1] };
    const visit = (node: number, at: number) => {
      const children = (kids[node] ?? [])
        .filter((c) => chosen.has(c))
        .sort(
          (a, b) =>
            (trie.counts[b] as number) - (trie.counts[a] as number) ||
            (trie.recency[a] as number) - (trie.recency[b] as number),
        );
      for (const c of children) {
        tree.tokens.push(trie.tokens[c] as number);
        tree.parents.push(at);
        tree.draftProbs.push(null);
        tree.values?.push(value[c] as number);
        this.buckets[tree.tokens.length - 1] = bucketKey(trie.agreement[c] as number, trie.counts[c] as number);
        visit(c, tree.tokens.length - 1);
      }
    };
    visit(0, 0);
    return tree;
  }

  accept(tree: DraftTree, result: VerifyResult): void {
    if (this.matched === 0) return;
    // Every child tried on the accepted path counts once for its bucket: the one followed as accepted, a node
    // whose siblings were all refused as rejected (the first child stands for the node's best guess).
    const kids = childrenOf(tree.parents);
    result.path.forEach((node, d) => {
      const children = kids[node] ?? [];
      if (children.length === 0) return;
      const next = result.path[d + 1];
      const credited = next ?? (children[0] as number);
      this.table.record(this.buckets[credited] ?? bucketKey(1, 1), next !== undefined);
    });
  }

  learned(): unknown {
    return { table: this.table.snapshot() };
  }

  relearn(state: unknown): void {
    this.table.restore((state as { table?: unknown } | null)?.table);
  }

  reset(keepLearned = false): void {
    if (!keepLearned) this.table.clear();
    this.matched = 0;
    this.lastNote = null;
  }

  note(): DrafterNote | null {
    return this.lastNote;
  }
}

export const lookup = {
  name: 'lookup',
  description: 'prompt lookup: continuations of the longest matching n-gram (3 down to 1) in the text so far',
  needs: [],
  lossless: true,
  usesCostModel: true,
  create: (r) => new LookupDrafter(r.costs),
} as const satisfies MethodSpec<'lookup'>;
