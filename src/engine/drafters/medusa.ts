/**
 * Medusa (Cai et al. 2024): K extra heads on the target's last hidden state each guess one token further ahead, so
 * one cheap call on the state that produced the root proposes a whole tree. From the final-normed state at the
 * position before the root, head k guesses the token at depth k + 1 under the root (tools/heads_layouts.md).
 *
 * The tree is the best part of the Cartesian product of each head's top candidates: a node's value (estimated
 * probability that the target accepts the path to it) is the product of the measured acceptance, per head and per
 * bucket of that head's own probability for the token, along its path. Nodes are taken best-first (values never grow
 * along a path, so every prefix is a tree) and as many are kept as pay on the measured verify-cost curve once the
 * heads' call is counted (Medusa's fixed sparse tree, chosen per round and per device instead of offline).
 *
 * Proposals are deterministic (the heads' guesses are not samples), so under sampling the verifier draws from the
 * target and follows the matching child: lossless at any temperature. After verification the target's hidden state
 * at the last accepted node is the next round's input (the state that produced the next root).
 */
import { AcceptanceTable, chooseBudget, countLike } from '../budget';
import { checkTop, type MedusaHeads } from '../lm';
import type { VerifyResult } from '../verify';
import {
  type Drafter,
  type DrafterNote,
  type DraftRequest,
  type DraftTree,
  rootOnly,
  type TargetOutputs,
} from './drafter';
import type { CostModel, HeadsResource, MethodSpec } from './method';

export interface MedusaOptions {
  /** Candidates taken from each head (the product's branching per depth). */
  topK: number;
  /** Most nodes proposed (before the hardware-aware cut). */
  maxNodes: number;
}

/**
 * 64 nodes at most: the size of the Medusa authors' published sparse tree (63 nodes). The cut on the measured curve
 * decides below that: on a flat curve (T(q)/T(1) = 1 + 0.002 (q - 1), a GPU) the bundled heads' trees average 56
 * nodes and reach tau 3.13 over 20 held-out prompts (2.98 at most 32 nodes); at a slope of 0.005 the cut keeps 23-27
 * nodes either way (tau 2.79 at most 32, 2.83 at most 64); on wasm a few.
 */
export const MEDUSA_DEFAULTS: MedusaOptions = { topK: 8, maxNodes: 64 };

/** Most rounds between heads calls while none pays (the text may change: a call now and then checks). */
const MAX_REST = 32;

/**
 * The share of the running balance of heads calls (what each brought over what its round cost) kept at each call;
 * the rest is the newest call's.
 */
const BALANCE_KEEP = 0.5;

/** A head's probability for a token, bucketed in tenths; the bucket's midpoint is the prior acceptance. */
const bucketOf = (p: number): number => Math.min(9, Math.max(0, Math.floor(p * 10)));
const prior = (key: string): number => (Number(key.split(':')[1]) + 0.5) / 10;

interface Candidate {
  token: number;
  parent: number; // index into the candidate list (-1: the root)
  depth: number;
  value: number;
  key: string;
}

export class MedusaDrafter implements Drafter {
  readonly name = 'medusa';
  readonly readsTargetHidden = true;
  private readonly table = new AcceptanceTable(prior, 4);
  /** The target's last hidden state at the position before the root (null: none yet, e.g. a one-token prompt). */
  private rootHidden: Float32Array | null = null;
  /** The acceptance bucket of each node of this round's tree. */
  private keys: string[] = [];
  private calledThisRound = false;
  private lastNote: DrafterNote | null = null;
  /**
   * Rounds left without calling the heads, and how many heads calls in a row found no tree worth verifying while the
   * balance below was not positive (the calls a rest follows).
   */
  private skip = 0;
  private unpaid = 0;
  /**
   * What the recent heads calls brought over what their rounds cost, in single-token target calls (expected tokens
   * less the round's cost, a call that found nothing: less the call's cost), BALANCE_KEEP of it carried per call.
   */
  private balance = 0;

