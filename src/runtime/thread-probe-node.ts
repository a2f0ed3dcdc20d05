/**
 * The wasm thread count for Node (thread-probe.ts): each candidate is timed in a fresh worker_threads Worker running
 * its own onnxruntime-web (the count is fixed when onnxruntime's wasm starts, so the calling process cannot try
 * several). The worker is a short plain script evaluated from a string, so it runs the same from the sources (tsx,
 * vitest), the CLI's bundle and the built library; it imports onnxruntime-web from where this module resolves it.
 */
import { createRequire } from 'node:module';
import { availableParallelism, cpus } from 'node:os';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import * as ort from 'onnxruntime-web';
import type { KeyValueStore } from '../engine/store';
import { loadModel } from '../model/load';
import { buildProbeGraph, PROBE_WIDE, type ProbeGraph } from '../model/probe-graph';
import { chooseThreads, type ThreadChoice, type ThreadTiming } from './thread-probe';
import { wasmLiftoffOnly } from './v8-tiering';

/**
 * Per candidate: warm-up rounds, then rounds for at least a minimum time and until CALM rounds in a row improve no
 * call's fastest time by 2%, at most MAX_MS (the fastest times are the result). A fresh worker starts on V8's
 * Liftoff code and gets TurboFan's for the hot kernels 1.4 to 1.7 s in (measured on 2 cores: T(16) from 4.8 to
 * 3.0 ms on one thread, from 7-17 to 1.8 ms on two, whose second thread shares a core with the compiler until
 * then), so under tier-up the minimum is past that; with Liftoff only (the CLI's short runs) there is nothing to
 * wait for.
 */
const WARMUPS = 3;
const CALM = 20;
const MIN_MS = { liftoff: 200, tierUp: 2200 };
const MAX_MS = 4000;
/** Between rounds the cores are left to V8's compiler threads (a busy second thread starved them). */
const PAUSE_MS = 4;
/** A candidate that has not answered by then counts as failed. */
const TIMEOUT_MS = 60_000;

const WORKER_SOURCE = `
const { parentPort, workerData: w } = require('node:worker_threads');
(async () => {
  const m = await import(w.ortUrl);
  const ort = m.InferenceSession ? m : m.default;
  ort.env.wasm.numThreads = w.threads;
  ort.env.logLevel = 'error';
  const tensors = (feeds) => Object.fromEntries(Object.entries(feeds).map(([k, f]) => [k, new ort.Tensor(f.type, f.data, f.dims)]));
  const session = await ort.InferenceSession.create(w.model, {
    executionProviders: ['wasm'], graphOptimizationLevel: 'all', logSeverityLevel: 3, externalData: w.externalData,
  });
  const out = await session.run(tensors(w.context));
  const past = Object.fromEntries(w.carry.map(([present, name]) => [name, out[present]]));
  // Rounds of one call per size until the fastest stops improving: a fresh worker starts on V8's baseline code and
  // its optimised code arrives while it runs (sooner or later depending on what else the cores are doing).
  const best = {};
  let calm = 0;
  const start = performance.now();
  for (let r = 0; (calm < w.calm || performance.now() - start < w.minMs) && performance.now() - start < w.maxMs; r++) {
    let improved = false;
    for (const [q, feeds] of Object.entries(w.calls)) {
      const input = { ...tensors(feeds), ...past };
      const t = performance.now();
      await session.run(input);
      const ms = performance.now() - t;
      if (r >= w.warmups && !(ms >= (best[q] ?? Infinity) * 0.98)) improved = true;
      if (r >= w.warmups) best[q] = Math.min(best[q] ?? Infinity, ms);
    }
    calm = improved ? 0 : calm + 1;
    await new Promise((r) => setTimeout(r, w.pauseMs));
  }
  await session.release();
  parentPort.postMessage({ best });
})().catch((e) => parentPort.postMessage({ error: String((e && e.message) || e).split('\\n')[0] }));
`;

const round = (ms: number) => Math.round(ms * 1000) / 1000;

function ortUrl(): string {
  return pathToFileURL(createRequire(import.meta.url).resolve('onnxruntime-web')).href;
}

/** Times the probe graph on `threads` wasm threads in a fresh worker (rejects with the worker's error). */
export function runInWorker(graph: ProbeGraph, threads: number, url = ortUrl()): Promise<ThreadTiming> {
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: {
      ortUrl: url,
      threads,
      model: graph.model,
      externalData: graph.externalData,
      context: graph.context,
      calls: { 1: graph.call(1), [PROBE_WIDE]: graph.call(PROBE_WIDE) },
      carry: graph.carry,
      warmups: WARMUPS,
      calm: CALM,
      minMs: wasmLiftoffOnly() ? MIN_MS.liftoff : MIN_MS.tierUp,
      maxMs: MAX_MS,
      pauseMs: PAUSE_MS,
    },
  });
  return new Promise<ThreadTiming>((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`no answer in ${TIMEOUT_MS / 1000} s`)), TIMEOUT_MS);
    timer.unref();
    worker.once('message', (m: { best?: Record<string, number>; error?: string }) => {
      if (m.error !== undefined || !m.best) fail(new Error(m.error ?? 'no timings'));
      else done({ threads, q1: round(m.best[1] as number), q16: round(m.best[PROBE_WIDE] as number) });
    });
    worker.once('error', (e) => fail(e));
    worker.once('exit', (code) => fail(new Error(`the probe worker exited (${code})`)));
  }).finally(async () => {
    await worker.terminate();
  });
}

export interface NodeThreadOptions {
  /** The target model (folder or hub id) the choice is for. */
  target: string;
  /** Where the choice is remembered (the CLI's file store). */
  store?: KeyValueStore;
  /** Logical cores (default: what Node reports). */
  cores?: number;
}

/**
 * The wasm thread count for this machine and target: remembered, or measured now (a second or two on a 2-core
 * machine; the fp32 probe graph of the target) and remembered. Call it before onnxruntime's wasm starts in this
 * process (ortForNode(choice.threads)).
 */
export async function chooseNodeWasmThreads(options: NodeThreadOptions): Promise<ThreadChoice> {
  const cores = options.cores ?? availableParallelism();
  const target = /^[a-z]+:/i.test(options.target) ? options.target : resolve(options.target);
  const url = ortUrl();
  const version = ort.env.versions.web ?? '?';
  const compile = wasmLiftoffOnly() ? 'liftoff' : 'tier-up';
  const key = `wasm-threads:v1:${version}:${compile}:${cores}:${cpus()[0]?.model ?? '?'}:${target}`;
  return chooseThreads(
    key,
    cores,
    async () => buildProbeGraph(await loadModel(options.target), { weights: 'float', compute: 'fp32' }, 'plain'),
    (graph, threads) => runInWorker(graph, threads, url),
    options.store,
  );
}
