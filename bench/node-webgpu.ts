/**
 * The benchmark's node-webgpu backend: onnxruntime-web's WebGPU EP in Node on Dawn (lavapipe on a CPU-only
 * machine, the vendor's Vulkan driver on a GPU machine), through the same interleaved harness as the other
 * backends, plus the target's verify-cost curve in fp32 and in fp16 (and the curves of any further models, e.g.
 * real-shaped ones written on a GPU machine by tools/gpu-kit/write_model.py), and exact decoding's load check
 * (src/model/exact.ts) for each precision and graph that can be row-invariant: which pass on this adapter.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import webgpuPackage from 'webgpu/package.json' with { type: 'json' };
import type { CostCurve } from '../src/engine/calibrate';
import { METHOD_NAMES } from '../src/engine/drafters/index';
import { SpecEngine } from '../src/engine/engine';
import type { KeyValueStore } from '../src/engine/store';
import { checkExact } from '../src/model/exact';
import { GRAPH_VARIANTS, type GraphVariant, ROW_INVARIANT_VARIANTS } from '../src/model/graph/llama';
import type { ComputeType } from '../src/model/index';
import { loadModel } from '../src/model/load';
import { PRECISIONS, type Precision } from '../src/model/precision';
import { ModelRunner } from '../src/model/runner';
import { ortForNodeWebGpu } from '../src/runtime/ort-node-webgpu';
import { type AdapterReport, describeAdapter } from '../src/runtime/webgpu';
import { median } from '../src/util/median';
import { type FeedsAB, feedsAB, feedsABLine } from './feeds-ab';
import { type BenchOptions, type BenchPrompt, type BenchReport, markdown, runBench } from './harness';
import { eagleHeadCosts, type HeadCostRow, headCostsMarkdown } from './head-costs';
import { benchEngines, extrasOptions, type HeadsFolders } from './heads-engines';
import { type BenchCli, plannedMethods, selectPrompts } from './options';
import { type TransferCost, transferCosts, transferCostsLine } from './transfer-costs';

export type PlanName = 'smoke' | 'software' | 'gpu';

/**
 * How much to run: lavapipe computes on the CPU (far slower than wasm), so its plan is short; 'smoke' only proves
 * that everything runs (the kit's check).
 */
export const NODE_WEBGPU_PLANS: Record<
  PlanName,
  { perCategory: number; categories: string[] | null; options: Omit<BenchOptions, 'prompts'> }
> = {
  smoke: {
    perCategory: 1,
    categories: ['austen-heldout'],
    options: { methods: ['ar', 'chain'], maxNewTokens: 4, repeats: 1, curveQs: [1, 2, 4], curveReps: 1 },
  },
  software: {
    perCategory: 1,
    categories: ['austen-heldout', 'repeat-quote'],
    options: {
      methods: ['ar', 'chain', 'dynamic', 'lookup', 'eagle', 'medusa'],
      maxNewTokens: 12,
      repeats: 1,
      curveQs: [1, 2, 4, 8, 16, 32, 64],
      curveReps: 3,
    },
  },
  gpu: {
    perCategory: 4,
    categories: null,
    options: {
      methods: [...METHOD_NAMES],
      maxNewTokens: 64,
      repeats: 2,
      curveQs: [1, 2, 4, 8, 16, 32, 64],
      curveReps: 7,
    },
  },
};

/** One curve to measure per model: a precision and a graph variant ('auto': the engine's measured choice). */
export interface CurveVariant {
  precision: Precision;
  graph: GraphVariant | 'auto';
}

export interface PrecisionCurve {
  model: string;
  compute: ComputeType;
  /** What the target ran: its precision (fp32, fp16, int4, int4-fp16) and graph variant, when it loaded. */
  precision?: string;
  graph?: string;
  /** What was asked for (precision/graph). */
  asked?: string;
  /** Bytes of weights one call reads in this precision. */
  weightBytes: number;
  curve?: CostCurve;
  /**
   * The process's CPU time (user + system, all threads) over the wall time of the curve's calibration: near 1 or
   * more, the calls wait on the CPU side (onnxruntime's dispatching, Dawn's encoding); near 0, on the GPU or driver.
   */
  cpuOverWall?: number;
  error?: string;
}

