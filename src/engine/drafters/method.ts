/**
 * How a drafting method describes itself. Each method file exports one MethodSpec (or a few closely related ones);
 * registry.ts lists them, and everything that lists or special-cases methods (CLI help and flags, the element's
 * menu, the page, the worker, the engine, the bench, the tests) reads the registry instead.
 */
import { type CostCurve, relativeCost } from '../calibrate';
import type { CausalLM, Eagle3Head, MedusaHeads } from '../lm';
import type { AcceptancePrior } from '../priors';
import type { KeyValueStore } from '../store';
import type { Drafter } from './drafter';

/**
 * What a method needs besides the target's logits, which every method gets:
 * - 'draft-model': a second, smaller language model sharing the target's vocabulary;
 * - 'target-hidden': the target's hidden states for the accepted path (trained heads: Medusa, EAGLE);
 * - 'target-self': the target's own weights and cache, run with layers skipped (self-speculation);
 * - 'medusa-heads' / 'eagle-head': trained draft heads loaded next to the target (Medusa's K heads; an EAGLE-3 head).
 */
export type Requirement = 'draft-model' | 'target-hidden' | 'target-self' | 'medusa-heads' | 'eagle-head';

/** This hardware's measured costs (SpecEngine.calibrate). */
export interface CostModel {
  /** The target's verify-cost curve T(q) / T(1). */
  curve: CostCurve;
  /** One single-token draft call relative to one single-token target call (0 without a draft model). */
  draftRelative: number;
  /** The draft model's own curve (empty without a draft model). */
  draftCurve: CostCurve;
  /** One single-row call of the loaded draft heads relative to one single-token target call, measured. */
  headsRelative?: number;
}

/**
 * Verifying 8 tokens at most this many single-token calls: width is nearly free (a GPU: 1.0-1.2), and a wide tree
 * can pay over a chain. On wasm it is 1.9-2.3.
 */
const NEARLY_FREE_WIDTH_8 = 1.5;

/** Whether the measured verify-cost curve makes width nearly free (no curve yet: no). */
export function widthNearlyFree(costs: CostModel | null): boolean {
  return costs !== null && nearlyFlat(costs.curve);
}

/**
 * Whether the draft model's own measured curve makes a wide draft call nearly free: the draft model on a GPU. On the
 * CPU (wasm, where the default placement puts it beside a GPU target when its calls are cheaper there) 8 rows cost
 * 2.2-2.5 single-row calls (Chromium, lavapipe, wasm in Node).
 */
export function draftWidthNearlyFree(costs: CostModel | null): boolean {
  return costs !== null && nearlyFlat(costs.draftCurve);
}

function nearlyFlat(curve: CostCurve): boolean {
  return curve.points.length > 0 && relativeCost(curve, 8) <= NEARLY_FREE_WIDTH_8;
}

/** What a method's factory receives: exactly what it asked for, plus live access to the measured costs. */
export interface DrafterResources {
  /** The target (read-only use: its config; its cache belongs to the round loop). */
  target: CausalLM;
  /** Present when the method needs 'draft-model'. */
  draft?: CausalLM;
  /** The measured cost model, or null before calibration (read it each round: it may arrive later). */
  costs: () => CostModel | null;
  /** Where a method may remember what it learned about this model and device (e.g. a found skip set). */
  store?: KeyValueStore;
  /** Present when the method needs heads: the loaded draft heads and their cost per call. */
  heads?: HeadsResource;
  /**
   * Acceptance measured on held-out text with the loaded draft model and heads (priors.ts), where they ship one
   * measured with these models: auto predicts an arm's round from it before measuring any.
   */
  priors?: { draft?: AcceptancePrior; heads?: AcceptancePrior };
}

/** Draft heads loaded next to the target (Medusa's K heads or an EAGLE-3 head). */
export interface HeadsResource {
  /** The heads folder as given (for messages). */
  spec: string;
  medusa?: MedusaHeads;
  eagle3?: Eagle3Head;
  /**
   * One single-row heads call relative to one single-token target call: measured with the cost model, estimated
   * from the weights each call reads before that (read it each round).
   */
  relativeCost: () => number;
}

