/**
 * `auto`: speculation that fits the machine. Each round it picks one way of drafting (an "arm") and the tree for it:
 *
 * - arms: plain decoding (no draft), prompt lookup, and, with what is loaded, prompt lookup merged with the draft
 *   model's tree, self-speculation by layer skipping, and draft heads (EAGLE-3, Medusa; the arms not chosen in a
 *   round observe it, so the heads' view of the target's states stays current). Within an arm the tree is sized on the measured verify-cost
 *   curve: candidates carry calibrated acceptance values and are kept best-first as long as expected tokens per unit
 *   of time grow (budget.ts; per-source acceptance by sibling rank and confidence is kept by the merged drafter).
 *   So on a steep curve (wasm) a tree shrinks to a short chain or to nothing, on a flat one (a GPU) it grows wide
 *   and deep; a tree whose predicted time per token is worse than plain decoding's is never proposed.
 * - between arms: each arm's throughput over its recent rounds decides: tokens produced per unit of cost, the cost
 *   of a round being its verification call on the measured verify-cost curve (width of tree and auxiliary nodes)
 *   plus its own model calls on the measured curves (Drafter.draftCost: draft-model calls, skipping calls, none for
 *   lookup). Every arm is tried early and the others are revisited now and then, so the estimates follow the text.
 *   This is the expected-gain rule applied to whole drafters, with costs from measurements made once: the choice
 *   is reproducible for a seed (same text, same costs, same choices). Without a cost model (calibration off, e.g.
 *   on a software GPU adapter) real time stands in.
 *
 * Why not Sequoia's dynamic programme over (depth, rank) acceptance for a fixed tree shape: our candidates come with
 * per-node estimates (draft confidence, n-gram agreement) that a per-position acceptance vector would throw away;
 * the best-first rerank over them is optimal for any node budget when values never grow along a path, and the
 * measured curve then picks the budget.
 */
import { relativeCost } from '../calibrate';
import { hasHiddenStates, isLayerSkipping } from '../lm';
import type { VerifyResult } from '../verify';
import type { Drafter, DrafterNote, DraftRequest, DraftTree, TargetOutputs } from './drafter';
import { DYNAMIC_DEFAULTS, DynamicTreeDrafter } from './dynamic-tree';
import { EAGLE_DEFAULTS, Eagle3State, EagleDrafter } from './eagle';
import { LOOKUP_DEFAULTS, LookupDrafter } from './lookup';
import { MedusaDrafter } from './medusa';
import { MergedDrafter } from './merged';
import type { CostModel, DrafterResources, MethodSpec } from './method';
import { NoDrafter } from './none';
import { SwiftDrafter } from './swift';

interface Arm {
  name: string;
  drafter: Drafter;
  /** Discounted sums of tokens produced and of cost (single-token target calls, or seconds) of its rounds. */
  tokens: number;
  cost: number;
  samples: number;
  /** Round index this arm last ran in. */
  lastRound: number;
}

/** Discount per round of an arm's history (recent rounds weigh more). */
const DECAY = 0.9;
/** Rounds each arm is tried before the choice is made on measurements. */
const WARMUP_SAMPLES = 2;
/** A non-chosen arm is revisited after this many rounds without it. */
const REVISIT = 24;

export class AutoDrafter implements Drafter {
  readonly name = 'auto';
  private readonly arms: Arm[];
  private current: Arm;
  private round = 0;
  private started = 0;
  private why = '';

  constructor(
    arms: { name: string; drafter: Drafter }[],
    private readonly costs: () => CostModel | null = () => null,
  ) {
    this.arms = arms.map((a) => ({ ...a, tokens: 0, cost: 0, samples: 0, lastRound: -1 }));
    this.current = this.arms[0] as Arm;
  }

  get calls(): number {
    return this.arms.reduce((sum, a) => sum + a.drafter.calls, 0);
  }

  /** Tokens per unit of cost of an arm: per single-token call with a cost model, per second without (NaN untried). */
  throughput(arm: Arm): number {
    return arm.cost > 0 ? arm.tokens / arm.cost : Number.NaN;
  }

  private get unit(): string {
    return this.costs() ? 'tokens/call' : 'tok/s';
  }

