/// <reference lib="webworker" />
/** Runs the benchmark harness inside a browser worker, on the device it is asked for. */
import { SpecEngine } from '../src/engine/engine';
import { ortForWeb } from '../src/runtime/ort-web';
import { type BenchOptions, type BenchReport, runBench } from './harness';
import { benchEngines, extrasOptions, type HeadsFolders } from './heads-engines';

declare const self: DedicatedWorkerGlobalScope;

export interface BenchRequest {
  ortBase: string;
  base: string;
  device: 'wasm' | 'webgpu';
  target: string;
  draft: string;
  /** Heads for the methods that run on them (medusa, eagle); swift gets the target with layer switches. */
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
    const log = (line: string) => post({ type: 'log', line });
    const { engine, engineFor, release } = await benchEngines(
      req.options.methods,
      req.heads ?? {},
      (extras) =>
        SpecEngine.load(ort, {
          target: req.target,
          device: req.device,
          base: req.base,
          ...extrasOptions(extras, req.draft),
        }),
      log,
    );
    let report: BenchReport;
    try {
      report = await runBench(engine, { ...req.options, engineFor, log });
    } finally {
      await release();
    }
    post({ type: 'report', report });
  } catch (e) {
    post({ type: 'error', error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) });
  }
};
