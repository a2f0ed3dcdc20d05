/**
 * The benchmark harness, DOM-free so the same code measures wasm in Node and wasm/WebGPU in a browser worker.
 * Methods are interleaved (the order rotates per prompt and repeat), so machine noise hits all alike; every
 * speedup is a ratio against plain decoding of the same prompt in the same repeat.
 */
import { bestGamma, type CostCurve, relativeCost } from '../src/engine/calibrate';
import type { Method } from '../src/engine/drafters/index';
import type { SpecEngine } from '../src/engine/engine';
import type { GenerationResult } from '../src/engine/events';
import { GREEDY } from '../src/engine/sampling';

export interface BenchOptions {
  prompts: string[];
  methods: Method[];
  maxNewTokens: number;
  repeats: number;
  curveQs: number[];
  curveReps: number;
  log?: (line: string) => void;
}

export interface Spread {
  median: number;
  p25: number;
  p75: number;
}

export interface CellReport {
  method: Method;
  runs: number;
  tau: number;
  acceptanceByDepth: number[];
  tokensPerSecond: Spread;
  speedup: Spread;
  targetCalls: number;
  draftCalls: number;
  meanTreeSize: number;
  /** Tree plus auxiliary nodes per target call. */
  meanCallWidth: number;
  overheadShare: number;
  /** Target weight bytes x target calls / decode time. */
  bandwidthGBs: number;
  /** Speedup with zero engine overhead at this method's measured tau, tree size and draft calls. */
  ideal: number;
  measuredOverIdeal: number;
  /** Every run produced exactly plain greedy decoding's tokens. */
  matchesPlain: boolean;
}

export interface BenchReport {
  device: string;
  compute: string;
  prompts: number;
  repeats: number;
  maxNewTokens: number;
  curve: CostCurve;
  draftCurve: CostCurve;
  draftRelative: number;
  /** Best chain length and its ideal speedup for the chain's measured per-token acceptance. */
  bestChain: { alpha: number; gamma: number; speedup: number };
  cells: CellReport[];
  targetWeightBytes: number;
}

function spread(xs: number[]): Spread {
  const s = [...xs].sort((a, b) => a - b);
  const at = (f: number) => {
    if (s.length === 0) return 0;
    const i = f * (s.length - 1);
    const lo = Math.floor(i);
    const hi = Math.ceil(i);
    return (s[lo] as number) + ((s[hi] as number) - (s[lo] as number)) * (i - lo);
  };
  return { median: at(0.5), p25: at(0.25), p75: at(0.75) };
}

