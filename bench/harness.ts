/**
 * The benchmark harness, DOM-free so the same code measures wasm in Node and wasm/WebGPU in a browser worker.
 * Methods are interleaved (a balanced order per prompt and repeat, methodOrder), so machine noise hits all alike; every
 * speedup is a ratio against plain decoding ('ar', always run) of the same prompt in the same repeat. Results are
 * kept per run, so any subset (a prompt category) can be summarised the same way.
 */
import { bestGamma, type CostCurve, relativeCost } from '../src/engine/calibrate';
import type { DrafterNote } from '../src/engine/drafters/drafter';
import type { Method } from '../src/engine/drafters/index';
import type { SpecEngine } from '../src/engine/engine';
import type { ArmStats, GenerationResult } from '../src/engine/events';
import { GREEDY, isGreedy, type SamplingParams } from '../src/engine/sampling';
import { addArm, armsText, pooledAcceptance } from '../src/engine/stats';
import { type KeyValueStore, safeGet, safeSet } from '../src/engine/store';
import type { Placement } from '../src/model/device-choice';

/**
 * The order the methods run in for the k-th prompt run: a Williams design (a Latin square balanced for first-order
 * carry-over). Over every n consecutive runs (2n for an odd count of methods) each method runs once in every position
 * and directly after every other method equally often. A plain rotation gave every method the same predecessor in
 * all but one run of n (with ar, auto, adaptive, chain: auto right after ar, adaptive right after auto), so what one
 * run leaves behind for the next (draft-model state, memory, the machine's clocks) was charged to one method: in one
 * run of 36 prompts x 2, auto made 0.95 of adaptive's speed in the runs where it ran just before adaptive and 1.02 in
 * the others, and 0.99 in all runs of the next, whose list put adaptive right after ar.
 */
export function methodOrder<T>(methods: readonly T[], k: number): T[] {
  const n = methods.length;
  // The first row: 0, 1, n-1, 2, n-2, ...; row i adds i to every entry (mod n); odd n also runs each row reversed.
  const first = Array.from({ length: n }, (_, j) => (j % 2 === 1 ? (j + 1) / 2 : (n - j / 2) % n));
  const rows = n % 2 === 0 ? n : 2 * n;
  const row = k % rows;
  const order = first.map((x) => methods[(x + (row % n)) % n] as T);
  return row >= n ? order.reverse() : order;
}

export interface BenchPrompt {
  /** The prompt's category (bench/prompts.json "kind"). */
  kind: string;
  text: string;
}

export interface BenchOptions {
  prompts: BenchPrompt[];
  /** Methods to compare; plain decoding ('ar') is always run too, as the baseline. */
  methods: Method[];
  maxNewTokens: number;
  repeats: number;
  curveQs: number[];
  curveReps: number;
  log?: (line: string) => void;
  /**
   * The engine a method runs on (default: the one given). Methods on draft heads run on an engine loaded with
   * those heads; their speedup is still over plain decoding on the given engine (a target without heads).
   */
  engineFor?: (method: Method) => SpecEngine;
  /** How onnxruntime runs here beyond the device (wasm threads and how they were chosen), for the table. */
  runtime?: string;
  /**
   * Sampling settings (default greedy). Under sampling every method of a prompt and repeat gets the same seed
   * (1000 x repeat + prompt + 1); texts then differ between methods (each is an exact sample of the target's
   * distribution, drawn with different random numbers), so "= plain" is not checked.
   */
  sampling?: SamplingParams;
  /**
   * Load no draft model (bench --no-draft): what a person who loads one model gets. Read by the callers that load the
   * engines (benchEngines); methods that need the draft model are then skipped, and `auto` drafts with what is left.
   */
  withoutDraft?: true;
  /** Where the draft model runs (bench --draft-device): read by the callers that load the engines. */
  draftDevice?: Placement;
  /**
   * bench --remember: the engines keep what they learn in a store kept between bench runs (read by the callers that
   * load the engines, which count the run in it: countRun).
   */
  remember?: true;
  /** Under --remember: how many earlier bench runs the store holds (set by the callers that load the engines). */
  earlierRuns?: number;
  /** Where the draft heads run (bench --heads-device). */
  headsDevice?: Placement;
  /**
   * Called after every round of every timed generation (bench --trace FILE writes them as JSON lines): how a method
   * such as `auto` spent its rounds, which the report's totals do not show.
   */
  onRound?: (row: TraceRow) => void;
  /**
   * Called after every timed generation, before the next (the CLI check runs the same method on the same prompt
   * through the CLI here, so both halves of its comparison are measured in the same minutes).
   */
  afterRun?: (method: Method, prompt: number, repeat: number, result: GenerationResult) => void;
  /**
   * Called before every timed generation (the CLI check warms the harness's engine up again there, after a CLI
   * process has had the machine's cores and caches).
   */
  beforeRun?: (method: Method, prompt: number, repeat: number) => Promise<void>;
}