/** Exact decoding's load check on this adapter: one precision and graph, built row-invariant. */
export interface ExactCheckReport {
  precision: string;
  graph: string;
  exact?: boolean;
  maxDiff?: number;
  rowsDiffering?: number;
  error?: string;
}

/** Milliseconds of Dawn's own round trips on this adapter, without onnxruntime (min and median of 30 each). */
export interface RoundTripProbe {
  /** A 256-byte copy submitted and its destination mapped for reading: the floor under every readback. */
  copyAndMap: { min: number; median: number };
  /** An empty submit, then queue.onSubmittedWorkDone(). */
  submitDone: { min: number; median: number };
  /**
   * The device's own copy bandwidth: large buffer-to-buffer copies in one submit, bytes copied per second (each byte
   * read once and written once), the best and the median of the repeats. What plain decoding's weight reads (bytes
   * read per second) can be held against.
   */
  copyBandwidth?: CopyBandwidth;
}

export interface CopyBandwidth {
  /** Bytes copied per submit (copies x buffer size). */
  bytes: number;
  bestGBps: number;
  medianGBps: number;
}

/** Buffer size and copies per submit of the copy-bandwidth probe (the size capped by the device's maxBufferSize). */
const COPY_PROBE = { bytes: 256 * 2 ** 20, copies: 8, reps: 5 } as const;

/**
 * Copies `copies` times a buffer of up to COPY_PROBE.bytes into another in one submit and waits for the queue, after
 * one untimed submit: bytes copied per second (GB = 1e9 bytes).
 */
