/**
 * Choosing onnxruntime's wasm thread count by measurement. The count is fixed when onnxruntime's wasm starts, so
 * each candidate runs in a fresh worker of its own: the models in use (model/probe-graph.ts, whole: every layer
 * and the LM head, fp32 plain graph; the target, and the draft model when one is used) timed call by call, fastest
 * of many after warm-up. What is minimised is a speculative round on wasm: a one-token and a four-token target call
 * (decoding's call, and about the verify width the cost-aware methods choose on wasm's steep curve) and two
 * one-token draft calls. Small calls matter: threads help wide matrix products but add a hand-off per operator,
 * which small calls feel. (In Chromium the engine's draft call measured 2.5x slower on two threads, 0.4 to 1.1
 * ms, and every speculative method 20-25% slower, which no probe here reproduced: pages do not measure by default,
 * see thread-probe-web.ts. In Node two threads sped up everything, as the probe says.) The fewer threads win unless more are at least THREAD_MARGIN faster (threads take cores the rest of
 * the machine wants). Measured once per machine, models and onnxruntime build, then remembered in the engine's
 * store. Where the worker is spawned is the platform's part (thread-probe-node.ts, thread-probe-web.ts).
 */
import { type KeyValueStore, safeGet, safeSet } from '../engine/store';
import { assertSameVocabulary, type LoadedModel, type LoadOptions, loadModel } from '../model/load';
import { buildProbeGraph, type FeedSpec, type ProbeGraph } from '../model/probe-graph';

export interface ThreadTiming {
  threads: number;
  /** Fastest ms of the target's one- and four-token probe calls, and the draft's one-token call (when used). */
  target1: number;
  target4: number;
  draft1?: number;
  /** What is minimised: target1 + target4 + 2 x draft1 (NaN with the reason when the candidate could not run). */
  score: number;
  error?: string;
}

export interface ThreadChoice {
  threads: number;
  /**
   * measured now, remembered from an earlier run, asked for (--threads N), the only possibility (one core; a page
   * that is not cross-origin isolated has no shared memory for threads), or what onnxruntime already runs with in
   * this process (it was started before, with its own count), or onnxruntime's own default (pages, unless asked to
   * measure: see thread-probe-web.ts), or nothing measured because a model did not load (its load in the engine then
   * says why, naming the model; the CLI printed "1 wasm thread (measured in 0.0 s)" before that error).
   */
  how: 'measured' | 'remembered' | 'asked' | 'one core' | 'not isolated' | 'already running' | 'default' | 'not loaded';
  /** Logical cores the candidates were drawn from. */
  cores: number;
  timings: ThreadTiming[];
  /** Time the measurement took (0 unless measured). */
  ms: number;
  /** The count asked for, where another runs (a page that is not cross-origin isolated runs one thread). */
  asked?: number;
}

/** The models a choice is measured on: the target's probe graph, and the draft model's when one is used. */
export interface ProbeGraphs {
  target: ProbeGraph;
  draft?: ProbeGraph;
}

/** Probe calls per graph: the target at 1 and 4 tokens, the draft at 1. */
const TARGET_QS = [1, 4];
const DRAFT_QS = [1];
/** Draft calls per round in the score (a chain of two: what adaptive and auto draft on wasm). */
const DRAFT_CALLS = 2;

/**
 * Per candidate: warm-up rounds, then rounds for at least a minimum time and until CALM rounds in a row improve no
 * call's fastest time by 2%, at most MAX_MS (the fastest times are the result). A fresh worker starts on V8's
 * Liftoff code and gets TurboFan's for the hot kernels 1.4 to 2 s in (measured in Node on 2 cores: T(16) from 4.8
 * to 3.0 ms on one thread, from 7-17 to 1.8 ms on two, whose second thread shares a core with the compiler until
 * then), so under tier-up the minimum is past that; without tier-up (the CLI: compilation hints or Liftoff only)
 * there is nothing to wait for. Between rounds the cores are left to the compiler for PAUSE_MS (a busy second thread starved it: the
 * optimised code then came after 4 s, or not at all).
 */
const WARMUPS = 3;
const CALM = 20;
const MIN_MS = { noTierUp: 200, tierUp: 2200 };
const MAX_MS = 4000;
const PAUSE_MS = 4;

/** One probe graph as a worker gets it: the model, its context call, the timed calls by size, and the carried past. */
export interface ProbeSpec {
  model: Uint8Array;
  externalData: { path: string; data: Uint8Array }[];
  context: Record<string, FeedSpec>;
  calls: Record<string, Record<string, FeedSpec>>;
  carry: [string, string][];
}

/** What a probe worker is sent besides where onnxruntime is: the graphs, their calls and the loop's settings. */
export interface ProbePayload {
  threads: number;
  probes: ProbeSpec[];
  warmups: number;
  calm: number;
  minMs: number;
  maxMs: number;
  pauseMs: number;
  /** The wasm binary to compile (Node with compilation hints, ort-node.ts), instead of onnxruntime's own. */
  wasmBinary?: ArrayBufferLike | Uint8Array;
}

