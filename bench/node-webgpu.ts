/**
 * The benchmark's node-webgpu backend: onnxruntime-web's WebGPU EP in Node on Dawn (lavapipe on a CPU-only
 * machine, the vendor's Vulkan driver on a GPU machine), through the same interleaved harness as the other
 * backends, plus the target's verify-cost curve in fp32 and in fp16 (and the curves of any further models, e.g.
 * real-shaped ones written on a GPU machine by tools/gpu-kit/write_model.py), and exact decoding's load check
 * (src/model/exact.ts) for each precision and graph that can be row-invariant: which pass on this adapter.
 */
import webgpuPackage from 'webgpu/package.json' with { type: 'json' };
import type { CostCurve } from '../src/engine/calibrate';
import { METHOD_NAMES } from '../src/engine/drafters/index';
import { SpecEngine } from '../src/engine/engine';
import { checkExact } from '../src/model/exact';
import { ROW_INVARIANT_VARIANTS } from '../src/model/graph/llama';
import type { ComputeType } from '../src/model/index';
import { loadModel } from '../src/model/load';
import type { Precision } from '../src/model/precision';
import { ModelRunner } from '../src/model/runner';
import { ortForNodeWebGpu } from '../src/runtime/ort-node-webgpu';
import { type AdapterReport, describeAdapter } from '../src/runtime/webgpu';
import { type BenchOptions, type BenchPrompt, type BenchReport, markdown, runBench } from './harness';
import { type HeadsFolders, loadHeadsEngines, releaseAll } from './heads-engines';
import { type BenchCli, plannedMethods, selectPrompts } from './options';

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

