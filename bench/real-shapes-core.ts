/**
 * The real-shapes benchmark's measurements, DOM-free so that Node (wasm) and a browser page (wasm, WebGPU) run the
 * same code: for one model folder and several cells (precision x graph variant), the load time, the verify-cost
 * curve T(q)/T(1) and plain decoding tokens/s, with the cells' calls interleaved so machine noise hits all alike.
 * Cells are measured in groups that fit a memory budget (a wasm heap holds at most 4 GB); ratios inside a group
 * come from one interleaved run, ratios across groups do not (the report says which group each cell was in).
 */
import { createDrafter } from '../src/engine/drafters/index';
import { generate } from '../src/engine/generate';
import { GREEDY } from '../src/engine/sampling';
import { chainBias } from '../src/engine/tree';
import { type GraphVariant, ROW_INVARIANT_VARIANTS } from '../src/model/graph/llama';
import { loadModel } from '../src/model/load';
import { type Device, type Precision, parameterCount } from '../src/model/precision';
import { ModelRunner } from '../src/model/runner';

type Ort = Parameters<typeof ModelRunner.create>[0];

export interface CellSpec {
  precision: Precision;
  graph: GraphVariant;
}

export interface CurvePoint {
  q: number;
  ms: number;
  relative: number;
}

export interface CellReport {
  precision: string;
  graph: GraphVariant;
  group: number;
  loadMs: number;
  nodes: number;
  /** Weight bytes one call reads. */
  weightMB: number;
  curve: CurvePoint[];
  /** Plain decoding (method ar, greedy): median tokens/s over the repeats, and what each round read back. */
  decode: { tokensPerSecond: number; msPerToken: number; bytesPerRound: number; tokens: number } | null;
  /** Achieved weight bandwidth of plain decoding (weight bytes x calls / time). */
  decodeGBs: number;
  error?: string;
}

export interface ShapeReport {
  model: string;
  device: Device;
  parameters: number;
  vocab: number;
  layers: number;
  context: number;
  qs: number[];
  reps: number;
  decodeTokens: number;
  decodeRepeats: number;
  cells: CellReport[];
}

export interface BenchShapeOptions {
  qs: number[];
  reps: number;
  decodeTokens: number;
  decodeRepeats: number;
  /** Cached tokens before each timed call of the curve. */
  context?: number;
  /** Estimated bytes of weights held at once (default 2.5 GB). */
  memoryBudget?: number;
  /** Base URL of relative model folders (browser). */
  base?: string;
  prompt?: string;
  log?: (line: string) => void;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : ((s[(s.length - 1) >> 1] as number) + (s[s.length >> 1] as number)) / 2;
};

/** Rough bytes a runner holds: float weights in the compute type, or quantised projections plus an fp16 embedding. */
function heldBytes(params: number, embed: number, cell: CellSpec): number {
  if (cell.precision === 'int4') return (params - embed) * (0.5 + 4 / 32) + embed * (2 + 0.625);
  if (cell.precision === 'int8') return params - embed + embed * (2 + 1);
  return params * (cell.precision === 'fp16' ? 2 : 4);
}