  private choose(): Arm {
    const untried = this.arms.find((a) => a.samples < WARMUP_SAMPLES);
    if (untried) {
      this.why = `trying ${untried.name}`;
      return untried;
    }
    const best = this.arms.reduce((a, b) => (this.throughput(b) > this.throughput(a) ? b : a));
    // Revisit the arm that has waited longest once it has waited REVISIT rounds (its estimate may be stale).
    const waited = this.arms.filter((a) => a !== best).sort((a, b) => a.lastRound - b.lastRound)[0];
    if (waited && this.round - waited.lastRound >= REVISIT) {
      this.why = `revisiting ${waited.name}`;
      return waited;
    }
    this.why = `best: ${this.arms.map((a) => `${a.name} ${this.throughput(a).toFixed(2)}`).join(', ')} ${this.unit}`;
    return best;
  }

  async propose(req: DraftRequest): Promise<DraftTree> {
    this.current = this.choose();
    this.current.lastRound = this.round;
    this.started = performance.now();
    const tree = await this.current.drafter.propose(req);
    tree.sources ??= tree.tokens.map((_, i) => (i === 0 ? '' : this.current.name));
    return tree;
  }

  /** Whether an arm runs on draft heads (the round loop then asks the target for its hidden states). */
  get readsTargetHidden(): boolean {
    return this.arms.some((a) => a.drafter.readsTargetHidden === true);
  }

  prefilled(prompt: readonly number[], hidden: (row: number) => Float32Array): void {
    for (const a of this.arms) a.drafter.prefilled?.(prompt, hidden);
  }

  accept(tree: DraftTree, result: VerifyResult, outputs: TargetOutputs): void {
    const arm = this.current;
    arm.drafter.accept(tree, result, outputs);
    for (const a of this.arms) if (a !== arm) a.drafter.observe?.(tree, result, outputs);
    // The round's tokens (the accepted path plus the target's own) and its cost: the verification call's width on
    // the measured curve plus the arm's own model calls; real seconds when nothing is measured.
    const costs = this.costs();
    const width = tree.tokens.length + (tree.aux?.tokens.length ?? 0);
    const cost = costs
      ? relativeCost(costs.curve, width) + (arm.drafter.draftCost?.(costs) ?? 0)
      : (performance.now() - this.started) / 1000;
    arm.cost = DECAY * arm.cost + cost;
    arm.tokens = DECAY * arm.tokens + result.path.length;
    arm.samples++;
    this.round++;
  }

  reset(): void {
    for (const a of this.arms) a.drafter.reset();
  }

  note(): DrafterNote | null {
    const inner = this.current.drafter.note?.();
    return {
      text: `auto: ${this.current.name} (${this.why})${inner ? `; ${inner.text}` : ''}`,
      fields: {
        arm: this.current.name,
        ...Object.fromEntries(this.arms.map((a) => [`${a.name} ${this.unit}`, Number(this.throughput(a).toFixed(2))])),
        ...(inner?.fields ?? {}),
      },
    };
  }
}

/** The arms auto can use with what is loaded. */
export function autoArms(r: DrafterResources): { name: string; drafter: Drafter }[] {
  const arms: { name: string; drafter: Drafter }[] = [
    { name: 'plain', drafter: new NoDrafter() },
    { name: 'lookup', drafter: new LookupDrafter(r.costs) },
  ];
  if (r.draft) {
    arms.push({
      name: 'draft',
      drafter: new MergedDrafter(
        [
          { label: 'lookup', drafter: new LookupDrafter(r.costs, { ...LOOKUP_DEFAULTS, selfBudget: false }) },
          {
            label: 'draft',
            drafter: new DynamicTreeDrafter(r.draft, { ...DYNAMIC_DEFAULTS, costAware: true }, r.costs),
          },
        ],
        r.costs,
      ),
    });
  }
  if (isLayerSkipping(r.target)) arms.push({ name: 'swift', drafter: new SwiftDrafter(r.target, r.costs, r.store) });
  if (r.heads?.eagle3 && hasHiddenStates(r.target)) {
    const state = new Eagle3State(r.heads.eagle3, r.target.config.vocabSize, r.heads.relativeCost);
    arms.push({ name: 'eagle', drafter: new EagleDrafter(state, EAGLE_DEFAULTS, r.costs) });
  }
  if (r.heads?.medusa && hasHiddenStates(r.target))
    arms.push({ name: 'medusa', drafter: new MedusaDrafter(r.heads.medusa, r.heads.relativeCost, r.costs) });
  return arms;
}

export const auto = {
  name: 'auto',
  description:
    'picks the drafter (none, prompt lookup, draft model, layer skipping, draft heads) and the tree size from what it measures',
  needs: [],
  optional: ['draft-model', 'target-self', 'eagle-head', 'medusa-heads', 'target-hidden'],
  lossless: true,
  usesCostModel: true,
  learns: true,
  create: (r) => new AutoDrafter(autoArms(r), r.costs),
} as const satisfies MethodSpec<'auto'>;
