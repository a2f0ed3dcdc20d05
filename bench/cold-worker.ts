/// <reference lib="webworker" />
/**
 * The browser's side of the cold benchmark: a fresh worker loads the bundled pair and generates one prompt three
 * times, then measures its steady state, saying where the time went (as bench/cold-run.ts does in a Node process).
 * Like the element's worker it remembers the graph variant and the measured costs in IndexedDB.
 * The driver runs it on a first visit (a fresh browser profile) and again after a reload.
 */
import type { Method } from '../src/engine/drafters/index';
import { SpecEngine } from '../src/engine/engine';
import { GREEDY } from '../src/engine/sampling';
import { ortForWeb } from '../src/runtime/ort-web';
import { IndexedDbStore } from '../src/runtime/store-web';

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

export interface ColdResult {
  /** Milliseconds from the worker's start: its script loaded and ready, the engine loaded (warm-up included). */
  startedMs: number;
  loadMs: number;
  warmupMs: number;
  calibrationMs: number;
  /** ms/token of the first three generations, and the median of the steady runs after them. */
  generations: number[];
  steadyMsPerToken: number;
  firstResultMs: number;
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
    const once = async (): Promise<number> => {
      const it = engine.generate(req.prompt, { method: req.method, maxNewTokens: req.maxNewTokens, sampling: GREEDY });
      let step = await it.next();
      while (!step.done) step = await it.next();
      return step.value.stats.wallMs / step.value.stats.tokens;
    };
    const generations = [await once()];
    const firstResultMs = performance.now();
    generations.push(await once(), await once());
    const steady: number[] = [];
    for (let i = 0; i < req.steadyRuns; i++) steady.push(await once());
    steady.sort((a, b) => a - b);
    const { loadMs, warmupMs, calibrationMs } = engine.timings;
    await engine.release();
    self.postMessage({
      type: 'done',
      result: {
        startedMs,
        loadMs,
        warmupMs,
        calibrationMs,
        generations,
        steadyMsPerToken: steady[steady.length >> 1] as number,
        firstResultMs,
      },
    } satisfies ColdMessage);
  } catch (e) {
    self.postMessage({ type: 'error', error: e instanceof Error ? e.message : String(e) } satisfies ColdMessage);
  }
};