  constructor(
    private readonly heads: MedusaHeads,
    /** One heads call in single-token target calls (read each round: measured once the engine calibrates). */
    private readonly relativeCost: () => number,
    private readonly costs: () => CostModel | null = () => null,
    private readonly options: MedusaOptions = MEDUSA_DEFAULTS,
  ) {}

  get calls(): number {
    return this.heads.calls;
  }

  prefilled(prompt: readonly number[], hidden: (row: number) => Float32Array): void {
    this.rootHidden = prompt.length >= 2 ? hidden(prompt.length - 2).slice() : null;
  }

  async propose(req: DraftRequest): Promise<DraftTree> {
    this.keys = [];
    this.calledThisRound = false;
    const depth = Math.min(this.heads.count, req.maxDepth);
    const room = Math.min(this.options.maxNodes, req.maxNodes);
    this.lastNote = { text: 'medusa: nothing to draft from yet', fields: { nodes: 0 } };
    if (!this.rootHidden || depth < 1 || room < 1) return rootOnly(req.committed);
    if (this.skip > 0) {
      // The last heads calls found nothing worth verifying: a plain round, without paying for the heads.
      this.skip--;
      this.lastNote = { text: `medusa: resting (${this.unpaid} calls in a row did not pay)`, fields: { nodes: 0 } };
      return rootOnly(req.committed);
    }
    // Each head's top guesses with their softmax probabilities, chosen in the heads' graph (one row: the root's state).
    const top = await this.heads.predictTop(this.rootHidden, Math.min(this.options.topK, this.heads.vocab));
    this.calledThisRound = true;
    checkTop(top, 'the Medusa heads');
    // Per head and guess: its token, acceptance bucket and the bucket's measured rate (the same for every parent).
    const perHead = Array.from({ length: depth }, (_, d) =>
      Array.from({ length: top.k }, (_, j) => {
        const key = `${d}:${bucketOf(top.probs[d * top.k + j] as number)}`;
        return { token: top.ids[d * top.k + j] as number, key, rate: this.table.rate(key) };
      }),
    );

    // Best-first over the product tree: pop the best open candidate, open its children (the next head's guesses).
    const chosen: Candidate[] = [];
    const open: Candidate[] = [];
    const pushChildren = (parent: number, parentValue: number, d: number) => {
      if (d >= depth) return;
      for (const { token, key, rate } of perHead[d] as { token: number; key: string; rate: number }[])
        open.push({ token, parent, depth: d + 1, value: parentValue * rate, key });
    };
    pushChildren(-1, 1, 0);
    while (chosen.length < room && open.length > 0) {
      let best = 0;
      for (let i = 1; i < open.length; i++)
        if ((open[i] as Candidate).value > (open[best] as Candidate).value) best = i;
      const c = open.splice(best, 1)[0] as Candidate;
      chosen.push(c);
      if (!req.eos.has(c.token)) pushChildren(chosen.length - 1, c.value, c.depth);
    }
    const costs = this.costs();
    const { keep, expectedTokens, predictedSpeedup } = chooseBudget(
      chosen.map((c) => c.value),
      costs?.curve ?? null,
      costs ? this.relativeCost() : 0,
    );
    // Back off when a call finds no tree that beats plain decoding with the call itself counted (a steep verify-cost
    // curve, text the heads do not know): rest 1, 2, 4, ... up to MAX_REST rounds between calls until one pays again,
    // so such stretches cost about plain decoding. A tree worth verifying once the call is paid for is still verified
    // (the call is spent), but it does not count as paying: on wasm, where a heads call costs half a target call,
    // such calls kept Medusa calling every other round at 0.91x of plain decoding with 1.3 tokens per round.
    // Not after a call that found nothing while the recent calls have paid on balance, though: where a call costs
    // next to nothing (the heads on the CPU beside a target on a GPU: a thousandth of its call on SwiftShader) a rest
    // saves nothing and gives up the rounds the heads would have drafted (29% of the rounds rested in
    // `…T2016-…-chromium-webgpu-medusa-…`, with a near-flat curve).
    const roundCost = expectedTokens / predictedSpeedup;
    if (Number.isFinite(roundCost))
      this.balance = BALANCE_KEEP * this.balance + (1 - BALANCE_KEEP) * (expectedTokens - roundCost);
    const paid = keep > 0 && !(predictedSpeedup < 1);
    const rests = !paid && !(this.balance > 0);
    this.unpaid = rests ? this.unpaid + 1 : 0;
    this.skip = rests ? Math.min(MAX_REST, 2 ** (this.unpaid - 1)) : 0;
    const tree = this.build(req.committed, chosen.slice(0, keep));
    this.lastNote = {
      text: `medusa: ${tree.tokens.length - 1} of ${chosen.length} candidates from ${depth} heads verified${Number.isFinite(predictedSpeedup) ? `, predicted ${predictedSpeedup.toFixed(2)}x` : ''}`,
      fields: { heads: depth, nodes: tree.tokens.length - 1, candidates: chosen.length },
    };
    return tree;
  }

