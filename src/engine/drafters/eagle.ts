/**
 * EAGLE-3: a one-layer draft head over the target's own features grows an EAGLE-2 dynamic tree (dynamic-tree.ts).
 *
 * Rows of the head (tools/heads_layouts.md): row j pairs the target's feature f_j (the inputs of three of its layers,
 * concatenated, at position j) with the embedding of token x_{j+1}, at position j, and predicts x_{j+2}. Between
 * rounds the head's cache holds the real rows of the committed text up to the one pairing the root; a drafted row
 * takes its parent's output instead of a target feature. After verification the target's features of the accepted
 * nodes are known, so the next round first runs those real rows (the accepted tokens and the target's own token),
 * and the drafted rows of the round are dropped from the head's cache.
 *
 * The head's logits cover its draft vocabulary (a subset of the target's, mapped by d2t); drafting reads them as a
 * distribution over the target's vocabulary with zero probability outside it, so rejection sampling stays lossless.
 */
import { relativeCost } from '../calibrate';
import { checkLogits, type Eagle3Head } from '../lm';
import { appendBias, chainBias } from '../tree';
import type { VerifyResult } from '../verify';
import type { SubsetLogits, TreeDraftModel } from './draft-model';
import type { DraftTree, TargetOutputs } from './drafter';
import { DynamicTreeDrafter, type DynamicTreeOptions } from './dynamic-tree';
import type { CostModel, HeadsResource, MethodSpec } from './method';

export class Eagle3State implements TreeDraftModel {
  /** Target features not yet run through the head, by position j. */
  private readonly features = new Map<number, Float32Array>();
  /** Real rows in the head's cache: positions 0 .. real - 1. */
  private real = 0;
  /** Position of the next round's root (the committed length minus one), followed through every round. */
  private rootPos = 0;
  /** Slot of each tree node the head has run this round (the root's is the last real row). */
  private slots = new Map<number, number>();
  /** Each run node's output (the feature its children are drafted from). */
  private outs = new Map<number, Float32Array>();
  private roundWidths: number[] = [];
  /** Milliseconds the last sync spent reading a new prompt's features (Drafter.catchUpMs: prefill, not drafting). */
  private caughtUpMs = 0;
  /** The target token of each draft-vocabulary index, and the reverse (-1 outside the draft vocabulary). */
  private readonly draftTokens: Int32Array;
  private readonly draftIndex: Int32Array;

  constructor(
    readonly head: Eagle3Head,
    /** The target's vocabulary size. */
    vocab: number,
    /** One single-row head call relative to one single-token target call (read each round: measured once the engine calibrates). */
    private readonly relative: () => number,
  ) {
    this.draftTokens = Int32Array.from({ length: head.draftVocab }, (_, i) => head.targetToken(i));
    this.draftIndex = new Int32Array(vocab).fill(-1); // the loader checked the map: distinct tokens, all in range
    this.draftTokens.forEach((token, i) => {
      this.draftIndex[token] = i;
    });
  }

  get calls(): number {
    return this.head.calls;
  }

  callCost(): number {
    return this.relative();
  }

  roundCost(costs: CostModel): number {
    // A head call's width costs like the target's (both are memory-bound at these widths); scaled by the head's size.
    return this.roundWidths.reduce((sum, w) => sum + relativeCost(costs.curve, w), 0) * this.relative();
  }

  catchUpMs(): number {
    return this.caughtUpMs;
  }

  room(): number {
    return Number.MAX_SAFE_INTEGER;
  }

  capacity(): number {
    return Number.MAX_SAFE_INTEGER;
  }

  /** The prompt's features: rows j = 0 .. prompt.length - 2. */
  prefilled(prompt: readonly number[], hidden: (j: number) => Float32Array): void {
    this.reset();
    for (let j = 0; j < prompt.length - 1; j++) this.features.set(j, hidden(j).slice());
    this.rootPos = prompt.length - 1;
  }

  /** Head logits rows over the draft vocabulary, read as rows over the target's (zero outside the draft vocabulary). */
  private rowsOf(logits: Float32Array, rows: number): SubsetLogits[] {
    const dv = this.head.draftVocab;
    checkLogits(logits, dv, 'the EAGLE head');
    return Array.from({ length: rows }, (_, r) => ({
      logits: logits.subarray(r * dv, (r + 1) * dv),
      tokens: this.draftTokens,
      index: this.draftIndex,
    }));
  }

  async sync(committed: readonly number[]): Promise<SubsetLogits | null> {
    const want = committed.length - 1; // real rows up to the one pairing the root
    if (want !== this.rootPos)
      throw new Error(`EAGLE head: out of step (root at ${want}, the head followed the text to ${this.rootPos})`);
    this.head.keep(Array.from({ length: this.real }, (_, i) => i)); // drop last round's drafted rows
    this.slots.clear();
    this.outs.clear();
    this.roundWidths = [];
    this.caughtUpMs = 0;
    if (want <= this.real) return null; // a one-token prompt: nothing to draft from until the target has seen the root
    const rows = Array.from({ length: want - this.real }, (_, i) => this.real + i);
    for (const j of rows) {
      if (!this.features.has(j)) throw new Error(`EAGLE head: no target feature for position ${j}`);
    }
    this.roundWidths.push(rows.length);
    const prompt = this.real === 0; // nothing read yet: these rows are the prompt's
    const started = performance.now();
    const { logits, out } = await this.head.forward({
      tokens: rows.map((j) => committed[j + 1] as number),
      inputs: rows.map((j) => ({ feature: this.features.get(j) as Float32Array })),
      positions: rows,
      bias: chainBias(this.real, rows.length),
      rows: [rows.length - 1],
    });
    if (prompt) this.caughtUpMs = performance.now() - started;
    for (const j of rows) this.features.delete(j);
    this.real = want;
    const d = this.head.hiddenSize;
    this.outs.set(0, out.slice((rows.length - 1) * d, rows.length * d));
    this.slots.set(0, want - 1);
    return this.rowsOf(logits, 1)[0] as SubsetLogits;
  }

