/**
 * Choosing onnxruntime's wasm thread count by measurement. The count is fixed when onnxruntime's wasm starts, so
 * each candidate runs in a fresh worker of its own: the probe graph (model/probe-graph.ts: the target's first two
 * layers, real widths and weights) timed at one token and at a verify-sized call, fastest of many after warm-up.
 * The least T(1) + T(16) wins, the fewer threads unless more are at least THREAD_MARGIN faster (threads cost cores
 * the rest of the machine wants). Measured once per machine, model and onnxruntime build, then remembered in the
 * engine's store. Where the worker is spawned is the platform's part (thread-probe-node.ts).
 */
import { type KeyValueStore, safeGet, safeSet } from '../engine/store';
import { type FeedSpec, PROBE_WIDE, type ProbeGraph } from '../model/probe-graph';

export interface ThreadTiming {
  threads: number;
  /** Fastest ms of a probe call at q = 1 and q = 16 (NaN with the reason when the candidate could not run). */
  q1: number;
  q16: number;
  error?: string;
}

export interface ThreadChoice {
  threads: number;
  /**
   * measured now, remembered from an earlier run, asked for (--threads N), the only possibility (one core; a page
   * that is not cross-origin isolated has no shared memory for threads), or what onnxruntime already runs with in
   * this process (it was started before, with its own count).
   */
  how: 'measured' | 'remembered' | 'asked' | 'one core' | 'not isolated' | 'already running';
  /** Logical cores the candidates were drawn from. */
  cores: number;
  timings: ThreadTiming[];
  /** Time the measurement took (0 unless measured). */
  ms: number;
}

/**
 * Per candidate: warm-up rounds, then rounds for at least a minimum time and until CALM rounds in a row improve no
 * call's fastest time by 2%, at most MAX_MS (the fastest times are the result). A fresh worker starts on V8's
 * Liftoff code and gets TurboFan's for the hot kernels 1.4 to 2 s in (measured in Node on 2 cores: T(16) from 4.8
 * to 3.0 ms on one thread, from 7-17 to 1.8 ms on two, whose second thread shares a core with the compiler until
 * then), so under tier-up the minimum is past that; with Liftoff only (the CLI's short runs) there is nothing to
 * wait for. Between rounds the cores are left to the compiler for PAUSE_MS (a busy second thread starved it: the
 * optimised code then came after 4 s, or not at all).
 */
const WARMUPS = 3;
const CALM = 20;
const MIN_MS = { liftoff: 200, tierUp: 2200 };
const MAX_MS = 4000;
const PAUSE_MS = 4;

/** What a probe worker is sent besides where onnxruntime is: the graph, its calls and the loop's settings. */
export interface ProbePayload {
  threads: number;
  model: Uint8Array;
  externalData: { path: string; data: Uint8Array }[];
  context: Record<string, FeedSpec>;
  calls: Record<string, Record<string, FeedSpec>>;
  carry: [string, string][];
  warmups: number;
  calm: number;
  minMs: number;
  maxMs: number;
  pauseMs: number;
}