/** One round of a timed generation, for bench --trace. */
export interface TraceRow {
  method: Method;
  repeat: number;
  prompt: number;
  round: number;
  /** Tokens the round brought (accepted draft tokens and the target's own). */
  tokens: number;
  /** Nodes in the verified tree (the root included) and riding along beside it. */
  width: number;
  aux: number;
  /** The round's milliseconds (drafting, verifying and the loop's own work). */
  ms: number;
  /** The drafter's note, where it gives one. */
  note?: string;
  fields?: Record<string, number | string>;
}

export interface Spread {
  median: number;
  p25: number;
  p75: number;
}

/** One method over a set of runs. */
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
  /**
   * Where a round's time went, in ms per round: the verification call, drafting (the drafter's model calls and its
   * own work), and the engine's overhead around them (the table's overhead share is the last over their sum).
   */
  msPerRound: { verify: number; draft: number; overhead: number };
  /** Target weight bytes x target calls / decode time. */
  bandwidthGBs: number;
  /**
   * Speedup with zero engine overhead: tau x T(1) / (T(mean call width) on the measured curve + the drafting time
   * this method actually spent per round).
   */
  ideal: number;
  measuredOverIdeal: number;
  /** Every run produced exactly plain greedy decoding's tokens (null under sampling: not comparable). */
  matchesPlain: boolean | null;
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
  /** Best chain length and its ideal speedup for the chain's measured per-token acceptance (when chain ran). */
  bestChain: { alpha: number; gamma: number; speedup: number } | null;
  /** Over all prompts. */
  cells: CellReport[];
  /** The same per prompt category (kind -> cells). */
  categories: Record<string, CellReport[]>;
  targetWeightBytes: number;
  /** When swift ran: its skip-set search. */
  swift?: SwiftSearchReport;
  /** Per method whose rounds name a drafter (auto): its rounds per drafter over all its timed runs. */
  arms?: Partial<Record<Method, ArmStats[]>>;
  /** When auto ran beside fixed methods: auto against the best of them (absent in reports before 2026-11-27). */
  autoVsBest?: AutoVsBest;
  /** BenchOptions.runtime. */
  runtime?: string;
  /** BenchOptions.sampling, when not greedy. */
  sampling?: SamplingParams;
  /** No engine of the run held a draft model (bench --no-draft, or a draft model that was not there). */
  withoutDraft?: true;
  /** Where the draft model ran, when not on the target's device (bench --draft-device, or auto's choice). */
  draftDevice?: string;
  /** Where the draft heads ran, when not on the target's device. */
  headsDevice?: string;
  /** Under bench --remember: how many earlier bench runs the engines' store held. */
  earlierRuns?: number;
}

/** Under bench --remember: how many runs of a backend the engines' store holds (counted by countRun). */
export async function earlierRuns(store: KeyValueStore, backend: string): Promise<number> {
  const held = await safeGet(store, `bench:runs:${backend}`);
  return typeof held === 'number' && Number.isInteger(held) && held >= 0 ? held : 0;
}

/**
 * Under bench --remember: counts a run of a backend in the engines' store, once it has its report (a backend that
 * failed to start counted as a run that filled the store).
 */