  async expand(tree: DraftTree, nodes: readonly number[], depths: readonly number[]): Promise<SubsetLogits[]> {
    const cacheLength = this.head.length;
    const visible = nodes.map((node) => {
      const slots: number[] = [];
      for (let a = tree.parents[node] as number; a > 0; a = tree.parents[a] as number) {
        const slot = this.slots.get(a);
        if (slot === undefined) throw new Error(`EAGLE head: ancestor ${a} of node ${node} was never run`);
        slots.push(slot);
      }
      return slots;
    });
    this.roundWidths.push(nodes.length);
    const { logits, out } = await this.head.forward({
      tokens: nodes.map((n) => tree.tokens[n] as number),
      inputs: nodes.map((n) => {
        const parent = this.outs.get(tree.parents[n] as number);
        if (!parent) throw new Error(`EAGLE head: the parent of node ${n} was never run`);
        return { drafted: parent };
      }),
      // Node at depth k is x_{root + k}, paired with the drafted feature at position root + k - 1.
      positions: nodes.map((n) => this.real - 1 + (depths[n] as number)),
      bias: appendBias(cacheLength, this.real, visible),
      rows: nodes.map((_, i) => i),
    });
    const d = this.head.hiddenSize;
    nodes.forEach((node, i) => {
      this.slots.set(node, cacheLength + i);
      this.outs.set(node, out.slice(i * d, (i + 1) * d));
    });
    return this.rowsOf(logits, nodes.length);
  }

  renumber(index: ReadonlyMap<number, number>): void {
    const slots = new Map<number, number>();
    const outs = new Map<number, Float32Array>();
    for (const [oldNode, n] of index) {
      const slot = this.slots.get(oldNode);
      if (slot !== undefined) slots.set(n, slot);
      const o = this.outs.get(oldNode);
      if (o) outs.set(n, o);
    }
    this.slots = slots;
    this.outs = outs;
  }

  /** The accepted nodes' target features become the next round's real rows (the root's pairs with the first new token). */
  accept(_tree: DraftTree, result: VerifyResult, outputs: TargetOutputs): void {
    if (!outputs.hidden) throw new Error("EAGLE head: the round's target call returned no hidden states");
    const root = this.rootPos;
    result.path.forEach((node, i) => {
      this.features.set(root + i, (outputs.hidden as (n: number) => Float32Array)(node).slice());
    });
    // The accepted tokens and the target's own: the next root is one past the last accepted node.
    this.rootPos = root + result.path.length;
    this.head.keep(Array.from({ length: this.real }, (_, i) => i));
    this.slots.clear();
    this.outs.clear();
  }

  reset(): void {
    this.head.reset();
    this.features.clear();
    this.real = 0;
    this.rootPos = 0;
    this.slots.clear();
    this.outs.clear();
    this.roundWidths = [];
    this.caughtUpMs = 0;
  }
}

/**
 * EAGLE-2's dynamic tree over the head, with values calibrated by measured acceptance, grown and cut only as far as
 * it pays on the measured cost curve. Its ceiling is deeper and larger than the draft model's fixed tree (depth 6,
 * 24 nodes): on held-out text the bundled head's tree still accepted 1.00 at depth 6, so that depth capped it (tau
 * 3.98 at 24 nodes, 4.72 at depth 8 and 48 nodes, 5.07 at depth 10 and 64 nodes, without the cost cut; the 40
 * held-out prompts, 64 tokens each: tools/eagle-tree-shapes.ts). On a flat curve (a GPU) it grows that far; on a
 * steep one (wasm) a level is drafted only while its best node pays for a head call and one more verified node, and
 * the cut keeps a few nodes.
 */
export const EAGLE_DEFAULTS: DynamicTreeOptions = {
  depth: 12,
  expand: 4,
  branch: 4,
  budget: 64,
  name: 'eagle',
  costAware: true,
  calibrated: true,
};

export class EagleDrafter extends DynamicTreeDrafter {
  readonly readsTargetHidden = true;
  private readonly head: Eagle3State;

  constructor(head: Eagle3State, options: DynamicTreeOptions, costs: () => CostModel | null) {
    super(head, options, costs);
    this.head = head;
  }

  prefilled(prompt: readonly number[], hidden: (j: number) => Float32Array): void {
    this.head.prefilled(prompt, hidden);
  }

  /** Another drafter's round: the accepted nodes' features still become the head's next real rows. */
  observe(tree: DraftTree, result: VerifyResult, outputs: TargetOutputs): void {
    this.head.accept(tree, result, outputs);
  }
}

export function eagleHeadOf(heads: HeadsResource | undefined): { head: Eagle3Head; relativeCost: () => number } {
  if (!heads?.eagle3) throw new Error('this method needs an EAGLE-3 head, and none is loaded');
  return { head: heads.eagle3, relativeCost: heads.relativeCost };
}

export const eagle = {
  name: 'eagle',
  description:
    "EAGLE-3 head on the target's features, dynamic tree (EAGLE-2: 4 x 4 expansion, up to depth 12 and 64 nodes as the cost curve allows)",
  needs: ['eagle-head', 'target-hidden'],
  lossless: true,
  usesCostModel: true,
  create: (r) => {
    const { head, relativeCost: rel } = eagleHeadOf(r.heads);
    return new EagleDrafter(new Eagle3State(head, r.target.config.vocabSize, rel), EAGLE_DEFAULTS, r.costs);
  },
} as const satisfies MethodSpec<'eagle'>;
