/**
 * Choosing the graph variant by measurement, on WebGPU (on wasm the variant is known: WASM_VARIANTS). Building every full session would hold the weights
 * several times; instead each body is built for the model's first two layers (real widths, real weights, no head)
 * and timed against the others, interleaved, at q = 1 (decoding) and q = 16 (a verify call) after a short context;
 * the least T(1) + T(16) wins. Per-layer cost is what the variants differ in (the head and the embedding are the
 * same in all), so the probe's ratio is the full model's ratio, at a fraction of the memory and time. Before any
 * timing, each variant's results are checked against the plain graph's (dropWrongVariants); a variant named on
 * WebGPU gets the same check alone (checkVariant). The choice is remembered per device, shape and precision for the
 * life of the page or process.
 */
import type * as OrtModule from 'onnxruntime-web';
import { safeGet, safeSet } from '../engine/store';
import { maxDiff } from '../util/max-diff';
import { f16ToF32 } from './convert';
import { GRAPH_VARIANTS, type GraphVariant, ROW_INVARIANT_VARIANTS } from './graph/llama';
import type { LoadedModel } from './load';
import { createSession } from './ort-exclusive';
import type { Device } from './precision';
import {
  buildProbeGraph,
  type FeedSpec,
  PROBE_CHECK,
  PROBE_WIDE,
  type ProbeGraph,
  type ProbePrecision,
} from './probe-graph';

type Ort = Pick<typeof OrtModule, 'InferenceSession' | 'Tensor'> & { env?: { versions?: { web?: string } } };

export interface VariantTiming {
  variant: GraphVariant;
  /** Fastest ms of a probe call at q = 1 and q = 16, or the reason the variant could not run. */
  q1: number;
  q16: number;
  error?: string;
}

export interface VariantChoice {
  variant: GraphVariant;
  timings: VariantTiming[];
}

/**
 * Where a choice is remembered across processes and page visits (the engine's store: a file in Node, IndexedDB in
 * the browser). Structurally the engine's KeyValueStore; a failing memory only means measuring again.
 */
export interface VariantMemory {
  get(key: string): Promise<unknown>;
  set(key: string, value: unknown): Promise<void>;
}

const isVariant = (v: unknown): v is GraphVariant => (GRAPH_VARIANTS as readonly unknown[]).includes(v);

function isTiming(v: unknown): v is VariantTiming {
  const t = v as Partial<VariantTiming> | null;
  return (
    typeof t === 'object' &&
    t !== null &&
    isVariant(t.variant) &&
    // NaN (a variant that could not run) is saved as null.
    (typeof t.q1 === 'number' || t.q1 === null) &&
    (typeof t.q16 === 'number' || t.q16 === null) &&
    (t.error === undefined || typeof t.error === 'string')
  );
}

/** A remembered choice, every timing in it checked (a record edited or cut short reads as absent: measured again). */
function isChoice(v: unknown): v is VariantChoice {
  const c = v as Partial<VariantChoice> | undefined;
  return (
    typeof c === 'object' && c !== null && isVariant(c.variant) && Array.isArray(c.timings) && c.timings.every(isTiming)
  );
}

/** What adapterIdentity reads of a WebGPU adapter (structural: the package's declarations name no WebGPU types). */
interface AdapterLike {
  info?: { vendor?: string; architecture?: string; device?: string; description?: string };
}

/**
 * The WebGPU adapter a remembered choice was measured on (vendor, architecture, device, description). A variant can
 * compute wrong results on one adapter and not another (the fused graph's GroupQueryAttention on narrow subgroups),
 * and the remembered choice skips the check, so a choice made on one GPU is not reused on another. Dawn in Node
 * names the device and driver; Chromium gives vendor and architecture only (device and description stay empty
 * without its WebGPU developer features), so there a GPU of the same vendor and architecture, or a new driver, is
 * not told apart.
 */
export async function adapterIdentity(
  gpu: { requestAdapter(): Promise<AdapterLike | null> } | undefined = globalThis.navigator?.gpu,
  inUse?: AdapterLike,
): Promise<string> {
  try {
    const info = (inUse ?? (await gpu?.requestAdapter()))?.info;
    return info ? [info.vendor, info.architecture, info.device, info.description].join('|') : 'no adapter';
  } catch {
    return 'no adapter';
  }
}

/** The least of the times (NaN for none). */
export const fastest = (xs: readonly number[]): number => (xs.length > 0 ? Math.min(...xs) : Number.NaN);
const remembered = new Map<string, VariantChoice>();
/** Checks of named variants made in this process: null where the variant computes right, else why not. */
const checked = new Map<string, string | null>();