export async function countRun(store: KeyValueStore, backend: string): Promise<void> {
  await safeSet(store, `bench:runs:${backend}`, (await earlierRuns(store, backend)) + 1);
}

/**
 * `auto` against the fixed method with the highest median speedup, two ways: the ratio of the two median speedups
 * (what the tables show), and paired, per run (the same prompt and repeat, so the prompt's own difficulty cancels):
 * the spread of auto's tokens/s over that method's.
 */
export interface AutoVsBest {
  best: Method;
  ofMedians: number;
  paired: { median: number; p25: number; p75: number };
  runs: number;
}

export function autoVsBest(cells: readonly CellReport[], runs: readonly Run[]): AutoVsBest | null {
  const auto = cells.find((c) => c.method === 'auto');
  const fixed = cells.filter((c) => c.method !== 'auto' && c.method !== 'ar');
  if (!auto || fixed.length === 0) return null;
  const best = fixed.reduce((a, b) => (b.speedup.median > a.speedup.median ? b : a));
  const bestRuns = new Map(runs.filter((r) => r.method === best.method).map((r) => [`${r.prompt}/${r.repeat}`, r]));
  const ratios = runs.flatMap((r) => {
    const other = r.method === 'auto' ? bestRuns.get(`${r.prompt}/${r.repeat}`) : undefined;
    return other ? [r.result.stats.tokensPerSecond / other.result.stats.tokensPerSecond] : [];
  });
  return {
    best: best.method,
    ofMedians: auto.speedup.median / best.speedup.median,
    paired: spread(ratios),
    runs: ratios.length,
  };
}

export interface Run {
  method: Method;
  prompt: number;
  repeat: number;
  result: GenerationResult;
  /** tokens/s over plain decoding's on the same prompt in the same repeat. */
  speedup: number;
}

export function spread(xs: number[]): Spread {
  const s = [...xs].sort((a, b) => a - b);
  const at = (f: number) => {
    if (s.length === 0) return Number.NaN;
    const i = f * (s.length - 1);
    const lo = Math.floor(i);
    const hi = Math.ceil(i);
    return (s[lo] as number) + ((s[hi] as number) - (s[lo] as number)) * (i - lo);
  };
  return { median: at(0.5), p25: at(0.25), p75: at(0.75) };
}

/** One generation to its end (greedy unless sampling is given). */
export async function runOnce(
  engine: SpecEngine,
  method: Method,
  prompt: string,
  maxNewTokens: number,
  sampling: SamplingParams = GREEDY,
) {
  return (await runNoted(engine, method, prompt, maxNewTokens, sampling)).result;
}

/** One generation to its end, and its drafter's note on the last round (the state a learning drafter ended in). */
export async function runNoted(
  engine: SpecEngine,
  method: Method,
  prompt: string,
  maxNewTokens: number,
  sampling: SamplingParams,
  onRound?: (row: Omit<TraceRow, 'method' | 'repeat' | 'prompt'>) => void,
): Promise<{ result: GenerationResult; note: DrafterNote | null }> {
  const it = engine.generate(prompt, { method, maxNewTokens, sampling });
  let note: DrafterNote | null = null;
  let step = await it.next();
  while (!step.done) {
    const e = step.value;
    note = e.note ?? note;
    if (onRound) {
      onRound({
        round: e.round,
        tokens: e.accepted.length + e.target.length,
        width: e.tree.tokens.length,
        aux: e.tree.aux?.tokens.length ?? 0,
        ms: Number(e.timings.totalMs.toFixed(3)),
        ...(e.note ? { note: e.note.text, ...(e.note.fields ? { fields: e.note.fields } : {}) } : {}),
      });
    }
    step = await it.next();
  }
  return { result: step.value, note };
}