export interface MethodSpec<Name extends string = string> {
  readonly name: Name;
  /** One line for menus and --help. */
  readonly description: string;
  readonly needs: readonly Requirement[];
  /** What the method uses when it is loaded, without needing it (auto uses a draft model if there is one). */
  readonly optional?: readonly Requirement[];
  /** The output has exactly the target's distribution (greedy: its exact tokens) under rejection verification. */
  readonly lossless: boolean;
  /** The method reads the measured cost model; the engine calibrates before its first run where it can. */
  readonly usesCostModel: boolean;
  /**
   * The method keeps learning across generations even under sampling (a skip-set search, per-arm statistics), so its
   * trees, and with them a seed's sampled text, may differ from one generation to the next. Greedy output never does.
   * (Every drafter may carry what it measured into the next greedy generation: Drafter.reset.)
   */
  readonly learns?: boolean;
  readonly create: (resources: DrafterResources) => Drafter;
}

const NEED_TEXT: Record<Requirement, string> = {
  'draft-model': 'a draft model',
  'target-hidden': "the target's hidden states",
  'target-self': "the target's own layers",
  'medusa-heads': 'Medusa heads',
  'eagle-head': 'an EAGLE-3 head',
};

/** "needs a draft model" / "needs nothing but the target". */
export function describeNeeds(spec: MethodSpec): string {
  return spec.needs.length === 0 ? 'target only' : `needs ${spec.needs.map((n) => NEED_TEXT[n]).join(' and ')}`;
}

/** Whether a method runs the given resource when it is available (needed or optional). */
export function uses(spec: MethodSpec, r: Requirement): boolean {
  return spec.needs.includes(r) || (spec.optional ?? []).includes(r);
}

/** What a method's rounds call besides the target's verify call (roundCalls). */
export type RoundCalls = 'one-call' | 'several-calls' | 'draft-model';

/**
 * The model calls a method's rounds make, by what onnxruntime's JavaScript around each call weighs in its cost:
 * - `one-call`: the target's verify call, and at most one heads call (Medusa) beside it;
 * - `several-calls`: target-sized calls by depth beside it (layer skipping's passes of the target, EAGLE's head);
 * - `draft-model`: several short calls of a separate draft model (needed or optional), each with a key/value input
 *   and output per layer, so that glue is a large share of a call (0.4 ms for the bundled draft model).
 * The CLI keeps a short generation's JavaScript on V8's baseline tiers by it (src/runtime/v8-tiering.ts).
 */
export function roundCalls(spec: MethodSpec): RoundCalls {
  if (uses(spec, 'draft-model')) return 'draft-model';
  if (uses(spec, 'target-self') || uses(spec, 'eagle-head')) return 'several-calls';
  return 'one-call';
}

/** Which kind of draft heads a method needs (null: none; auto uses heads when loaded but needs none). */
export function headsNeeded(spec: MethodSpec): 'medusa' | 'eagle3' | null {
  if (spec.needs.includes('medusa-heads')) return 'medusa';
  if (spec.needs.includes('eagle-head')) return 'eagle3';
  return null;
}

/**
 * The heads a method is given by default on a device when the target has bundled ones and none are named: the kind
 * it needs, or, on WebGPU, an EAGLE head for a method that uses one when loaded (auto: there its arm measured
 * 2.14-2.32x against 1.75-2.24x without it; on wasm it is no better than the draft model's chain and would only add
 * exploration).
 */
export function defaultHeads(spec: MethodSpec, device: 'wasm' | 'webgpu'): 'medusa' | 'eagle3' | null {
  const needed = headsNeeded(spec);
  if (needed) return needed;
  return device === 'webgpu' && (spec.optional ?? []).includes('eagle-head') ? 'eagle3' : null;
}

/** The draft model a 'draft-model' method was given (the engine checks needs before creating a drafter). */
export function draftOf(resources: DrafterResources): CausalLM {
  if (!resources.draft) throw new Error('this method needs a draft model, and none is loaded');
  return resources.draft;
}
