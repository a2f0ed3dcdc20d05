/**
 * Choosing the graph variant on this device by measurement. Building every full session would hold the weights
 * several times; instead each body is built for the model's first two layers (real widths, real weights, no head)
 * and timed against the others, interleaved, at q = 1 (decoding) and q = 16 (a verify call) after a short context;
 * the least T(1) + T(16) wins. Per-layer cost is what the variants differ in (the head and the embedding are the
 * same in all), so the probe's ratio is the full model's ratio, at a fraction of the memory and time. The choice is
 * remembered per device, shape and precision for the life of the page or process.
 */
import type * as OrtModule from 'onnxruntime-common';
import { chainBias } from '../engine/tree';
import { buildLlamaGraph, type ComputeType, GRAPH_VARIANTS, type GraphVariant, type WeightFormat } from './graph/llama';
import { GRAPH_INPUTS, pastKey, pastValue, presentKey, presentValue } from './graph/signature';
import type { LoadedModel } from './load';
import type { Device } from './precision';

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

function isChoice(v: unknown): v is VariantChoice {
  const c = v as Partial<VariantChoice> | undefined;
  return (
    typeof c === 'object' &&
    c !== null &&
    (GRAPH_VARIANTS as readonly unknown[]).includes(c.variant) &&
    Array.isArray(c.timings)
  );
}

const PROBE_LAYERS = 2;
/** The least of the times (NaN for none). */
const fastest = (xs: readonly number[]): number => (xs.length > 0 ? Math.min(...xs) : Number.NaN);
const WIDE = 16;
const remembered = new Map<string, VariantChoice>();

/** Forget the choices remembered in this process (tests: a fresh process, as far as the variants go). */
export function forgetVariantChoices(): void {
  remembered.clear();
}
const CONTEXT = 32;

