/**
 * Acceptance priors shipped with a drafter: how often the target takes the drafter's top guess at each depth of a
 * chain, measured once on held-out text (tools/acceptance.ts writes it into the drafter's config.json under
 * `acceptance_prior`: a draft model's or a heads folder's; a key there, not a file of its own, so that a drafter
 * without one costs the browser no failed request). Under greedy decoding that acceptance is a property of the two models and the
 * text, not of the device; what a round costs is the device's, and calibration measures it. Together they predict an
 * arm's round before it has run one (auto-arms.ts), so that a first session starts on the arm they favour instead of
 * paying for trial rounds of each: on Chromium's WebGPU (SwiftShader) the EAGLE head's trial rounds and early
 * revisits cost auto a fifth of a 3-prompt run against the draft model's chain alone.
 *
 * A prior is an estimate, never a verdict: the arm's measured rounds replace it (auto.ts), and one measured for other
 * models (the target's or the drafter's weights differ) is not used. It is measured in fp32 and used at every
 * precision the models run in: fp16 and int8 change few greedy tokens; int4 changes the target's argmax at 6-7% of
 * positions, so there it is rougher.
 */
import { weightDigest } from '../model/digest';
import { type CostCurve, costIn, relativeCost } from './calibrate';

/** The key of the drafter's config.json that holds its prior. */
export const PRIOR_KEY = 'acceptance_prior';

/** A drafter's weights as a prior names them: their size, and a digest that tells a retrained model apart. */
export interface WeightsIdentity {
  weightBytes: number;
  digest: string;
}

/** The target a prior was measured with, as the prior names it. */
export interface ModelIdentity extends WeightsIdentity {
  layers: number;
  hidden: number;
  vocab: number;
}

/** What config.json's acceptance_prior holds (version 1). */
export interface AcceptanceFile {
  version: 1;
  /** What the numbers are, in words, for a person reading the file. */
  about: string;
  target: ModelIdentity;
  drafter: WeightsIdentity;
  /** P(the target takes the drafter's top guess at depth d+1 | it took the guesses before it), greedy decoding. */
  depths: number[];
  /** The rounds behind each depth's figure. */
  offered: number[];
  /** How it was measured (prompts, tokens, precision, tool). */
  measured: Record<string, unknown>;
}

/** A prior that applies to the loaded models. */
export interface AcceptancePrior {
  depths: readonly number[];
}

/** Rounds a depth's figure must rest on to be used (deeper depths, reached rarely, are left out). */
export const MIN_OFFERED = 20;
/** Depths a prior may hold (the tool measures 32 at most; every drafter here drafts 16 or fewer). */
export const MAX_DEPTHS = 64;

/** Loaded weights as a prior names them (the digest is taken here, when a prior is read, not at every load). */
export function weightsOf(model: { weightBytes: number; files: ReadonlyMap<string, Uint8Array> }): WeightsIdentity {
  return { weightBytes: model.weightBytes, digest: weightDigest(model.files) };
}

/** A loaded target as a prior names it. */
export function identityOf(model: {
  weightBytes: number;
  files: ReadonlyMap<string, Uint8Array>;
  config: { numLayers: number; hiddenSize: number; vocabSize: number };
}): ModelIdentity {
  const c = model.config;
  return { ...weightsOf(model), layers: c.numLayers, hidden: c.hiddenSize, vocab: c.vocabSize };
}

const sameWeights = (a: WeightsIdentity, b: WeightsIdentity) =>
  a.weightBytes === b.weightBytes && a.digest === b.digest;
const sameModel = (a: ModelIdentity, b: ModelIdentity) =>
  sameWeights(a, b) && a.layers === b.layers && a.hidden === b.hidden && a.vocab === b.vocab;

/**
 * The prior in a drafter's config.json, or why it is not used (a one-line reason: the load goes on without it; `quiet`
 * where that is not worth a warning). `raw` is the config's acceptance_prior (undefined: there is none).
 */
