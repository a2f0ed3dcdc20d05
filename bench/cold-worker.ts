/// <reference lib="webworker" />
/**
 * The browser's side of the cold benchmark: a fresh worker loads the bundled pair and generates one prompt three
 * times, then measures its steady state, saying where the time went (as bench/cold-run.ts does in a Node process).
 * Like the element's worker it remembers the graph variant and the measured costs in IndexedDB.
 * The driver runs it on a first visit (a fresh browser profile on disk), after a reload, and on a later visit (the
 * browser started again on the same profile).
 */
import type { Method } from '../src/engine/drafters/index';
import { SpecEngine } from '../src/engine/engine';
import { ortForWeb } from '../src/runtime/ort-web';
import { IndexedDbStore } from '../src/runtime/store-web';
import { type FirstAndSteady, firstAndSteady } from './cold-measure';

declare const self: DedicatedWorkerGlobalScope;

export interface ColdRequest {
  ortBase: string;
  base: string;
  device: 'wasm' | 'webgpu';
  method: Method;
  prompt: string;
  maxNewTokens: number;
  steadyRuns: number;
}

export interface ColdResult extends FirstAndSteady {
  /** Milliseconds from the worker's start to its script loaded and ready. */
  startedMs: number;
  /** The engine's load (warm-up included), warm-up and calibration times. */
  loadMs: number;
  warmupMs: number;
  calibrationMs: number;
}

export type ColdMessage = { type: 'done'; result: ColdResult } | { type: 'error'; error: string };

self.onmessage = async (event: MessageEvent<ColdRequest>) => {
  const req = event.data;
  const startedMs = performance.now();
  try {
    const engine = await SpecEngine.load(ortForWeb(req.ortBase), {
      target: 'models/austen-target/',
      draft: 'models/austen-draft/',
      device: req.device,
      base: req.base,
      // As the element's worker does: the graph variant and the costs are remembered for the next visit.
      store: new IndexedDbStore(),
    });
    const measured = await firstAndSteady(engine, req.method, req.prompt, req.maxNewTokens, req.steadyRuns);
    const { loadMs, warmupMs, calibrationMs } = engine.timings;
    await engine.release();
    self.postMessage({
      type: 'done',
      result: { startedMs, loadMs, warmupMs, calibrationMs, ...measured },
    } satisfies ColdMessage);
  } catch (e) {
    self.postMessage({ type: 'error', error: e instanceof Error ? e.message : String(e) } satisfies ColdMessage);
  }
};