export async function copyBandwidth(dev: GPUDevice): Promise<CopyBandwidth> {
  const size = Math.min(COPY_PROBE.bytes, dev.limits.maxBufferSize) & ~3;
  const src = dev.createBuffer({ size, usage: GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  const dst = dev.createBuffer({ size, usage: GPUBufferUsage.COPY_DST });
  try {
    const once = async () => {
      const enc = dev.createCommandEncoder();
      for (let i = 0; i < COPY_PROBE.copies; i++) enc.copyBufferToBuffer(src, 0, dst, 0, size);
      const t = performance.now();
      dev.queue.submit([enc.finish()]);
      await dev.queue.onSubmittedWorkDone();
      return performance.now() - t;
    };
    await once();
    const rates: number[] = [];
    for (let r = 0; r < COPY_PROBE.reps; r++) rates.push((size * COPY_PROBE.copies) / (await once()) / 1e6);
    return { bytes: size * COPY_PROBE.copies, bestGBps: Math.max(...rates), medianGBps: median(rates) };
  } finally {
    src.destroy();
    dst.destroy();
  }
}

export interface NodeWebGpuReport {
  adapter: AdapterReport;
  /** Dawn's round-trip latency on this adapter (what a model call waits on at least once). */
  roundTrip?: RoundTripProbe | { error: string };
  /** The adapter in words (vendor / architecture / description). */
  adapterName: string;
  webgpuPackage: string;
  /** Whether V8 tiered ORT's wasm up (SPEC_DECODER_WASM_TIERUP=1) or ran it with Liftoff only (the default). */
  wasmTierUp: boolean;
  plan: PlanName;
  bench: BenchReport;
  curves: PrecisionCurve[];
  exactChecks: ExactCheckReport[];
  /** What onnxruntime's WebGPU EP charges per input given and output read back (a tiny graph). */
  transfers?: TransferCost[] | { error: string };
  /** What one EAGLE head call costs, per graph form and KV-cache place (when a method ran on the head). */
  headCosts?: HeadCostRow[] | { error: string };
  /** The target's call with its inputs in GPU buffers against CPU inputs, in one process (--feeds-ab). */
  feedsAB?: FeedsAB | { error: string };
}

export interface NodeWebGpuBenchOptions {
  target: string;
  draft: string;
  prompts: BenchPrompt[];
  /** Command-line overrides (methods, categories, prompts per category, repeats, tokens). */
  cli?: BenchCli;
  /** Further model folders whose verify-cost curves (fp32 and fp16) to measure, target only. */
  curveModels?: string[];
  /** Default: 'software' on a fallback (CPU) adapter, 'gpu' otherwise. */
  plan?: PlanName;
  /** The curves to measure per model (default: fp32, and fp16 where the adapter has shader-f16, graph auto). */
  curveVariants?: CurveVariant[];
  /** Heads for the methods that run on them (medusa, eagle). */
  heads?: HeadsFolders;
  /** Also measure the GPU-buffer inputs against CPU inputs in this process (bench/feeds-ab.ts). */
  feedsAB?: boolean;
  /** Every round of the harness's timed generations (bench --trace). */
  onRound?: BenchOptions['onRound'];
  /** bench --remember: the engines' store kept between bench runs, and how many earlier runs it holds. */
  memory?: { store: KeyValueStore; earlierRuns: number };
  log: (line: string) => void;
  /**
   * Called with the report so far after the harness, after each curve and after each exact check, so that a run cut
   * short (the GPU kit runs under a time limit) still leaves what it measured.
   */
  progress?: (partial: NodeWebGpuReport) => void;
}

async function precisionCurve(
  ort: Parameters<typeof SpecEngine.load>[0],
  model: string,
  variant: CurveVariant,
  qs: number[],
  reps: number,
): Promise<PrecisionCurve> {
  const asked = `${variant.precision}/${variant.graph}`;
  let engine: SpecEngine | null = null;
  try {
    engine = await SpecEngine.load(ort, {
      target: model,
      device: 'webgpu',
      precision: variant.precision,
      graph: variant.graph,
    });
    const t = engine.target;
    const wall0 = performance.now();
    const cpu0 = process.cpuUsage();
    const { curve } = await engine.calibrate(qs, reps);
    const cpu = process.cpuUsage(cpu0);
    const cpuOverWall = (cpu.user + cpu.system) / 1000 / (performance.now() - wall0);
    return {
      model,
      compute: t.compute,
      precision: t.precision,
      graph: t.graph.variant,
      asked,
      weightBytes: t.computeWeightBytes,
      curve,
      cpuOverWall,
    };
  } catch (e) {
    const compute: ComputeType = variant.precision === 'fp16' ? 'fp16' : 'fp32';
    return { model, compute, asked, weightBytes: 0, error: (e as Error).message.split('\n')[0] ?? '' };
  } finally {
    await engine?.release();
  }
}

/** `fp32/plain,int4/fused,...` (a bare precision means graph auto); throws on an unknown name. */
export function parseCurveVariants(raw: string): CurveVariant[] {
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((item) => {
      const [precision, graph = 'auto'] = item.split('/');
      const precisions = PRECISIONS.filter((p) => p !== 'auto');
      const graphs = ['auto', ...GRAPH_VARIANTS];
      if (!(precisions as readonly string[]).includes(precision as string))
        throw new Error(`curve variant "${item}": the precision must be ${precisions.join(', ')}`);
      if (!graphs.includes(graph)) throw new Error(`curve variant "${item}": the graph must be ${graphs.join(', ')}`);
      return { precision: precision as Precision, graph: graph as CurveVariant['graph'] };
    });
}

/** Dawn's round trips on the adapter navigator.gpu gives (a device of its own, released after). */
export async function roundTripProbe(): Promise<RoundTripProbe | { error: string }> {
  let device: GPUDevice | null = null;
  try {
    const adapter = await navigator.gpu.requestAdapter();
    if (!adapter) return { error: 'no adapter' };
    device = await adapter.requestDevice();
    const dev = device;
    const src = dev.createBuffer({ size: 256, usage: GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
    const dst = dev.createBuffer({ size: 256, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const stats = (xs: number[]) => ({ min: Math.min(...xs), median: median(xs) });
    const time = async (step: () => Promise<void>) => {
      const out: number[] = [];
      for (let i = 0; i < 33; i++) {
        const t = performance.now();
        await step();
        if (i >= 3) out.push(performance.now() - t); // the first few warm up
      }
      return stats(out);
    };
    const copyAndMap = await time(async () => {
      const enc = dev.createCommandEncoder();
      enc.copyBufferToBuffer(src, 0, dst, 0, 256);
      dev.queue.submit([enc.finish()]);
      await dst.mapAsync(GPUMapMode.READ);
      dst.unmap();
    });
    const submitDone = await time(async () => {
      dev.queue.submit([]);
      await dev.queue.onSubmittedWorkDone();
    });
    src.destroy();
    dst.destroy();
    return { copyAndMap, submitDone, copyBandwidth: await copyBandwidth(dev) };
  } catch (e) {
    return { error: (e as Error).message.split('\n')[0] ?? 'failed' };
  } finally {
    device?.destroy();
  }
}

export async function benchNodeWebGpu(o: NodeWebGpuBenchOptions): Promise<NodeWebGpuReport | { error: string }> {
  const gpu = await ortForNodeWebGpu();
  if (!gpu.ok) return { error: gpu.reason };
  const adapterName = describeAdapter(gpu.adapter);
  o.log(`adapter: ${adapterName}`);
  const roundTrip = await roundTripProbe();
  o.log(`round trips: ${roundTripLine(roundTrip)}`);
  const transfers = await transferCosts(gpu.ort, 'webgpu').catch((e: Error) => ({
    error: e.message.split('\n')[0] ?? 'failed',
  }));
  o.log('error' in transfers ? `transfers: error: ${transfers.error}` : transferCostsLine(transfers));
  const planName = o.plan ?? (gpu.adapter.isFallbackAdapter ? 'software' : 'gpu');
  const plan = NODE_WEBGPU_PLANS[planName];
  const methods = o.cli ? plannedMethods(plan.options.methods, o.cli) : plan.options.methods;
  // The GPU kit's tree holds the EAGLE head or the draft model, not both: without the draft model's folder the run
  // goes on as --no-draft would (auto then drafts with the head, lookahead and prompt lookup).
  const draftThere = existsSync(join(o.draft, 'config.json'));
  if (!draftThere) o.log(`no draft model at ${o.draft}: running without one, as --no-draft`);
  const { engine, engineFor, release } = await benchEngines(
    methods,
    o.heads ?? {},
    (extras) =>
      SpecEngine.load(gpu.ort, {
        target: o.target,
        device: 'webgpu',
        ...(o.memory ? { store: o.memory.store } : {}),
        ...extrasOptions(extras, o.draft),
        ...(extras.draft && o.cli?.draftDevice ? { draftDevice: o.cli.draftDevice } : {}),
        ...(extras.heads && o.cli?.headsDevice ? { headsDevice: o.cli.headsDevice } : {}),
      }),
    o.log,
    'webgpu',
    draftThere && o.cli?.draftModel !== false,
  );
  const pairTarget = {
    compute: engine.target.compute,
    precision: engine.target.precision,
    graph: engine.target.graph.variant,
  };
  let bench: BenchReport;
  let headCosts: NodeWebGpuReport['headCosts'];
  try {
    o.log(`plan ${planName}: harness on the pair (${engine.target.compute})`);
    const cli = o.cli;
    bench = await runBench(engine, {
      ...plan.options,
      engineFor,
      ...(cli?.maxNewTokens ? { maxNewTokens: cli.maxNewTokens } : {}),
      ...(cli?.repeats ? { repeats: cli.repeats } : {}),
      ...(cli?.sampling ? { sampling: cli.sampling } : {}),
      ...(o.onRound ? { onRound: o.onRound } : {}),
      ...(o.memory ? { earlierRuns: o.memory.earlierRuns } : {}),
      methods,
      prompts: selectPrompts(
        o.prompts,
        cli?.categories ?? plan.categories,
        cli?.promptsPerCategory ?? plan.perCategory,
      ),
      log: o.log,
    });
    headCosts = await measureHeadCosts(gpu.ort, methods.map(engineFor), o.log);
  } finally {
    await release();
  }
  const variants: CurveVariant[] =
    o.curveVariants ??
    (gpu.adapter.shaderF16 ? ['fp32' as const, 'fp16' as const] : ['fp32' as const]).map((precision) => ({
      precision,
      graph: 'auto' as const,
    }));
  const curves: PrecisionCurve[] = [];
  const exact: ExactCheckReport[] = [];
  const report: NodeWebGpuReport = {
    adapter: gpu.adapter,
    adapterName,
    webgpuPackage: webgpuPackage.version,
    wasmTierUp: process.env.SPEC_DECODER_WASM_TIERUP === '1',
    roundTrip,
    transfers,
    plan: planName,
    bench,
    curves,
    exactChecks: exact,
    ...(headCosts ? { headCosts } : {}),
  };
  o.progress?.(report);
  if (o.feedsAB) {
    o.log('inputs in GPU buffers against CPU inputs');
    report.feedsAB = await feedsAB(gpu.ort, o.target).catch((e: Error) => ({
      error: e.message.split('\n')[0] ?? 'failed',
    }));
    o.log(feedsABLine(report.feedsAB));
    o.progress?.(report);
  }
  for (const model of [o.target, ...(o.curveModels ?? [])]) {
    for (const variant of variants) {
      if (model === o.target && variant.graph === 'auto' && variant.precision === pairTarget.precision) {
        curves.push({
          model,
          ...pairTarget,
          asked: `${variant.precision}/auto`,
          weightBytes: bench.targetWeightBytes,
          curve: bench.curve,
        });
        continue;
      }
      o.log(`verify-cost curve: ${model} in ${variant.precision}, graph ${variant.graph}`);
      curves.push(await precisionCurve(gpu.ort, model, variant, plan.options.curveQs, plan.options.curveReps));
      o.progress?.(report);
    }
  }
  await exactChecks(gpu.ort, o.target, gpu.adapter.shaderF16, o.log, (c) => {
    exact.push(c);
    o.progress?.(report);
  });
  return report;
}

/** The EAGLE head's call costs, on the first engine that holds an EAGLE head (none: not measured). */
async function measureHeadCosts(
  ort: Parameters<typeof eagleHeadCosts>[0],
  engines: readonly SpecEngine[],
  log: (line: string) => void,
): Promise<NodeWebGpuReport['headCosts']> {
  const engine = engines.find((e) => e.heads?.eagle3);
  if (!engine?.heads) return undefined;
  log('EAGLE head call costs');
  try {
    return await eagleHeadCosts(ort, engine.heads.loaded, engine.target.model, 'webgpu', engine.target.compute);
  } catch (e) {
    return { error: (e as Error).message.split('\n')[0] ?? 'failed' };
  }
}

/** The load check of exact decoding, per precision the adapter runs and graph that can be row-invariant. */
async function exactChecks(
  ort: Parameters<typeof ModelRunner.create>[0],
  target: string,
  shaderF16: boolean,
  log: (line: string) => void,
  done: (check: ExactCheckReport) => void,
): Promise<void> {
  const model = await loadModel(target);
  const precisions: Precision[] = shaderF16 ? ['fp32', 'fp16', 'int4'] : ['fp32', 'int4'];
  for (const precision of precisions) {
    for (const graph of ROW_INVARIANT_VARIANTS) {
      let runner: ModelRunner | null = null;
      let check: ExactCheckReport;
      try {
        runner = await ModelRunner.create(ort, model, {
          device: 'webgpu',
          precision,
          graph,
          rowInvariantAttention: true,
        });
        const c = await checkExact(runner);
        check = {
          precision: runner.precision,
          graph,
          exact: c.exact,
          maxDiff: c.maxDiff,
          rowsDiffering: c.rowsDiffering,
        };
      } catch (e) {
        check = { precision, graph, error: (e as Error).message.split('\n')[0] ?? '' };
      } finally {
        await runner?.release();
      }
      log(
        `exact check, ${check.precision} ${graph}: ${check.error ?? (check.exact ? 'exact' : `differs by ${check.maxDiff}`)}`,
      );
      done(check);
    }
  }
}

const ms = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(2));

/** The verify-cost curves as a markdown table: one row per model, precision and graph. */
export function curveTable(curves: PrecisionCurve[], wasmTierUp: boolean): string[] {
  const qs = [...new Set(curves.flatMap((c) => c.curve?.points.map((p) => p.q) ?? []))].sort((a, b) => a - b);
  const rows = curves.map((c) => {
    const cells = qs.map((q) => {
      const p = c.curve?.points.find((x) => x.q === q);
      return p ? `${ms(p.ms)} (${p.relative.toFixed(2)}x)` : '-';
    });
    const name = c.model.replace(/\/+$/, '').split('/').pop();
    const one = c.curve?.points.find((x) => x.q === 1);
    // Weight bytes read per second by a one-token call: what plain decoding achieves of the memory bandwidth.
    const gbs = one && c.weightBytes ? (c.weightBytes / 1e6 / one.ms).toFixed(1) : '-';
    const [askedPrecision, askedGraph] = c.asked?.split('/') ?? [];
    const what = `${c.precision ?? askedPrecision ?? c.compute} | ${c.graph ?? askedGraph ?? 'auto'}`;
    const body = c.error ? [`error: ${c.error}`, ...qs.slice(1).map(() => '')].join(' | ') : cells.join(' | ');
    const cpu = c.cpuOverWall === undefined ? '-' : c.cpuOverWall.toFixed(2);
    return `| ${name} | ${what} | ${(c.weightBytes / 1e6).toFixed(1)} | ${gbs} | ${cpu} | ${body} |`;
  });
  return [
    `Verify-cost curves (ms per call after ${curves.find((c) => c.curve)?.curve?.context ?? 64} cached tokens, T(q)/T(1) in brackets; GB/s: weight bytes over the one-token call's time; CPU/wall: the process's CPU time over the wall time of the calls; ORT's wasm ${wasmTierUp ? 'tiered up by V8' : 'run by Liftoff only'}):`,
    '',
    `| model | precision | graph | weights MB | GB/s at q=1 | CPU/wall | ${qs.map((q) => `q=${q}`).join(' | ')} |`,
    `| --- | --- | --- | --- | --- | --- | ${qs.map(() => '---').join(' | ')} |`,
    ...rows,
  ];
}

export function roundTripLine(r: RoundTripProbe | { error: string } | undefined): string {
  if (!r) return 'not measured';
  if ('error' in r) return `error: ${r.error}`;
  const f = (x: { min: number; median: number }) => `${x.median.toFixed(3)} ms (min ${x.min.toFixed(3)})`;
  const bw = r.copyBandwidth;
  const copy = bw
    ? `; copy bandwidth ${bw.bestGBps.toFixed(1)} GB/s (median ${bw.medianGBps.toFixed(1)}; ${Math.round(bw.bytes / 2 ** 20)} MiB copied a submit)`
    : '';
  return `a 256-byte copy and mapAsync ${f(r.copyAndMap)}; an empty submit and onSubmittedWorkDone ${f(r.submitDone)}${copy}`;
}

export function nodeWebGpuMarkdown(r: NodeWebGpuReport): string {
  return [
    markdown(`WebGPU in Node (Dawn ${r.webgpuPackage}): ${r.adapterName}`, r.bench),
    '',
    `Dawn's round trips on this adapter, without onnxruntime (median of 30): ${roundTripLine(r.roundTrip)}.`,
    '',
    ...(r.transfers
      ? [
          'error' in r.transfers
            ? `onnxruntime's transfers: error: ${r.transfers.error}`
            : transferCostsLine(r.transfers),
          '',
        ]
      : []),
    ...curveTable(r.curves, r.wasmTierUp),
    '',
    ...(r.feedsAB ? [feedsABLine(r.feedsAB), ''] : []),
    ...(r.headCosts
      ? [
          'error' in r.headCosts
            ? `EAGLE head call: error: ${r.headCosts.error}`
            : headCostsMarkdown(r.headCosts, r.bench.curve.points[0]?.ms ?? 0),
          '',
        ]
      : []),
    "Exact decoding's load check on this adapter (the target built row-invariant: a five-node tree against one-token calls, bit for bit):",
    '',
    '| precision | graph | verify rows = one-token rows |',
    '| --- | --- | --- |',
    ...(r.exactChecks ?? []).map(
      (c) =>
        `| ${c.precision} | ${c.graph} | ${c.error ? `error: ${c.error}` : c.exact ? 'yes, bit for bit' : `no: ${c.rowsDiffering} of 5 rows, by up to ${c.maxDiff?.toPrecision(2)}`} |`,
    ),
  ].join('\n');
}
