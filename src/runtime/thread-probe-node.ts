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
import type { ProgressCallback } from '../model/source';
import {
  chooseThreads,
  modelProbeGraphs,
  PROBE_LOOP_SOURCE,
  type ProbeGraphs,
  probePayload,
  type ThreadChoice,
  type ThreadTiming,
  timingOf,
} from './thread-probe';
import { wasmCompileMode, wasmWithoutTierUp } from './v8-tiering';

/** A candidate that has not answered by then counts as failed. */
const TIMEOUT_MS = 60_000;

const WORKER_SOURCE = `
const { parentPort, workerData: w } = require('node:worker_threads');
(async () => {
  const m = await import(w.ortUrl);
  const ort = m.InferenceSession ? m : m.default;
  parentPort.postMessage({ best: await (${PROBE_LOOP_SOURCE})(ort, w) });
})().catch((e) => parentPort.postMessage({ error: String((e && e.message) || e).split('\\n')[0] }));
`;

function ortUrl(): string {
  return pathToFileURL(createRequire(import.meta.url).resolve('onnxruntime-web')).href;
}

/** Times the probe graphs on `threads` wasm threads in a fresh worker (rejects with the worker's error). */
export function runInWorker(graphs: ProbeGraphs, threads: number, url = ortUrl()): Promise<ThreadTiming> {
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    // With compilation hints the worker compiles the same hinted binary (the flags hold in workers too).
    workerData: {
      ortUrl: url,
      ...probePayload(graphs, threads, wasmWithoutTierUp()),
      ...(ort.env.wasm.wasmBinary ? { wasmBinary: ort.env.wasm.wasmBinary } : {}),
    },
  });
  return new Promise<ThreadTiming>((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`no answer in ${TIMEOUT_MS / 1000} s`)), TIMEOUT_MS);
    timer.unref();
    worker.once('message', (m: { best?: Record<string, number>; error?: string }) => {
      if (m.error !== undefined || !m.best) fail(new Error(m.error ?? 'no timings'));
      else done(timingOf(threads, m.best));
    });
    worker.once('error', (e) => fail(e));
    worker.once('exit', (code) => fail(new Error(`the probe worker exited (${code})`)));
  }).finally(async () => {
    await worker.terminate();
  });
}

export interface NodeThreadOptions {
  /** The target model (folder or hub id) the choice is for, and the draft model when one is used. */
  target: string;
  draft?: string;
  /** Where the choice is remembered (the CLI's file store). */
  store?: KeyValueStore;
  /** Logical cores (default: what Node reports). */
  cores?: number;
  /**
   * The probe loads the models before the engine does: a hub model is downloaded here, and its files are reported
   * here (the engine's load then finds them cached).
   */
  onProgress?: ProgressCallback;
}

/**
 * The wasm thread count for this machine, target and draft: remembered, or measured now (2 s with Liftoff only, 6
 * s under tier-up on a 2-core machine; the fp32 probe graphs) and remembered. Call it before onnxruntime's wasm starts in this
 * process (ortForNode(choice.threads)).
 */
export async function chooseNodeWasmThreads(options: NodeThreadOptions): Promise<ThreadChoice> {
  const cores = options.cores ?? availableParallelism();
  const where = (spec: string) => (/^[a-z]+:/i.test(spec) ? spec : resolve(spec));
  const models = [where(options.target), ...(options.draft ? [where(options.draft)] : [])].join('+');
  const url = ortUrl();
  const version = ort.env.versions.web ?? '?';
  const compile = wasmCompileMode() === 'default' ? 'tier-up' : wasmCompileMode();
  const key = `wasm-threads:v2:${version}:${compile}:${cores}:${cpus()[0]?.model ?? '?'}:${models}`;
  return chooseThreads(
    key,
    cores,
    () => modelProbeGraphs(options.target, options.draft, options.onProgress ? { onProgress: options.onProgress } : {}),
    (graphs, threads) => runInWorker(graphs, threads, url),
    options.store,
  );
}