interface Probe {
  variant: GraphVariant;
  session: OrtModule.InferenceSession;
  graph: ProbeGraph;
  past: Record<string, OrtModule.Tensor>;
}

/**
 * How far a variant's check call may land from the plain graph's, relative to the largest value (normalised hidden
 * states after two layers): the variants compute the same function in another order. Measured on the bundled
 * target (WebGPU on lavapipe): the hybrid graph 2.5e-7 (fp32) and 2.5e-3 (fp16) off; the wrong GroupQueryAttention
 * 0.04 in both.
 */
const CHECK_TOLERANCE = { fp32: 1e-3, fp16: 1e-2 } as const;

/** How a variant's timing says it failed the check. */
const WRONG = 'wrong results:';

/** A probe call's inputs as onnxruntime tensors. */
const feedTensors = (ort: Ort, feeds: Record<string, FeedSpec>) =>
  Object.fromEntries(Object.entries(feeds).map(([name, f]) => [name, new ort.Tensor(f.type, f.data, f.dims)]));

async function checkOutput(ort: Ort, p: Probe): Promise<Float32Array> {
  const out = await p.session.run({ ...feedTensors(ort, p.graph.check), ...p.past });
  const data = (await (out.hidden as OrtModule.Tensor).getData()) as Float32Array | Uint16Array;
  for (const v of Object.values(out)) if (v.location === 'gpu-buffer') v.dispose();
  // fp16 as bit patterns (no Float16Array: Node 20) or as a Float16Array (Chromium)
  if (data instanceof Float32Array) return data;
  return data instanceof Uint16Array ? Float32Array.from(data, f16ToF32) : Float32Array.from(data as ArrayLike<number>);
}

/**
 * Build each variant's probe session and run its context call (the past of every later call). A variant that cannot
 * be built or run gets its reason in `timings` instead.
 */
async function openProbes(
  ort: Ort,
  model: LoadedModel,
  device: Device,
  precision: Required<ProbePrecision>,
  variants: readonly GraphVariant[],
  embeddingType: 'float16' | 'float32' | undefined,
  probes: Probe[],
  timings: VariantTiming[],
): Promise<void> {
  for (const variant of variants) {
    try {
      const graph = buildProbeGraph(model, precision, variant, embeddingType);
      const preferredOutputLocation: Record<string, 'gpu-buffer' | 'cpu'> = { hidden: 'cpu' };
      if (device === 'webgpu') for (const [present] of graph.carry) preferredOutputLocation[present] = 'gpu-buffer';
      const session = await createSession(ort, graph.model, {
        executionProviders: [device],
        graphOptimizationLevel: 'all',
        logSeverityLevel: 3, // errors only (see runner.ts)
        externalData: graph.externalData,
        preferredOutputLocation,
      });
      // A context of PROBE_CONTEXT tokens, kept as the past of every timed call.
      const out = await session.run(feedTensors(ort, graph.context));
      const past = Object.fromEntries(graph.carry.map(([present, name]) => [name, out[present] as OrtModule.Tensor]));
      probes.push({ variant, session, graph, past });
    } catch (e) {
      timings.push({ variant, q1: Number.NaN, q16: Number.NaN, error: (e as Error).message.split('\n')[0] ?? '' });
    }
  }
}

async function closeProbe(p: Probe): Promise<void> {
  for (const t of Object.values(p.past)) if (t.location === 'gpu-buffer') t.dispose();
  await p.session.release();
}

/**
 * Results before speed: each variant runs the probe's check call (a 72-node branching tree after the context) and
 * one whose rows differ from the plain graph's by more than the tolerance is dropped, with the reason in its timing
 * (onnxruntime's GroupQueryAttention on WebGPU adapters with 4- and 8-wide subgroups computes every call of 32 or
 * more tokens wrongly, prompts included: src/model/graph/llama.webgpu.test.ts). Without a plain probe to compare
 * with, nothing is dropped.
 */
async function dropWrongVariants(
  ort: Ort,
  probes: Probe[],
  timings: VariantTiming[],
  compute: 'fp32' | 'fp16',
): Promise<void> {
  const reference = probes.find((p) => p.variant === 'plain');
  if (!reference) return;
  const expected = await checkOutput(ort, reference);
  let scale = 1;
  for (const x of expected) scale = Math.max(scale, Math.abs(x));
  for (const p of [...probes]) {
    if (p === reference) continue;
    const diff = maxDiff(await checkOutput(ort, p), expected);
    if (diff <= CHECK_TOLERANCE[compute] * scale) continue;
    probes.splice(probes.indexOf(p), 1);
    await closeProbe(p);
    const error = `${WRONG} a ${PROBE_CHECK}-token tree call is off the plain graph's by ${diff.toPrecision(2)}`;
    timings.push({ variant: p.variant, q1: Number.NaN, q16: Number.NaN, error });
  }
}