  /** The kept candidates (a best-first prefix, so parents come first) as a tree, siblings best first. */
  private build(committed: readonly number[], kept: readonly Candidate[]): DraftTree {
    const tree: DraftTree = {
      tokens: [committed[committed.length - 1] as number],
      parents: [-1],
      draftProbs: [null],
      deterministic: [false],
      values: [1],
    };
    const at = new Map<number, number>([[-1, 0]]);
    this.keys = [''];
    kept.forEach((c, i) => {
      at.set(i, tree.tokens.length);
      tree.tokens.push(c.token);
      tree.parents.push(at.get(c.parent) as number);
      tree.draftProbs.push(null);
      tree.deterministic?.push(true);
      tree.values?.push(c.value);
      this.keys.push(c.key);
    });
    return tree;
  }

  accept(tree: DraftTree, result: VerifyResult, outputs: TargetOutputs): void {
    this.table.recordOffered(tree.parents, result.path, (n) => this.keys[n] as string);
    this.observe(tree, result, outputs);
  }

  /** Another drafter's round (or this one's): the state at its last accepted node is the next round's input. */
  observe(_tree: DraftTree, result: VerifyResult, outputs: TargetOutputs): void {
    if (!outputs.hidden) throw new Error("Medusa heads: the round's target call returned no hidden states");
    this.rootHidden = outputs.hidden(result.path[result.path.length - 1] as number).slice();
  }

  learned(): unknown {
    return { table: this.table.snapshot(), unpaid: this.unpaid, skip: this.skip, balance: this.balance };
  }

  relearn(state: unknown): void {
    const s = state as { table?: unknown; unpaid?: unknown; skip?: unknown; balance?: unknown } | null;
    this.table.restore(s?.table);
    if (Number.isInteger(s?.unpaid) && countLike(s?.unpaid)) this.unpaid = s.unpaid;
    if (Number.isInteger(s?.skip) && countLike(s?.skip) && s.skip <= MAX_REST) this.skip = s.skip;
    if (typeof s?.balance === 'number' && Number.isFinite(s.balance)) this.balance = s.balance;
  }

  reset(keepLearned = false): void {
    this.rootHidden = null;
    this.keys = [];
    this.lastNote = null;
    if (keepLearned) return;
    this.table.clear();
    this.skip = 0;
    this.unpaid = 0;
    this.balance = 0;
  }

  note(): DrafterNote | null {
    return this.lastNote;
  }

  draftCost(): number {
    return this.calledThisRound ? this.relativeCost() : 0;
  }
}

export function medusaHeadsOf(heads: HeadsResource | undefined): { heads: MedusaHeads; relativeCost: () => number } {
  if (!heads?.medusa) throw new Error('this method needs Medusa heads, and none are loaded');
  return { heads: heads.medusa, relativeCost: heads.relativeCost };
}

export const medusa = {
  name: 'medusa',
  description: "Medusa heads on the target's last hidden state: the best of their top-8 product tree, sized per device",
  needs: ['medusa-heads', 'target-hidden'],
  lossless: true,
  usesCostModel: true,
  create: (r) => {
    const { heads, relativeCost } = medusaHeadsOf(r.heads);
    return new MedusaDrafter(heads, relativeCost, r.costs);
  },
} as const satisfies MethodSpec<'medusa'>;
