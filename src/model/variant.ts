/**
 * Choosing the graph variant on this device by measurement. Building every full session would hold the weights
 * several times; instead each body is built for the model's first two layers (real widths, real weights, no head)
 * and timed against the others, interleaved, at q = 1 (decoding) and q = 16 (a verify call) after a short context;
 * the least T(1) + T(16) wins. Per-layer cost is what the variants differ in (the head and the embedding are the
 * same in all), so the probe's ratio is the full model's ratio, at a fraction of the memory and time. The choice is
 * remembered per device, shape and precision for the life of the page or process.
 */
import type * as OrtModule from 'onnxruntime-common';
import { safeGet, safeSet } from '../engine/store';
import { GRAPH_VARIANTS, type GraphVariant, ROW_INVARIANT_VARIANTS } from './graph/llama';
import type { LoadedModel } from './load';
import type { Device } from './precision';
import { buildProbeGraph, type FeedSpec, PROBE_WIDE, type ProbeGraph, type ProbePrecision } from './probe-graph';

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

/**
 * The variants graph 'auto' chooses among on a device. On WebGPU not the fused graph: onnxruntime's
 * GroupQueryAttention there verifies a branching tree of 32 nodes wrongly (logits off by up to 0.8 against the
 * float64 reference, where a 7-node tree and a chain are right; src/model/graph/llama.webgpu.test.ts), and EAGLE's
 * trees reach 64 nodes: a tree method on that graph left plain decoding's text within the first dozen tokens.
 */
export function autoVariants(device: Device, rowInvariant: boolean): readonly GraphVariant[] {
  const all = rowInvariant ? ROW_INVARIANT_VARIANTS : GRAPH_VARIANTS;
  return device === 'webgpu' ? all.filter((v) => v !== 'fused') : all;
}

/** The least of the times (NaN for none). */
export const fastest = (xs: readonly number[]): number => (xs.length > 0 ? Math.min(...xs) : Number.NaN);
const remembered = new Map<string, VariantChoice>();

/** Forget the choices remembered in this process (tests: a fresh process, as far as the variants go). */
export function forgetVariantChoices(): void {
  remembered.clear();
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
  const cfg = model.config;
  const tensor = (f: FeedSpec) => new ort.Tensor(f.type, f.data, f.dims);
  const tensors = (feeds: Record<string, FeedSpec>) =>
    Object.fromEntries(Object.entries(feeds).map(([name, f]) => [name, tensor(f)]));

  interface Probe {
    variant: GraphVariant;
    session: OrtModule.InferenceSession;
    graph: ProbeGraph;
    past: Record<string, OrtModule.Tensor>;
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
    ...(precision.rowInvariant ? ['row-invariant'] : []),
  ].join('/');
  const candidates = autoVariants(device, precision.rowInvariant);
  const known = remembered.get(key);
  if (known) return known;
  // Measured in an earlier process or visit with this onnxruntime build: about a second saved at every start.
  // v2: the fastest-of-nine probe (choices made by the earlier median-of-five probe are measured again).
  const storeKey = `graph-variant:v2:${ort.env?.versions?.web ?? '?'}:${key}/${embeddingType ?? ''}`;
  const stored = memory ? await safeGet(memory, storeKey) : undefined;
  if (isChoice(stored) && candidates.includes(stored.variant)) {
    remembered.set(key, stored);
    return stored;
  }
  for (const variant of candidates) {
    try {
      const graph = buildProbeGraph(model, precision, variant, embeddingType);
      const preferredOutputLocation: Record<string, 'gpu-buffer' | 'cpu'> = { hidden: 'cpu' };
      if (device === 'webgpu') for (const [present] of graph.carry) preferredOutputLocation[present] = 'gpu-buffer';
      const session = await ort.InferenceSession.create(graph.model, {
        executionProviders: [device],
        graphOptimizationLevel: 'all',
        logSeverityLevel: 3, // errors only (see runner.ts)
        externalData: graph.externalData,
        preferredOutputLocation,
      });
      // A context of PROBE_CONTEXT tokens, kept as the past of every timed call.
      const out = await session.run(tensors(graph.context));
      const past = Object.fromEntries(graph.carry.map(([present, name]) => [name, out[present] as OrtModule.Tensor]));
      probes.push({ variant, session, graph, past });
    } catch (e) {
      timings.push({ variant, q1: Number.NaN, q16: Number.NaN, error: (e as Error).message.split('\n')[0] ?? '' });
    }
  }
  const call = async (p: Probe, q: number) => {
    const feeds = { ...tensors(p.graph.call(q)), ...p.past };
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
    for (const t of Object.values(p.past)) if (t.location === 'gpu-buffer') t.dispose();
    await p.session.release();
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