/** Forget the choices remembered in this process (tests: a fresh process, as far as the variants go). */
export function forgetVariantChoices(): void {
  remembered.clear();
  checked.clear();
}

/**
 * Whether a graph variant asked for by name computes what the plain graph does on this device: the probe's check
 * call (the same as graph 'auto' runs before timing) in both. Returns null when it does, else why not (one line);
 * a variant that cannot be built here is left to the real build to report. Remembered for the process.
 */
export async function checkVariant(
  ort: Ort,
  model: LoadedModel,
  device: Device,
  precision: Required<ProbePrecision>,
  variant: GraphVariant,
  embeddingType?: 'float16' | 'float32',
): Promise<string | null> {
  if (variant === 'plain') return null;
  const key = [
    device,
    model.spec,
    model.weightBytes,
    precision.weights,
    precision.compute,
    precision.rowInvariant,
    variant,
    embeddingType,
  ].join('/');
  const known = checked.get(key);
  if (known !== undefined) return known;
  const probes: Probe[] = [];
  const timings: VariantTiming[] = [];
  await openProbes(ort, model, device, precision, ['plain', variant], embeddingType, probes, timings);
  await dropWrongVariants(ort, probes, timings, precision.compute);
  for (const p of probes) await closeProbe(p);
  const error = timings.find((t) => t.variant === variant && t.error?.startsWith(WRONG))?.error ?? null;
  checked.set(key, error);
  return error;
}

/**
 * The graph variant on wasm, where it is known without measuring: onnxruntime's CPU kernels are one code base on
 * every machine, and every measurement on record ranks them alike. The hybrid graph is the fused one with the
 * attention as MatMuls because the CPU's GroupQueryAttention is slow for many query rows: on the 2-layer probe
 * (fastest ms at q = 1 / q = 16, bundled target, 2026-11-30, Node, 2 wasm threads) fp32 hybrid 0.43-0.57 / 2.00-2.15,
 * plain 0.71-0.74 / 2.11-2.67, fused 0.53-0.71 / 4.32-7.57; int8 hybrid 0.48-0.55 / 1.43-1.48 against plain 0.63-0.71
 * / 1.44-1.69; int4 hybrid 2.67-2.79 / 4.34-4.52, plain 2.92-2.96 / 4.52-4.61, fused 2.74-2.75 / 5.95-6.18; the draft
 * model alike; in Chromium (1 thread) the target hybrid 1.49 / 13.79, plain 1.56 / 13.89, fused 1.45 / 16.97. (fp16
 * compute on wasm ties within noise.) Measuring cost more than the difference it finds: 0.5-0.7 s a model in Node and
 * about 7 of a first visit's 13 s in Chromium. Exact decoding falls back to plain.
 */
export const WASM_VARIANTS: readonly GraphVariant[] = ['hybrid', 'plain'];

/** Where a variant choice is remembered for this device, shape and precision (and adapter, on WebGPU). */
async function choiceKeys(
  ort: Ort,
  model: LoadedModel,
  device: Device,
  precision: Required<ProbePrecision>,
  embeddingType: 'float16' | 'float32' | undefined,
): Promise<{ key: string; storeKey: string }> {
  const cfg = model.config;
  const key = [
    device,
    cfg.hiddenSize,
    cfg.intermediateSize,
    cfg.numHeads,
    cfg.numKvHeads,
    cfg.headDim,
    precision.weights,
    precision.compute,
    ...(precision.rowInvariant ? ['row-invariant'] : []),
  ].join('/');
  // Measured in an earlier process or visit with this onnxruntime build: about a second saved at every start.
  // v2: the fastest-of-nine probe (choices made by the earlier median-of-five probe are measured again); v3: the
  // results checked before timing (a choice made without the check is measured again).
  // onnxruntime's own adapter where it has one (an app may have set it, or a power preference), else the default.
  const inUse = (ort.env as { webgpu?: { adapter?: AdapterLike } } | undefined)?.webgpu?.adapter;
  const adapter = device === 'webgpu' ? `/${await adapterIdentity(undefined, inUse)}` : '';
  return { key, storeKey: `graph-variant:v3:${ort.env?.versions?.web ?? '?'}:${key}/${embeddingType ?? ''}${adapter}` };
}