export function probePayload(graph: ProbeGraph, threads: number, liftoffOnly: boolean): ProbePayload {
  return {
    threads,
    model: graph.model,
    externalData: graph.externalData,
    context: graph.context,
    calls: { 1: graph.call(1), [PROBE_WIDE]: graph.call(PROBE_WIDE) },
    carry: graph.carry,
    warmups: WARMUPS,
    calm: CALM,
    minMs: liftoffOnly ? MIN_MS.liftoff : MIN_MS.tierUp,
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
  ort.env.logLevel = 'error';
  const tensors = (feeds) =>
    Object.fromEntries(Object.entries(feeds).map(([k, f]) => [k, new ort.Tensor(f.type, f.data, f.dims)]));
  const session = await ort.InferenceSession.create(w.model, {
    executionProviders: ['wasm'], graphOptimizationLevel: 'all', logSeverityLevel: 3, externalData: w.externalData,
  });
  const out = await session.run(tensors(w.context));
  const past = Object.fromEntries(w.carry.map(([present, name]) => [name, out[present]]));
  const best = {};
  let calm = 0;
  const start = performance.now();
  const elapsed = () => performance.now() - start;
  for (let r = 0; (calm < w.calm || elapsed() < w.minMs) && elapsed() < w.maxMs; r++) {
    let improved = false;
    for (const [q, feeds] of Object.entries(w.calls)) {
      const input = { ...tensors(feeds), ...past };
      const t = performance.now();
      await session.run(input);
      const ms = performance.now() - t;
      if (r < w.warmups) continue;
      if (!(ms >= (best[q] ?? Infinity) * 0.98)) improved = true;
      best[q] = Math.min(best[q] ?? Infinity, ms);
    }
    calm = improved ? 0 : calm + 1;
    await new Promise((resolve) => setTimeout(resolve, w.pauseMs));
  }
  await session.release();
  return best;
}`;

const round = (ms: number) => Math.round(ms * 1000) / 1000;

/** A worker's answer as a timing (rounded to the microsecond). */
export function timingOf(threads: number, best: Record<string, number>): ThreadTiming {
  return { threads, q1: round(best[1] as number), q16: round(best[PROBE_WIDE] as number) };
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

/** The fewest threads within THREAD_MARGIN of the fastest T(1) + T(16); 1 when nothing ran. */
export function pickThreads(timings: readonly ThreadTiming[], margin = THREAD_MARGIN): number {
  const ok = timings.filter((t) => !t.error && Number.isFinite(t.q1 + t.q16));
  if (ok.length === 0) return 1;
  const best = Math.min(...ok.map((t) => t.q1 + t.q16));
  return Math.min(...ok.filter((t) => t.q1 + t.q16 <= best * (1 + margin)).map((t) => t.threads));
}

/** One line for logs and the CLI: "2 wasm threads (measured in 1.9 s: 1 -> 4.1 + 19.0 ms, 2 -> 2.9 + 10.8 ms)". */
export function describeThreads(choice: ThreadChoice): string {
  const each = choice.timings
    .map((t) => (t.error ? `${t.threads}: ${t.error}` : `${t.threads}: ${t.q1.toFixed(2)} + ${t.q16.toFixed(2)} ms`))
    .join(', ');
  const how = choice.how === 'measured' ? `measured in ${(choice.ms / 1000).toFixed(1)} s` : choice.how;
  return `${choice.threads} wasm thread${choice.threads === 1 ? '' : 's'} (${how}${each ? `; T(1) + T(16) with ${each}` : ''})`;
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

/** Runs the probe graph with onnxruntime on `threads` wasm threads, in a fresh worker. */
export type ThreadRunner = (graph: ProbeGraph, threads: number) => Promise<ThreadTiming>;

/**
 * The remembered choice under `key`, or each candidate measured (one worker at a time, so they never share the
 * cores) and the choice remembered.
 */
export async function chooseThreads(
  key: string,
  cores: number,
  graph: () => Promise<ProbeGraph>,
  run: ThreadRunner,
  store?: KeyValueStore,
): Promise<ThreadChoice> {
  const candidates = threadCandidates(cores);
  if (candidates.length === 1) return { threads: 1, how: 'one core', cores, timings: [], ms: 0 };
  const stored = store ? await safeGet(store, key) : undefined;
  if (isThreadChoice(stored)) return { ...stored, how: 'remembered', ms: 0 };
  const t0 = performance.now();
  let probe: ProbeGraph;
  try {
    probe = await graph();
  } catch {
    // The model itself fails to load: its load in the engine says why (naming the model); nothing measured here.
    return { threads: 1, how: 'measured', cores, timings: [], ms: performance.now() - t0 };
  }
  const timings: ThreadTiming[] = [];
  for (const threads of candidates) {
    try {
      timings.push(await run(probe, threads));
    } catch (e) {
      timings.push({ threads, q1: Number.NaN, q16: Number.NaN, error: (e as Error).message.split('\n')[0] ?? '' });
    }
  }
  const choice: ThreadChoice = { threads: pickThreads(timings), how: 'measured', cores, timings, ms: 0 };
  choice.ms = performance.now() - t0;
  // Only a measurement that ran is worth remembering.
  if (store && timings.some((t) => !t.error)) await safeSet(store, key, choice);
  return choice;
}