function summarise(
  method: Method,
  runs: readonly Run[],
  plainTokens: ReadonlyMap<number, number[]>,
  curve: CostCurve,
  targetBytes: number,
  sampled: boolean,
): CellReport {
  const sum = (f: (r: GenerationResult) => number) => runs.reduce((a, r) => a + f(r.result), 0);
  const tokens = sum((r) => r.stats.tokens);
  const rounds = sum((r) => r.stats.rounds);
  const decodeMs = sum((r) => r.stats.draftMs + r.stats.verifyMs + r.stats.overheadMs);
  const perRound = (f: (r: GenerationResult) => number) =>
    rounds > 0 ? sum((r) => f(r) * r.stats.rounds) / rounds : 1;
  const perRoundMs = (f: (r: GenerationResult) => number) => (rounds > 0 ? Number((sum(f) / rounds).toFixed(3)) : 0);
  const meanTreeSize = perRound((r) => r.stats.meanTreeSize);
  const meanCallWidth = perRound((r) => r.stats.meanCallWidth);
  const tau = rounds > 0 ? tokens / rounds : 0;
  const t1 = curve.points[0]?.ms ?? 1;
  const idealRoundMs =
    relativeCost(curve, meanCallWidth) * t1 + (rounds > 0 ? sum((r) => r.stats.draftMs) / rounds : 0);
  const ideal = idealRoundMs > 0 ? (tau * t1) / idealRoundMs : 1;
  const speed = spread(runs.map((r) => r.speedup));
  return {
    method,
    runs: runs.length,
    tau,
    acceptanceByDepth: pooledAcceptance(runs.map((r) => r.result.stats)),
    tokensPerSecond: spread(runs.map((r) => r.result.stats.tokensPerSecond)),
    speedup: speed,
    targetCalls: sum((r) => r.stats.targetCalls),
    draftCalls: sum((r) => r.stats.draftCalls),
    meanTreeSize,
    meanCallWidth,
    overheadShare: decodeMs > 0 ? sum((r) => r.stats.overheadMs) / decodeMs : 0,
    msPerRound: {
      verify: perRoundMs((r) => r.stats.verifyMs),
      draft: perRoundMs((r) => r.stats.draftMs),
      overhead: perRoundMs((r) => r.stats.overheadMs),
    },
    bandwidthGBs: decodeMs > 0 ? (targetBytes * rounds) / (decodeMs / 1000) / 1e9 : 0,
    ideal,
    measuredOverIdeal: ideal > 0 ? speed.median / ideal : 0,
    matchesPlain: sampled
      ? null
      : runs.every((r) => JSON.stringify(plainTokens.get(r.prompt)) === JSON.stringify(r.result.tokens)),
  };
}

/** Where the first engine with heads ran them, when not on its target's device. */
function headsDeviceOf(engines: readonly SpecEngine[]): { headsDevice?: string } {
  const headed = engines.find((e) => e.headsDevice);
  const device = headed?.headsDevice?.device;
  return headed && device && device !== headed.device ? { headsDevice: device } : {};
}