export async function benchShape(
  ort: Ort,
  spec: string,
  device: Device,
  cells: CellSpec[],
  o: BenchShapeOptions,
): Promise<ShapeReport> {
  const log = o.log ?? (() => {});
  const model = await loadModel(spec, o.base ? { base: o.base } : {});
  const cfg = model.config;
  const params = parameterCount(cfg);
  const embed = cfg.vocabSize * cfg.hiddenSize;
  const context = Math.min(o.context ?? 64, cfg.maxPositions - Math.max(...o.qs));
  const prompt = model.tokenizer.encode(
    o.prompt ?? 'It is a truth universally acknowledged, that a single man in possession of a good fortune',
  );
  const pick = (n: number, offset: number) =>
    Array.from({ length: n }, (_, i) => (prompt[(offset + i) % prompt.length] as number) % cfg.vocabSize);

  // Groups of cells that fit the memory budget together.
  const budget = o.memoryBudget ?? 2.5e9;
  const groups: CellSpec[][] = [];
  let used = Number.POSITIVE_INFINITY;
  for (const c of cells) {
    const b = heldBytes(params, embed, c);
    if (used + b > budget) {
      groups.push([c]);
      used = b;
    } else {
      (groups[groups.length - 1] as CellSpec[]).push(c);
      used += b;
    }
  }

  const reports: CellReport[] = [];
  for (const [gi, group] of groups.entries()) {
    const live: { cell: CellSpec; runner: ModelRunner; report: CellReport }[] = [];
    for (const cell of group) {
      const report: CellReport = {
        precision: cell.precision,
        graph: cell.graph,
        group: gi,
        loadMs: 0,
        nodes: 0,
        weightMB: 0,
        curve: [],
        decode: null,
        decodeGBs: 0,
      };
      reports.push(report);
      const t = performance.now();
      try {
        // int8's row-invariant attention (its default) needs a MatMul graph: the fused graph's cost is measured without.
        const runner = await ModelRunner.create(ort, model, {
          device,
          precision: cell.precision,
          graph: cell.graph,
          ...(ROW_INVARIANT_VARIANTS.includes(cell.graph) ? {} : { rowInvariantAttention: false }),
        });
        report.loadMs = performance.now() - t;
        report.precision = runner.precision;
        report.nodes = runner.graph.nodes;
        report.weightMB = runner.computeWeightBytes / 1e6;
        live.push({ cell, runner, report });
        log(`${spec} ${device} ${runner.precision} ${cell.graph}: loaded in ${(report.loadMs / 1000).toFixed(1)} s`);
      } catch (e) {
        report.error = (e as Error).message;
        log(`${spec} ${device} ${cell.precision} ${cell.graph}: ${report.error}`);
      }
    }

    // The verify-cost curve: q tokens after `context` cached ones, compacted back before every call.
    const keep = Array.from({ length: context }, (_, i) => i);
    for (const { runner } of live) {
      runner.reset();
      const prefix = pick(context, 0);
      await runner.forwardArgmax({ tokens: prefix, positions: keep, bias: chainBias(0, context), rows: [context - 1] });
    }
    const call = async (runner: ModelRunner, q: number, offset: number) => {
      runner.keep(keep);
      const batch = pick(q, context + offset);
      const t = performance.now();
      await runner.forwardArgmax({
        tokens: batch,
        positions: batch.map((_, i) => context + i),
        bias: chainBias(context, q),
        rows: [q - 1],
      });
      return performance.now() - t;
    };
    const times = new Map<string, number[]>();
    for (let r = -1; r < o.reps; r++) {
      const order = r % 2 === 0 ? live : [...live].reverse();
      for (const { runner, report } of order) {
        for (const q of o.qs) {
          const ms = await call(runner, q, r + 1);
          if (r < 0) continue; // warm-up: first calls of each shape are slow
          const key = `${report.precision}/${report.graph}/${q}`;
          times.set(key, [...(times.get(key) ?? []), ms]);
        }
      }
      if (r >= 0) log(`${spec} ${device}: curve repeat ${r + 1}/${o.reps}`);
    }
    for (const { report } of live) {
      report.curve = o.qs
        .map((q) => ({ q, ms: median(times.get(`${report.precision}/${report.graph}/${q}`) ?? []) }))
        .map((p, _, all) => ({ ...p, relative: p.ms / (all[0]?.ms ?? 1) }));
    }

    // Plain decoding: the engine's round loop with a root-only tree, greedy, interleaved across the cells.
    const runs = new Map<CellReport, { tps: number[]; bytes: number; calls: number; ms: number; tokens: number }>();
    for (let r = 0; r < o.decodeRepeats; r++) {
      const order = r % 2 === 0 ? live : [...live].reverse();
      for (const { runner, report } of order) {
        const it = generate(
          {
            target: runner,
            drafter: createDrafter('ar', { target: runner, costs: () => null }),
            tokenizer: model.tokenizer,
          },
          prompt,
          {
            maxNewTokens: o.decodeTokens,
            sampling: GREEDY,
            stopAtEos: false,
          },
        );
        let step = await it.next();
        while (!step.done) step = await it.next();
        const s = step.value.stats;
        const acc = runs.get(report) ?? { tps: [], bytes: 0, calls: 0, ms: 0, tokens: 0 };
        acc.tps.push(s.tokensPerSecond);
        acc.bytes = s.targetBytesPerRound;
        acc.calls += s.rounds;
        acc.ms += s.draftMs + s.verifyMs + s.overheadMs;
        acc.tokens = s.tokens;
        runs.set(report, acc);
        log(`${spec} ${device} ${report.precision} ${report.graph}: decoding ${s.tokensPerSecond.toFixed(2)} tok/s`);
      }
    }
    for (const { runner, report } of live) {
      const acc = runs.get(report);
      if (acc) {
        const tps = median(acc.tps);
        report.decode = { tokensPerSecond: tps, msPerToken: 1000 / tps, bytesPerRound: acc.bytes, tokens: acc.tokens };
        report.decodeGBs = acc.ms > 0 ? (runner.computeWeightBytes * acc.calls) / (acc.ms / 1000) / 1e9 : 0;
      }
      await runner.release();
    }
  }
  return {
    model: spec,
    device,
    parameters: params,
    vocab: cfg.vocabSize,
    layers: cfg.numLayers,
    context,
    qs: o.qs,
    reps: o.reps,
    decodeTokens: o.decodeTokens,
    decodeRepeats: o.decodeRepeats,
    cells: reports,
  };
}

