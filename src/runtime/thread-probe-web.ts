/**
 * The wasm thread count in the browser (thread-probe.ts): each candidate is timed in a fresh module worker (from a
 * Blob) that imports onnxruntime-web's own browser build from the folder its wasm files are served from
 * (ORT_PROBE_MODULE), since the count is fixed once onnxruntime's wasm starts in the engine's worker. Threads need
 * SharedArrayBuffer, so a page that is not cross-origin isolated runs on one, unmeasured.
 *
 * Pages measure only when asked (threads="auto"): in Chromium on our 2-core machine the probe preferred two threads
 * (its round 18-21% cheaper, the draft's call no slower), yet on the element itself the speculative methods ran
 * 20-25% slower on two (adaptive 184-197 against 245-249 tok/s, A/B on the same page; plain decoding within noise),
 * where in Node two threads made every method faster and the probe agreed. Until the probe predicts the page, the
 * page keeps onnxruntime's default (ortDefaultThreads).
 */
import type { KeyValueStore } from '../engine/store';
import type { HubOptions } from '../model/source';
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

/** onnxruntime-web's own default in a page: half the cores, at most 4, when cross-origin isolated; else one. */
export function ortDefaultThreads(cores: number, isolated = Boolean(globalThis.crossOriginIsolated)): number {
  return isolated ? Math.min(4, Math.ceil(cores / 2)) : 1;
}

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

/** Times the probe graphs on `threads` wasm threads in a fresh worker (rejects with the worker's error). */
export function runInWebWorker(graphs: ProbeGraphs, threads: number, wasmBase: string): Promise<ThreadTiming> {
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
      ...probePayload(graphs, threads, false),
    });
  }).finally(() => worker.terminate());
}

export interface WebThreadOptions {
  /** The target, and the draft model when one is used. */
  target: string;
  draft?: string;
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
 * The wasm thread count for this browser, machine, target and draft: remembered (IndexedDB), or measured now (a few
 * seconds, once) and remembered. Call it before onnxruntime's wasm starts in this worker.
 */
export async function chooseWebWasmThreads(options: WebThreadOptions): Promise<ThreadChoice> {
  const cores = globalThis.navigator?.hardwareConcurrency ?? 1;
  if (!globalThis.crossOriginIsolated) return { threads: 1, how: 'not isolated', cores, timings: [], ms: 0 };
  const where = (spec: string) => new URL(spec, options.base ?? globalThis.location?.href).href;
  const models = [where(options.target), ...(options.draft ? [where(options.draft)] : [])].join('+');
  const key = `wasm-threads:v2:${options.ortVersion}:browser:${cores}:${navigator.userAgent}:${models}`;
  return chooseThreads(
    key,
    cores,
    () =>
      modelProbeGraphs(options.target, options.draft, {
        ...(options.base ? { base: options.base } : {}),
        ...(options.hub ? { hub: options.hub } : {}),
      }),
    (graphs, threads) => runInWebWorker(graphs, threads, options.wasmBase),
    options.store,
  );
}