export async function runBench(engine: SpecEngine, o: BenchOptions): Promise<BenchReport> {
  const log = o.log ?? (() => {});
  const on = (m: Method) => (m === 'ar' ? engine : (o.engineFor?.(m) ?? engine));
  const wanted: Method[] = ['ar', ...o.methods.filter((m) => m !== 'ar')];
  const methods = wanted.filter((m) =>
    on(m)
      .methods()
      .some((s) => s.name === m),
  );
  const skipped = wanted.filter((m) => !methods.includes(m));
  if (skipped.length > 0) log(`skipped (not loaded with what they need): ${skipped.join(', ')}`);
  log(`calibrating: verify-cost curve q = ${o.curveQs.join(', ')}`);
  const costs = await engine.calibrate(o.curveQs, o.curveReps);
  for (const other of new Set(methods.map(on))) if (other !== engine) await other.calibrate(o.curveQs, o.curveReps);
  const sampling = o.sampling && !isGreedy(o.sampling) ? o.sampling : null;
  const samplingFor = (repeat: number, prompt: number): SamplingParams =>
    sampling ? { ...sampling, seed: 1000 * repeat + prompt + 1 } : GREEDY;
  // One untimed generation per method first (first calls of a drafter's shapes are slower).
  for (const method of methods)
    await runOnce(on(method), method, (o.prompts[0] as BenchPrompt).text, 8, samplingFor(0, 0));
  const runs: Run[] = [];
  const swiftNotes: Record<string, number | string>[] = [];
  const plainTokens = new Map<number, number[]>();
  for (let r = 0; r < o.repeats; r++) {
    for (let p = 0; p < o.prompts.length; p++) {
      const order = methodOrder(methods, r * o.prompts.length + p);
      const results = new Map<Method, GenerationResult>();
      for (const method of order) {
        await o.beforeRun?.(method, p, r);
        const trace = o.onRound;
        const { result, note } = await runNoted(
          on(method),
          method,
          (o.prompts[p] as BenchPrompt).text,
          o.maxNewTokens,
          samplingFor(r, p),
          trace && ((row) => trace({ method, repeat: r, prompt: p, ...row })),
        );
        results.set(method, result);
        o.afterRun?.(method, p, r, result);
        if (method === 'swift' && note?.fields) swiftNotes.push({ ...note.fields, ms: result.stats.wallMs });
      }
      const plain = results.get('ar') as GenerationResult;
      if (r === 0) plainTokens.set(p, plain.tokens);
      for (const [method, result] of results) {
        runs.push({
          method,
          prompt: p,
          repeat: r,
          result,
          speedup: result.stats.tokensPerSecond / plain.stats.tokensPerSecond,
        });
      }
      log(
        `repeat ${r + 1}/${o.repeats} prompt ${p + 1}/${o.prompts.length} (${o.prompts[p]?.kind}): ${order.map((m) => `${m} ${(results.get(m) as GenerationResult).stats.tokensPerSecond.toFixed(1)}`).join(', ')} tok/s`,
      );
    }
  }
  const targetBytes = engine.target.computeWeightBytes;
  const cellsFor = (keep: (run: Run) => boolean) =>
    methods.map((m) =>
      summarise(
        m,
        runs.filter((x) => x.method === m && keep(x)),
        plainTokens,
        costs.curve,
        targetBytes,
        sampling !== null,
      ),
    );
  const kinds = [...new Set(o.prompts.map((p) => p.kind))];
  const cells = cellsFor(() => true);
  const chain = cells.find((c) => c.method === 'chain');
  const vsBest = autoVsBest(cells, runs);
  const alpha = chain?.acceptanceByDepth.length
    ? chain.acceptanceByDepth.reduce((a, b) => a + b, 0) / chain.acceptanceByDepth.length
    : 0;
  return {
    device: engine.device,
    // What the target runs: its precision (fp32, fp16, int8, int4, int4-fp16), and whether it is exact.
    compute: `${engine.target.precision}${engine.target.exact ? ', exact' : ''}`,
    ...(o.runtime ? { runtime: o.runtime } : {}),
    ...(sampling ? { sampling } : {}),
    ...([engine, ...methods.map(on)].every((e) => e.draft === null) ? { withoutDraft: true as const } : {}),
    ...(engine.draft && engine.draft.device !== engine.device ? { draftDevice: engine.draft.device } : {}),
    ...headsDeviceOf(methods.map(on)),
    ...(o.earlierRuns !== undefined ? { earlierRuns: o.earlierRuns } : {}),
    prompts: o.prompts.length,
    repeats: o.repeats,
    maxNewTokens: o.maxNewTokens,
    curve: costs.curve,
    draftCurve: costs.draftCurve,
    draftRelative: costs.draftRelative,
    bestChain: chain ? { alpha, ...bestGamma(alpha, costs.curve, costs.draftRelative) } : null,
    cells,
    categories: Object.fromEntries(kinds.map((k) => [k, cellsFor((x) => o.prompts[x.prompt]?.kind === k)])),
    targetWeightBytes: targetBytes,
    ...(swiftNotes.length > 0 ? { swift: swiftSearch(swiftNotes, costs.curve) } : {}),
    ...armsPerMethod(runs),
    ...(vsBest ? { autoVsBest: vsBest } : {}),
  };
}