export function readPrior(
  raw: unknown,
  target: ModelIdentity,
  drafter: WeightsIdentity,
): { prior: AcceptancePrior } | { ignored: string; quiet?: true } | null {
  if (raw === null || raw === undefined) return null;
  const damaged = (what: string) => ({ ignored: `${PRIOR_KEY} is damaged: ${what}` });
  if (typeof raw !== 'object' || Array.isArray(raw)) return damaged('not an object');
  const f = raw as Partial<AcceptanceFile>;
  if (f.version !== 1) return { ignored: `${PRIOR_KEY} is not version 1` };
  const t = f.target as Partial<ModelIdentity> | undefined;
  const d = f.drafter as Partial<WeightsIdentity> | undefined;
  const isNumber = (x: unknown) => typeof x === 'number' && Number.isFinite(x);
  if (
    !t ||
    typeof t !== 'object' ||
    !d ||
    typeof d !== 'object' ||
    ![t.weightBytes, t.layers, t.hidden, t.vocab, d.weightBytes].every(isNumber) ||
    ![t.digest, d.digest].every((x) => typeof x === 'string')
  )
    return damaged('the target and the drafter it was measured with are not named');
  const { depths, offered } = f;
  if (!Array.isArray(depths) || !Array.isArray(offered) || depths.length !== offered.length)
    return damaged('depths and offered must be lists of one length');
  if (depths.length > MAX_DEPTHS) return damaged(`more than ${MAX_DEPTHS} depths`);
  if (!depths.every((a) => isNumber(a) && a >= 0 && a <= 1)) return damaged('each depth must be a share from 0 to 1');
  if (!offered.every((o) => isNumber(o) && o >= 0)) return damaged('each offered must be a count of rounds');
  // Not a fault of the file: this drafter paired with another target (a draft model tried as a target itself, or with
  // a target of its family from elsewhere). Nothing to say at each load; auto measures the drafter.
  if (!sameModel(t as ModelIdentity, target))
    return { ignored: `${PRIOR_KEY} was measured with another target`, quiet: true };
  if (!sameWeights(d as WeightsIdentity, drafter))
    return { ignored: `${PRIOR_KEY} was measured with other weights of this drafter` };
  const kept: number[] = [];
  for (const [i, a] of (depths as number[]).entries()) {
    if (((offered as number[])[i] ?? 0) < MIN_OFFERED) break;
    kept.push(a);
  }
  return kept.length > 0 ? { prior: { depths: kept } } : { ignored: `${PRIOR_KEY} rests on too few rounds` };
}

/** A round as auto counts it: tokens, and its cost in auto's unit (single-token calls, or seconds). */
export interface PredictedRound {
  tokens: number;
  cost: number;
  /** The chain length the prediction drafts (0: plain decoding pays more). */
  length: number;
}

/** How a drafter's calls go, for chainRound. */
export interface DrafterCalls {
  /** One call, in single-token target calls. */
  relative: number;
  /** One call a round whatever the depth (Medusa's heads draft every depth at once), not one a drafted token. */
  perRound?: boolean;
  /** The deepest chain the drafter drafts (the adaptive chain's longest, the EAGLE head's depth, Medusa's heads). */
  maxDepth: number;
}

/**
 * The round of the chain that pays best under the prior on the measured costs: k drafted tokens bring 1 + sum of
 * the chance of the path to each, and cost T(k+1) (the verify-cost curve) plus the drafter's calls: one a drafted
 * token (a draft model's chain, an EAGLE head), or one a round (Medusa). Not deeper than the prior measured nor than
 * the drafter drafts. A drafter that grows trees (the heads') gains more where width is nearly free, so for it this is
 * a floor: auto's revisits find the rest.
 */
export function chainRound(
  prior: AcceptancePrior,
  curve: CostCurve,
  calls: DrafterCalls,
  measure: 'model' | 'time',
): PredictedRound | null {
  if (!(calls.relative >= 0) || curve.points.length === 0) return null;
  let best = { tokens: 1, relative: relativeCost(curve, 1), length: 0 };
  let tokens = 1;
  let path = 1;
  for (const [i, a] of prior.depths.slice(0, Math.max(0, calls.maxDepth)).entries()) {
    path *= a;
    tokens += path;
    const relative = relativeCost(curve, i + 2) + (calls.perRound ? 1 : i + 1) * calls.relative;
    if (tokens / relative > best.tokens / best.relative) best = { tokens, relative, length: i + 1 };
  }
  const cost = costIn(curve, best.relative, measure);
  return cost === null ? null : { tokens: best.tokens, cost, length: best.length };
}