/** The variants a choice is made among: those that can take the row-invariant attention when it is asked for. */
const candidatesFor = (precision: ProbePrecision): readonly GraphVariant[] =>
  precision.rowInvariant ? ROW_INVARIANT_VARIANTS : GRAPH_VARIANTS;

/** A choice remembered in this process, or in `memory` by an earlier one (null: none that applies). */
async function rememberedChoice(
  keys: { key: string; storeKey: string },
  candidates: readonly GraphVariant[],
  memory: VariantMemory | undefined,
): Promise<VariantChoice | null> {
  const known = remembered.get(keys.key);
  if (known) return known;
  const stored = memory ? await safeGet(memory, keys.storeKey) : undefined;
  if (!isChoice(stored) || !candidates.includes(stored.variant)) return null;
  remembered.set(keys.key, stored);
  return stored;
}

/**
 * graph 'auto' on wasm: a choice measured and remembered earlier (by a version that measured on wasm, or
 * measureVariants called for it), else WASM_VARIANTS' first, not measured (no timings).
 */
export async function wasmVariant(
  ort: Ort,
  model: LoadedModel,
  precision: Required<ProbePrecision>,
  embeddingType?: 'float16' | 'float32',
  memory?: VariantMemory,
): Promise<VariantChoice> {
  const candidates = candidatesFor(precision);
  const keys = await choiceKeys(ort, model, 'wasm', precision, embeddingType);
  return (
    (await rememberedChoice(keys, candidates, memory)) ?? {
      variant: WASM_VARIANTS.find((v) => candidates.includes(v)) ?? 'plain',
      timings: [],
    }
  );
}

export async function measureVariants(
  ort: Ort,
  model: LoadedModel,
  device: Device,
  precision: Required<ProbePrecision>,
  embeddingType?: 'float16' | 'float32',
  memory?: VariantMemory,
): Promise<VariantChoice> {
  // A software WebGPU adapter takes a second a call: fewer rounds there (the variants differ by far more than noise).
  // On wasm the probe runs while V8 is still tiering onnxruntime's kernels up, and a median of five flipped the
  // choice between processes (hybrid's T(16) measured 7.4 to 17.1 ms in three runs, plain's T(1) 0.85 to 5.0): the
  // fastest of nine, after three warm-up rounds, is what each variant does once its kernels are optimised.
  const [warmups, reps] = device === 'webgpu' ? [1, 2] : [3, 9];
  const probes: Probe[] = [];
  const timings: VariantTiming[] = [];
  const candidates = candidatesFor(precision);
  const keys = await choiceKeys(ort, model, device, precision, embeddingType);
  const { key, storeKey } = keys;
  const known = await rememberedChoice(keys, candidates, memory);
  if (known) return known;
  await openProbes(ort, model, device, precision, candidates, embeddingType, probes, timings);
  await dropWrongVariants(ort, probes, timings, precision.compute);
  const call = async (p: Probe, q: number) => {
    const feeds = { ...feedTensors(ort, p.graph.call(q)), ...p.past };
    const t = performance.now();
    const out = await p.session.run(feeds);
    await (out.hidden as OrtModule.Tensor).getData();
    const ms = performance.now() - t;
    for (const v of Object.values(out)) if (v.location === 'gpu-buffer') v.dispose();
    return ms;
  };
  const times = new Map<string, number[]>();
  for (let r = -warmups; r < reps; r++) {
    for (const p of r % 2 ? probes : [...probes].reverse()) {
      for (const q of [1, PROBE_WIDE]) {
        const ms = await call(p, q);
        if (r >= 0) times.set(`${p.variant}${q}`, [...(times.get(`${p.variant}${q}`) ?? []), ms]);
      }
    }
  }
  for (const p of probes) {
    timings.push({
      variant: p.variant,
      q1: fastest(times.get(`${p.variant}1`) ?? []),
      q16: fastest(times.get(`${p.variant}${PROBE_WIDE}`) ?? []),
    });
    await closeProbe(p);
  }
  const ok = timings.filter((t) => !t.error);
  const best = ok.reduce<VariantTiming | null>((a, t) => (a && a.q1 + a.q16 <= t.q1 + t.q16 ? a : t), null);
  const choice = {
    variant: best?.variant ?? 'plain',
    timings: timings.sort((a, b) => a.variant.localeCompare(b.variant)),
  };
  remembered.set(key, choice);
  if (memory) await safeSet(memory, storeKey, choice);
  return choice;
}