export async function runBench(engine: SpecEngine, o: BenchOptions): Promise<BenchReport> {
  const log = o.log ?? (() => {});
  log(`calibrating: verify-cost curve q = ${o.curveQs.join(', ')}`);
  const costs = await engine.calibrate(o.curveQs, o.curveReps);
  const t1 = costs.curve.points[0]?.ms ?? 1;
  // One untimed generation per method first (first calls of a drafter's shapes are slower).
  for (const method of o.methods) {
    const it = engine.generate(o.prompts[0] as string, { method, maxNewTokens: 8, sampling: GREEDY });
    for (let s = await it.next(); !s.done; s = await it.next());
  }
  const results = new Map<Method, GenerationResult[]>();
  const speedups = new Map<Method, number[]>();
  const plain = new Map<number, number[]>();
  const matches = new Map<Method, boolean>(o.methods.map((m) => [m, true]));
  for (let r = 0; r < o.repeats; r++) {
    for (let p = 0; p < o.prompts.length; p++) {
      const shift = (r * o.prompts.length + p) % o.methods.length;
      const order = [...o.methods.slice(shift), ...o.methods.slice(0, shift)];
      const tps = new Map<Method, number>();
      for (const method of order) {
        const it = engine.generate(o.prompts[p] as string, { method, maxNewTokens: o.maxNewTokens, sampling: GREEDY });
        let step = await it.next();
        while (!step.done) step = await it.next();
        const result = step.value;
        results.set(method, [...(results.get(method) ?? []), result]);
        tps.set(method, result.stats.tokensPerSecond);
        if (method === 'ar' && r === 0) plain.set(p, result.tokens);
      }
      const base = tps.get('ar') as number;
      for (const [m, v] of tps) speedups.set(m, [...(speedups.get(m) ?? []), v / base]);
      log(
        `repeat ${r + 1}/${o.repeats} prompt ${p + 1}/${o.prompts.length}: ${order.map((m) => `${m} ${(tps.get(m) as number).toFixed(1)}`).join(', ')} tok/s`,
      );
    }
  }
  // Greedy identity: every method's tokens equal plain decoding's, prompt by prompt.
  for (const m of o.methods) {
    (results.get(m) ?? []).forEach((res, i) => {
      const ref = plain.get(i % o.prompts.length);
      if (ref && JSON.stringify(ref) !== JSON.stringify(res.tokens)) matches.set(m, false);
    });
  }
  const targetBytes = engine.target.computeWeightBytes;
  const cells: CellReport[] = o.methods.map((method) => {
    const runs = results.get(method) ?? [];
    const sum = (f: (r: GenerationResult) => number) => runs.reduce((a, r) => a + f(r), 0);
    const tokens = sum((r) => r.stats.tokens);
    const rounds = sum((r) => r.stats.rounds);
    const offered: number[] = [];
    const accepted: number[] = [];
    for (const r of runs) {
      r.stats.acceptanceCounts.offered.forEach((v, d) => {
        offered[d] = (offered[d] ?? 0) + v;
        accepted[d] = (accepted[d] ?? 0) + (r.stats.acceptanceCounts.accepted[d] ?? 0);
      });
    }
    const decodeMs = sum((r) => r.stats.draftMs + r.stats.verifyMs + r.stats.overheadMs);
    const draftCalls = sum((r) => r.stats.draftCalls);
    const meanTreeSize = rounds > 0 ? sum((r) => r.stats.meanTreeSize * r.stats.rounds) / rounds : 1;
    const meanCallWidth = rounds > 0 ? sum((r) => r.stats.meanCallWidth * r.stats.rounds) / rounds : 1;
    const tau = rounds > 0 ? tokens / rounds : 0;
    // Zero-overhead round: one target call over the mean call width (tree plus auxiliary nodes) at the measured
    // curve, plus the drafting time this method actually spent per round.
    const idealRoundMs =
      relativeCost(costs.curve, meanCallWidth) * t1 + (rounds > 0 ? sum((r) => r.stats.draftMs) / rounds : 0);
    const ideal = idealRoundMs > 0 ? (tau * t1) / idealRoundMs : 1;
    const speed = spread(speedups.get(method) ?? []);
    return {
      method,
      runs: runs.length,
      tau,
      acceptanceByDepth: offered.map((v, d) => (v > 0 ? (accepted[d] ?? 0) / v : 0)),
      tokensPerSecond: spread(runs.map((r) => r.stats.tokensPerSecond)),
      speedup: speed,
      targetCalls: sum((r) => r.stats.targetCalls),
      draftCalls,
      meanTreeSize,
      meanCallWidth,
      overheadShare: decodeMs > 0 ? sum((r) => r.stats.overheadMs) / decodeMs : 0,
      bandwidthGBs: decodeMs > 0 ? (targetBytes * sum((r) => r.stats.rounds)) / (decodeMs / 1000) / 1e9 : 0,
      ideal,
      measuredOverIdeal: ideal > 0 ? speed.median / ideal : 0,
      matchesPlain: matches.get(method) ?? false,
    };
  });
  const chain = cells.find((c) => c.method === 'chain');
  const alpha = chain?.acceptanceByDepth.length
    ? chain.acceptanceByDepth.reduce((a, b) => a + b, 0) / chain.acceptanceByDepth.length
    : 0;
  return {
    device: engine.device,
    compute: engine.target.compute,
    prompts: o.prompts.length,
    repeats: o.repeats,
    maxNewTokens: o.maxNewTokens,
    curve: costs.curve,
    draftCurve: costs.draftCurve,
    draftRelative: costs.draftRelative,
    bestChain: { alpha, ...bestGamma(alpha, costs.curve, costs.draftRelative) },
    cells,
    targetWeightBytes: targetBytes,
  };
}

const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '-');

export function markdown(title: string, r: BenchReport): string {
  const lines = [
    `### ${title}`,
    '',
    `${r.prompts} prompts x ${r.repeats} repeats, ${r.maxNewTokens} new tokens, greedy, ${r.device} (${r.compute}); target weights ${(r.targetWeightBytes / 1e6).toFixed(1)} MB`,
    '',
    '| method | tau | acceptance by depth | tok/s (median) | speedup median [p25, p75] | target calls | draft calls | tree size | overhead | target GB/s | ideal | measured/ideal | = plain greedy |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...r.cells.map(
      (c) =>
        `| ${c.method} | ${f(c.tau)} | ${
          c.acceptanceByDepth
            .slice(0, 6)
            .map((a) => f(a))
            .join(' ') || '-'
        } | ${f(c.tokensPerSecond.median, 1)} | ${f(c.speedup.median)}x [${f(c.speedup.p25)}, ${f(c.speedup.p75)}] | ${c.targetCalls} | ${c.draftCalls} | ${f(c.meanTreeSize, 1)} | ${f(100 * c.overheadShare, 1)}% | ${f(c.bandwidthGBs, 1)} | ${f(c.ideal)}x | ${f(c.measuredOverIdeal)} | ${c.matchesPlain ? 'yes' : 'NO'} |`,
    ),
    '',
    `Verify-cost curve (target, ${r.curve.context} cached tokens): ${r.curve.points.map((p) => `q=${p.q}: ${f(p.ms)} ms (${f(p.relative)}x)`).join(', ')}`,
    '',
    `Draft call: ${r.draftCurve.points.map((p) => `q=${p.q}: ${f(p.ms)} ms`).join(', ')} (q=1 is ${f(r.draftRelative)}x a target call). ` +
      `Best chain for the measured per-token acceptance ${f(r.bestChain.alpha)}: gamma ${r.bestChain.gamma}, ideal speedup ${f(r.bestChain.speedup)}x.`,
  ];
  return lines.join('\n');
}
