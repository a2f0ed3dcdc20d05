/// <reference lib="webworker" />
/** Runs the benchmark harness inside a browser worker, on the device it is asked for. */
import { SpecEngine } from '../src/engine/engine';
import { ortForWeb } from '../src/runtime/ort-web';
import { type BenchOptions, type BenchReport, runBench } from './harness';

declare const self: DedicatedWorkerGlobalScope;

export interface BenchRequest {
  ortBase: string;
  base: string;
  device: 'wasm' | 'webgpu';
  target: string;
  draft: string;
  options: Omit<BenchOptions, 'log'>;
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
    const report = await runBench(engine, { ...req.options, log: (line) => post({ type: 'log', line }) });
    await engine.release();
    post({ type: 'report', report });
  } catch (e) {
    post({ type: 'error', error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) });
  }
};
