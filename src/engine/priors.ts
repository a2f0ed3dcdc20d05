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
import { type CostCurve, relativeCost, singleCallMs } from './calibrate';

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
const MIN_OFFERED = 20;

/** Loaded weights as a prior names them. */
export function weightsOf(model: { weightBytes: number; weightDigest: string }): WeightsIdentity {
  return { weightBytes: model.weightBytes, digest: model.weightDigest };
}

/** A loaded target as a prior names it. */
export function identityOf(model: {
  weightBytes: number;
  weightDigest: string;
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
 * The prior in a drafter's config.json, or why it is not used (a one-line reason: the load goes on without it). `raw`
 * is the config's acceptance_prior (undefined: there is none).
 */
export function readPrior(
  raw: unknown,
  target: ModelIdentity,
  drafter: WeightsIdentity,
): { prior: AcceptancePrior } | { ignored: string } | null {
  if (raw === null || raw === undefined) return null;
  const f = raw as Partial<AcceptanceFile>;
  if (typeof raw !== 'object' || f.version !== 1) return { ignored: `${PRIOR_KEY} is not version 1` };
  const t = f.target as Partial<ModelIdentity> | undefined;
  const numbers = (xs: unknown) => Array.isArray(xs) && xs.every((x) => typeof x === 'number' && Number.isFinite(x));
  if (
    !t ||
    typeof t !== 'object' ||
    ![t.weightBytes, t.layers, t.hidden, t.vocab, f.drafter?.weightBytes].every((x) => typeof x === 'number') ||
    ![t.digest, f.drafter?.digest].every((x) => typeof x === 'string') ||
    !numbers(f.depths) ||
    !numbers(f.offered) ||
    (f.depths as number[]).length !== (f.offered as number[]).length ||
    (f.depths as number[]).some((a) => a < 0 || a > 1)
  )
    return { ignored: `${PRIOR_KEY} is damaged (target, drafter, depths and offered are needed)` };
  if (!sameModel(t as ModelIdentity, target)) return { ignored: `${PRIOR_KEY} was measured with another target` };
  if (!sameWeights(f.drafter as WeightsIdentity, drafter))
    return { ignored: `${PRIOR_KEY} was measured with other weights of this drafter` };
  const depths: number[] = [];
  for (const [d, a] of (f.depths as number[]).entries()) {
    if (((f.offered as number[])[d] ?? 0) < MIN_OFFERED) break;
    depths.push(a);
  }
  return depths.length > 0 ? { prior: { depths } } : { ignored: `${PRIOR_KEY} rests on too few rounds` };
}

/** A round as auto counts it: tokens, and its cost in auto's unit (single-token calls, or seconds). */
export interface PredictedRound {
  tokens: number;
  cost: number;
  /** The chain length the prediction drafts (0: plain decoding pays more). */
  length: number;
}

/**
 * The round of the chain that pays best under the prior on the measured costs: k drafted tokens bring 1 + sum of
 * the chance of the path to each, and cost T(k+1) (the verify-cost curve) plus the drafter's calls (`callRelative`
 * single-token target calls each): one a drafted token (a draft model's chain, an EAGLE head), or one a round whatever
 * the depth (`perRound`: Medusa's heads draft every depth in one call). Not deeper than the prior measured. A drafter
 * that grows trees (the heads') gains more where width is nearly free, so for it this is a floor: auto's revisits
 * find the rest.
 */
export function chainRound(
  prior: AcceptancePrior,
  curve: CostCurve,
  callRelative: number,
  measure: 'model' | 'time',
  perRound = false,
): PredictedRound | null {
  if (!(callRelative >= 0) || curve.points.length === 0) return null;
  let best = { tokens: 1, relative: relativeCost(curve, 1), length: 0 };
  let tokens = 1;
  let path = 1;
  for (const [i, a] of prior.depths.entries()) {
    path *= a;
    tokens += path;
    const relative = relativeCost(curve, i + 2) + (perRound ? 1 : i + 1) * callRelative;
    if (tokens / relative > best.tokens / best.relative) best = { tokens, relative, length: i + 1 };
  }
  if (measure === 'model') return { tokens: best.tokens, cost: best.relative, length: best.length };
  const ms = singleCallMs(curve);
  return ms > 0 ? { tokens: best.tokens, cost: (ms * best.relative) / 1000, length: best.length } : null;
}