/** Rounds per drafter summed over each method's timed runs, for the methods whose rounds name one (auto). */
function armsPerMethod(runs: readonly Run[]): Pick<BenchReport, 'arms'> {
  const sums = new Map<Method, Map<string, ArmStats>>();
  for (const run of runs) {
    for (const a of run.result.stats.arms ?? []) {
      const method = sums.get(run.method) ?? new Map<string, ArmStats>();
      sums.set(run.method, method);
      addArm(method, a);
    }
  }
  return sums.size > 0 ? { arms: Object.fromEntries([...sums].map(([m, a]) => [m, [...a.values()]])) } : {};
}

/** SWIFT's search as the timed runs saw it: the set it found, what finding it cost, and what a draft step costs. */
export interface SwiftSearchReport {
  /** Sub-layers that run with the found set ("attn 0 2 … | mlp 0 1 …"), and how many of all (attention and MLP of
   * every layer, the first and last layers' included, which always run) are skipped. */
  runs: string;
  skipped: number;
  of: number;
  steps: number;
  bestMatchness: number;
  /** Timed runs that were still optimising at their end (the search spans them), of all swift runs. */
  optimisingRuns: number;
  timedRuns: number;
  /** Milliseconds in optimisation steps, in all (the untimed first run included), and the share of swift's time. */
  optimisingMs: number;
  optimisingShare: number;
  /** A one-token draft step with the found set, and that over a one-token target call (the curve's q=1). */
  draftCallMs: number;
  draftRelative: number;
}

function swiftSearch(notes: readonly Record<string, number | string>[], curve: CostCurve): SwiftSearchReport {
  const last = notes[notes.length - 1] as Record<string, number | string>;
  const skipped = String(last.skipped ?? '');
  const total = notes.reduce((a, n) => a + Number(n.ms), 0);
  const optimisingMs = Number(last.optimisingMs ?? 0);
  const draftCallMs = Number(last.draftCallMs ?? Number.NaN);
  const one = curve.points.find((p) => p.q === 1)?.ms ?? Number.NaN;
  return {
    runs: String(last.runs ?? ''),
    skipped: [...skipped].filter((c) => c === '1').length,
    of: skipped.length,
    steps: Number(last.step ?? 0),
    bestMatchness: Number(last.best ?? Number.NaN),
    optimisingRuns: notes.filter((n) => n.phase === 'optimising').length,
    timedRuns: notes.length,
    optimisingMs,
    optimisingShare: total > 0 ? optimisingMs / total : Number.NaN,
    draftCallMs,
    draftRelative: draftCallMs / one,
  };
}

/** "greedy", or the sampling settings ("sampled: temperature 0.8, top-k 50, seeds per prompt"). */
export function samplingLabel(s: SamplingParams | undefined): string {
  if (!s || isGreedy(s)) return 'greedy';
  const parts = [`temperature ${s.temperature}`];
  if (s.topK > 0) parts.push(`top-k ${s.topK}`);
  if (s.topP < 1) parts.push(`top-p ${s.topP}`);
  return `sampled (${parts.join(', ')}; one seed per prompt and repeat, shared by the methods)`;
}

const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '-');

/** The header's word on what the engines remembered (bench --remember), or nothing for a run from nothing. */
function rememberedLabel(earlierRuns: number | undefined): string {
  if (earlierRuns === undefined) return '';
  return earlierRuns === 0
    ? ', a store kept between runs (--remember; empty before this run)'
    : `, what the engines learned in ${earlierRuns} earlier run${earlierRuns === 1 ? '' : 's'} remembered (--remember)`;
}