const spec = (graph: ProbeGraph, qs: readonly number[]): ProbeSpec => ({
  model: graph.model,
  externalData: graph.externalData,
  context: graph.context,
  calls: Object.fromEntries(qs.map((q) => [q, graph.call(q)])),
  carry: graph.carry,
});

/** The worker's payload: probe 0 is the target, probe 1 the draft (when used). */
export function probePayload(graphs: ProbeGraphs, threads: number, noTierUp: boolean): ProbePayload {
  return {
    threads,
    probes: [spec(graphs.target, TARGET_QS), ...(graphs.draft ? [spec(graphs.draft, DRAFT_QS)] : [])],
    warmups: WARMUPS,
    calm: CALM,
    minMs: noTierUp ? MIN_MS.noTierUp : MIN_MS.tierUp,
    maxMs: MAX_MS,
    pauseMs: PAUSE_MS,
  };
}

/**
 * The probe loop as source text, `async (ort, payload) => fastest ms per call size`: a worker evaluates it around
 * its own onnxruntime-web (a Node worker from a string, a browser worker from a Blob), so it is plain JavaScript
 * that imports nothing and runs the same wherever the caller was built (sources, the CLI's bundle, the library).
 */
export const PROBE_LOOP_SOURCE = `async (ort, w) => {
  ort.env.wasm.numThreads = w.threads;
  if (w.wasmBinary) ort.env.wasm.wasmBinary = w.wasmBinary;
  ort.env.logLevel = 'error';
  const tensors = (feeds) =>
    Object.fromEntries(Object.entries(feeds).map(([k, f]) => [k, new ort.Tensor(f.type, f.data, f.dims)]));
  const probes = [];
  for (const p of w.probes) {
    const session = await ort.InferenceSession.create(p.model, {
      executionProviders: ['wasm'], graphOptimizationLevel: 'all', logSeverityLevel: 3, externalData: p.externalData,
    });
    const out = await session.run(tensors(p.context));
    probes.push({ session, calls: p.calls, past: Object.fromEntries(p.carry.map(([present, name]) => [name, out[present]])) });
  }
  // Between calls the event loop turns, as between an engine's rounds (onnxruntime's pool threads may sleep).
  const turn = () => new Promise((resolve) => {
    if (typeof setImmediate === 'function') return setImmediate(resolve);
    const channel = new MessageChannel();
    channel.port1.onmessage = () => { channel.port1.close(); resolve(); };
    channel.port2.postMessage(null);
  });
  const best = {};
  let calm = 0;
  const start = performance.now();
  const elapsed = () => performance.now() - start;
  for (let r = 0; (calm < w.calm || elapsed() < w.minMs) && elapsed() < w.maxMs; r++) {
    let improved = false;
    for (const [i, p] of probes.entries()) {
      for (const [q, feeds] of Object.entries(p.calls)) {
        const input = { ...tensors(feeds), ...p.past };
        await turn();
        const t = performance.now();
        await p.session.run(input);
        const ms = performance.now() - t;
        if (r < w.warmups) continue;
        const key = i + ':' + q;
        if (!(ms >= (best[key] ?? Infinity) * 0.98)) improved = true;
        best[key] = Math.min(best[key] ?? Infinity, ms);
      }
    }
    calm = improved ? 0 : calm + 1;
    await new Promise((resolve) => setTimeout(resolve, w.pauseMs));
  }
  for (const p of probes) await p.session.release();
  return best;
}`;

const round = (ms: number) => Math.round(ms * 1000) / 1000;

/** A worker's answer (fastest ms by "probe:q") as a timing, rounded to the microsecond. */
export function timingOf(threads: number, best: Record<string, number>): ThreadTiming {
  const at = (key: string) => round(best[key] as number);
  const timing: ThreadTiming = { threads, target1: at('0:1'), target4: at('0:4'), score: 0 };
  if (best['1:1'] !== undefined) timing.draft1 = at('1:1');
  timing.score = round(timing.target1 + timing.target4 + DRAFT_CALLS * (timing.draft1 ?? 0));
  return timing;
}

/** Fewer threads are kept unless more are at least this much faster. */
export const THREAD_MARGIN = 0.05;
const MAX_THREADS = 8;

/** 1, 2, 4, ... up to the cores (at most MAX_THREADS), and the core count itself when it is not a power of two. */
export function threadCandidates(cores: number): number[] {
  const top = Math.max(1, Math.min(MAX_THREADS, Math.floor(cores)));
  const out: number[] = [];
  for (let n = 1; n <= top; n *= 2) out.push(n);
  if (out[out.length - 1] !== top) out.push(top);
  return out;
}