const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '-');

export function shapeMarkdown(title: string, r: ShapeReport): string {
  const lines = [
    `#### ${title}`,
    '',
    `${(r.parameters / 1e6).toFixed(0)}M parameters, ${r.layers} layers, vocabulary ${r.vocab}; ${r.device}; curve after ${r.context} cached tokens (median of ${r.reps}), plain decoding ${r.decodeTokens} tokens greedy (median of ${r.decodeRepeats})`,
    '',
    `| precision | graph | group | load s | nodes | MB/call | ${r.qs.map((q) => `T(${q})/T(1)`).join(' | ')} | T(1) ms | decode tok/s | GB/s | bytes/round |`,
    `| --- | --- | --- | --- | --- | --- | ${r.qs.map(() => '---').join(' | ')} | --- | --- | --- | --- |`,
  ];
  for (const c of r.cells) {
    if (c.error) {
      lines.push(`| ${c.precision} | ${c.graph} | ${c.group} | failed: ${c.error.slice(0, 120)} |`);
      continue;
    }
    const t1 = c.curve[0]?.ms ?? Number.NaN;
    lines.push(
      `| ${c.precision} | ${c.graph} | ${c.group} | ${f(c.loadMs / 1000, 1)} | ${c.nodes} | ${f(c.weightMB, 0)} | ${c.curve.map((p) => f(p.relative)).join(' | ')} | ${f(t1, 1)} | ${f(c.decode?.tokensPerSecond ?? Number.NaN)} | ${f(c.decodeGBs)} | ${c.decode ? Math.round(c.decode.bytesPerRound) : '-'} |`,
    );
  }
  return lines.join('\n');
}

/** Options that cut what a run of `npm run bench:real-shapes` measures (the number of widths, repeats, cells). */
const CUTTING = ['precisions', 'graphs', 'qs', 'reps', 'tokens', 'repeats'] as const;

/**
 * Whether a run measures less than the default run: fewer precisions, graphs, widths or repeats, a cut model
 * (`layers`), or the default shape left out. More models, backends or the peer only add to it. A partial run's results
 * must not replace the full run's (the README quotes those).
 */
export function realShapesPartial(
  values: Partial<Record<string, string | boolean | undefined>>,
  defaults: Record<string, { type?: string; default?: string | boolean }>,
): boolean {
  if (values.layers !== undefined) return true;
  if (CUTTING.some((k) => String(values[k] ?? defaults[k]?.default) !== String(defaults[k]?.default))) return true;
  // The default shapes and backends left out (--backends chromium-wasm measured less and replaced the README's table).
  const leftOut = (k: 'shapes' | 'backends') => {
    const given = String(values[k] ?? defaults[k]?.default ?? '').split(',');
    return String(defaults[k]?.default ?? '')
      .split(',')
      .some((s) => !given.includes(s));
  };
  return leftOut('shapes') || leftOut('backends');
}
