/**
 * The wasm thread count in the browser (thread-probe.ts): each candidate is timed in a fresh module worker (from a
 * Blob) that imports onnxruntime-web's own browser build from the folder its wasm files are served from
 * (ORT_PROBE_MODULE), since the count is fixed once onnxruntime's wasm starts in the engine's worker. Threads need
 * SharedArrayBuffer, so a page that is not cross-origin isolated runs on one, unmeasured.
 */
import type { KeyValueStore } from '../engine/store';
import { loadModel } from '../model/load';
import { buildProbeGraph, type ProbeGraph } from '../model/probe-graph';
import type { HubOptions } from '../model/source';
import {
  chooseThreads,
  PROBE_LOOP_SOURCE,
  probePayload,
  type ThreadChoice,
  type ThreadTiming,
  timingOf,
} from './thread-probe';

/** onnxruntime-web's browser build the probe workers import, served beside its wasm files (vite.config.ts). */
export const ORT_PROBE_MODULE = 'ort.webgpu.min.mjs';
/** A candidate that has not answered by then counts as failed. */
const TIMEOUT_MS = 60_000;

const WORKER_SOURCE = `self.onmessage = async ({ data: w }) => {
  try {
    const ort = await import(w.ortUrl);
    ort.env.wasm.wasmPaths = w.wasmPaths;
    self.postMessage({ best: await (${PROBE_LOOP_SOURCE})(ort, w) });
  } catch (e) {
    self.postMessage({ error: String((e && e.message) || e).split('\\n')[0] });
  }
};`;

/** Times the probe graph on `threads` wasm threads in a fresh worker (rejects with the worker's error). */
export function runInWebWorker(graph: ProbeGraph, threads: number, wasmBase: string): Promise<ThreadTiming> {
  const folder = wasmBase.endsWith('/') ? wasmBase : `${wasmBase}/`;
  const url = URL.createObjectURL(new Blob([WORKER_SOURCE], { type: 'text/javascript' }));
  const worker = new Worker(url, { type: 'module' });
  URL.revokeObjectURL(url);
  return new Promise<ThreadTiming>((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`no answer in ${TIMEOUT_MS / 1000} s`)), TIMEOUT_MS);
    worker.onmessage = ({ data }: MessageEvent<{ best?: Record<string, number>; error?: string }>) => {
      clearTimeout(timer);
      if (data.error !== undefined || !data.best) fail(new Error(data.error ?? 'no timings'));
      else done(timingOf(threads, data.best));
    };
    worker.onerror = (e) => {
      clearTimeout(timer);
      fail(new Error(e.message || 'the probe worker failed to start'));
    };
    worker.postMessage({
      ortUrl: `${folder}${ORT_PROBE_MODULE}`,
      wasmPaths: folder,
      ...probePayload(graph, threads, false),
    });
  }).finally(() => worker.terminate());
}

export interface WebThreadOptions {
  target: string;
  /** What relative model folders resolve against, and the hub settings, as for the engine's load. */
  base?: string;
  hub?: HubOptions;
  /** The folder onnxruntime's wasm files (and ORT_PROBE_MODULE) are served from. */
  wasmBase: string;
  /** onnxruntime-web's version, part of what the choice is remembered under. */
  ortVersion: string;
  store?: KeyValueStore;
}

/**
 * The wasm thread count for this browser, machine and target: remembered (IndexedDB), or measured now (a few
 * seconds, once) and remembered. Call it before onnxruntime's wasm starts in this worker.
 */
export async function chooseWebWasmThreads(options: WebThreadOptions): Promise<ThreadChoice> {
  const cores = globalThis.navigator?.hardwareConcurrency ?? 1;
  if (!globalThis.crossOriginIsolated) return { threads: 1, how: 'not isolated', cores, timings: [], ms: 0 };
  const target = new URL(options.target, options.base ?? globalThis.location?.href).href;
  const key = `wasm-threads:v1:${options.ortVersion}:browser:${cores}:${navigator.userAgent}:${target}`;
  return chooseThreads(
    key,
    cores,
    async () =>
      buildProbeGraph(
        await loadModel(options.target, {
          ...(options.base ? { base: options.base } : {}),
          ...(options.hub ? { hub: options.hub } : {}),
        }),
        { weights: 'float', compute: 'fp32' },
        'plain',
      ),
    (graph, threads) => runInWebWorker(graph, threads, options.wasmBase),
    options.store,
  );
}