export async function measureVariants(
  ort: Ort,
  model: LoadedModel,
  device: Device,
  precision: { weights: WeightFormat; compute: ComputeType },
  embeddingType?: 'float16' | 'float32',
  memory?: VariantMemory,
): Promise<VariantChoice> {
  // A software WebGPU adapter takes a second a call: fewer rounds there (the variants differ by far more than noise).
  // On wasm the probe runs while V8 is still tiering onnxruntime's kernels up, and a median of five flipped the
  // choice between processes (hybrid's T(16) measured 7.4 to 17.1 ms in three runs, plain's T(1) 0.85 to 5.0): the
  // fastest of nine, after three warm-up rounds, is what each variant does once its kernels are optimised.
  const [warmups, reps] = device === 'webgpu' ? [1, 2] : [3, 9];
  const cfg = model.config;
  const layers = Math.min(PROBE_LAYERS, cfg.numLayers);
  const T = precision.compute === 'fp16' ? 'float16' : 'float32';
  const int64 = (v: number[], dims: number[]) =>
    new ort.Tensor('int64', BigInt64Array.from(v.map((x) => BigInt(x))), dims);
  const emptyCache = () =>
    T === 'float16'
      ? new ort.Tensor('float16', new Uint16Array(0), [1, cfg.numKvHeads, 0, cfg.headDim])
      : new ort.Tensor('float32', new Float32Array(0), [1, cfg.numKvHeads, 0, cfg.headDim]);
  const tokens = (n: number, at: number) => Array.from({ length: n }, (_, i) => (at + i * 7919) % cfg.vocabSize);

  interface Probe {
    variant: GraphVariant;
    session: OrtModule.InferenceSession;
    past: OrtModule.Tensor[];
  }
  const probes: Probe[] = [];
  const timings: VariantTiming[] = [];
  const key = [
    device,
    cfg.hiddenSize,
    cfg.intermediateSize,
    cfg.numHeads,
    cfg.numKvHeads,
    cfg.headDim,
    precision.weights,
    precision.compute,
  ].join('/');
  const known = remembered.get(key);
  if (known) return known;
  // Measured in an earlier process or visit with this onnxruntime build: about a second saved at every start.
  // v2: the fastest-of-nine probe (choices made by the earlier median-of-five probe are measured again).
  const storeKey = `graph-variant:v2:${ort.env?.versions?.web ?? '?'}:${key}/${embeddingType ?? ''}`;
  try {
    const stored = await memory?.get(storeKey);
    if (isChoice(stored)) {
      remembered.set(key, stored);
      return stored;
    }
  } catch {
    // Measured again.
  }
  for (const variant of GRAPH_VARIANTS) {
    try {
      const graph = buildLlamaGraph(cfg, model.weights, model.files, {
        compute: precision.compute,
        weights: precision.weights,
        variant,
        probeLayers: layers,
        ...(embeddingType ? { embeddingType } : {}),
      });
      const preferredOutputLocation: Record<string, 'gpu-buffer' | 'cpu'> = { hidden: 'cpu' };
      if (device === 'webgpu') {
        for (let i = 0; i < layers; i++) {
          preferredOutputLocation[presentKey(i)] = 'gpu-buffer';
          preferredOutputLocation[presentValue(i)] = 'gpu-buffer';
        }
      }
      const session = await ort.InferenceSession.create(graph.model, {
        executionProviders: [device],
        graphOptimizationLevel: 'all',
        logSeverityLevel: 3, // errors only (see runner.ts)
        externalData: graph.externalData,
        preferredOutputLocation,
      });
      // A context of CONTEXT tokens, kept as the past of every timed call.
      const feeds: Record<string, OrtModule.Tensor> = {
        [GRAPH_INPUTS.inputIds]: int64(tokens(CONTEXT, 1), [1, CONTEXT]),
        [GRAPH_INPUTS.positionIds]: int64(
          Array.from({ length: CONTEXT }, (_, i) => i),
          [1, CONTEXT],
        ),
        [GRAPH_INPUTS.attentionBias]: new ort.Tensor('float32', chainBias(0, CONTEXT), [1, 1, CONTEXT, CONTEXT]),
        [GRAPH_INPUTS.keepIndices]: int64([], [0]),
        [GRAPH_INPUTS.logitsRows]: int64([CONTEXT - 1], [1]),
      };
      for (let i = 0; i < layers; i++) {
        feeds[pastKey(i)] = emptyCache();
        feeds[pastValue(i)] = emptyCache();
      }
      const out = await session.run(feeds);
      const past: OrtModule.Tensor[] = [];
      for (let i = 0; i < layers; i++) past.push(out[presentKey(i)] as never, out[presentValue(i)] as never);
      probes.push({ variant, session, past });
    } catch (e) {
      timings.push({ variant, q1: Number.NaN, q16: Number.NaN, error: (e as Error).message.split('\n')[0] ?? '' });
    }
  }
  const keep = Array.from({ length: CONTEXT }, (_, i) => i);
  const call = async (p: Probe, q: number) => {
    const feeds: Record<string, OrtModule.Tensor> = {
      [GRAPH_INPUTS.inputIds]: int64(tokens(q, 5), [1, q]),
      [GRAPH_INPUTS.positionIds]: int64(
        Array.from({ length: q }, (_, i) => CONTEXT + i),
        [1, q],
      ),
      [GRAPH_INPUTS.attentionBias]: new ort.Tensor('float32', chainBias(CONTEXT, q), [1, 1, q, CONTEXT + q]),
      [GRAPH_INPUTS.keepIndices]: int64(keep, [CONTEXT]),
      [GRAPH_INPUTS.logitsRows]: int64([q - 1], [1]),
    };
    for (let i = 0; i < layers; i++) {
      feeds[pastKey(i)] = p.past[2 * i] as OrtModule.Tensor;
      feeds[pastValue(i)] = p.past[2 * i + 1] as OrtModule.Tensor;
    }
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
      for (const q of [1, WIDE]) {
        const ms = await call(p, q);
        if (r >= 0) times.set(`${p.variant}${q}`, [...(times.get(`${p.variant}${q}`) ?? []), ms]);
      }
    }
  }
  for (const p of probes) {
    timings.push({
      variant: p.variant,
      q1: fastest(times.get(`${p.variant}1`) ?? []),
      q16: fastest(times.get(`${p.variant}${WIDE}`) ?? []),
    });
    for (const t of p.past) if (t.location === 'gpu-buffer') t.dispose();
    await p.session.release();
  }
  const ok = timings.filter((t) => !t.error);
  const best = ok.reduce<VariantTiming | null>((a, t) => (a && a.q1 + a.q16 <= t.q1 + t.q16 ? a : t), null);
  const choice = {
    variant: best?.variant ?? 'plain',
    timings: timings.sort((a, b) => a.variant.localeCompare(b.variant)),
  };
  remembered.set(key, choice);
  try {
    await memory?.set(storeKey, choice);
  } catch {
    // Not remembered: measured again next time.
  }
  return choice;
}
