/// <reference lib="webworker" />
/** Runs the benchmark harness inside a browser worker, on the device it is asked for. */
import { SpecEngine } from '../src/engine/engine';
import { ortForWeb } from '../src/runtime/ort-web';
import { IndexedDbStore } from '../src/runtime/store-web';
import { describeThreads } from '../src/runtime/thread-probe';
import { chooseWebWasmThreads } from '../src/runtime/thread-probe-web';
import { type BenchOptions, type BenchReport, countRun, earlierRuns, runBench, type TraceRow } from './harness';
import { benchEngines, extrasOptions, type HeadsFolders } from './heads-engines';

declare const self: DedicatedWorkerGlobalScope;

export interface BenchRequest {
  ortBase: string;
  base: string;
  device: 'wasm' | 'webgpu';
  /** wasm threads: onnxruntime's default (unset, as the page), or measured as the element's threads="auto". */
  threads?: 'auto';
  target: string;
  draft: string;
  /** Heads for the methods that run on them (medusa, eagle); swift gets the target with layer switches. */
  heads?: HeadsFolders;
  options: Omit<BenchOptions, 'log' | 'engineFor' | 'onRound'>;
  /** Post every round of the timed generations back (bench --trace). */
  traceRounds?: boolean;
}

export type BenchMessage =
  | { type: 'log'; line: string }
  | { type: 'round'; row: TraceRow }
  | { type: 'report'; report: BenchReport }
  | { type: 'error'; error: string };

self.onmessage = async (event: MessageEvent<BenchRequest>) => {
  const req = event.data;
  const post = (m: BenchMessage) => self.postMessage(m);
  try {
    const ort = ortForWeb(req.ortBase);
    const log = (line: string) => post({ type: 'log', line });
    // On wasm with threads 'auto': the threads the element would measure here (once per browser profile).
    let runtime: string | undefined;
    if (req.device === 'wasm' && req.threads === 'auto') {
      const choice = await chooseWebWasmThreads({
        target: req.target,
        draft: req.draft,
        base: req.base,
        wasmBase: req.ortBase,
        ortVersion: ort.env.versions.web ?? '?',
        store: new IndexedDbStore(),
      });
      ort.env.wasm.numThreads = choice.threads;
      runtime = describeThreads(choice);
      log(`wasm threads: ${runtime}`);
    }
    // --remember: the engines keep what they learn in this profile's IndexedDB, and the run is counted there.
    const store = req.options.remember ? new IndexedDbStore() : null;
    const backend = `chromium-${req.device}`;
    const earlier = store ? await earlierRuns(store, backend) : undefined;
    const { engine, engineFor, release } = await benchEngines(
      req.options.methods,
      req.heads ?? {},
      (extras) =>
        SpecEngine.load(ort, {
          target: req.target,
          device: req.device,
          base: req.base,
          ...(store ? { store } : {}),
          ...extrasOptions(extras, req.draft),
          ...(extras.draft && req.options.draftDevice ? { draftDevice: req.options.draftDevice } : {}),
          ...(extras.heads && req.options.headsDevice ? { headsDevice: req.options.headsDevice } : {}),
        }),
      log,
      req.device,
      !req.options.withoutDraft,
    );
    let report: BenchReport;
    try {
      report = await runBench(engine, {
        ...req.options,
        engineFor,
        log,
        ...(req.traceRounds ? { onRound: (row: TraceRow) => post({ type: 'round', row }) } : {}),
        ...(runtime ? { runtime } : {}),
        ...(earlier !== undefined ? { earlierRuns: earlier } : {}),
      });
      if (store) await countRun(store, backend);
    } finally {
      await release();
    }
    post({ type: 'report', report });
  } catch (e) {
    post({ type: 'error', error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) });
  }
};