export function markdown(title: string, r: BenchReport): string {
  const kinds = Object.keys(r.categories);
  const methods = r.cells.map((c) => c.method);
  const lines = [
    `### ${title}`,
    '',
    `${r.prompts} prompts x ${r.repeats} repeats, ${r.maxNewTokens} new tokens, ${samplingLabel(r.sampling)}, ${r.device} (${r.compute})${r.runtime ? `, ${r.runtime}` : ''}${r.withoutDraft ? ', no draft model' : ''}${r.draftDevice ? `, draft model on ${r.draftDevice}` : ''}${r.headsDevice ? `, heads on ${r.headsDevice}` : ''}${rememberedLabel(r.earlierRuns)}; target weights ${(r.targetWeightBytes / 1e6).toFixed(1)} MB`,
    '',
    `| method | tau | acceptance by depth | tok/s (median) | speedup median [p25, p75] | target calls | draft calls | tree size (call width) | overhead | target GB/s | ideal | measured/ideal | ${r.sampling ? '= plain (sampled: n/a)' : '= plain greedy'} |`,
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...r.cells.map(
      (c) =>
        `| ${c.method} | ${f(c.tau)} | ${
          c.acceptanceByDepth
            .slice(0, 6)
            .map((a) => f(a))
            .join(' ') || '-'
        } | ${f(c.tokensPerSecond.median, 1)} | ${f(c.speedup.median)}x [${f(c.speedup.p25)}, ${f(c.speedup.p75)}] | ${c.targetCalls} | ${c.draftCalls} | ${f(c.meanTreeSize, 1)}${c.meanCallWidth > c.meanTreeSize + 0.05 ? ` (${f(c.meanCallWidth, 1)})` : ''} | ${f(100 * c.overheadShare, 1)}% | ${f(c.bandwidthGBs, 1)} | ${f(c.ideal)}x | ${f(c.measuredOverIdeal)} | ${c.matchesPlain === null ? '-' : c.matchesPlain ? 'yes' : 'NO'} |`,
    ),
    '',
    `Speedup by prompt category: median [p25] over plain decoding, and tau (${kinds.map((k) => `${k}: ${r.categories[k]?.[0]?.runs ?? 0} runs`).join(', ')})`,
    '',
    `| method | ${kinds.join(' | ')} |`,
    `| --- | ${kinds.map(() => '---').join(' | ')} |`,
    ...methods.map((m) => {
      const cells = kinds.map((k) => {
        const c = r.categories[k]?.find((x) => x.method === m);
        return c ? `${f(c.speedup.median)}x [${f(c.speedup.p25)}] tau ${f(c.tau)}` : '-';
      });
      return `| ${m} | ${cells.join(' | ')} |`;
    }),
    '',
    `Verify-cost curve (target, ${r.curve.context} cached tokens): ${r.curve.points.map((p) => `q=${p.q}: ${f(p.ms)} ms (${f(p.relative)}x)`).join(', ')}`,
  ];
  if (r.draftCurve.points.length > 0) {
    lines.push(
      '',
      `Draft call: ${r.draftCurve.points.map((p) => `q=${p.q}: ${f(p.ms)} ms`).join(', ')} (q=1 is ${r.draftRelative > 0 && r.draftRelative < 0.1 ? r.draftRelative.toPrecision(2) : f(r.draftRelative)}x a target call).${
        r.bestChain
          ? ` Best chain for the measured per-token acceptance ${f(r.bestChain.alpha)}: gamma ${r.bestChain.gamma}, ideal speedup ${f(r.bestChain.speedup)}x.`
          : ''
      }`,
    );
  }
  if (r.autoVsBest) {
    const v = r.autoVsBest;
    lines.push(
      '',
      `auto against the best fixed method (${v.best}): ${f(v.ofMedians)} of its median speedup; per run (same prompt and repeat, ${v.runs} pairs) auto's tokens/s over ${v.best}'s: median ${f(v.paired.median)} [p25 ${f(v.paired.p25)}, p75 ${f(v.paired.p75)}].`,
    );
  }
  for (const [method, arms] of Object.entries(r.arms ?? {})) {
    if (arms) lines.push('', `${method}: rounds per drafter over its runs: ${armsText(arms)}.`);
  }
  if (r.swift) {
    const w = r.swift;
    lines.push(
      '',
      `swift: found set skips ${w.skipped} of ${w.of} sub-layers (running: ${w.runs}), best matchness ${f(w.bestMatchness)} after ${w.steps} search steps; the search spanned ${w.optimisingRuns} of ${w.timedRuns} timed runs and took ${f(w.optimisingMs / 1000, 1)} s (${f(100 * w.optimisingShare, 0)}% of swift's time). A draft step with the found set: ${f(w.draftCallMs)} ms, ${f(w.draftRelative)}x a target call.`,
    );
  }
  return lines.join('\n');
}