export interface PrecisionCurve {
  model: string;
  compute: ComputeType;
  /** Bytes of weights one call reads in this precision. */
  weightBytes: number;
  curve?: CostCurve;
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

export interface NodeWebGpuReport {
  adapter: AdapterReport;
  /** The adapter in words (vendor / architecture / description). */
  adapterName: string;
  webgpuPackage: string;
  /** Whether V8 tiered ORT's wasm up (SPEC_DECODER_WASM_TIERUP=1) or ran it with Liftoff only (the default). */
  wasmTierUp: boolean;
  plan: PlanName;
  bench: BenchReport;
  curves: PrecisionCurve[];
  exactChecks: ExactCheckReport[];
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
  /** Heads for the methods that run on them (medusa, eagle). */
  heads?: HeadsFolders;
  log: (line: string) => void;
}

async function precisionCurve(
  ort: Parameters<typeof SpecEngine.load>[0],
  model: string,
  compute: ComputeType,
  qs: number[],
  reps: number,
): Promise<PrecisionCurve> {
  let engine: SpecEngine | null = null;
  try {
    engine = await SpecEngine.load(ort, { target: model, device: 'webgpu', compute });
    const { curve } = await engine.calibrate(qs, reps);
    return { model, compute, weightBytes: engine.target.computeWeightBytes, curve };
  } catch (e) {
    return { model, compute, weightBytes: 0, error: (e as Error).message };
  } finally {
    await engine?.release();
  }
}

export async function benchNodeWebGpu(o: NodeWebGpuBenchOptions): Promise<NodeWebGpuReport | { error: string }> {
  const gpu = await ortForNodeWebGpu();
  if (!gpu.ok) return { error: gpu.reason };
  const adapterName = describeAdapter(gpu.adapter);
  o.log(`adapter: ${adapterName}`);
  const planName = o.plan ?? (gpu.adapter.isFallbackAdapter ? 'software' : 'gpu');
  const plan = NODE_WEBGPU_PLANS[planName];
  const engine = await SpecEngine.load(gpu.ort, { target: o.target, draft: o.draft, device: 'webgpu' });
  const methods = o.cli ? plannedMethods(plan.options.methods, o.cli) : plan.options.methods;
  const heads = await loadHeadsEngines(
    methods,
    o.heads ?? {},
    (h, withDraft) =>
      SpecEngine.load(gpu.ort, {
        target: o.target,
        heads: h,
        ...(withDraft ? { draft: o.draft } : {}),
        device: 'webgpu',
      }),
    o.log,
    'webgpu',
  );
  let bench: BenchReport;
  try {
    o.log(`plan ${planName}: harness on the pair (${engine.target.compute})`);
    const cli = o.cli;
    bench = await runBench(engine, {
      ...plan.options,
      engineFor: (m) => heads.get(m) ?? engine,
      ...(cli?.maxNewTokens ? { maxNewTokens: cli.maxNewTokens } : {}),
      ...(cli?.repeats ? { repeats: cli.repeats } : {}),
      ...(cli?.sampling ? { sampling: cli.sampling } : {}),
      methods,
      prompts: selectPrompts(
        o.prompts,
        cli?.categories ?? plan.categories,
        cli?.promptsPerCategory ?? plan.perCategory,
      ),
      log: o.log,
    });
  } finally {
    await engine.release();
    await releaseAll(heads);
  }
  const computes: ComputeType[] = gpu.adapter.shaderF16 ? ['fp32', 'fp16'] : ['fp32'];
  const curves: PrecisionCurve[] = [];
  for (const model of [o.target, ...(o.curveModels ?? [])]) {
    for (const compute of computes) {
      if (model === o.target && compute === bench.compute) {
        curves.push({ model, compute, weightBytes: bench.targetWeightBytes, curve: bench.curve });
        continue;
      }
      o.log(`verify-cost curve: ${model} in ${compute}`);
      curves.push(await precisionCurve(gpu.ort, model, compute, plan.options.curveQs, plan.options.curveReps));
    }
  }
  return {
    adapter: gpu.adapter,
    adapterName,
    webgpuPackage: webgpuPackage.version,
    wasmTierUp: process.env.SPEC_DECODER_WASM_TIERUP === '1',
    plan: planName,
    bench,
    curves,
    exactChecks: await exactChecks(gpu.ort, o.target, gpu.adapter.shaderF16, o.log),
  };
}

/** The load check of exact decoding, per precision the adapter runs and graph that can be row-invariant. */
async function exactChecks(
  ort: Parameters<typeof ModelRunner.create>[0],
  target: string,
  shaderF16: boolean,
  log: (line: string) => void,
): Promise<ExactCheckReport[]> {
  const model = await loadModel(target);
  const precisions: Precision[] = shaderF16 ? ['fp32', 'fp16', 'int4'] : ['fp32', 'int4'];
  const out: ExactCheckReport[] = [];
  for (const precision of precisions) {
    for (const graph of ROW_INVARIANT_VARIANTS) {
      let runner: ModelRunner | null = null;
      try {
        runner = await ModelRunner.create(ort, model, {
          device: 'webgpu',
          precision,
          graph,
          rowInvariantAttention: true,
        });
        const c = await checkExact(runner);
        out.push({
          precision: runner.precision,
          graph,
          exact: c.exact,
          maxDiff: c.maxDiff,
          rowsDiffering: c.rowsDiffering,
        });
      } catch (e) {
        out.push({ precision, graph, error: (e as Error).message.split('\n')[0] ?? '' });
      } finally {
        await runner?.release();
      }
      const last = out[out.length - 1] as ExactCheckReport;
      log(
        `exact check, ${last.precision} ${graph}: ${last.error ?? (last.exact ? 'exact' : `differs by ${last.maxDiff}`)}`,
      );
    }
  }
  return out;
}

const ms = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(2));

export function nodeWebGpuMarkdown(r: NodeWebGpuReport): string {
  const qs = [...new Set(r.curves.flatMap((c) => c.curve?.points.map((p) => p.q) ?? []))].sort((a, b) => a - b);
  const rows = r.curves.map((c) => {
    const cells = qs.map((q) => {
      const p = c.curve?.points.find((x) => x.q === q);
      return p ? `${ms(p.ms)} (${p.relative.toFixed(2)}x)` : '-';
    });
    const name = c.model.replace(/\/+$/, '').split('/').pop();
    return `| ${name} | ${c.compute} | ${(c.weightBytes / 1e6).toFixed(1)} | ${c.error ? [`error: ${c.error}`, ...qs.slice(1).map(() => '')].join(' | ') : cells.join(' | ')} |`;
  });
  return [
    markdown(`WebGPU in Node (Dawn ${r.webgpuPackage}): ${r.adapterName}`, r.bench),
    '',
    `Verify-cost curve, fp32 vs fp16 (ms per call after ${r.curves[0]?.curve?.context ?? 64} cached tokens, T(q)/T(1) in brackets; ORT's wasm ${r.wasmTierUp ? 'tiered up by V8' : 'run by Liftoff only'}):`,
    '',
    `| model | compute | weights MB | ${qs.map((q) => `q=${q}`).join(' | ')} |`,
    `| --- | --- | --- | ${qs.map(() => '---').join(' | ')} |`,
    ...rows,
    '',
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