/** The fewest threads whose score is within THREAD_MARGIN of the least; 1 when nothing ran. */
export function pickThreads(timings: readonly ThreadTiming[], margin = THREAD_MARGIN): number {
  const ok = timings.filter((t) => !t.error && Number.isFinite(t.score));
  if (ok.length === 0) return 1;
  const best = Math.min(...ok.map((t) => t.score));
  return Math.min(...ok.filter((t) => t.score <= best * (1 + margin)).map((t) => t.threads));
}

/**
 * One line for logs and the CLI: "2 wasm threads (measured in 5.9 s; target T(1) + T(4) + 2 draft calls, ms:
 * 1 thread 0.45 + 0.91 + 2 x 0.20 = 1.76, 2 threads ...)".
 */
export function describeThreads(choice: ThreadChoice): string {
  const each = choice.timings
    .map((t) =>
      t.error
        ? `${t.threads}: ${t.error}`
        : `${t.threads}: ${t.target1.toFixed(2)} + ${t.target4.toFixed(2)}${t.draft1 !== undefined ? ` + ${DRAFT_CALLS} x ${t.draft1.toFixed(2)}` : ''} = ${t.score.toFixed(2)}`,
    )
    .join(', ');
  const what = choice.timings.some((t) => t.draft1 !== undefined)
    ? `target T(1) + T(4) + ${DRAFT_CALLS} draft calls, ms, with`
    : 'target T(1) + T(4), ms, with';
  const how =
    (choice.how === 'measured' ? `measured in ${(choice.ms / 1000).toFixed(1)} s` : choice.how) +
    (choice.asked !== undefined && choice.asked !== choice.threads ? `; ${choice.asked} asked` : '');
  return `${choice.threads} wasm thread${choice.threads === 1 ? '' : 's'} (${how}${each ? `; ${what} ${each}` : ''})`;
}

export function isThreadChoice(v: unknown): v is ThreadChoice {
  const c = v as Partial<ThreadChoice> | undefined;
  return (
    typeof c === 'object' &&
    c !== null &&
    Number.isInteger(c.threads) &&
    (c.threads as number) >= 1 &&
    Array.isArray(c.timings)
  );
}

/**
 * The probe graphs of a target and a draft model: the whole models, fp32 plain graphs (what thread counts differ
 * in is the same in every variant; the LM head is a large share of a small draft model's call). A two-layer probe
 * of the target without its head scored one and two threads within 2% in one Node probe of three.
 */
export async function modelProbeGraphs(
  target: string,
  draft: string | undefined,
  options: LoadOptions = {},
): Promise<ProbeGraphs> {
  const graph = (model: LoadedModel) =>
    buildProbeGraph(model, { weights: 'float', compute: 'fp32' }, 'plain', undefined, true);
  const targetModel = await loadModel(target, options);
  if (!draft) return { target: graph(targetModel) };
  const draftModel = await loadModel(draft, options);
  // A pair the engine will refuse is not timed (seconds): the engine's load then says why.
  assertSameVocabulary(targetModel, draftModel);
  return { target: graph(targetModel), draft: graph(draftModel) };
}

/** Runs the probe graphs with onnxruntime on `threads` wasm threads, in a fresh worker. */
export type ThreadRunner = (graphs: ProbeGraphs, threads: number) => Promise<ThreadTiming>;

/**
 * The remembered choice under `key`, or each candidate measured (one worker at a time, so they never share the
 * cores) and the choice remembered.
 */
export async function chooseThreads(
  key: string,
  cores: number,
  graphs: () => Promise<ProbeGraphs>,
  run: ThreadRunner,
  store?: KeyValueStore,
): Promise<ThreadChoice> {
  const candidates = threadCandidates(cores);
  if (candidates.length === 1) return { threads: 1, how: 'one core', cores, timings: [], ms: 0 };
  const stored = store ? await safeGet(store, key) : undefined;
  // A remembered count this machine would not have measured (an edited record, a store copied from a larger machine)
  // is measured again: 64 threads on 2 cores were used as remembered.
  if (isThreadChoice(stored) && candidates.includes(stored.threads)) return { ...stored, how: 'remembered', ms: 0 };
  const t0 = performance.now();
  let probe: ProbeGraphs;
  try {
    probe = await graphs();
  } catch {
    // The model itself fails to load: its load in the engine says why (naming the model); nothing measured here.
    return { threads: 1, how: 'not loaded', cores, timings: [], ms: 0 };
  }
  const timings: ThreadTiming[] = [];
  for (const threads of candidates) {
    try {
      timings.push(await run(probe, threads));
    } catch (e) {
      const error = (e as Error).message.split('\n')[0] ?? '';
      timings.push({ threads, target1: Number.NaN, target4: Number.NaN, score: Number.NaN, error });
    }
  }
  const choice: ThreadChoice = { threads: pickThreads(timings), how: 'measured', cores, timings, ms: 0 };
  choice.ms = performance.now() - t0;
  // Only a measurement that ran is worth remembering.
  if (store && timings.some((t) => !t.error)) await safeSet(store, key, choice);
  return choice;
}
