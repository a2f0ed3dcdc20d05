/// <reference lib="webworker" />
/** Runs the benchmark harness inside a browser worker, on the device it is asked for. */
import { SpecEngine } from '../src/engine/engine';
import { ortForWeb } from '../src/runtime/ort-web';
import { type BenchOptions, type BenchReport, runBench } from './harness';
import { type HeadsFolders, loadHeadsEngines, releaseAll } from './heads-engines';

declare const self: DedicatedWorkerGlobalScope;

export interface BenchRequest {
  ortBase: string;
  base: string;
  device: 'wasm' | 'webgpu';
  target: string;
  draft: string;
  /** Heads for the methods that run on them (medusa, eagle). */
  heads?: HeadsFolders;
  options: Omit<BenchOptions, 'log' | 'engineFor'>;
}

export type BenchMessage =
  | { type: 'log'; line: string }
  | { type: 'report'; report: BenchReport }
  | { type: 'error'; error: string };

self.onmessage = async (event: MessageEvent<BenchRequest>) => {
  const req = event.data;
  const post = (m: BenchMessage) => self.postMessage(m);
  try {
    const ort = ortForWeb(req.ortBase);
    const engine = await SpecEngine.load(ort, {
      target: req.target,
      draft: req.draft,
      device: req.device,
      base: req.base,
    });
    const log = (line: string) => post({ type: 'log', line });
    const heads = await loadHeadsEngines(
      req.options.methods,
      req.heads ?? {},
      (h) => SpecEngine.load(ort, { target: req.target, heads: h, device: req.device, base: req.base }),
      log,
    );
    const report = await runBench(engine, { ...req.options, engineFor: (m) => heads.get(m) ?? engine, log });
    await engine.release();
    await releaseAll(heads);
    post({ type: 'report', report });
  } catch (e) {
    post({ type: 'error', error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) });
  }
};
